;; expect: refused imports only functions
;; threat: Forbidden import: a memory from the host module.
(module
  (import "pitfall" "memory" (memory 1))
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
