//! GGUF loading exists in vLLM from 0.5.5 (quantization/gguf.py) to 0.23.x;
//! 0.24.0 removed the method, the loader and the .gguf detection (read in
//! the PyPI wheels of 0.5.4, 0.5.5, 0.23.0 and 0.24.0).
#![no_std]

use pitfall_sdk::prelude::*;

const SUPPORTED: &str = ">=0.5.5,<0.24.0";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let by_quant = m.workload().quantization().as_deref() == Some("gguf");
    let by_file = m.text_contains("workload.model", ".gguf") == Some(true);
    if !by_quant && !by_file {
        return Outcome::clear();
    }
    let Some(supported) = vllm.version_in(SUPPORTED) else {
        return Outcome::needs("packages.vllm.version");
    };
    if supported {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(if by_quant { "workload.quantization" } else { "workload.model" })
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
