//! nvcc older than CUDA 10.0 has no Turing target (sm_75: RTX 20xx, GTX
//! 16xx, T4, Quadro RTX, TITAN RTX): clang's CUDA table
//! (clang/lib/Basic/Cuda.cpp, MinVersionForCudaArch) gives CUDA 10.0 as
//! the first toolkit with sm_75 (sm_72 9.1, sm_70 9.0). The build stops
//! with "nvcc fatal : Unsupported gpu architecture 'compute_75'"
//! (detectron2 issues 149 and 272 with CUDA 9.2, 199 with nvcc 9.0.176).
//! NVIDIA's own nvcc 9.2 and 10.0 binaries were not read, hence a warning.
#![no_std]

use pitfall_sdk::prelude::*;

const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);

fn evaluate(m: &Manifest) -> Outcome {
    if !m.cuda_build_targets().into_iter().any(|cc| cc >= TURING && cc < AMPERE) {
        return Outcome::clear();
    }
    let version = match m.need_tool_version("nvcc") {
        Ok(Some(version)) => version,
        // Listed as absent: this build does not compile CUDA with it.
        Ok(None) => return Outcome::clear(),
        Err(needs) => return needs,
    };
    if version.major() >= 10 {
        return Outcome::clear();
    }
    let mut outcome =
        Outcome::matched().evidence("build.tools.nvcc").param_field("nvcc", "build.tools.nvcc");
    if m.has("build.torch_cuda_arch_list") {
        outcome = outcome.evidence("build.torch_cuda_arch_list");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
