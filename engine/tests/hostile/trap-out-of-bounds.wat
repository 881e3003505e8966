;; expect: error out-of-bounds
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.load (i32.const 1000000))))
