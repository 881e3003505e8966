//! NCCL 2.25 fails on GPUs of compute capability 12.0 (RTX 5090, RTX PRO
//! 6000 Blackwell): its kernels are launched with 82240 bytes of dynamic
//! shared memory (ncclCollUnroll 8 for every GPU from 8.0), more than those
//! GPUs let them take (79856 in the reports). 2.25.1 only logs
//! "ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856" at init
//! and the launch then fails (nccl-tests issues 287 and 291, NCCL issue
//! 1637). NCCL 2.26.2 ("Fix shared memory usage on recent Blackwell GPUs")
//! unrolls 6 on cudaArch 1200 (61760 bytes).
//!
//! NCCL runs only when GPUs talk to each other: one GPU is clear. NCCL
//! before 2.25.1 on these GPUs is `nccl-before-2-25-on-blackwell`'s.
#![no_std]

use pitfall_sdk::prelude::*;

/// NCCL's 2.25 releases (PEP 440, by the host): 2.25.1 is the only one.
const BROKEN: &str = ">=2.25.1,<2.26.2";
/// The packages that carry libnccl: PyPI's CUDA 12 build, conda's `nccl`.
const NCCL_PACKAGES: [&str; 2] = ["nvidia-nccl-cu12", "nccl"];
/// The one capability NCCL 2.26.2's fix names (`cudaArch == 1200`).
const SM120: ComputeCapability = ComputeCapability::new(12, 0);

const REMEDY_PIP: u32 = 0;
const REMEDY_OTHER: u32 = 1;

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some((gpu, cc)) = m.need_nvidia_gpu_where(|cc| cc == SM120)? else {
        return Ok(Outcome::clear());
    };
    if !m.uses_several_gpus() {
        return Ok(Outcome::clear());
    }
    let Some((i, nccl)) = m.first_package_in(&NCCL_PACKAGES, BROKEN)? else {
        return Ok(Outcome::clear());
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Ok(Outcome::matched()
        .evidence(nccl.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("package", NCCL_PACKAGES[i])
        .param_field("nccl", nccl.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut buf))
        .remedy(if i == 0 { REMEDY_PIP } else { REMEDY_OTHER }))
}

pitfall_sdk::export_rule!(evaluate);
