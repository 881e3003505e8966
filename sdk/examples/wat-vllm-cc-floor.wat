;; A complete Pitfall rule in hand-written WAT (ABI v1, see ../ABI.md):
;; vLLM refuses GPUs below compute capability 7.0.
(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (import "pitfall" "field_num" (func $field_num (param i32 i32) (result f64)))
  (import "pitfall" "field_str" (func $field_str (param i32 i32 i32 i32) (result i32)))
  (import "pitfall" "evidence" (func $evidence (param i32 i32)))
  (import "pitfall" "missing" (func $missing (param i32 i32)))
  (import "pitfall" "param" (func $param (param i32 i32 i32 i32)))

  (memory (export "memory") 1)

  ;; Field paths and parameter names live in the data segment.
  (data (i32.const 16) "accelerators.0.compute_capability") ;; 33 bytes at 16
  (data (i32.const 64) "cc")                                ;;  2 bytes at 64
  (data (i32.const 80) "packages.vllm")                     ;; 13 bytes at 80
  (data (i32.const 96) "accelerators.0.vendor")             ;; 21 bytes at 96
  ;; bytes 128..160: buffer for the compute capability text; 160..168 for the vendor

  (func (export "pitfall_evaluate") (result i32)
    (local $cc f64)
    (local $len i32)
    ;; Without vLLM: clear. `applies_to` names package:vllm, and a selector
    ;; is a promise the code keeps (the publish-time selector probe checks).
    (if (i32.eqz (call $field_kind (i32.const 80) (i32.const 13)))
      (then (return (i32.const 0))))
    ;; The first accelerator must be NVIDIA's (`accelerator:nvidia`): its
    ;; vendor, normalised to lower case, is copied to 160 and compared with
    ;; "nvidia" as the little-endian words "nvid" and "ia".
    (if (i32.or
          (i32.ne (call $field_str (i32.const 96) (i32.const 21) (i32.const 160) (i32.const 8)) (i32.const 6))
          (i32.or
            (i32.ne (i32.load (i32.const 160)) (i32.const 0x6469766e))
            (i32.ne (i32.load16_u (i32.const 164)) (i32.const 0x6169))))
      (then (return (i32.const 0))))
    ;; No compute capability (even after enrichment): undetermined.
    (if (i32.eqz (call $field_kind (i32.const 16) (i32.const 33)))
      (then
        (call $missing (i32.const 16) (i32.const 33))
        (return (i32.const 2))))
    (local.set $cc (call $field_num (i32.const 16) (i32.const 33)))
    ;; 7.0 and above (or not a number): clear.
    (if (i32.eqz (f64.lt (local.get $cc) (f64.const 7.0)))
      (then (return (i32.const 0))))
    ;; Matched: the value as evidence, and as the {cc} parameter.
    (call $evidence (i32.const 16) (i32.const 33))
    (local.set $len (call $field_str (i32.const 16) (i32.const 33) (i32.const 128) (i32.const 32)))
    (if (i32.gt_s (local.get $len) (i32.const 32)) (then (local.set $len (i32.const 32))))
    (call $param (i32.const 64) (i32.const 2) (i32.const 128) (local.get $len))
    (i32.const 1))

  (@custom "pitfall.abi" "1")
  (@custom "pitfall.meta" "{\"id\":\"example-wat-vllm-cc-floor\",\"version\":\"1.0.0\",\"title\":\"vLLM does not run on GPUs below compute capability 7.0\",\"severity\":\"error\",\"summary\":\"vLLM's CUDA kernels need compute capability 7.0 (Volta) or newer; it refuses older GPUs at start-up.\",\"message\":\"The first GPU has compute capability {cc}; vLLM needs 7.0 or newer.\",\"applies_to\":[\"package:vllm\",\"accelerator:nvidia\"],\"reads\":[\"accelerators.0.compute_capability\"],\"error_signatures\":[\"RuntimeError: GPUs with compute capability below 7.0 are not supported.\"],\"remedies\":[{\"summary\":\"Use a GPU of compute capability 7.0 or newer, e.g. a T4.\",\"actions\":[{\"kind\":\"change_accelerator\",\"model\":\"T4\"}]}],\"references\":[{\"title\":\"vllm-project/vllm issue 1284\",\"url\":\"https://github.com/vllm-project/vllm/issues/1284\"}],\"author\":\"Pitfall maintainers\"}")
  (@custom "pitfall.tests" "[{\"name\":\"Tesla P100\",\"expect\":\"matched\",\"message_contains\":\"6.0\",\"manifest\":{\"manifest_version\":1,\"accelerators\":[{\"vendor\":\"nvidia\",\"model\":\"Tesla P100\",\"compute_capability\":\"6.0\"}],\"packages\":[{\"name\":\"vllm\",\"version\":\"0.27.2\"}]}},{\"name\":\"P100 swapped for a T4\",\"expect\":\"fixed\",\"from\":\"Tesla P100\"},{\"name\":\"Tesla V100\",\"expect\":\"clear\",\"manifest\":{\"manifest_version\":1,\"accelerators\":[{\"vendor\":\"nvidia\",\"model\":\"Tesla V100-SXM2-16GB\"}],\"packages\":[{\"name\":\"vllm\",\"version\":\"0.27.2\"}]}},{\"name\":\"unknown GPU\",\"expect\":\"undetermined\",\"missing\":[\"accelerators.0.compute_capability\"],\"manifest\":{\"manifest_version\":1,\"accelerators\":[{\"vendor\":\"nvidia\",\"model\":\"Mystery 9000\"}],\"packages\":[{\"name\":\"vllm\",\"version\":\"0.27.2\"}]}}]")
)
