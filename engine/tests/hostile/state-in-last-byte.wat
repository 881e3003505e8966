;; expect: clean
;; threat: State carried between checks in the last byte of memory, far from stack and data: it must be zero on every call, and each call sets it.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (if (result i32) (i32.eqz (i32.load8_u (i32.const 65535)))
      (then (i32.store8 (i32.const 65535) (i32.const 1)) (i32.const 0))
      (else (i32.const 7)))))
