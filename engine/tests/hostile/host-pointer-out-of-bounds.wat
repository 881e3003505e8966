;; expect: contained outside the rule's memory
;; threat: Output pointers out of bounds: a path range that runs past the end of memory.
(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (call $field_kind (i32.const 65530) (i32.const 100))))
