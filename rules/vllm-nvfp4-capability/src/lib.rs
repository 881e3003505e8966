//! NVFP4 (ModelOpt FP4) floors per vLLM release, read in modelopt.py
//! `get_min_capability` at each tag: 10.0 in 0.8.x (modelopt_nvfp4), 8.0
//! from 0.9.0 (modelopt_fp4, FP4 Marlin weight-only below 10.0), 7.5 from
//! 0.14.0.
#![no_std]

use pitfall_sdk::prelude::*;

const METHODS: [&str; 3] = ["modelopt_fp4", "modelopt_nvfp4", "nvfp4"];
/// (releases, minimum, its text, the release that lowers it below this GPU).
const FLOORS: [(&str, ComputeCapability, &str); 3] = [
    (">=0.8.0,<0.9.0", ComputeCapability::new(10, 0), "10.0"),
    (">=0.9.0,<0.14.0", ComputeCapability::new(8, 0), "8.0"),
    (">=0.14.0", ComputeCapability::new(7, 5), "7.5"),
];
const REMEDY_UPGRADE: u32 = 0;
const REMEDY_OTHER: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let Some(q) = m.workload().quantization() else {
        return Outcome::clear();
    };
    if !METHODS.contains(&q.as_str()) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let mut floor = None;
    for (releases, min_cc, min_text) in FLOORS.iter() {
        match vllm.version_in(releases) {
            None => return Outcome::needs("packages.vllm.version"),
            Some(true) => floor = Some((*min_cc, *min_text)),
            Some(false) => {}
        }
    }
    let Some((min_cc, min_text)) = floor else {
        return Outcome::clear();
    };
    if cc >= min_cc {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence("workload.quantization")
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(vllm.version_path().as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param("min", min_text)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    // A later release accepts 8.0 (0.9.0) or 7.5 (0.14.0).
    let fix = if cc >= ComputeCapability::new(8, 0) {
        Some("0.9.0")
    } else if cc >= ComputeCapability::new(7, 5) {
        Some("0.14.0")
    } else {
        None
    };
    match fix {
        Some(fix) => outcome.param("fix", fix).remedy(REMEDY_UPGRADE).remedy(REMEDY_OTHER),
        None => outcome.remedy(REMEDY_OTHER),
    }
}

pitfall_sdk::export_rule!(evaluate);
