;; expect: refused abi
(module
  (memory (export "memory") 1)
  (func $start (loop $spin (br $spin)))
  (start $start)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
