//! vLLM environment variables that later releases no longer read
//! (envs.py at both sides of each boundary): VLLM_USE_V1 from 0.11.1,
//! VLLM_ATTENTION_BACKEND and VLLM_FLASH_ATTN_VERSION from 0.15.0, and
//! VLLM_USE_V2_MODEL_RUNNER=1 from 0.34.0, which `Platform.validate_environ`
//! only warns is redundant. The variables 0.34.0 refuses at start-up
//! (VLLM_MARLIN_INPUT_DTYPE, VLLM_USE_V2_MODEL_RUNNER other than 1) are
//! vllm-env-var-refused's.
#![no_std]

use pitfall_sdk::prelude::*;

/// (variable, releases that no longer read it, whether this value is only
/// ignored, remedy index: the remedies of rule.json are in this order, one
/// per variable).
type Dropped = (&'static str, &'static str, fn(&str) -> bool, usize);

const DROPPED: [Dropped; 4] = [
    ("VLLM_USE_V1", ">=0.11.1", |_| true, 0),
    ("VLLM_ATTENTION_BACKEND", ">=0.15.0", |_| true, 1),
    ("VLLM_FLASH_ATTN_VERSION", ">=0.15.0", |_| true, 2),
    // platforms/interface.py compares the raw text: `1` is only warned
    // about, any other value refused (vllm-env-var-refused).
    ("VLLM_USE_V2_MODEL_RUNNER", ">=0.34.0", |value| value == "1", 3),
];

/// Appends `name` to a list joined by " and ".
fn push_name(list: &mut String, count: &mut usize, name: &str) {
    if *count > 0 {
        list.push_str(" and ");
    }
    list.push_str(name);
    *count += 1;
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let (mut names, mut count) = (String::new(), 0);
    let mut remedies = [false; DROPPED.len()];
    let mut backend = None;
    for (name, releases, ignored, remedy) in DROPPED.iter() {
        let Some(value) = m.env(name).filter(|value| ignored(value)) else {
            continue;
        };
        match vllm.version_in(releases) {
            None => return Outcome::needs("packages.vllm.version"),
            Some(false) => continue,
            Some(true) => {}
        }
        push_name(&mut names, &mut count, name);
        remedies[*remedy] = true;
        if *remedy == 1 {
            backend = Some(value);
        }
    }
    if count == 0 {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched().evidence(vllm.version_path().as_str());
    for (i, (name, ..)) in DROPPED.iter().enumerate() {
        if remedies[i] {
            outcome = outcome.evidence(Path::new("env").key(name).as_str());
        }
    }
    outcome = outcome
        .param_field("version", vllm.version_path().as_str())
        .param("vars", &names)
        .param("them", if count > 1 { "them" } else { "it" });
    if let Some(backend) = &backend {
        outcome = outcome.param("backend", backend.trim());
    }
    for (i, selected) in remedies.iter().enumerate() {
        if *selected {
            outcome = outcome.remedy(i as u32);
        }
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
