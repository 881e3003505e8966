;; expect: refused imports rules may import only from
;; threat: Forbidden import: WASI (files, clocks, randomness).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
