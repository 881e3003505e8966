//! `sm_90a`, Hopper's arch-specific target (wgmma, TMA, setmaxnreg), came
//! one release after Hopper's own: the ptxas of NVIDIA's nvcc 11.8.89 wheel
//! names sm_90 and compute_90 but not sm_90a, the 12.0.76 one names
//! sm_90a and compute_90a. A build whose arch list asks for `9.0a` with an
//! older nvcc stops with "nvcc fatal : Unsupported gpu architecture
//! 'compute_90a'" (vLLM PR 5141 with /usr/local/cuda-11.8/bin/nvcc;
//! FlashInfer issues 1657 and 1658 on H800).
#![no_std]

use pitfall_sdk::prelude::*;

const ARCH_LIST: &str = "build.torch_cuda_arch_list";

/// Whether the build's arch list asks for Hopper's arch-specific code.
fn asks_for_sm90a(m: &Manifest) -> bool {
    m.torch_cuda_arch_list().iter().any(|cc| cc.major == 9 && cc.suffix() == Some('a'))
}

fn evaluate(m: &Manifest) -> Outcome {
    if !asks_for_sm90a(m) {
        return Outcome::clear();
    }
    let version = match m.need_tool_version("nvcc") {
        Ok(Some(version)) => version,
        // Listed as absent: this build does not compile CUDA with it.
        Ok(None) => return Outcome::clear(),
        Err(needs) => return needs,
    };
    if version.major() >= 12 {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("build.tools.nvcc")
        .evidence(ARCH_LIST)
        .param_field("nvcc", "build.tools.nvcc")
}

pitfall_sdk::export_rule!(evaluate);
