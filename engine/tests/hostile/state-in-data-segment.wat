;; expect: clean
;; threat: State carried between checks through a data segment's bytes: a cell that starts at 41 is incremented on every call; anything but the module's initial memory (data segments included) returns the malformed code 7.
(module
  (memory (export "memory") 1)
  (data (i32.const 1024) "\29\00\00\00")
  (func (export "pitfall_evaluate") (result i32)
    (i32.store (i32.const 1024) (i32.add (i32.load (i32.const 1024)) (i32.const 1)))
    (if (result i32) (i32.eq (i32.load (i32.const 1024)) (i32.const 42))
      (then (i32.const 0))
      (else (i32.const 7)))))
