;; expect: refused metadata use 3 to 64 lowercase letters
;; meta-patch: {"id": "Not A Valid Id!"}
;; threat: Metadata that lies about itself: an id the registry could not index.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
