//! TGI's CUDA images (to v3.3.7) build on CUDA 12.4 with kernels for
//! sm_80/86/90 (+PTX 9.0); the FlashAttention v1 layer_norm extension has
//! explicit sm_70/80/90 SASS only and FlashAttention-2 2.6.1 refuses GPUs
//! other than 8.x and 9.0, so Blackwell (10.x, 12.x) fails at warmup
//! (issue 3342).
#![no_std]

use pitfall_sdk::prelude::*;

const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);
const TGI_IMAGE: &str = "text-generation-inference";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(image) = m.image() else {
        return Outcome::clear();
    };
    // The CUDA image; the -rocm, -intel and -neuron variants are other builds.
    if !image.contains(TGI_IMAGE)
        || image.contains("rocm")
        || image.contains("intel")
        || image.contains("neuron")
    {
        return Outcome::clear();
    }
    let mut blackwell = None;
    for gpu in m.nvidia_gpus() {
        let Some(cc) = gpu.compute_capability() else {
            return Outcome::needs(gpu.field_path("compute_capability").as_str());
        };
        if cc >= BLACKWELL && blackwell.is_none() {
            blackwell = Some((gpu, cc));
        }
    }
    let Some((gpu, cc)) = blackwell else {
        return Outcome::clear();
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("container.image")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
