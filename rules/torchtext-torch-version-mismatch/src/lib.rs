//! Each torchtext wheel is compiled against one torch release and pins it
//! exactly (KNOWLEDGE.md: wheel/ABI family). Read in the Requires-Dist of
//! the PyPI wheels (https://pypi.org/project/torchtext/X.Y.Z/#files):
//! 0.8.1 ==1.7.1, 0.9.0 ==1.8.0, 0.9.1 ==1.8.1, 0.10.0 ==1.9.0,
//! 0.10.1 ==1.9.1, 0.11.0 ==1.10.0, 0.11.1 ==1.10.1, 0.11.2 ==1.10.2,
//! 0.12.0 ==1.11.0, 0.13.0 ==1.12.0, 0.13.1 ==1.12.1, 0.14.0 ==1.13.0,
//! 0.14.1 ==1.13.1, 0.15.0 ==2.0.0, 0.15.1 ==2.0.0, 0.15.2 ==2.0.1,
//! 0.16.0 ==2.1.0, 0.16.1 ==2.1.1, 0.16.2 ==2.1.2 (its cp312 wheels
//! ==2.2.0), 0.17.0 ==2.2.0, 0.17.1 ==2.2.1, 0.17.2 ==2.2.2.
//! 0.18.0, the last release, states only torch>=2.3.0; it is built for
//! torch 2.3 and fails with torch 2.4.0 (pytorch/text issue 2272), and
//! runs with 2.3.1 (MinerU issues 811, 815). 0.6.0 to 0.8.0 name torch
//! without a version and are not covered.
//! With another torch, importing torchtext fails to load libtorchtext.so
//! (or _torchtext.so): "undefined symbol" from libtorch.
#![no_std]

use pitfall_sdk::prelude::*;

/// A torchtext release and the torch release its wheels pin.
struct Pin {
    torchtext: [u64; 3],
    torch: [u64; 3],
    /// Another torch some of its wheels pin (0.16.2's cp312 wheels).
    also: Option<[u64; 3]>,
    /// Its pin names no patch release (0.18.0: torch>=2.3.0, built for 2.3).
    any_patch: bool,
}

const fn pin(torchtext: [u64; 3], torch: [u64; 3]) -> Pin {
    Pin { torchtext, torch, also: None, any_patch: false }
}

const PINS: [Pin; 23] = [
    pin([0, 8, 1], [1, 7, 1]),
    pin([0, 9, 0], [1, 8, 0]),
    pin([0, 9, 1], [1, 8, 1]),
    pin([0, 10, 0], [1, 9, 0]),
    pin([0, 10, 1], [1, 9, 1]),
    pin([0, 11, 0], [1, 10, 0]),
    pin([0, 11, 1], [1, 10, 1]),
    pin([0, 11, 2], [1, 10, 2]),
    pin([0, 12, 0], [1, 11, 0]),
    pin([0, 13, 0], [1, 12, 0]),
    pin([0, 13, 1], [1, 12, 1]),
    pin([0, 14, 0], [1, 13, 0]),
    pin([0, 14, 1], [1, 13, 1]),
    pin([0, 15, 0], [2, 0, 0]),
    pin([0, 15, 1], [2, 0, 0]),
    pin([0, 15, 2], [2, 0, 1]),
    pin([0, 16, 0], [2, 1, 0]),
    pin([0, 16, 1], [2, 1, 1]),
    Pin { torchtext: [0, 16, 2], torch: [2, 1, 2], also: Some([2, 2, 0]), any_patch: false },
    pin([0, 17, 0], [2, 2, 0]),
    pin([0, 17, 1], [2, 2, 1]),
    pin([0, 17, 2], [2, 2, 2]),
    // torch>=2.3.0 on PyPI; 2.3.1 is the torch to install with it.
    Pin { torchtext: [0, 18, 0], torch: [2, 3, 1], also: None, any_patch: true },
];

const REMEDY_PIN_TORCH: u32 = 0;
const REMEDY_PIN_TORCHTEXT: u32 = 1;

/// The first three release numbers (missing ones are 0): the public
/// version without its local part (`2.4.0+cu121` -> 2.4.0).
fn release3(v: &Version) -> [u64; 3] {
    let r = v.release();
    [
        r.first().copied().unwrap_or(0),
        r.get(1).copied().unwrap_or(0),
        r.get(2).copied().unwrap_or(0),
    ]
}

/// Whether `torch` is of a minor release the pin names. A patch apart is
/// not reported: the wheels pin it, but no report shows such a pair
/// failing to import, and libtorch keeps its symbols within a minor.
fn fits(p: &Pin, torch: [u64; 3]) -> bool {
    torch[..2] == p.torch[..2] || p.also.is_some_and(|also| torch[..2] == also[..2])
}

fn push_version(out: &mut String, parts: &[u64]) {
    for (i, n) in parts.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        pitfall_sdk::text::push_int(out, *n as i64);
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(tt), Some(torch)) = (m.package("torchtext"), m.package("torch")) else {
        return Outcome::clear();
    };
    let Some(tt_version) = tt.version() else {
        return Outcome::needs(tt.version_path().as_str());
    };
    let tt_release = release3(&tt_version);
    let Some(p) = PINS.iter().find(|p| p.torchtext == tt_release) else {
        return Outcome::clear();
    };
    let Some(torch_version) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    let torch_release = release3(&torch_version);
    if fits(p, torch_release) {
        return Outcome::clear();
    }
    let mut built_for = String::new();
    if p.any_patch {
        push_version(&mut built_for, &p.torch[..2]);
    } else {
        push_version(&mut built_for, &p.torch);
    }
    let mut torch_fix = String::new();
    push_version(&mut torch_fix, &p.torch);
    let outcome = Outcome::matched()
        .evidence(tt.version_path().as_str())
        .evidence(torch.version_path().as_str())
        .param_field("torchtext", tt.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param("built_for", &built_for)
        .param("torch_fix", &torch_fix);
    // The torchtext release built for the installed torch, if any: the
    // last one pinning its minor release.
    let fix = PINS.iter().rev().find(|q| q.torch[..2] == torch_release[..2]);
    match fix {
        Some(q) => {
            let mut tt_fix = String::new();
            push_version(&mut tt_fix, &q.torchtext);
            outcome.param("tt_fix", &tt_fix).remedy(REMEDY_PIN_TORCH).remedy(REMEDY_PIN_TORCHTEXT)
        }
        None => outcome.param("tt_fix", "").remedy(REMEDY_PIN_TORCH),
    }
}

pitfall_sdk::export_rule!(evaluate);
