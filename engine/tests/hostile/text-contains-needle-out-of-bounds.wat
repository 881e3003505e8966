;; expect: contained text_contains: pointer range
;; threat: Host pointers out of bounds: a text question whose needle wraps past the end of the address space.
(module
  (import "pitfall" "text_contains" (func $text_contains (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "workload.model")
  (func (export "pitfall_evaluate") (result i32)
    (drop (call $text_contains (i32.const 0) (i32.const 14) (i32.const -16) (i32.const 32)))
    (i32.const 0)))
