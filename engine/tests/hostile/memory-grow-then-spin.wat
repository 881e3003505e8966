;; expect: contained out of memory
;; threat: memory.grow bomb that ignores refusal and keeps asking (refused growth is not a trap).
;; Grows memory until refused, then keeps asking: refused growth is not a
;; trap; fuel or the wall-clock deadline ends it.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (loop $grow
      (drop (memory.grow (i32.const 1)))
      (br $grow))
    (i32.const 0)))
