;; expect: refused imports only functions are imported
;; threat: Forbidden import: a table from the host module.
(module
  (import "pitfall" "table" (table 1 funcref))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
