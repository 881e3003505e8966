//! bitsandbytes' PyPI wheels carry ROCm libraries only from 0.49.0 (wheel
//! contents of 0.48.2 to 0.50.1; python-package.yml at 0.47.0-0.50.1).
//! Older releases on an AMD GPU have no GPU library.
//!
//! From 0.47.0 (the first with a HIP build in CMakeLists.txt) to 0.49.2,
//! cuda_specs.get_cuda_version_string() names the library after
//! `major * 10 + minor` of torch's HIP version while CMake names it
//! `{major}{minor}`: the same for a one-digit minor, but ROCm 7.12 is
//! looked up as rocm82 and built as rocm712 (issue 1890; fixed by PR 1889
//! in 0.50.0). 0.49.x loads exactly that name; 0.50.x falls back to the
//! nearest library of the same ROCm major (cextension.py).
#![no_std]

use pitfall_sdk::prelude::*;
use pitfall_sdk::text::format_int;

const NO_ROCM_WHEEL: &str = "<0.49.0";
/// Releases whose loader names the ROCm library `major * 10 + minor`.
const TAG_BUG: &str = ">=0.47.0,<0.50.0";
/// Releases whose loader takes the nearest library of the same ROCm major.
const SAME_MAJOR_FALLBACK: &str = ">=0.50.0,<0.50.2";
/// (releases, the ROCm libraries of their x86_64 wheel); exact lookup.
const WHEELS: [(&str, &[(u64, u64)]); 2] = [
    (">=0.49.0,<0.49.2", &[(6, 2), (6, 3), (6, 4), (7, 0), (7, 1)]),
    ("==0.49.2", &[(6, 2), (6, 3), (6, 4), (7, 0), (7, 1), (7, 2)]),
];
/// ROCm majors with a library in the 0.50.x wheels (6.4, 7.0, 7.1, 7.2, 7.14).
const FALLBACK_MAJORS: [u64; 2] = [6, 7];

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_SOURCE: u32 = 1;
const REMEDY_TAG_FIX: u32 = 2;
const REMEDY_0_49_2: u32 = 3;

const WHY_NO_WHEEL: &str = "its PyPI wheels carry ROCm libraries only from 0.49.0";

/// The ROCm release of a torch local version (`2.5.1+rocm6.2` gives 6.2,
/// `2.12.0a0+rocm7.12.0a20260304` gives 7.12).
fn torch_rocm(version: &Version) -> Option<(u64, u64)> {
    let local = version.local()?;
    let rest = local.strip_prefix("rocm")?;
    let mut parts = rest.split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

fn push_num(s: &mut String, n: u64) {
    let mut buf = [0u8; 24];
    s.push_str(format_int(n as i64, &mut buf));
}

fn push_rocm(s: &mut String, (major, minor): (u64, u64)) {
    push_num(s, major);
    s.push('.');
    push_num(s, minor);
}

/// "for torch built for ROCm 7.12 it looks for libbitsandbytes_rocm82 ..."
fn why_tag(rocm: (u64, u64)) -> String {
    let mut why = String::from("for torch built for ROCm ");
    push_rocm(&mut why, rocm);
    why.push_str(" it looks for libbitsandbytes_rocm");
    push_num(&mut why, rocm.0 * 10 + rocm.1);
    why.push_str(": 0.47.0 to 0.49.2 name the ROCm library major*10+minor, while it is built and shipped as rocm");
    push_num(&mut why, rocm.0);
    push_num(&mut why, rocm.1);
    why
}

/// "torch is built for ROCm 7.2, and the 0.49.x wheel carries ..."
fn why_missing(rocm: (u64, u64), shipped: &[(u64, u64)]) -> String {
    let mut why = String::from("torch is built for ROCm ");
    push_rocm(&mut why, rocm);
    why.push_str(", and this release's wheel carries libraries for ROCm ");
    for (i, lib) in shipped.iter().enumerate() {
        if i > 0 {
            why.push_str(", ");
        }
        push_rocm(&mut why, *lib);
    }
    why.push_str(" only");
    why
}

/// "torch is built for ROCm 5.7; 0.50.x loads a library of the same major ..."
fn why_no_major(rocm: (u64, u64)) -> String {
    let mut why = String::from("torch is built for ROCm ");
    push_rocm(&mut why, rocm);
    why.push_str("; 0.50.x loads the nearest library of the same ROCm major, and its wheel has ROCm 6.4 to 7.14 only");
    why
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(bnb) = m.package("bitsandbytes") else {
        return Ok(Outcome::clear());
    };
    let Some(amd) = m.accelerators().find(|a| a.vendor().as_deref() == Some("amd")) else {
        return Ok(Outcome::clear());
    };
    let from_source = m.built_from_source("bitsandbytes");
    let version_path = bnb.version_path();
    let base = Outcome::matched()
        .evidence(version_path.as_str())
        .evidence(amd.field_path("vendor").as_str())
        .param_field("bnb", version_path.as_str());
    let no_wheel = bnb.need_version_in(NO_ROCM_WHEEL)?;
    if no_wheel && !from_source {
        // torch's ROCm decides which upgrade helps, not whether it fails.
        let rocm = m.package("torch").and_then(|t| t.version()).and_then(|v| torch_rocm(&v));
        let found = base.param("why", WHY_NO_WHEEL);
        return Ok(match rocm {
            Some((_, minor)) if minor >= 10 => found.remedy(REMEDY_TAG_FIX).remedy(REMEDY_SOURCE),
            // Older than any ROCm library a wheel carries (6.2 in 0.49.x).
            Some(rocm) if rocm < (6, 2) => found.remedy(REMEDY_SOURCE),
            _ => found.remedy(REMEDY_UPGRADE).remedy(REMEDY_SOURCE),
        });
    }
    let tag_bug = bnb.need_version_in(TAG_BUG)?;
    let fallback = bnb.need_version_in(SAME_MAJOR_FALLBACK)?;
    let wheel = WHEELS
        .iter()
        .find(|(spec, _)| bnb.version_in(spec) == Some(true))
        .map(|(_, shipped)| *shipped);
    if !tag_bug && !fallback {
        // 0.50.2 and later are not judged.
        return Ok(Outcome::clear());
    }
    let torch = m.package("torch").ok_or_else(|| Outcome::needs("packages.torch.version"))?;
    let version = torch.version().ok_or_else(|| Outcome::needs("packages.torch.version"))?;
    let Some(rocm) = torch_rocm(&version) else {
        return Ok(Outcome::clear());
    };
    let found = base.evidence(torch.version_path().as_str());
    if tag_bug && rocm.1 >= 10 {
        return Ok(found.param("why", &why_tag(rocm)).remedy(REMEDY_TAG_FIX));
    }
    if from_source {
        return Ok(Outcome::clear());
    }
    if let Some(shipped) = wheel {
        if shipped.contains(&rocm) {
            return Ok(Outcome::clear());
        }
        let found = found.param("why", &why_missing(rocm, shipped));
        return Ok(if rocm == (7, 2) {
            found.remedy(REMEDY_0_49_2).remedy(REMEDY_SOURCE)
        } else {
            found.remedy(REMEDY_SOURCE)
        });
    }
    if fallback && !FALLBACK_MAJORS.contains(&rocm.0) {
        return Ok(found.param("why", &why_no_major(rocm)).remedy(REMEDY_SOURCE));
    }
    Ok(Outcome::clear())
}

pitfall_sdk::export_rule!(evaluate);
