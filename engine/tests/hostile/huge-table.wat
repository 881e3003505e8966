;; expect: refused complexity
(module
  (memory (export "memory") 1)
  (table 100000 funcref)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
