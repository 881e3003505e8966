;; expect: refused imports the host's is
;; threat: Forbidden import: a host function under the wrong signature.
(module
  (import "pitfall" "field_kind" (func (param i64) (result i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
