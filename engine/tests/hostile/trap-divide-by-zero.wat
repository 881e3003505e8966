;; expect: contained divide by zero
;; threat: Trap: integer division by zero.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.div_u (i32.const 1) (i32.const 0))))
