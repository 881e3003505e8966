;; expect: contained out of memory
;; threat: memory.grow bomb: grows until refused, then aborts as Rust's allocator would.
;; Grows memory until the limit, then aborts as Rust's allocator would.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (loop $grow
      (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1))
        (then unreachable))
      (br $grow))
    (i32.const 0)))
