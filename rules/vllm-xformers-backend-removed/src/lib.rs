//! vLLM 0.12.0 removed the XFORMERS attention backend (registry.py and
//! v1/attention/backends/xformers.py at 0.11.2 and 0.12.0). The variable is
//! validated against the enum until 0.14.x and not read from 0.15.0; the
//! `--attention-backend` flag exists from 0.13.0.
#![no_std]

use pitfall_sdk::prelude::*;

const REMOVED: &str = ">=0.12.0";
const ENV_READ: &str = "<0.15.0";
const FLAG_EXISTS: &str = ">=0.13.0";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let by_flag = m.workload().attention_backend().as_deref() == Some("XFORMERS");
    let by_env =
        m.env("VLLM_ATTENTION_BACKEND").is_some_and(|v| v.trim().eq_ignore_ascii_case("XFORMERS"));
    if !by_flag && !by_env {
        return Outcome::clear();
    }
    let (Some(removed), Some(env_read), Some(flag_exists)) =
        (vllm.version_in(REMOVED), vllm.version_in(ENV_READ), vllm.version_in(FLAG_EXISTS))
    else {
        return Outcome::needs("packages.vllm.version");
    };
    if !removed {
        return Outcome::clear();
    }
    let (via, path) = if by_flag && flag_exists {
        ("--attention-backend XFORMERS", "workload.attention_backend")
    } else if by_env && env_read {
        ("VLLM_ATTENTION_BACKEND=XFORMERS", "env.VLLM_ATTENTION_BACKEND")
    } else {
        return Outcome::clear();
    };
    Outcome::matched()
        .evidence(path)
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("via", via)
}

pitfall_sdk::export_rule!(evaluate);
