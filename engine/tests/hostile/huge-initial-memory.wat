;; expect: refused limits initial memory
;; threat: Memory bomb at instantiation: 64 MiB of initial memory, past the 16 MiB limit.
(module
  (memory (export "memory") 1024)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
