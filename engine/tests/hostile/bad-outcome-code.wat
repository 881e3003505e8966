;; expect: error returned 7
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.const 7)))
