;; expect: clean
;; threat: State carried between checks in a dropped segment: each call copies a passive data segment into memory and then drops it, so a second call in the same instance would trap.
(module
  (memory (export "memory") 1)
  (data $answer "\2a")
  (func (export "pitfall_evaluate") (result i32)
    (memory.init $answer (i32.const 2048) (i32.const 0) (i32.const 1))
    (data.drop $answer)
    (if (result i32) (i32.eq (i32.load8_u (i32.const 2048)) (i32.const 42))
      (then (i32.const 0))
      (else (i32.const 7)))))
