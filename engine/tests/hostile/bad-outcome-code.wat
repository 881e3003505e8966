;; expect: contained returned 7
;; threat: Malformed output: an outcome code outside 0, 1, 2.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32)
    (i32.const 7)))
