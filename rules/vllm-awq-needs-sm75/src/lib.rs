//! vLLM's AWQ kernels need compute capability 7.5 (KNOWLEDGE.md B7): Volta
//! (V100, 7.0) is refused at start-up. Before 0.2.1 the floor was 8.0
//! (Ampere), so Turing (T4, RTX 2080 Ti, 7.5) was refused too: AWQConfig's
//! `get_min_capability` returns 80 in 0.2.0 (the first release with AWQ)
//! and 75 from 0.2.1 (PR 1252, two m16n8k8 MMAs for Turing), read in the
//! PyPI sdists of 0.2.0, 0.2.1, 0.2.1.post1 and 0.2.2 to 0.3.0. GPUs below
//! 7.0 are left to `vllm-needs-sm70`, since vLLM does not run there at all.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const AWQ_MIN: ComputeCapability = ComputeCapability::new(7, 5);
const AWQ_MIN_BEFORE_0_2_1: ComputeCapability = ComputeCapability::new(8, 0);
/// Releases whose AWQ declares 80 (Ampere) rather than 75.
const AMPERE_FLOOR: &str = "<0.2.1";
const BEFORE_0_2_1: &str = " in releases before 0.2.1";
/// Releases without GPTQ (config.py's supported_quantization gains "gptq"
/// in 0.2.6).
const WITHOUT_GPTQ: &str = "<0.2.6";

const REMEDY_GPTQ: u32 = 0;
const REMEDY_GPU: u32 = 1;
const REMEDY_UPGRADE: u32 = 2;
const REMEDY_UPGRADE_GPTQ: u32 = 3;

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("awq") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AWQ_MIN_BEFORE_0_2_1 || cc < VOLTA {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence("workload.quantization")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if cc < AWQ_MIN {
        // Refused by every release with AWQ: no upgrade helps. The version,
        // when known, only sharpens the message and picks the GPTQ remedy.
        let before_0_2_1 = vllm.version_in(AMPERE_FLOOR) == Some(true);
        let without_gptq = vllm.version_in(WITHOUT_GPTQ) == Some(true);
        let outcome = if before_0_2_1 || without_gptq {
            outcome.evidence(vllm.version_path().as_str())
        } else {
            outcome
        };
        let outcome = if before_0_2_1 {
            outcome.param("min", "8.0").param("releases", BEFORE_0_2_1)
        } else {
            outcome.param("min", "7.5").param("releases", "")
        };
        let gptq = if without_gptq { REMEDY_UPGRADE_GPTQ } else { REMEDY_GPTQ };
        return outcome.remedy(gptq).remedy(REMEDY_GPU);
    }
    // 7.5 <= cc < 8.0: refused only before 0.2.1.
    match vllm.need_version_in(AMPERE_FLOOR) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(outcome) => return outcome,
    }
    outcome
        .evidence(vllm.version_path().as_str())
        .param("min", "8.0")
        .param("releases", BEFORE_0_2_1)
        .remedy(REMEDY_UPGRADE)
        .remedy(REMEDY_GPU)
}

pitfall_sdk::export_rule!(evaluate);
