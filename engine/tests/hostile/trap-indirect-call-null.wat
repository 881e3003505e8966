;; expect: contained uninitialized element
;; threat: Trap: call_indirect through a null table entry.
(module
  (type $t (func (result i32)))
  (memory (export "memory") 1)
  (table 2 funcref)
  (func $f (result i32) (i32.const 0))
  (elem (i32.const 0) $f)
  (func (export "pitfall_evaluate") (result i32)
    (call_indirect (type $t) (i32.const 1))))
