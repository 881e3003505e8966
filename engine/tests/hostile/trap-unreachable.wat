;; expect: contained unreachable
;; threat: Trap: `unreachable` (how a Rust rule panics).
;; A panic in a Rust rule ends in `unreachable`.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    unreachable))
