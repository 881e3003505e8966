//! bitsandbytes' PyPI wheels carry ROCm libraries only from 0.49.0 (wheel
//! contents of 0.48.2 and 0.49.0; python-package.yml at 0.47.0-0.50.1).
//! Older releases on an AMD GPU have no GPU library; 0.49.x/0.50.x have none
//! for a torch built against a ROCm older than their oldest library.
#![no_std]

use pitfall_sdk::prelude::*;

const NO_ROCM: &str = "<0.49.0";
/// (releases, oldest ROCm library in the wheel).
const OLDEST_ROCM: [(&str, (u64, u64)); 2] =
    [(">=0.49.0,<0.50.0", (6, 2)), (">=0.50.0,<0.50.2", (6, 4))];

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_SOURCE: u32 = 1;

/// The ROCm release of a torch local version (`2.5.1+rocm6.2` gives 6.2).
fn torch_rocm(version: &Version) -> Option<(u64, u64)> {
    let local = version.local()?;
    let rest = local.strip_prefix("rocm")?;
    let mut parts = rest.split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(bnb) = m.package("bitsandbytes") else {
        return Outcome::clear();
    };
    let Some(amd) = m.accelerators().find(|a| a.vendor().as_deref() == Some("amd")) else {
        return Outcome::clear();
    };
    if m.built_from_source("bitsandbytes") {
        return Outcome::clear();
    }
    let version_path = bnb.version_path();
    let base = Outcome::matched()
        .evidence(version_path.as_str())
        .evidence(amd.field_path("vendor").as_str())
        .param_field("bnb", version_path.as_str());
    match bnb.version_in(NO_ROCM) {
        None => return Outcome::needs("packages.bitsandbytes.version"),
        Some(true) => {
            return base
                .param("why", "its PyPI wheels carry ROCm libraries only from 0.49.0")
                .remedy(REMEDY_UPGRADE)
                .remedy(REMEDY_SOURCE);
        }
        Some(false) => {}
    }
    let Some(oldest) = OLDEST_ROCM
        .iter()
        .find(|(spec, _)| bnb.version_in(spec) == Some(true))
        .map(|(_, oldest)| *oldest)
    else {
        return Outcome::clear();
    };
    let Some(torch) = m.package("torch") else {
        return Outcome::needs("packages.torch.version");
    };
    let Some(version) = torch.version() else {
        return Outcome::needs("packages.torch.version");
    };
    let Some(rocm) = torch_rocm(&version) else {
        return Outcome::clear();
    };
    if rocm >= oldest {
        return Outcome::clear();
    }
    let mut why = String::with_capacity(64);
    let mut buf = [0u8; 24];
    why.push_str("torch is built for ROCm ");
    why.push_str(pitfall_sdk::text::format_int(rocm.0 as i64, &mut buf));
    why.push('.');
    why.push_str(pitfall_sdk::text::format_int(rocm.1 as i64, &mut buf));
    why.push_str(", older than the wheel's oldest ROCm library, ");
    why.push_str(pitfall_sdk::text::format_int(oldest.0 as i64, &mut buf));
    why.push('.');
    why.push_str(pitfall_sdk::text::format_int(oldest.1 as i64, &mut buf));
    base.evidence(torch.version_path().as_str()).param("why", &why).remedy(REMEDY_SOURCE)
}

pitfall_sdk::export_rule!(evaluate);
