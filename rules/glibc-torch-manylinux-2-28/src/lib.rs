//! torch >= 2.7.0 (x86_64) and >= 2.6.0 (aarch64) ship only manylinux_2_28
//! wheels, which need glibc 2.28 (PyPI wheel tags at both sides of each
//! boundary; KNOWLEDGE.md D23; pytorch issue 156215). `host.glibc` is a
//! proposed field.
#![no_std]

use pitfall_sdk::prelude::*;

/// glibc of the distributions recognised without `host.glibc`: CentOS 7
/// (pytorch issues 150724, 142043) and Ubuntu 18.04 (uv names
/// manylinux_2_27 there, pytorch issue 156215).
fn glibc_of_os(m: &Manifest) -> Option<&'static str> {
    let id = m.text("host.os.id")?;
    let version = m.text("host.os.version")?;
    match (id.as_str(), version.trim()) {
        ("centos", v) if v == "7" || v.starts_with("7.") => Some("2.17"),
        ("ubuntu", "18.04") => Some("2.27"),
        _ => None,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    if m.built_from_source("torch") {
        return Outcome::clear();
    }
    // (first release with manylinux_2_28-only wheels, last one before it)
    let (first, last) = match m.arch().as_deref() {
        Some("x86_64") => (">=2.7", "2.6.0"),
        Some("aarch64") => (">=2.6", "2.5.1"),
        Some(_) => return Outcome::clear(),
        None => (">=2.7", "2.6.0"),
    };
    match torch.version_in(first) {
        Some(true) => {}
        Some(false) => return Outcome::clear(),
        None => return Outcome::needs("packages.torch.version"),
    }
    if m.arch().is_none() {
        return Outcome::needs("host.arch");
    }
    let glibc_text = match m.text("host.glibc") {
        Some(text) => text,
        None => match glibc_of_os(m) {
            Some(text) => String::from(text),
            None => return Outcome::needs("host.glibc"),
        },
    };
    let Ok(glibc) = Dotted::parse(&glibc_text) else {
        return Outcome::needs("host.glibc");
    };
    if Dotted::parse("2.28").is_ok_and(|floor| glibc >= floor) {
        return Outcome::clear();
    }
    let arch = m.arch().unwrap_or_default();
    let mut outcome = Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence("host.arch")
        .param_field("torch", torch.version_path().as_str())
        .param("arch", &arch)
        .param("glibc", glibc.as_str())
        .param("last", last);
    outcome = if m.has("host.glibc") {
        outcome.evidence("host.glibc")
    } else {
        outcome.evidence("host.os.id").evidence("host.os.version")
    };
    outcome
}

pitfall_sdk::export_rule!(evaluate);
