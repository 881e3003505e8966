;; expect: contained output exceeds 65536 bytes
;; threat: Huge output: one parameter value of 70,000 bytes, past the 64 KiB output budget.
(module
  (import "pitfall" "param" (func $param (param i32 i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 0) "k")
  (func (export "pitfall_evaluate") (result i32)
    (call $param (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 70000))
    (i32.const 1)))
