;; expect: refused validation shared
;; threat: Nondeterminism: a shared memory (threads).
(module
  (memory (export "memory") 1 1 shared)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
