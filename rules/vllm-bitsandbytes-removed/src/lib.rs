//! vLLM 0.28.0 removed bitsandbytes: the method and
//! model_loader/bitsandbytes_loader.py exist at 0.27.1 and not at 0.28.0
//! (read in the PyPI wheels; RFC vllm issue 39583).
#![no_std]

use pitfall_sdk::prelude::*;

const REMOVED: &str = ">=0.28.0";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("bitsandbytes") {
        return Outcome::clear();
    }
    let Some(removed) = vllm.version_in(REMOVED) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !removed {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("workload.quantization")
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
