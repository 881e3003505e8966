;; expect: refused abi must hold a decimal version
;; abi: one
;; threat: Wrong ABI version: section `pitfall.abi` holds text, not a version.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
