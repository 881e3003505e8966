;; expect: contained param key is not valid UTF-8
;; threat: Invalid UTF-8 in output: a parameter key of bytes c3 28.
(module
  (import "pitfall" "param" (func $param (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "\c3\28")
  (data (i32.const 8) "value")
  (func (export "pitfall_evaluate") (result i32)
    (call $param (i32.const 0) (i32.const 2) (i32.const 8) (i32.const 5))
    (i32.const 1)))
