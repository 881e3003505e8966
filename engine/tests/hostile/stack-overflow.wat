;; expect: contained stack overflow
;; threat: Deep recursion: unbounded recursion until the 256 KiB wasm stack traps.
(module
  (memory (export "memory") 1)
  (func $deep (param i32) (result i32)
    (call $deep (i32.add (local.get 0) (i32.const 1))))
  (func (export "pitfall_evaluate") (result i32)
    (call $deep (i32.const 0))))
