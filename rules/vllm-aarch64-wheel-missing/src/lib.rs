//! vLLM's aarch64 wheels on PyPI and the glibc their platform tags require
//! (pip's candidate lists per tag, queried 2026-12-06): none before 0.10.2;
//! manylinux2014 for 0.10.2-0.11.2; manylinux_2_31 for 0.12.0-0.19.1;
//! manylinux_2_35 for 0.20.0-0.20.2; manylinux_2_28 for 0.22.0-0.34.0.
//! Without a fitting wheel pip compiles the sdist (none for 0.15.x).
//!
//! The host's glibc comes from the proposed `host.glibc`.
#![no_std]

use pitfall_sdk::prelude::*;

const NO_WHEEL: &str = "<0.10.2";
const GLIBC: &str = "host.glibc";
/// (releases, glibc their aarch64 wheel needs, its tag). 0.10.2-0.11.2 need
/// only glibc 2.17 and are not listed; 0.21.0 is not judged.
const FLOORS: [(&str, &str, &str); 3] = [
    (">=0.12.0,<0.20.0", "2.31", "manylinux_2_31"),
    (">=0.20.0,<0.21.0", "2.35", "manylinux_2_35"),
    (">=0.22.0,<0.34.1", "2.28", "manylinux_2_28"),
];

const REMEDY_PIN: u32 = 0;
const REMEDY_SOURCE: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    if m.arch().as_deref() != Some("aarch64") {
        return Outcome::clear();
    }
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.built_from_source("vllm") {
        return Outcome::clear();
    }
    let version_path = vllm.version_path();
    match vllm.version_in(NO_WHEEL) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(true) => {
            return Outcome::matched()
                .evidence(version_path.as_str())
                .evidence("host.arch")
                .param_field("vllm", version_path.as_str())
                .param("why", "no aarch64 wheel before 0.10.2")
                .param("fix", "0.10.2")
                .param("fix_tag", "manylinux2014, glibc 2.17")
                .remedy(REMEDY_PIN)
                .remedy(REMEDY_SOURCE);
        }
        Some(false) => {}
    }
    let Some((floor, tag)) = FLOORS
        .iter()
        .find(|(spec, _, _)| vllm.version_in(spec) == Some(true))
        .map(|(_, floor, tag)| (*floor, *tag))
    else {
        return Outcome::clear();
    };
    let Some(glibc) = m.text(GLIBC) else {
        return Outcome::needs(GLIBC);
    };
    let below = match dotted_lt(&glibc, floor) {
        None => return Outcome::needs(GLIBC),
        Some(below) => below,
    };
    if !below {
        return Outcome::clear();
    }
    // The newest range whose wheel this glibc accepts.
    let (fix, fix_tag) = if dotted_ge(&glibc, "2.28") == Some(true) {
        ("0.22.0", "manylinux_2_28, glibc 2.28")
    } else {
        ("0.11.2", "manylinux2014, glibc 2.17")
    };
    let mut why = String::with_capacity(64);
    why.push_str("its wheel is ");
    why.push_str(tag);
    why.push_str(", glibc ");
    why.push_str(floor);
    why.push_str(" or newer, and this host has glibc ");
    why.push_str(glibc.trim());
    Outcome::matched()
        .evidence(version_path.as_str())
        .evidence(GLIBC)
        .param_field("vllm", version_path.as_str())
        .param("why", &why)
        .param("fix", fix)
        .param("fix_tag", fix_tag)
        .remedy(REMEDY_PIN)
        .remedy(REMEDY_SOURCE)
}

pitfall_sdk::export_rule!(evaluate);
