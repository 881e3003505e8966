;; expect: refused abi ABI version 2 is not supported
;; threat: Wrong ABI version: section `pitfall.abi` says 2.
;; abi: 2
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
