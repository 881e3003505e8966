;; expect: refused exports
(module
  (memory 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
