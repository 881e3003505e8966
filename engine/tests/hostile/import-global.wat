;; expect: refused imports only functions are imported
;; threat: Forbidden import: a global from the host module (a channel the ABI does not have).
(module
  (import "pitfall" "seed" (global i32))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
