;; expect: contained output exceeds
;; threat: Endless output: evidence reported in a loop until the output budget stops it.
;; Reports evidence without end: the output budget stops it.
(module
  (import "pitfall" "param" (func $param (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (loop $more
      (call $param (i32.const 0) (i32.const 8) (i32.const 0) (i32.const 4096))
      (br $more))
    (i32.const 1)))
