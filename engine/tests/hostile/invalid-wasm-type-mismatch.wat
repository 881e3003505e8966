;; expect: refused validation type mismatch
;; threat: Invalid wasm: a function returns an i64 where its type says i32 (the assembler does not type-check).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i64.const 0)))
