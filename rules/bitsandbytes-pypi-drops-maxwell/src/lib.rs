//! bitsandbytes' PyPI wheels have no Maxwell (compute capability 5.x) code
//! from 0.48.0 on. Read in .github/scripts/build-cuda.sh: at 0.47.0 the
//! Linux x86-64 CUDA 11.8-12.6 libraries are built for "50;60;70;75;80;86;89;90",
//! at 0.48.0 for "60;70;75;80;86;89;90" (the CUDA 12.8/12.9/13.0 libraries
//! start at 7.0 or 7.5 in both); docs/source/installation.mdx from 0.48.0:
//! "Maxwell support is not included in PyPI distributions from v0.48.0 on
//! and must be built from source" (bitsandbytes PR 1755). Windows wheels
//! still list sm50 in those docs, and aarch64 wheels start at sm75, so the
//! rule reports Linux x86-64 only. A source build is left out (it was still
//! possible for Maxwell in 0.48; PR 1806 later removed it).
#![no_std]

use pitfall_sdk::prelude::*;

const BNB: &str = "bitsandbytes";
const WITHOUT_MAXWELL: &str = ">=0.48.0";
const PASCAL: ComputeCapability = ComputeCapability::new(6, 0);

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(bnb) = m.package(BNB) else {
        return Outcome::clear();
    };
    if m.built_from_source(BNB)
        || m.arch().as_deref() == Some("aarch64")
        || m.text("host.os.id").is_some_and(|os| os == "windows")
    {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= PASCAL {
        return Outcome::clear();
    }
    match bnb.version_in(WITHOUT_MAXWELL) {
        None => return Outcome::needs(bnb.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Outcome::matched()
        .evidence(bnb.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("version", bnb.version_path().as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf))
}

pitfall_sdk::export_rule!(evaluate);
