;; expect: contained evidence: pointer range 4294967280..+32 is outside the rule's memory
;; threat: Output pointers out of bounds: a negative pointer whose range wraps around 2^32.
(module
  (import "pitfall" "evidence" (func $evidence (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (call $evidence (i32.const -16) (i32.const 32))
    (i32.const 1)))
