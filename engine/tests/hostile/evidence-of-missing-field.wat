;; expect: contained malformed output: evidence names field
;; threat: Malformed output: evidence naming a field the manifest does not have.
(module
  (import "pitfall" "evidence" (func $evidence (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "no.such.field")
  (func (export "pitfall_evaluate") (result i32)
    (call $evidence (i32.const 0) (i32.const 13))
    (i32.const 1)))
