;; expect: clean
;; threat: State carried between checks by taking the name the engine exports a mutable global under: an immutable global exported as `pitfall.reset.global.1`, the name of the counter beside it, so a reset that trusted the name would restore the wrong global.
(module
  (memory (export "memory") 1)
  (global $decoy i32 (i32.const 0))
  (global $calls (mut i32) (i32.const 0))
  (export "pitfall.reset.global.1" (global $decoy))
  (func (export "pitfall_evaluate") (result i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (if (result i32) (i32.eq (global.get $calls) (i32.const 1))
      (then (i32.const 0))
      (else (i32.const 7)))))
