;; expect: clean
;; threat: State carried between checks in mutable i64, f64 and v128 globals: each must hold its initial value on every call, and each call changes all three.
(module
  (memory (export "memory") 1)
  (global $a (mut i64) (i64.const 5))
  (global $b (mut f64) (f64.const 1.5))
  (global $c (mut v128) (v128.const i32x4 1 2 3 4))
  (func (export "pitfall_evaluate") (result i32)
    (local $ok i32)
    (local.set $ok (i32.and (i64.eq (global.get $a) (i64.const 5)) (f64.eq (global.get $b) (f64.const 1.5))))
    (local.set $ok
      (i32.and (local.get $ok) (i32x4.all_true (i32x4.eq (global.get $c) (v128.const i32x4 1 2 3 4)))))
    (global.set $a (i64.const 6))
    (global.set $b (f64.const 2.5))
    (global.set $c (v128.const i32x4 0 0 0 0))
    (if (result i32) (local.get $ok)
      (then (i32.const 0))
      (else (i32.const 7)))))
