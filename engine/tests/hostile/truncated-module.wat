;; expect: refused validation unexpected end
;; truncate: 40
;; threat: Invalid wasm: a valid module cut off after 40 bytes.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
