;; expect: contained version_in: pointer range
;; threat: Host pointers out of bounds: a version question whose specifier runs past the end of memory.
(module
  (import "pitfall" "version_in" (func $version_in (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "packages.vllm.version")
  (func (export "pitfall_evaluate") (result i32)
    (drop (call $version_in (i32.const 0) (i32.const 21) (i32.const 65530) (i32.const 100)))
    (i32.const 0)))
