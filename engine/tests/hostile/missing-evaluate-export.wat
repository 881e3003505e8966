;; expect: refused exports
(module
  (memory (export "memory") 1)
  (func (export "evaluate") (result i32) (i32.const 0)))
