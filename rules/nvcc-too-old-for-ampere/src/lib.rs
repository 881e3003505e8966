//! nvcc older than CUDA 11.0 has no Ampere A100 target (sm_80), and nvcc
//! 11.0 has no GA10x target (sm_86, RTX 30xx, A10, A40, A6000): clang's CUDA
//! table (LLVM review D88668) gives CUDA 11.0 as the first toolkit with
//! sm_80 and CUDA 11.1 as the first with sm_86. The build stops with
//! "nvcc fatal : Unsupported gpu architecture 'compute_86'" (Pytorch-
//! Correlation-extension issue 54, CUDA 11.0) or 'compute_80' (bevfusion
//! issue 127, CUDA 10.2). NVIDIA's own nvcc 11.0 and 11.1 binaries were not
//! read (PyPI's nvidia-cuda-nvcc-cu11 starts at 11.7.99), hence a warning.
#![no_std]

use pitfall_sdk::prelude::*;

const A100: ComputeCapability = ComputeCapability::new(8, 0);
const GA10X: ComputeCapability = ComputeCapability::new(8, 6);
/// sm_87 (Jetson Orin, boundary not read) and later: not this rule's cases.
const ORIN: ComputeCapability = ComputeCapability::new(8, 7);

/// The first CUDA release whose nvcc compiles for `cc`.
fn needs(cc: ComputeCapability) -> (u64, u64) {
    if cc >= GA10X { (11, 1) } else { (11, 0) }
}

fn evaluate(m: &Manifest) -> Outcome {
    let targets: Vec<ComputeCapability> =
        m.cuda_build_targets().into_iter().filter(|cc| *cc >= A100 && *cc < ORIN).collect();
    if targets.is_empty() {
        return Outcome::clear();
    }
    let version = match m.need_tool_version("nvcc") {
        Ok(Some(version)) => version,
        // Listed as absent: this build does not compile CUDA with it.
        Ok(None) => return Outcome::clear(),
        Err(needs) => return needs,
    };
    let have = (version.major(), version.minor());
    let Some(cc) = targets.into_iter().filter(|cc| have < needs(*cc)).min() else {
        return Outcome::clear();
    };
    let (major, minor) = needs(cc);
    let cuda = if (major, minor) == (11, 1) { "11.1" } else { "11.0" };
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("build.tools.nvcc")
        .param_field("nvcc", "build.tools.nvcc")
        .param("cc", cc.write_to(&mut cc_buf))
        .param("cuda", cuda);
    if m.has("build.torch_cuda_arch_list") {
        outcome = outcome.evidence("build.torch_cuda_arch_list");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
