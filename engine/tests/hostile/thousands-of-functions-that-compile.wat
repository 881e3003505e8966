;; expect: clean
;; threat: Compile load within bounds: 3,001 functions, each calling the first (generated); compiles within the time bound and evaluates clear.
(module
  (memory (export "memory") 1)
  (func $f0 (result i32) (i32.const 0))
;; repeat-begin 3000
  (func $f{i}x (result i32) (call $f0))
;; repeat-end
  (func (export "pitfall_evaluate") (result i32) (call $f0)))
