;; expect: refused exports missing export `pitfall_evaluate`
;; threat: Missing export: no `pitfall_evaluate`.
(module
  (memory (export "memory") 1)
  (func (export "evaluate") (result i32) (i32.const 0)))
