//! vLLM 0.28.0 moved bitsandbytes out of tree (vLLM pull request 43529):
//! the method and model_loader/bitsandbytes_loader.py exist at 0.27.1 and
//! not at 0.28.0 (read in the PyPI sdists; RFC vllm issue 39583). The
//! out-of-tree `vllm-bnb-plugin` package registers them again through
//! vLLM's `vllm.general_plugins` entry point (0.28.0's
//! docs/features/quantization/bnb.md: "Install the plugin before using
//! BitsAndBytes with vLLM"), so with it installed the rule is clear.
#![no_std]

use pitfall_sdk::prelude::*;

const REMOVED: &str = ">=0.28.0";
/// The out-of-tree package that carries bitsandbytes from 0.28.0 on.
const PLUGIN: &str = "vllm-bnb-plugin";

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
    if !removed || m.package(PLUGIN).is_some() {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("workload.quantization")
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
