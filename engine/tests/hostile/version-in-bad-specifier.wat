;; expect: contained version_in: specifier `>=banana` does not parse
;; threat: A version question the host cannot answer: a specifier that is not PEP 440.
(module
  (import "pitfall" "version_in" (func $version_in (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "packages.vllm.version")
  (data (i32.const 32) ">=banana")
  (func (export "pitfall_evaluate") (result i32)
    (drop (call $version_in (i32.const 0) (i32.const 21) (i32.const 32) (i32.const 8)))
    (i32.const 0)))
