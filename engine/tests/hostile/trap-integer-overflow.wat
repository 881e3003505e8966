;; expect: contained integer overflow
;; threat: Trap: i32.div_s of INT_MIN by -1.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.div_s (i32.const 0x80000000) (i32.const -1))))
