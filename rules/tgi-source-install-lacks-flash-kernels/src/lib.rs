//! TGI 0.9.0 to 2.0.4 installed from source with the documented
//! `BUILD_EXTENSIONS=True make install` get neither flash-attention nor TGI's
//! vLLM paged-attention kernels (separate `make install-flash-attention*` and
//! `make install-vllm` targets), so the flash models fail to import and a
//! sharded launch raises `NotImplementedError` (TGI issues 663 and 804).
//! From 2.1.0 `make install` builds them (server/Makefile `install-cuda`).
#![no_std]

use pitfall_sdk::prelude::*;

/// Releases whose `make install` leaves the kernels out (server/pyproject
/// versions; 2.1.1 and later report `2.0.5-dev0`, outside this range).
const RELEASES: &str = ">=0.9.0,<=2.0.4";
const SERVER: &str = "text-generation-server";
const TGI_IMAGE: &str = "text-generation-inference";
/// Below 7.5 no build helps: tgi-sharded-below-sm75.
const TURING: ComputeCapability = ComputeCapability::new(7, 5);

const REMEDY_IMAGE: u32 = 0;
const REMEDY_UPGRADE: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(server) = m.package(SERVER) else {
        return Outcome::clear();
    };
    // The official image has the kernels built in.
    if m.text_contains("container.image", TGI_IMAGE) == Some(true) {
        return Outcome::clear();
    }
    match server.version_in(RELEASES) {
        None => return Outcome::needs(server.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    // Another vendor's GPUs, or NVIDIA GPUs below 7.5, fail for other reasons.
    let mut accelerators = 0;
    let mut nvidia = 0;
    for a in m.accelerators() {
        accelerators += 1;
        if a.is_nvidia() {
            nvidia += 1;
            if a.compute_capability().is_some_and(|cc| cc < TURING) {
                return Outcome::clear();
            }
        }
    }
    if accelerators > 0 && nvidia == 0 {
        return Outcome::clear();
    }
    let shards = match m.workload().tensor_parallel_size() {
        None => return Outcome::needs("workload.tensor_parallel_size"),
        Some(n) if n <= 1 => return Outcome::clear(),
        Some(n) => n,
    };
    let no_flash = m.package("flash-attn").is_none();
    let no_vllm = m.package("vllm").is_none();
    let missing = match (no_flash, no_vllm) {
        (false, false) => return Outcome::clear(),
        (true, true) => "neither flash-attn nor vllm (TGI's paged-attention kernels)",
        (true, false) => "no flash-attn",
        (false, true) => "no vllm (TGI's paged-attention kernels)",
    };
    // 0.9.0 to 0.9.2 word the refusal differently (models/__init__.py).
    let refusal = if server.version_in("<0.9.3") == Some(true) {
        "requires CUDA and Flash Attention kernels to be installed."
    } else {
        "requires Flash Attention enabled models."
    };
    let release = server.version_text().unwrap_or_default();
    Outcome::matched()
        .evidence(server.version_path().as_str())
        .evidence("workload.tensor_parallel_size")
        .param("tgi", &release)
        .param("missing", missing)
        .param("refusal", refusal)
        .param_int("tp", i64::from(shards))
        .remedy(REMEDY_IMAGE)
        .remedy(REMEDY_UPGRADE)
}

pitfall_sdk::export_rule!(evaluate);
