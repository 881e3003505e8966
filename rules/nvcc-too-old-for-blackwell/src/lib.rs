//! nvcc older than CUDA 12.8 has no Blackwell targets (ptxas of the 12.8.61
//! wheel names sm_100/sm_120, 12.6.85 does not): "nvcc fatal : Unsupported
//! gpu architecture 'compute_120'" (whisper.cpp issue 3030, cuda-samples 367).
#![no_std]

use pitfall_sdk::prelude::*;

const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);

/// The lowest Blackwell capability the build targets, the first one nvcc
/// rejects.
fn blackwell_target(m: &Manifest) -> Option<ComputeCapability> {
    m.cuda_build_targets().into_iter().filter(|cc| *cc >= BLACKWELL).min()
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(cc) = blackwell_target(m) else {
        return Outcome::clear();
    };
    let version = match m.need_tool_version("nvcc") {
        Ok(Some(version)) => version,
        // Listed as absent: this build does not compile CUDA with it.
        Ok(None) => return Outcome::clear(),
        Err(needs) => return needs,
    };
    if (version.major(), version.minor()) >= (12, 8) {
        return Outcome::clear();
    }
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("build.tools.nvcc")
        .param_field("nvcc", "build.tools.nvcc")
        .param("cc", cc.write_to(&mut cc_buf));
    if m.has("build.torch_cuda_arch_list") {
        outcome = outcome.evidence("build.torch_cuda_arch_list");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
