//! vLLM environment variables that later releases no longer read, or refuse
//! (envs.py and platforms/interface.py at both sides of each boundary):
//! VLLM_USE_V1 not read from 0.11.1, VLLM_ATTENTION_BACKEND and
//! VLLM_FLASH_ATTN_VERSION not read from 0.15.0; VLLM_USE_V2_MODEL_RUNNER
//! and VLLM_MARLIN_INPUT_DTYPE refused at start-up from 0.34.0
//! (`Platform.validate_environ`, called by `create_engine_config`: a
//! ValueError), except VLLM_USE_V2_MODEL_RUNNER=1, which 0.34.0 only warns
//! is redundant.
#![no_std]

use pitfall_sdk::prelude::*;

/// What a release does with a variable it dropped.
#[derive(Clone, Copy, PartialEq)]
enum Fate {
    /// Not read: the setting has no effect.
    Ignored,
    /// Refused at start-up with a ValueError.
    Refused,
    /// VLLM_USE_V2_MODEL_RUNNER: `1` is only warned about, any other value refused.
    RefusedUnlessOne,
}

/// (variable, releases that dropped it, what they do, remedy index: the
/// remedies of rule.json are in this order, one per variable).
const DROPPED: [(&str, &str, Fate, usize); 5] = [
    ("VLLM_USE_V1", ">=0.11.1", Fate::Ignored, 0),
    ("VLLM_ATTENTION_BACKEND", ">=0.15.0", Fate::Ignored, 1),
    ("VLLM_FLASH_ATTN_VERSION", ">=0.15.0", Fate::Ignored, 2),
    ("VLLM_USE_V2_MODEL_RUNNER", ">=0.34.0", Fate::RefusedUnlessOne, 3),
    ("VLLM_MARLIN_INPUT_DTYPE", ">=0.34.0", Fate::Refused, 4),
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
    let (mut names, mut ignored, mut refused) = (String::new(), String::new(), String::new());
    let (mut count, mut n_ignored, mut n_refused) = (0, 0, 0);
    let mut remedies = [false; DROPPED.len()];
    let mut backend = None;
    for (name, releases, fate, remedy) in DROPPED.iter() {
        let Some(value) = m.env(name) else { continue };
        match vllm.version_in(releases) {
            None => return Outcome::needs("packages.vllm.version"),
            Some(false) => continue,
            Some(true) => {}
        }
        let refuses = match fate {
            Fate::Ignored => false,
            Fate::Refused => true,
            // platforms/interface.py compares the raw text: `value != "1"`.
            Fate::RefusedUnlessOne => value != "1",
        };
        push_name(&mut names, &mut count, name);
        if refuses {
            push_name(&mut refused, &mut n_refused, name);
        } else {
            push_name(&mut ignored, &mut n_ignored, name);
        }
        remedies[*remedy] = true;
        if *remedy == 1 {
            backend = Some(value);
        }
    }
    if count == 0 {
        return Outcome::clear();
    }
    let pronoun = |n: usize| if n > 1 { "them" } else { "it" };
    let mut verdict = String::new();
    if n_refused > 0 {
        verdict.push_str("refuses ");
        if n_ignored > 0 {
            verdict.push_str(&refused);
        } else {
            verdict.push_str(pronoun(n_refused));
        }
        verdict.push_str(" at start-up (ValueError: removed variable)");
    }
    if n_ignored > 0 {
        if n_refused > 0 {
            verdict.push_str(" and no longer reads ");
            verdict.push_str(&ignored);
        } else {
            verdict.push_str("no longer reads ");
            verdict.push_str(pronoun(n_ignored));
            verdict.push_str(": the setting has no effect");
        }
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
        .param("verdict", &verdict);
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
