;; expect: refused complexity 12001 functions
;; threat: Compile bomb: 12,000 functions (generated), past the 10,000 bound.
(module
  (memory (export "memory") 1)
;; repeat-begin 12000
  (func $f{i} (result i32) (i32.const {i}))
;; repeat-end
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
