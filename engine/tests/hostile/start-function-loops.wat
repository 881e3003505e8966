;; expect: refused abi a start function is not allowed
;; threat: A start function that loops: it would run at instantiation, before any limit of an evaluation.
(module
  (memory (export "memory") 1)
  (func $start (loop $spin (br $spin)))
  (start $start)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
