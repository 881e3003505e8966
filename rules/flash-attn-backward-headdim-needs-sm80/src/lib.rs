//! FlashAttention's backward pass for large head dimensions needs the shared
//! memory of A100 (8.0) or H100 (9.0): `mha_bwd` checks read in
//! Dao-AILab/flash-attention at every tag from v0.2.1 to v2.7.3:
//!
//! | releases          | refused when                         | allowed GPUs |
//! |-------------------|--------------------------------------|--------------|
//! | 0.2.1 - 0.2.8     | head dim > 64                        | 8.0          |
//! | 1.0.0 - 1.0.9     | head dim > 64                        | 8.0, 9.0     |
//! | 2.0.0 - 2.5.4     | head dim > 192                       | 8.0, 9.0     |
//! | 2.5.5 - 2.6.1     | head dim in (192, 224], or > 192 with dropout | 8.0, 9.0 |
//! | 2.6.2 - 2.7.2.post1 | head dim > 192 with dropout        | 8.0, 9.0     |
//!
//! From 2.7.3 the checks are gone (kernels chosen by shared memory). GPUs
//! below 7.5 (FlashAttention v1) or 8.0 (v2), and Blackwell, are refused
//! outright by other checks (other rules). Reads the proposed
//! `workload.mode` (`training`, `finetuning`, `inference`) and
//! `workload.attention_dropout`.
#![no_std]

use pitfall_sdk::prelude::*;

const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const HOPPER: ComputeCapability = ComputeCapability::new(9, 0);
const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);
const MODE: &str = "workload.mode";
const DROPOUT: &str = "workload.attention_dropout";

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_A100: u32 = 1;

#[derive(Clone, Copy)]
enum Era {
    /// 0.2.1-0.2.8: head dim > 64 needs exactly 8.0.
    V02,
    /// 1.0.x: head dim > 64 needs 8.0 or 9.0.
    V1,
    /// 2.0.0-2.5.4: head dim > 192.
    V2Early,
    /// 2.5.5-2.6.1: (192, 224], or > 192 with dropout.
    V2Mid,
    /// 2.6.2-2.7.2.post1: > 192 with dropout.
    V2Late,
}

const ERAS: [(&str, Era); 5] = [
    (">=0.2.1,<1.0.0", Era::V02),
    (">=1.0.0,<2.0.0", Era::V1),
    (">=2.0.0,<2.5.5", Era::V2Early),
    (">=2.5.5,<2.6.2", Era::V2Mid),
    (">=2.6.2,<2.7.3", Era::V2Late),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(fa) = m.package("flash-attn") else {
        return Outcome::clear();
    };
    let mut era = None;
    for (spec, e) in ERAS.iter() {
        match fa.version_in(spec) {
            None => return Outcome::needs("packages.flash-attn.version"),
            Some(true) => era = Some(*e),
            Some(false) => {}
        }
    }
    let Some(era) = era else {
        return Outcome::clear();
    };
    // The GPU range this era runs on at all; outside it other checks refuse.
    let (low, needs_exact_80) = match era {
        Era::V02 => (TURING, true),
        Era::V1 => (TURING, false),
        _ => (AMPERE, false),
    };
    let mut refused = None;
    for gpu in m.nvidia_gpus() {
        let Some(cc) = gpu.compute_capability() else {
            return Outcome::needs(gpu.field_path("compute_capability").as_str());
        };
        if cc < low || cc >= BLACKWELL {
            continue;
        }
        let allowed = cc == AMPERE || (!needs_exact_80 && cc == HOPPER);
        if !allowed && refused.is_none() {
            refused = Some((gpu, cc));
        }
    }
    let Some((gpu, cc)) = refused else {
        return Outcome::clear();
    };
    // Only training runs the backward pass.
    let Some(mode) = m.text(MODE) else {
        return Outcome::needs(MODE);
    };
    let mode = mode.trim();
    if !(mode.eq_ignore_ascii_case("training") || mode.eq_ignore_ascii_case("finetuning")) {
        return Outcome::clear();
    }
    let head_dim = match m.workload().head_dims().into_iter().max() {
        Some(d) => d,
        None => return Outcome::needs("workload.head_dims"),
    };
    let dropout = || m.number(DROPOUT).map(|p| p > 0.0);
    let limit = match era {
        Era::V02 | Era::V1 => {
            if head_dim <= 64 {
                return Outcome::clear();
            }
            "> 64"
        }
        Era::V2Early => {
            if head_dim <= 192 {
                return Outcome::clear();
            }
            "> 192"
        }
        Era::V2Mid => {
            if head_dim <= 192 {
                return Outcome::clear();
            }
            if head_dim > 224 {
                match dropout() {
                    None => return Outcome::needs(DROPOUT),
                    Some(false) => return Outcome::clear(),
                    Some(true) => {}
                }
                "> 192 with dropout"
            } else {
                "in (192, 224]"
            }
        }
        Era::V2Late => {
            if head_dim <= 192 {
                return Outcome::clear();
            }
            match dropout() {
                None => return Outcome::needs(DROPOUT),
                Some(false) => return Outcome::clear(),
                Some(true) => {}
            }
            "> 192 with dropout"
        }
    };
    // A release without the check for this case on this GPU: FlashAttention-2
    // needs 8.0; above 192 only without dropout (known to be off).
    let fix = if cc < AMPERE {
        None
    } else if head_dim <= 192 {
        Some("2.0.0")
    } else if dropout() != Some(false) {
        None
    } else if head_dim <= 224 {
        Some("2.6.2")
    } else {
        Some("2.5.5")
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let allowed = if needs_exact_80 { "A100 (8.0)" } else { "A100 or H100 (8.0 or 9.0)" };
    let mut outcome = Outcome::matched()
        .evidence(fa.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence("workload.head_dims")
        .evidence(MODE)
        .param_field("fa", fa.version_path().as_str())
        .param_int("head_dim", i64::from(head_dim))
        .param("limit", limit)
        .param("allowed", allowed)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if m.has(DROPOUT) {
        outcome = outcome.evidence(DROPOUT);
    }
    if let Some(fix) = fix {
        outcome = outcome.param("fix", fix).remedy(REMEDY_UPGRADE);
    }
    outcome.remedy(REMEDY_A100)
}

pitfall_sdk::export_rule!(evaluate);
