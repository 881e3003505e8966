;; expect: refused tests missing custom section `pitfall.tests`
;; tests: none
;; threat: No embedded tests: nothing to re-run on publish or engine upgrade.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
