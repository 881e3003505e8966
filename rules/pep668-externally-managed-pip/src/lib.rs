//! PEP 668: pip (23.0+) refuses to install into an interpreter whose stdlib
//! directory holds EXTERNALLY-MANAGED, outside a virtualenv (pip's
//! check_externally_managed; KNOWLEDGE.md D16; vllm issue 21677).
//! `python.externally_managed` is a proposed field.
#![no_std]

use pitfall_sdk::prelude::*;

/// The distributions known to ship the marker: Debian 12+, Ubuntu 23.04+.
fn os_ships_marker(m: &Manifest) -> bool {
    let Some(id) = m.text("host.os.id") else { return false };
    let Some(version) = m.text("host.os.version").and_then(|v| Dotted::parse(&v).ok()) else {
        return false;
    };
    let at_least = |floor: &str| Dotted::parse(floor).is_ok_and(|f| version >= f);
    match id.as_str() {
        "debian" => at_least("12"),
        "ubuntu" => at_least("23.04"),
        _ => false,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.env("VIRTUAL_ENV").is_some_and(|v| !v.trim().is_empty()) {
        return Outcome::clear();
    }
    // pip reads PIP_<OPTION> from the environment (its tests set this one).
    if m.env("PIP_BREAK_SYSTEM_PACKAGES").is_some_and(|v| {
        matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
    }) {
        return Outcome::clear();
    }
    match m.boolean("python.externally_managed") {
        Some(true) => {}
        Some(false) => return Outcome::clear(),
        None => {
            return if os_ships_marker(m) {
                Outcome::needs("python.externally_managed")
            } else {
                Outcome::clear()
            };
        }
    }
    // pip before 23.0 ignores the marker.
    if m.package("pip").and_then(|p| p.version_in("<23.0")) == Some(true) {
        return Outcome::clear();
    }
    let outcome = Outcome::matched().evidence("python.externally_managed");
    if m.has("python.executable") {
        outcome.evidence("python.executable").param_field("python", "python.executable")
    } else {
        outcome.param("python", "the system Python")
    }
}

pitfall_sdk::export_rule!(evaluate);
