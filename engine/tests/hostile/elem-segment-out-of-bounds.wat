;; expect: refused limits element segment 0 covers 5..6, beyond the initial 1 table elements
;; threat: An element segment placed past the end of its table.
(module
  (memory (export "memory") 1)
  (table 1 funcref)
  (func $f)
  (elem (i32.const 5) $f)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
