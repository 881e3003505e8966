//! A ROCm build of PyTorch carries GPU code objects for the gfx targets in
//! its PYTORCH_ROCM_ARCH only; on any other AMD GPU every kernel launch
//! fails with "HIP error: invalid device function" (KNOWLEDGE.md D18).
//!
//! The build's targets come from `packages.torch.cuda_arch_list` (ROCm
//! builds report gfx names through torch.cuda.get_arch_list()), else from
//! the wheel build scripts for the releases they were read for:
//! manywheel/build_docker.sh in pytorch/builder, release/2.2 to
//! release/2.4: "gfx900;gfx906;gfx908;gfx90a;gfx1030;gfx1100", plus gfx942
//! for ROCm 6.0 and newer.
//!
//! Consumer RDNA2/RDNA3 parts (gfx1031, gfx1032, gfx1101, gfx1102, gfx1151,
//! ...) are commonly run as the family's listed target with
//! HSA_OVERRIDE_GFX_VERSION (10.3.0 -> gfx1030, 11.0.0 -> gfx1100); the rule
//! honours the variable and offers it as the remedy where the family's
//! target is in the build. A torch built from source is taken as built for
//! the local GPU.
#![no_std]

use pitfall_sdk::prelude::*;

const LIST: &str = "packages.torch.cuda_arch_list";
const OVERRIDE: &str = "HSA_OVERRIDE_GFX_VERSION";
const TABLE_RANGE: &str = ">=2.2.0,<2.5.0";
const TABLE: [&str; 6] = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100"];

const REMEDY_OVERRIDE: u32 = 0;
const REMEDY_BUILD: u32 = 1;

/// `10.3.0` -> `gfx1030`, `9.0.10` -> `gfx90a` (the stepping is one hex digit).
fn override_target(value: &str) -> Option<String> {
    let mut parts = value.trim().split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    let step: u32 = parts.next()?.parse().ok()?;
    let step = char::from_digit(step, 16)?;
    let mut out = String::from("gfx");
    pitfall_sdk::text::push_int(&mut out, i64::from(major));
    pitfall_sdk::text::push_int(&mut out, i64::from(minor));
    out.push(step);
    Some(out)
}

/// The family override for a target, when its family's base target is built.
fn family_override(gfx: &str, list: &[String]) -> Option<&'static str> {
    let has = |t: &str| list.iter().any(|l| l == t);
    if gfx.starts_with("gfx103") && has("gfx1030") {
        Some("10.3.0")
    } else if gfx.starts_with("gfx11") && has("gfx1100") {
        Some("11.0.0")
    } else {
        None
    }
}

/// `rocm6.2` / `rocm6.2.4` -> major 6.
fn rocm_major(local: &str) -> Option<u64> {
    local.strip_prefix("rocm")?.split('.').next()?.parse().ok()
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("amd")) {
        return Outcome::clear();
    }
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    if m.built_from_source("torch") {
        return Outcome::clear();
    }
    let version = torch.version_text();
    let local = version.as_deref().and_then(|v| v.split_once('+')).map(|(_, l)| l);
    // The build's gfx targets, as reported.
    let n = m.len(LIST).unwrap_or(0);
    let mut list: Vec<String> = (0..n)
        .filter_map(|i| m.text(Path::new(LIST).index(i).as_str()))
        .map(|t| String::from(t.trim()))
        .filter(|t| t.starts_with("gfx"))
        .collect();
    let rocm_build = local.is_some_and(|l| l.starts_with("rocm")) || !list.is_empty();
    if !rocm_build {
        return Outcome::clear();
    }
    if list.is_empty() {
        if torch.version_in(TABLE_RANGE) != Some(true) {
            return Outcome::needs(LIST);
        }
        list.extend(TABLE.iter().map(|t| String::from(*t)));
        if local.and_then(rocm_major).is_some_and(|major| major >= 6) {
            list.push(String::from("gfx942"));
        }
    }
    let forced = m.env(OVERRIDE).and_then(|v| override_target(&v));
    for gpu in m.accelerators().filter(|a| a.vendor().as_deref() == Some("amd")) {
        let Some(gfx) = m.text(gpu.field_path("gfx_target").as_str()) else {
            return Outcome::needs(gpu.field_path("gfx_target").as_str());
        };
        let gfx = String::from(gfx.trim());
        let effective = forced.clone().unwrap_or_else(|| gfx.clone());
        if list.contains(&effective) {
            continue;
        }
        let mut archs = String::new();
        for (i, t) in list.iter().enumerate() {
            if i > 0 {
                archs.push_str(", ");
            }
            archs.push_str(t);
        }
        let name = gpu.model().unwrap_or_else(|| String::from("AMD GPU"));
        let mut label = String::from("torch");
        if let Some(v) = &version {
            label.push(' ');
            label.push_str(v);
        }
        let outcome = Outcome::matched()
            .evidence(gpu.field_path("gfx_target").as_str())
            .param("torch", &label)
            .param("archs", &archs)
            .param("gpu", &name)
            .param("gfx", &gfx);
        let outcome = if version.is_some() {
            outcome.evidence(torch.version_path().as_str())
        } else {
            outcome
        };
        // An override already set to something the build lacks is not offered again.
        return match family_override(&gfx, &list).filter(|_| forced.is_none()) {
            Some(value) => outcome.param("override", value).remedy(REMEDY_OVERRIDE),
            None => outcome.param("override", "").remedy(REMEDY_BUILD),
        };
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
