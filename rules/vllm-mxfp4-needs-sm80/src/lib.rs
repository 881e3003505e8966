//! MXFP4 (GPT-OSS) needs compute capability 8.0 in every PyPI vLLM release
//! with the method (mxfp4.py `get_min_capability` at 0.10.1 ... 0.34.0),
//! and 10.0 in the `0.10.1+gptoss` launch build (vLLM PR 22339; issue 22422).
//! KNOWLEDGE.md D20.
#![no_std]

use pitfall_sdk::prelude::*;

const SM80: ComputeCapability = ComputeCapability::new(8, 0);
const SM100: ComputeCapability = ComputeCapability::new(10, 0);

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let q = m.workload().quantization();
    if q.as_deref() != Some("mxfp4") && q.as_deref() != Some("gpt_oss_mxfp4") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= SM100 {
        return Outcome::clear();
    }
    // Releases before 0.10.1 have no mxfp4 method at all (another error).
    if vllm.version_in("<0.10.1") == Some(true) {
        return Outcome::clear();
    }
    // The launch build carries the local label `gptoss` (0.10.1+gptoss).
    let version = vllm.version();
    let launch_build =
        version.as_ref().and_then(|v| v.local()).is_some_and(|l| l.starts_with("gptoss"));
    let (min, remedy) = if launch_build {
        (SM100, 0)
    } else if cc < SM80 {
        (SM80, 1)
    } else if version.is_some() {
        return Outcome::clear();
    } else {
        return Outcome::needs("packages.vllm.version");
    };
    let outcome = below_capability_floor("workload.quantization", &vllm, &gpu, cc, min);
    // On the launch build an 8.x/9.x GPU only needs the PyPI release.
    if launch_build && cc >= SM80 { outcome.remedy(remedy) } else { outcome.remedy(1) }
}

pitfall_sdk::export_rule!(evaluate);
