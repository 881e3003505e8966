;; expect: refused tests expected matched, got clear
;; tests: [{"name": "claims to match", "expect": "matched", "manifest": {"manifest_version": 1}}, {"name": "clear", "expect": "clear", "manifest": {"manifest_version": 1}}, {"name": "fixed", "expect": "fixed", "from": "claims to match"}]
;; threat: Metadata that lies: embedded tests that fail (the rule never matches what its cases say it does).
(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0)))
