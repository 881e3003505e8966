//! torch 2.6 changed `torch.load`'s `weights_only` default from False to
//! True (KNOWLEDGE.md D11). Read in torch/serialization.py: at v2.5.1 an
//! unset `weights_only` becomes False (with a warning); at v2.6.0 it becomes
//! `_default_to_weights_only(pickle_module)`, i.e. True, and a pickle that
//! holds anything beyond tensors and allowlisted types fails with "Weights
//! only load failed ... Unsupported global". `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`
//! restores False where the call site did not pass `weights_only` (same
//! file, v2.6.0).
//!
//! Whether a workload hits it depends on what it loads: pickled checkpoints
//! (`.pt`, `.bin`, `.ckpt` through torch.load) can, safetensors cannot. No
//! manifest field says so yet; the rule reads the proposed
//! `workload.checkpoint_format` (`pickle` or `safetensors`) and asks for it.
#![no_std]

use pitfall_sdk::prelude::*;

const NEW_DEFAULT: &str = ">=2.6.0";
const FORMAT: &str = "workload.checkpoint_format";
const ESCAPE: &str = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    match torch.version_in(NEW_DEFAULT) {
        None => return Outcome::needs(torch.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    if m.env(ESCAPE).is_some_and(|v| matches!(v.trim(), "1" | "y" | "yes" | "true")) {
        return Outcome::clear();
    }
    let Some(format) = m.text(FORMAT) else {
        return Outcome::needs(FORMAT);
    };
    if !format.trim().eq_ignore_ascii_case("pickle") {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(FORMAT)
        .param_field("torch", torch.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
