;; expect: error CPU budget
;; An infinite loop: fuel runs out and the rule alone fails.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (loop $spin (br $spin))
    (i32.const 0)))
