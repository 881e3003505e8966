//! vLLM environment variables that 0.34.0 refuses at start-up
//! (`Platform.validate_environ` in platforms/interface.py, called by
//! `EngineArgs.create_engine_config`: a ValueError whatever
//! `fail_on_environ_validation` is): VLLM_MARLIN_INPUT_DTYPE, listed in
//! envs.py's `removed_environment_variables`, with any value, and
//! VLLM_USE_V2_MODEL_RUNNER with any value but `1` (which is only warned
//! about as redundant: vllm-env-var-removed). 0.33.0 still read both
//! (envs.py at both tags).
#![no_std]

use pitfall_sdk::prelude::*;

/// The releases that refuse the variables.
const REFUSING: &str = ">=0.34.0";

/// (variable, whether vLLM refuses this value, what vLLM's message gives as
/// the reason). The remedies of rule.json are in this order, one per variable.
type Refusal = (&'static str, fn(&str) -> bool, &'static str);

const REFUSED: [Refusal; 2] = [
    // platforms/interface.py compares the raw text: `value != "1"`.
    ("VLLM_USE_V2_MODEL_RUNNER", |value| value != "1", "Model Runner V1 has been removed"),
    // envs.removed_environment_variables: refused whatever its value.
    ("VLLM_MARLIN_INPUT_DTYPE", |_| true, "Marlin no longer supports 8-bit activations"),
];

/// Appends `item` to a list joined by `sep`.
fn push(list: &mut String, sep: &str, item: &str) {
    if !list.is_empty() {
        list.push_str(sep);
    }
    list.push_str(item);
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    // The value of each variable that is set to a value vLLM refuses.
    let set: [Option<String>; REFUSED.len()] = core::array::from_fn(|i| {
        let (name, refuses, _) = REFUSED[i];
        m.env(name).filter(|value| refuses(value))
    });
    if set.iter().all(Option::is_none) {
        return Outcome::clear();
    }
    match vllm.version_in(REFUSING) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let (mut vars, mut reasons, mut count) = (String::new(), String::new(), 0);
    let mut outcome = Outcome::matched().evidence(vllm.version_path().as_str());
    for (i, value) in set.iter().enumerate() {
        let Some(value) = value else { continue };
        let (name, _, reason) = REFUSED[i];
        let mut setting = String::from(name);
        setting.push('=');
        setting.push_str(value);
        push(&mut vars, " and ", &setting);
        push(&mut reasons, "; ", reason);
        count += 1;
        outcome = outcome.evidence(Path::new("env").key(name).as_str());
    }
    outcome = outcome
        .param_field("version", vllm.version_path().as_str())
        .param("vars", &vars)
        .param("them", if count > 1 { "them" } else { "it" })
        .param("reasons", &reasons);
    for (i, value) in set.iter().enumerate() {
        if value.is_some() {
            outcome = outcome.remedy(i as u32);
        }
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
