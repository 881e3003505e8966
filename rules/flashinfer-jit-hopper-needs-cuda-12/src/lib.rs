//! FlashInfer from 0.3.1 JIT-compiles every kernel for `9.0a` on a compute
//! capability 9.x GPU (flashinfer/compilation_context.py appends `a` for
//! major 9; 0.3.0 still used torch's arch flags, sm_90), with the nvcc of
//! CUDA_HOME. nvcc before CUDA 12.0 has no sm_90a (the 11.8.89 wheel's
//! ptxas names sm_90 only), so each JIT build stops with "nvcc fatal :
//! Unsupported gpu architecture 'compute_90a'" (FlashInfer issues 1657 and
//! 1658, H800).
#![no_std]

use pitfall_sdk::prelude::*;

/// The first release whose JIT targets 9.0a for every module on Hopper.
const SM90A_FOR_ALL: &str = ">=0.3.1";
const ARCH_ENV: &str = "FLASHINFER_CUDA_ARCH_LIST";
/// With no usable CUDA from torch, the floor: the first CUDA with sm_90a.
const SM90A_CUDA: &str = "12.0";

/// torch's CUDA from its local version (`2.8.0+cu128` gives `12.8`), when
/// it has sm_90a.
fn torch_cuda(m: &Manifest) -> Option<String> {
    let torch = m.package("torch")?.version()?;
    let (major, minor) = pitfall_sdk::version::cuda_tag(torch.local()?)?;
    if major < 12 {
        return None;
    }
    let mut s = String::with_capacity(8);
    pitfall_sdk::text::push_int(&mut s, major as i64);
    s.push('.');
    pitfall_sdk::text::push_int(&mut s, minor as i64);
    Some(s)
}

fn evaluate(m: &Manifest) -> Outcome {
    // The host files the older wheels' name, flashinfer, under this one.
    let Some(flashinfer) = m.package("flashinfer-python") else {
        return Outcome::clear();
    };
    // Prebuilt modules: what it holds is not compiled here (not claimed).
    if m.package("flashinfer-jit-cache").is_some() {
        return Outcome::clear();
    }
    match flashinfer.need_version_in(SM90A_FOR_ALL) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(undetermined) => return undetermined,
    }
    // The targets: FLASHINFER_CUDA_ARCH_LIST when set, else the GPUs.
    let target = if let Some(list) = m.env(ARCH_ENV) {
        let hopper = list
            .split_whitespace()
            .filter_map(|a| ComputeCapability::parse(a).ok())
            .any(|cc| cc.major == 9);
        if !hopper {
            return Outcome::clear();
        }
        None
    } else {
        let mut unknown = None;
        let mut hopper = None;
        for gpu in m.nvidia_gpus() {
            match gpu.compute_capability() {
                Some(cc) if cc.major == 9 => {
                    hopper = Some((gpu, cc));
                    break;
                }
                Some(_) => {}
                None => {
                    unknown.get_or_insert(gpu);
                }
            }
        }
        match (hopper, unknown) {
            (Some(found), _) => Some(found),
            (None, Some(gpu)) => {
                return Outcome::needs(gpu.field_path("compute_capability").as_str());
            }
            (None, None) => return Outcome::clear(),
        }
    };
    let nvcc = match m.need_tool_version("nvcc") {
        Ok(Some(version)) => version,
        // No toolkit at all: another failure, not judged here.
        Ok(None) => return Outcome::clear(),
        Err(needs) => return needs,
    };
    if nvcc.major() >= 12 {
        return Outcome::clear();
    }
    let cuda = torch_cuda(m).unwrap_or_else(|| String::from(SM90A_CUDA));
    let mut outcome = Outcome::matched()
        .evidence(flashinfer.version_path().as_str())
        .evidence("build.tools.nvcc")
        .param_field("flashinfer", flashinfer.version_path().as_str())
        .param_field("nvcc", "build.tools.nvcc")
        .param("cuda", &cuda);
    let mut cc_buf = [0u8; 24];
    outcome = match &target {
        Some((gpu, cc)) => outcome
            .evidence(gpu.field_path("compute_capability").as_str())
            .param("gpu", &gpu.model().unwrap_or_else(|| String::from("GPU")))
            .param("cc", cc.write_to(&mut cc_buf)),
        None => outcome
            .evidence("env.FLASHINFER_CUDA_ARCH_LIST")
            .param("gpu", "GPUs of FLASHINFER_CUDA_ARCH_LIST")
            .param("cc", "9.x"),
    };
    if let Some(torch) = m.package("torch")
        && torch.version_text().is_some()
    {
        outcome = outcome.evidence(torch.version_path().as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
