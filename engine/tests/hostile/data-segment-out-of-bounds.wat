;; expect: refused limits data segment 0 covers 65536..65537
;; threat: A data segment placed past the end of memory: instantiation would fail on every evaluation.
(module
  (memory (export "memory") 1)
  (data (i32.const 65536) "x")
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
