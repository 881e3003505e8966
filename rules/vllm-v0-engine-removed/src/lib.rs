//! vLLM 0.11.0 removed the V0 engine but still read VLLM_USE_V1; =0 stops
//! start-up (api_server.py asserts it; the V1 LLMEngine raises). 0.11.1
//! dropped the variable (envs.py at both tags).
#![no_std]

use pitfall_sdk::prelude::*;

const V0_GONE_BUT_READ: &str = ">=0.11.0,<0.11.1";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    // vLLM reads the variable as an integer: `bool(int(...))`.
    let Some(value) = m.env("VLLM_USE_V1") else {
        return Outcome::clear();
    };
    if value.trim().parse::<i64>() != Ok(0) {
        return Outcome::clear();
    }
    let Some(affected) = vllm.version_in(V0_GONE_BUT_READ) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !affected {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("env.VLLM_USE_V1")
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("value", value.trim())
}

pitfall_sdk::export_rule!(evaluate);
