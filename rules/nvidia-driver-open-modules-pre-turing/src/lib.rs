//! The open NVIDIA kernel modules need the GSP (Turing and newer); on
//! Maxwell, Pascal and Volta they do not bring the GPU up (KNOWLEDGE.md D22;
//! driver installation guide, Kernel Modules; osapi.c; truenas-nvidia-drivers
//! issue 20). `drivers.nvidia_kernel_module` is a proposed field.
#![no_std]

use pitfall_sdk::prelude::*;

const TURING: ComputeCapability = ComputeCapability::new(7, 5);

fn evaluate(m: &Manifest) -> Outcome {
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= TURING {
        return Outcome::clear();
    }
    let Some(flavour) = m.text("drivers.nvidia_kernel_module") else {
        return Outcome::needs("drivers.nvidia_kernel_module");
    };
    if !flavour.trim().eq_ignore_ascii_case("open") {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("drivers.nvidia_kernel_module")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
