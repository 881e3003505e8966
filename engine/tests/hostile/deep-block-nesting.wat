;; expect: refused complexity blocks nested more than 1000 deep
;; threat: Compile bomb: 5,000 nested blocks in one function (validator and translator frames; generated).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
;; repeat-begin 5000
    (block
;; repeat-end
;; repeat-begin 5000
    )
;; repeat-end
    (i32.const 0)))
