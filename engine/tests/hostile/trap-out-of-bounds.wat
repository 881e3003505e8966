;; expect: contained out-of-bounds memory access
;; threat: Trap: a load past the end of linear memory.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.load (i32.const 1000000))))
