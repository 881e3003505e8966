//! Rules that share an error text are told apart by what else the log
//! says, with the bundled rules' own metadata: Triton's "too old to be
//! supported by the triton GPU compiler" is raised for vLLM (its
//! `vllm-needs-sm70`) and for any `torch.compile` user
//! (`triton-torch-compile-below-sm70`); the log's stack decides.

use std::path::Path;

use pitfall_contract::meta::RuleMeta;
use pitfall_explain::Explainer;

fn rule(id: &str) -> RuleMeta {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules").join(id).join("rule.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const TRITON: &str = "RuntimeError: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.0";

fn first(explainer: &Explainer, log: &str) -> String {
    let x = explainer.explain(log);
    assert!(x.causes.len() >= 2, "both rules explain the Triton line: {x:?}");
    x.causes[0].rule_id.clone()
}

#[test]
fn the_triton_gpu_too_old_error_goes_to_the_stack_the_log_names() {
    let rules = [rule("vllm-needs-sm70"), rule("triton-torch-compile-below-sm70")];
    let explainer = Explainer::new(rules.iter());
    let vllm = format!(
        "(VllmWorker rank=0 pid=311) ERROR 03-11 10:02:40 [multiproc_executor.py:375] {TRITON}\n"
    );
    assert_eq!(first(&explainer, &vllm), "vllm-needs-sm70");
    let torch =
        format!("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n{TRITON}\n");
    assert_eq!(first(&explainer, &torch), "triton-torch-compile-below-sm70");
}

const NOTHING_TO_DO: &str = "nv-fabricmanager[4177]: request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]";

/// Fabric Manager's NV_WARN_NOTHING_TO_DO has two causes: no NVSwitch at
/// all (`fabricmanager-without-nvswitch`), or an NVLink5 board whose
/// NVSwitches Fabric Manager could not reach without NVLSM
/// (`fabricmanager-nvlink5-needs-nvlsm`); the GPU the log names decides.
#[test]
fn fabric_managers_nothing_to_do_goes_to_the_gpu_the_log_names() {
    let rules = [rule("fabricmanager-without-nvswitch"), rule("fabricmanager-nvlink5-needs-nvlsm")];
    let explainer = Explainer::new(rules.iter());
    let first = |log: &str| {
        let x = explainer.explain(log);
        assert!(!x.causes.is_empty(), "the line is explained: {x:?}");
        x.causes[0].rule_id.clone()
    };
    let b200 = format!("8x NVIDIA B200, driver 570.133.20\n{NOTHING_TO_DO}\n");
    assert_eq!(first(&b200), "fabricmanager-nvlink5-needs-nvlsm");
    let rtx = format!("2x NVIDIA GeForce RTX 4090 on Ubuntu 24.04\n{NOTHING_TO_DO}\n");
    assert_eq!(first(&rtx), "fabricmanager-without-nvswitch");
    // Blackwell too, but a GeForce (12.0): no NVSwitch, no NVLSM.
    let rtx5090 = format!("GPU 0: NVIDIA GeForce RTX 5090\n{NOTHING_TO_DO}\n");
    assert_eq!(first(&rtx5090), "fabricmanager-without-nvswitch");
}
