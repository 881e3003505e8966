//! Every SGLang release pins one torch release, because its kernel package
//! (sgl-kernel) is compiled against that libtorch and is "only guaranteed to
//! work with the version of PyTorch it is built with" (sglang issue 5247,
//! a PyTorch maintainer; confirmed there to fail with torch 2.7 when built
//! with 2.5.1). The pins, read in the Requires-Dist of every SGLang release
//! on PyPI from 0.4.4 to 0.5.23 (the `srt` extra up to 0.5.2, the main
//! requirements after):
//! - 0.4.4 .. 0.4.5.post2: torch==2.5.1;  0.4.5.post3 .. 0.4.6.post5: ==2.6.0;
//! - 0.4.7 .. 0.4.10: ==2.7.1;  0.5.0rc0 .. 0.5.5.post3: ==2.8.0 (0.5.3.post2
//!   .. 0.5.4.post1 also ==2.9.0 in the `cu130` extra);
//! - 0.5.6 .. 0.5.10.post1: ==2.9.1;  0.5.11 .. 0.5.17: ==2.11.0;
//! - 0.5.18 .. 0.5.21: ==2.13.0;  0.5.22, 0.5.23: ==2.14.1.
//!
//! Another torch minor installed next to it (pip --no-deps, a later torch
//! install) makes `import sgl_kernel` fail with "undefined symbol". Only a
//! different minor release is reported.
//!
//! SGLang's CUDA 13 image replaces the pin: its Dockerfile (at the commit
//! building SGL_VERSION=0.5.5, sglang 004740a9cb3dbf6153455fb38b447021e3e07236)
//! installs the `+cu130` sgl-kernel wheel and then `torch==2.9.0` from the
//! cu130 index ("Until torch 2.9 and cu13 are stable we manually update
//! torch if you are on CUDA 13"). So torch 2.9 with a `+cu130` local tag is
//! that image's pairing for the releases before 0.5.6 (which pins 2.9.1
//! itself), not a mismatch.
#![no_std]

use pitfall_sdk::prelude::*;

/// (SGLang releases, pinned torch minor, another accepted minor, the pin).
const PINS: [(&str, u64, Option<u64>, &str); 9] = [
    (">=0.4.4,<0.4.5.post3", 5, None, "2.5.1"),
    (">=0.4.5.post3,<0.4.7", 6, None, "2.6.0"),
    (">=0.4.7,<0.5.0rc0", 7, None, "2.7.1"),
    (">=0.5.3.post2,<0.5.4.post2", 8, Some(9), "2.8.0"),
    (">=0.5.0rc0,<0.5.6", 8, None, "2.8.0"),
    (">=0.5.6,<0.5.11", 9, None, "2.9.1"),
    (">=0.5.11,<0.5.18", 11, None, "2.11.0"),
    (">=0.5.18,<0.5.22", 13, None, "2.13.0"),
    (">=0.5.22,<=0.5.23", 14, None, "2.14.1"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(sglang), Some(torch)) = (m.package("sglang"), m.package("torch")) else {
        return Outcome::clear();
    };
    let mut pin = None;
    for row in PINS {
        match sglang.version_in(row.0) {
            None => return Outcome::needs(sglang.version_path().as_str()),
            Some(true) => {
                pin = Some(row);
                break;
            }
            Some(false) => {}
        }
    }
    let Some((_, minor, also, exact)) = pin else {
        return Outcome::clear();
    };
    let Some(version) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    let release = version.release();
    let (t_major, t_minor) =
        (release.first().copied().unwrap_or(0), release.get(1).copied().unwrap_or(0));
    if t_major == 2 && (t_minor == minor || also == Some(t_minor)) {
        return Outcome::clear();
    }
    let cuda13_image = t_major == 2
        && t_minor == 9
        && version.local() == Some("cu130")
        && sglang.version_in(">=0.5.3.post2,<0.5.6") == Some(true);
    if cuda13_image {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(sglang.version_path().as_str())
        .evidence(torch.version_path().as_str())
        .param_field("sglang", sglang.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param("pin", exact)
}

pitfall_sdk::export_rule!(evaluate);
