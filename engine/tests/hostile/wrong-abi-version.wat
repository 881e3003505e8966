;; expect: refused abi
;; abi: 2
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
