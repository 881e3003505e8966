//! compressed-tensors WNA16 (weight-only W4A16/W8A16) declares compute
//! capability 8.0 up to vLLM 0.11.2 and 7.5 from 0.12.0
//! (schemes/compressed_tensors_wNa16.py at those tags); the check runs per
//! layer in compressed_tensors.py `_check_scheme_supported`.
#![no_std]

use pitfall_sdk::prelude::*;

const SM80: ComputeCapability = ComputeCapability::new(8, 0);
const SM75: ComputeCapability = ComputeCapability::new(7, 5);
/// Spellings of the weight-only schemes in `workload.quantization_scheme`.
const WNA16: [&str; 3] = ["w4a16", "w8a16", "wna16"];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("compressed-tensors") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= SM80 {
        return Outcome::clear();
    }
    let Some(scheme) = m.text("workload.quantization_scheme") else {
        return Outcome::needs("workload.quantization_scheme");
    };
    let scheme = scheme.to_ascii_lowercase();
    if !WNA16.contains(&scheme.as_str()) {
        return Outcome::clear();
    }
    let Some(lowered) = vllm.version_in(">=0.12.0") else {
        return Outcome::needs("packages.vllm.version");
    };
    let min = if lowered { SM75 } else { SM80 };
    if cc >= min {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut min_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence("workload.quantization_scheme")
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("scheme", &scheme)
        .param("min", min.write_to(&mut min_buf))
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    // 0.12.0 helps Turing; Volta needs another GPU.
    if !lowered && cc >= SM75 { outcome.remedy(0).remedy(1) } else { outcome.remedy(1) }
}

pitfall_sdk::export_rule!(evaluate);
