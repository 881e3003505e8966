;; expect: refused complexity a function with 20000 locals
;; threat: Compile bomb: 20,000 locals in one function (register-allocator work; generated).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
;; repeat-begin 20000
    (local i32)
;; repeat-end
    (i32.const 0)))
