;; expect: contained CPU budget|wall-clock deadline
;; threat: Loop around host calls: each call is priced in fuel, so it runs out like any loop.
;; A loop around a host call: host calls are priced in fuel too.
(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "host.arch")
  (func (export "pitfall_evaluate") (result i32)
    (loop $spin
      (drop (call $field_kind (i32.const 0) (i32.const 9)))
      (br $spin))
    (i32.const 0)))
