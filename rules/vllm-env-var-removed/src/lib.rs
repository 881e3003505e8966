//! vLLM environment variables that later releases no longer read (envs.py
//! at both sides of each boundary): VLLM_USE_V1 from 0.11.1,
//! VLLM_ATTENTION_BACKEND and VLLM_FLASH_ATTN_VERSION from 0.15.0.
#![no_std]

use pitfall_sdk::prelude::*;

/// (variable, releases that no longer read it, remedy index).
const DROPPED: [(&str, &str, u32); 3] = [
    ("VLLM_USE_V1", ">=0.11.1", 0),
    ("VLLM_ATTENTION_BACKEND", ">=0.15.0", 1),
    ("VLLM_FLASH_ATTN_VERSION", ">=0.15.0", 2),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let mut names = String::new();
    let mut count = 0;
    let mut remedies = [false; 3];
    let mut backend = None;
    for (name, releases, remedy) in DROPPED.iter() {
        let Some(value) = m.env(name) else { continue };
        match vllm.version_in(releases) {
            None => return Outcome::needs("packages.vllm.version"),
            Some(false) => continue,
            Some(true) => {}
        }
        if count > 0 {
            names.push_str(" and ");
        }
        names.push_str(name);
        count += 1;
        remedies[*remedy as usize] = true;
        if *remedy == 1 {
            backend = Some(value);
        }
    }
    if count == 0 {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("vars", &names)
        .param("them", if count > 1 { "them" } else { "it" });
    if let Some(backend) = &backend {
        outcome = outcome.evidence("env.VLLM_ATTENTION_BACKEND").param("backend", backend.trim());
    }
    for (i, selected) in remedies.iter().enumerate() {
        if *selected {
            outcome = outcome.remedy(i as u32);
        }
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
