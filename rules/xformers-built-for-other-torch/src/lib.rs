//! xFormers wheels are compiled against one torch release and pin it
//! exactly (KNOWLEDGE.md: wheel/ABI family). Read in the Requires-Dist of
//! the PyPI wheels, 0.0.23 to 0.0.35:
//! 0.0.23 ==2.1.1, 0.0.23.post1 ==2.1.2, 0.0.24 ==2.2.0, 0.0.25 ==2.2.1,
//! 0.0.25.post1 ==2.2.2, 0.0.26.post1 ==2.3.0, 0.0.27 ==2.3.1,
//! 0.0.27.post1/.post2 ==2.4.0, 0.0.28/.post1 ==2.4.1, 0.0.28.post2 ==2.5.0,
//! 0.0.28.post3, 0.0.29, 0.0.29.post1 ==2.5.1, 0.0.29.post2/.post3 ==2.6.0,
//! 0.0.30 ==2.7.0, 0.0.31/.post1 ==2.7.1, 0.0.32.post1/.post2 ==2.8.0,
//! 0.0.33/.post1 ==2.9.0, 0.0.33.post2 ==2.9.1, 0.0.34 ==2.10.0;
//! 0.0.35 requires torch>=2.10 (built on the PyTorch stable ABI,
//! `-DTORCH_STABLE_ONLY` in setup.py at v0.0.35).
//! With another torch minor installed, loading the extension fails and
//! xformers/_cpp_lib.py warns "xFormers can't load C++/CUDA extensions.
//! xFormers was built for: PyTorch X ... (you have Y)"; its CUDA operators
//! (memory_efficient_attention, ...) are then unavailable. Only a different
//! minor release is reported.
#![no_std]

use pitfall_sdk::prelude::*;

/// (xformers releases, torch minor they are built for).
const BUILT_FOR: [(&str, u64); 10] = [
    (">=0.0.23,<0.0.24", 1),
    (">=0.0.24,<0.0.26", 2),
    (">=0.0.26,<0.0.27.post1", 3),
    (">=0.0.27.post1,<0.0.28.post2", 4),
    (">=0.0.28.post2,<0.0.29.post2", 5),
    (">=0.0.29.post2,<0.0.30", 6),
    (">=0.0.30,<0.0.32", 7),
    (">=0.0.32,<0.0.33", 8),
    (">=0.0.33,<0.0.34", 9),
    (">=0.0.34,<0.0.35", 10),
];
/// From 0.0.35 on: any torch from 2.10.
const STABLE_ABI: &str = ">=0.0.35";
const STABLE_ABI_TORCH: u64 = 10;

/// The xformers release to install for each torch minor 2.1 .. 2.10+.
fn xformers_for(torch_minor: u64) -> Option<&'static str> {
    Some(match torch_minor {
        1 => "0.0.23.post1",
        2 => "0.0.25.post1",
        3 => "0.0.27",
        4 => "0.0.28.post1",
        5 => "0.0.29.post1",
        6 => "0.0.29.post3",
        7 => "0.0.31.post1",
        8 => "0.0.32.post2",
        9 => "0.0.33.post2",
        10.. => "0.0.35",
        _ => return None,
    })
}

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(xf), Some(torch)) = (m.package("xformers"), m.package("torch")) else {
        return Outcome::clear();
    };
    if m.built_from_source("xformers") {
        return Outcome::clear();
    }
    let Some(torch_version) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    let release = torch_version.release();
    let (t_major, t_minor) =
        (release.first().copied().unwrap_or(0), release.get(1).copied().unwrap_or(0));
    // Which torch minor this xformers needs, and whether later ones are fine.
    let (needed, or_newer) = if xf.version_in(STABLE_ABI) == Some(true) {
        (STABLE_ABI_TORCH, true)
    } else {
        let mut found = None;
        for (spec, minor) in BUILT_FOR {
            match xf.version_in(spec) {
                None => return Outcome::needs(xf.version_path().as_str()),
                Some(true) => {
                    found = Some(minor);
                    break;
                }
                Some(false) => {}
            }
        }
        match found {
            Some(minor) => (minor, false),
            None => return Outcome::clear(),
        }
    };
    let fits = t_major == 2 && (t_minor == needed || (or_newer && t_minor > needed));
    if fits {
        return Outcome::clear();
    }
    let mut built_for = String::from("torch 2.");
    pitfall_sdk::text::push_int(&mut built_for, needed as i64);
    if or_newer {
        built_for.push_str(" or newer");
    }
    let outcome = Outcome::matched()
        .evidence(xf.version_path().as_str())
        .evidence(torch.version_path().as_str())
        .param_field("xformers", xf.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param("built_for", &built_for);
    match xformers_for(if t_major == 2 { t_minor } else { 0 }) {
        Some(fix) => outcome.param("fix", fix).remedy(0),
        None => outcome.param("fix", "").remedy(1),
    }
}

pitfall_sdk::export_rule!(evaluate);
