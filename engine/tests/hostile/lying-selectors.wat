;; expect: refused tests selector probe
;; meta-patch: {"applies_to": ["package:vllm"], "remedies": [{"summary": "set HOSTILE_FIXED", "actions": [{"kind": "set_env", "name": "HOSTILE_FIXED", "value": "1"}]}]}
;; tests: [{"name": "vllm, not fixed", "expect": "matched", "manifest": {"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.1"}]}}, {"name": "vllm, fixed", "expect": "clear", "manifest": {"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.1"}], "env": {"HOSTILE_FIXED": "1"}}}, {"name": "remedy applied", "expect": "fixed", "from": "vllm, not fixed"}]
;; threat: Metadata that lies: `applies_to` says package:vllm, but the code matches without vLLM; every embedded case passes, only the selector probe catches it.
(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "env.HOSTILE_FIXED")
  (func (export "pitfall_evaluate") (result i32)
    (if (result i32) (call $field_kind (i32.const 0) (i32.const 17))
      (then (i32.const 0))
      (else (i32.const 1)))))
