;; expect: clean
;; threat: State carried between checks in a table: each call dispatches through entry 0 and then points it at a function that answers the malformed code 7.
(module
  (memory (export "memory") 1)
  (type $answer (func (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $zero $seven)
  (func $zero (result i32) (i32.const 0))
  (func $seven (result i32) (i32.const 7))
  (func (export "pitfall_evaluate") (result i32)
    (call_indirect (type $answer) (i32.const 0))
    (table.set (i32.const 0) (ref.func $seven))))
