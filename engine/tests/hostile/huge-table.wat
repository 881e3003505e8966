;; expect: refused complexity a table of
;; threat: Table bomb at instantiation: 100,000 initial table elements.
(module
  (memory (export "memory") 1)
  (table 100000 funcref)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
