;; expect: refused exports must be a defined function
;; threat: Missing export in disguise: the entry point is a re-exported host function, not the rule's code.
;; The entry point must be the rule's own code, not a host function.
(module
  (import "pitfall" "field_len" (func $len (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (export "pitfall_evaluate" (func $len)))
