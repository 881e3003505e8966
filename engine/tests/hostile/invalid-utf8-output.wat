;; expect: contained not valid UTF-8
;; threat: Invalid UTF-8 in output: an evidence path of bytes ff fe fd.
(module
  (import "pitfall" "evidence" (func $evidence (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "\ff\fe\fd")
  (func (export "pitfall_evaluate") (result i32)
    (call $evidence (i32.const 0) (i32.const 3))
    (i32.const 1)))
