;; expect: refused exports must have type () -> i32
;; threat: Missing export in disguise: `pitfall_evaluate` takes a parameter.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (param i32) (result i32) (local.get 0)))
