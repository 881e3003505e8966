;; expect: contained field_str: pointer range 65533..+100 is outside the rule's memory
;; threat: Output pointers out of bounds: asks the host to copy a field's text past the end of memory.
(module
  (import "pitfall" "field_str" (func $field_str (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "accelerators.0.vendor")
  (func (export "pitfall_evaluate") (result i32)
    (drop (call $field_str (i32.const 0) (i32.const 21) (i32.const 65533) (i32.const 100)))
    ;; the field is missing: still an error, so the fate is checkable
    unreachable))
