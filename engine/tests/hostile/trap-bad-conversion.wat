;; expect: contained invalid conversion to integer
;; threat: Trap: i32.trunc_f64_s of NaN.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.trunc_f64_s (f64.const nan))))
