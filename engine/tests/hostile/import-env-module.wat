;; expect: refused imports `env.abort`: rules may import only from `pitfall`
;; threat: Forbidden import: a function of another module (`env`, what C toolchains link against).
(module
  (import "env" "abort" (func))
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
