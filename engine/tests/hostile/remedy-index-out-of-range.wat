;; expect: contained malformed output: remedy 99 selected, but the rule has 1
;; threat: Malformed output: selects remedy 99 of a rule that has one.
(module
  (import "pitfall" "remedy" (func $remedy (param i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (call $remedy (i32.const 99))
    (i32.const 1)))
