;; expect: contained out-of-bounds memory access
;; threat: Trap: memory.fill running past the end of memory (bulk memory).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (memory.fill (i32.const 65000) (i32.const 0) (i32.const 1000))
    (i32.const 0)))
