;; expect: refused metadata section `pitfall.meta`
;; meta: {"id": "hostile-metadata-not-json",
;; threat: Malformed metadata: `pitfall.meta` is not JSON.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
