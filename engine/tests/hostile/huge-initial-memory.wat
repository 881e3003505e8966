;; expect: refused limits
(module
  (memory (export "memory") 1024)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
