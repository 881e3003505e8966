;; expect: refused abi missing custom section `pitfall.abi`
;; abi: none
;; threat: Wrong ABI version: no `pitfall.abi` section at all.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
