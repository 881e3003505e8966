//! Each torchvision release is built against one torch release and pins it
//! exactly (KNOWLEDGE.md: wheel/ABI family). Read in the Requires-Dist of
//! the PyPI wheels: torchvision 0.15.0 requires torch==2.0.0, 0.16.0 ==2.1.0,
//! ... 0.29.0 ==2.14.0 (every minor from 0.15 to 0.29; also 0.19.1 ==2.4.1,
//! 0.20.1 ==2.5.1, 0.22.1 ==2.7.1): torchvision 0.N goes with torch
//! 2.(N-15). With another torch minor installed (pip --no-deps, a later
//! `pip install torch`, an image that upgrades torch), torchvision's compiled
//! operators fail to register and importing it raises "operator
//! torchvision::nms does not exist". Only minor mismatches are reported.
#![no_std]

use pitfall_sdk::prelude::*;

/// torchvision minors whose torch pin was read (0.15 .. 0.29).
const FIRST_MINOR: u64 = 15;
const LAST_MINOR: u64 = 29;

const REMEDY_PIN_TORCHVISION: u32 = 0;
const REMEDY_PIN_TORCH: u32 = 1;

fn major_minor(v: &Version) -> (u64, u64) {
    let r = v.release();
    (r.first().copied().unwrap_or(0), r.get(1).copied().unwrap_or(0))
}

fn push_version(out: &mut String, parts: &[u64]) {
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        pitfall_sdk::text::push_int(out, *p as i64);
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(torch), Some(tv)) = (m.package("torch"), m.package("torchvision")) else {
        return Outcome::clear();
    };
    let Some(tv_version) = tv.version() else {
        return Outcome::needs(tv.version_path().as_str());
    };
    let (tv_major, tv_minor) = major_minor(&tv_version);
    if tv_major != 0 || !(FIRST_MINOR..=LAST_MINOR).contains(&tv_minor) {
        return Outcome::clear();
    }
    let Some(torch_version) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    let (t_major, t_minor) = major_minor(&torch_version);
    let wanted = tv_minor - FIRST_MINOR;
    if t_major == 2 && t_minor == wanted {
        return Outcome::clear();
    }
    let mut built_for = String::new();
    push_version(&mut built_for, &[2, wanted]);
    let mut torch_fix = String::new();
    push_version(&mut torch_fix, &[2, wanted, 0]);
    let outcome = Outcome::matched()
        .evidence(tv.version_path().as_str())
        .evidence(torch.version_path().as_str())
        .param_field("torchvision", tv.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param("built_for", &built_for)
        .param("torch_fix", &torch_fix);
    // The torchvision release for this torch, when the table knows it.
    if t_major == 2 && t_minor + FIRST_MINOR <= LAST_MINOR {
        let mut tv_fix = String::new();
        push_version(&mut tv_fix, &[0, t_minor + FIRST_MINOR, 0]);
        return outcome.param("tv_fix", &tv_fix).remedy(REMEDY_PIN_TORCHVISION);
    }
    outcome.param("tv_fix", "").remedy(REMEDY_PIN_TORCH)
}

pitfall_sdk::export_rule!(evaluate);
