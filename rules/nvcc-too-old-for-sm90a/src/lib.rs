//! `sm_90a`, Hopper's arch-specific target (wgmma, TMA, setmaxnreg), came
//! one release after Hopper's own: the ptxas of NVIDIA's nvcc 11.8.89 wheel
//! names sm_90 and compute_90 but not sm_90a, the 12.0.76 one names
//! sm_90a and compute_90a. A build that compiles for `9.0a` with an older
//! nvcc stops with "nvcc fatal : Unsupported gpu architecture
//! 'compute_90a'" (vLLM PR 5141 with /usr/local/cuda-11.8/bin/nvcc;
//! FlashInfer issues 1657 and 1658 on H800).
//!
//! Two ways to get there: the build's arch list asks for `9.0a`, or vLLM
//! 0.6.3's CMake adds it on its own. Every vLLM release from 0.4.3 to 0.12.0
//! guards its 9.0a kernels with `CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER
//! 12.0` (or a later CUDA), except 0.6.3: its scaled_mm_c2x list is
//! "7.5;8.0;8.6;8.9;9.0;9.0a", outside the guard, and
//! cuda_archs_loose_intersection adds 9.0a whenever the targets hold 9.0;
//! 0.6.3.post1 dropped 9.0a from it (vLLM PR 9386, "Fix CUDA 11.8 Build").
#![no_std]

use pitfall_sdk::prelude::*;

const ARCH_LIST: &str = "build.torch_cuda_arch_list";
const NVCC: &str = "build.tools.nvcc";
const VLLM_VERSION: &str = "packages.vllm.version";
/// The one vLLM release whose CMake compiles 9.0a without a CUDA 12 guard.
const VLLM_UNGUARDED: &str = "==0.6.3";

const REMEDY_CUDA12: u32 = 0;
const REMEDY_VLLM: u32 = 1;

const WHY_LIST: &str = "Hopper's arch-specific target in the build's arch list";
const WHY_VLLM: &str = "which vLLM 0.6.3's CMake adds to its scaled_mm_c2x kernels whenever the build targets 9.0, with no CUDA 12 guard";

/// Whether the build's arch list asks for Hopper's arch-specific code.
fn asks_for_sm90a(m: &Manifest) -> bool {
    m.torch_cuda_arch_list().iter().any(|cc| cc.major == 9 && cc.suffix() == Some('a'))
}

/// Whether a source build of vLLM targets plain 9.0 (the arch list, else
/// the local GPUs, as torch's CMake picks them).
fn vllm_targets_sm90(m: &Manifest) -> bool {
    m.built_from_source("vllm")
        && m.cuda_build_targets().iter().any(|cc| cc.major == 9 && cc.minor == 0)
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let by_list = asks_for_sm90a(m);
    if !by_list && !vllm_targets_sm90(m) {
        return Ok(Outcome::clear());
    }
    let Some(version) = m.need_tool_version("nvcc")? else {
        // Listed as absent: this build does not compile CUDA with it.
        return Ok(Outcome::clear());
    };
    if version.major() >= 12 {
        return Ok(Outcome::clear());
    }
    let found = Outcome::matched().evidence(NVCC).param_field("nvcc", NVCC);
    if by_list {
        return Ok(found.evidence(ARCH_LIST).param("why", WHY_LIST).remedy(REMEDY_CUDA12));
    }
    let Some(vllm) = m.package("vllm") else {
        return Err(Outcome::needs(VLLM_VERSION));
    };
    if !vllm.need_version_in(VLLM_UNGUARDED)? {
        return Ok(Outcome::clear());
    }
    let found = found.evidence(vllm.version_path().as_str());
    let found = if m.has(ARCH_LIST) {
        found.evidence(ARCH_LIST)
    } else {
        match m.nvidia_gpus().find(|g| g.compute_capability().is_some_and(|cc| cc.major == 9)) {
            Some(gpu) => found.evidence(gpu.field_path("compute_capability").as_str()),
            None => found,
        }
    };
    Ok(found.param("why", WHY_VLLM).remedy(REMEDY_CUDA12).remedy(REMEDY_VLLM))
}

pitfall_sdk::export_rule!(evaluate);
