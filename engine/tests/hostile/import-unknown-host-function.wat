;; expect: refused imports is not a host function
;; threat: Forbidden import: a function the host module does not have.
(module
  (import "pitfall" "open_socket" (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
