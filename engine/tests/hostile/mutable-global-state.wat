;; expect: clean
;; threat: State carried between checks: a mutable global and a memory cell count calls; anything but a fresh instance per evaluation returns the malformed code 7.
(module
  (memory (export "memory") 1)
  (global $calls (mut i32) (i32.const 0))
  (func (export "pitfall_evaluate") (result i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1)))
    (if (result i32) (i32.and (i32.eq (global.get $calls) (i32.const 1)) (i32.eq (i32.load (i32.const 0)) (i32.const 1)))
      (then (i32.const 0))
      (else (i32.const 7)))))
