;; expect: refused exports one memory named `memory`
;; threat: Missing export: the memory is not exported.
(module
  (memory 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
