//! NVIDIA Container Toolkit releases before 1.17.4 miss published security
//! fixes (release notes: 1.16.2 CVE-2024-0132/0133, 1.17.0 CVE-2024-0134,
//! 1.17.3 CVE-2024-0135/0136/0137, 1.17.4 CVE-2025-23359).
#![no_std]

use pitfall_sdk::prelude::*;

/// (still affected below this release, the CVEs it fixed), oldest first.
const FIXES: [(&str, &str); 4] = [
    ("<1.16.2", "CVE-2024-0132, CVE-2024-0133"),
    ("<1.17.0", "CVE-2024-0134"),
    ("<1.17.3", "CVE-2024-0135, CVE-2024-0136, CVE-2024-0137"),
    ("<1.17.4", "CVE-2025-23359"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(toolkit) = m.package("nvidia-container-toolkit") else {
        return Outcome::clear();
    };
    let mut cves = String::new();
    for (below, fixed) in FIXES {
        match toolkit.version_in(below) {
            Some(true) => {
                if !cves.is_empty() {
                    cves.push_str(", ");
                }
                cves.push_str(fixed);
            }
            Some(false) => {}
            // No version, or one that is not PEP 440 (deb `1.17.3-1` is).
            None => return Outcome::needs("packages.nvidia-container-toolkit.version"),
        }
    }
    if cves.is_empty() {
        return Outcome::clear();
    }
    let path = toolkit.version_path();
    Outcome::matched()
        .evidence(path.as_str())
        .param_field("version", path.as_str())
        .param("cves", &cves)
}

pitfall_sdk::export_rule!(evaluate);
