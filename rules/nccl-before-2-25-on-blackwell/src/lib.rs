//! NCCL added Blackwell in 2.25.1 (v2.25.1-1: "Add Blackwell/SM100
//! support"; makefiles/common.mk compiles sm_100 and sm_120 from then on,
//! with CUDA 12.8 or newer; v2.24.3-1 stops at sm_90). Its maintainers
//! call 2.25.1 the first release that supports Blackwell (NCCL issue
//! 1611: 2.21.5 on GB200 crashed at 10 and 12 nodes, 2.25.1 ran). The PyPI
//! wheels of nvidia-nccl-cu12 before 2.25.1 carry SASS for sm_50 to sm_90
//! only (plus compute_90 PTX in relocatable objects); the error an older
//! NCCL prints on a Blackwell GPU was not read in any source, so this is a
//! warning.
//!
//! NCCL runs only when GPUs talk to each other: one GPU is clear.
//!
//! On compute capability 12.0, 2.25.1 still fails (its kernels ask for
//! more shared memory than those GPUs allow; fixed in 2.26.2, rule
//! `nccl-2-25-shared-memory-on-sm120`), so conda's nccl is upgraded to
//! 2.26.2 there.
#![no_std]

use pitfall_sdk::prelude::*;

/// NCCL's own releases before Blackwell support (PEP 440, by the host).
const BEFORE_BLACKWELL: &str = "<2.25.1";
/// The packages that carry libnccl: PyPI's CUDA 12 build, conda's `nccl`.
const NCCL_PACKAGES: [&str; 2] = ["nvidia-nccl-cu12", "nccl"];

const REMEDY_PIP: u32 = 0;
const REMEDY_OTHER: u32 = 1;
const REMEDY_OTHER_SM120: u32 = 2;

/// The capability on which 2.25.1 fails as well (NCCL 2.26.2's fix names
/// `cudaArch == 1200`).
const SM120: ComputeCapability = ComputeCapability::new(12, 0);

fn is_blackwell(cc: ComputeCapability) -> bool {
    cc.major == 10 || cc.major == 12
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some((gpu, cc)) = m.need_nvidia_gpu_where(is_blackwell)? else {
        return Ok(Outcome::clear());
    };
    if !m.uses_several_gpus() {
        return Ok(Outcome::clear());
    }
    let Some((i, nccl)) = m.first_package_in(&NCCL_PACKAGES, BEFORE_BLACKWELL)? else {
        return Ok(Outcome::clear());
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let remedy = if i == 0 {
        REMEDY_PIP
    } else if m.nvidia_gpus().any(|g| g.compute_capability() == Some(SM120)) {
        REMEDY_OTHER_SM120
    } else {
        REMEDY_OTHER
    };
    let mut buf = [0u8; 24];
    Ok(Outcome::matched()
        .evidence(nccl.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("package", NCCL_PACKAGES[i])
        .param_field("nccl", nccl.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut buf))
        .remedy(remedy))
}

pitfall_sdk::export_rule!(evaluate);
