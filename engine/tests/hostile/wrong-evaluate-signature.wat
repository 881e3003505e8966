;; expect: refused exports
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (param i32) (result i32) (local.get 0)))
