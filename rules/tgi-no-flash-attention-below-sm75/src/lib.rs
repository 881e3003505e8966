//! TGI below compute capability 7.5 has no FlashAttention: up to v2.0.4 the
//! flash models are disabled ("GPU with CUDA capability 7 0 is not
//! supported") and the slower non-flash path serves; from v2.3.0 the image's
//! FlashAttention v1 is selected and its kernels refuse the GPU (read in
//! the code, unconfirmed). v2.1-v2.2 are tgi-flash-attention-needs-sm80's,
//! sharded launches tgi-sharded-below-sm75's.
#![no_std]

use pitfall_sdk::prelude::*;

const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const TGI_IMAGE: &str = "text-generation-inference";

const FALLBACK: &str = "TGI up to 2.0.x disables its flash models ('GPU with CUDA capability ... is not supported') and serves the slower non-flash implementations; models that exist only as flash models cannot load.";
const V1_SELECTED: &str = "from TGI 2.3.0 the image's FlashAttention v1 is selected, whose kernels need compute capability 7.5, so warmup is expected to fail (read in the code, not confirmed by a report).";

fn evaluate(m: &Manifest) -> Outcome {
    let image = m.image();
    let tgi_image = image.as_deref().is_some_and(|i| i.contains(TGI_IMAGE));
    let engine = m.workload().engine();
    if !tgi_image && !matches!(engine.as_deref(), Some("tgi" | "text-generation-inference")) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= TURING {
        return Outcome::clear();
    }
    if m.env("USE_FLASH_ATTENTION").is_some_and(|v| v.trim().eq_ignore_ascii_case("false")) {
        return Outcome::clear();
    }
    // Sharded launches fail outright: tgi-sharded-below-sm75.
    if m.workload().tensor_parallel_size().is_some_and(|tp| tp > 1) {
        return Outcome::clear();
    }
    let release = image.as_deref().filter(|_| tgi_image).and_then(pitfall_sdk::image::release);
    let behaviour = match release {
        Some(r) if pep440_ge(r, "2.3.0") == Some(true) => V1_SELECTED,
        // 2.1.0 to 2.2.x fail in FlashAttention-2: the other rule.
        Some(r) if pep440_ge(r, "2.1.0") == Some(true) => return Outcome::clear(),
        _ => FALLBACK,
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("behaviour", behaviour);
    if release.is_some() {
        outcome = outcome.evidence("container.image");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
