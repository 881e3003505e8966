;; expect: contained malformed output: parameter `v` is bound to field `no.such.field`
;; meta-patch: {"message": "quoting {v}"}
;; threat: Malformed output: matches with a parameter bound to a field the manifest does not have.
(module
  (import "pitfall" "param_field" (func $param_field (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "no.such.field")
  (data (i32.const 16) "v")
  (func (export "pitfall_evaluate") (result i32)
    (call $param_field (i32.const 16) (i32.const 1) (i32.const 0) (i32.const 13))
    (i32.const 1)))
