//! nvcc older than CUDA 11.8 has no Ada (sm_89) or Hopper (sm_90) targets:
//! the ptxas of NVIDIA's nvcc 11.8.89 wheel names sm_89 and sm_90, the
//! 11.7.99 one neither. The build stops with "nvcc fatal : Unsupported gpu
//! architecture 'compute_89'" (fastllm issue 367) or 'compute_90' (NVIDIA
//! thrust issue 1948, nvcc 11.7.99).
#![no_std]

use pitfall_sdk::prelude::*;

const ADA: ComputeCapability = ComputeCapability::new(8, 9);
/// Blackwell, the next generation: its own rule, `nvcc-too-old-for-blackwell`.
const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);

/// The lowest Ada or Hopper capability the build targets, the first one
/// nvcc rejects.
fn ada_hopper_target(m: &Manifest) -> Option<ComputeCapability> {
    m.cuda_build_targets().into_iter().filter(|cc| *cc >= ADA && *cc < BLACKWELL).min()
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(cc) = ada_hopper_target(m) else {
        return Outcome::clear();
    };
    let version = match m.need_tool_version("nvcc") {
        Ok(Some(version)) => version,
        // Listed as absent: this build does not compile CUDA with it.
        Ok(None) => return Outcome::clear(),
        Err(needs) => return needs,
    };
    if (version.major(), version.minor()) >= (11, 8) {
        return Outcome::clear();
    }
    let generation = if cc >= ComputeCapability::new(9, 0) { "Hopper" } else { "Ada" };
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("build.tools.nvcc")
        .param_field("nvcc", "build.tools.nvcc")
        .param("cc", cc.write_to(&mut cc_buf))
        .param("generation", generation);
    if m.has("build.torch_cuda_arch_list") {
        outcome = outcome.evidence("build.torch_cuda_arch_list");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
