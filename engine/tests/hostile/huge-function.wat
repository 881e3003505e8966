;; expect: refused complexity a function body of
;; threat: Compile bomb: one function of 100,000 instructions (50,000 const and drop pairs), about 300 KB of code (generated).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
;; repeat-begin 50000
    (drop (i32.const 123456))
;; repeat-end
    (i32.const 0)))
