;; expect: clean
;; threat: State carried between checks in memory's size: each call grows memory by one page (still within a slot's resident part) and must start with one page, which no reset can give back (memory cannot shrink).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (if (result i32) (i32.eq (memory.size) (i32.const 1))
      (then
        (drop (memory.grow (i32.const 1)))
        (i32.store (i32.const 65536) (i32.const 1))
        (i32.const 0))
      (else (i32.const 7)))))
