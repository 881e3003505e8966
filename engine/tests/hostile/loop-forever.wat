;; expect: contained CPU budget|wall-clock deadline
;; threat: Infinite loop: fuel (or, on a loaded machine, the wall-clock deadline) ends it.
;; An infinite loop: fuel runs out and the rule alone fails.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (loop $spin (br $spin))
    (i32.const 0)))
