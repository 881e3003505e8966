;; expect: contained table growth refused
;; threat: table.grow bomb: grows a table until refused, then aborts.
(module
  (memory (export "memory") 1)
  (table 1 funcref)
  (func (export "pitfall_evaluate") (result i32)
    (loop $grow
      (if (i32.eq (table.grow (ref.null func) (i32.const 1000)) (i32.const -1))
        (then unreachable))
      (br $grow))
    (i32.const 0)))
