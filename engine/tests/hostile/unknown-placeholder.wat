;; expect: contained malformed output: placeholder `{nope}` has no parameter
;; meta-patch: {"message": "the {nope} placeholder is never set"}
;; threat: Malformed output: matches, but its message names a parameter it never sets.
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 1)))
