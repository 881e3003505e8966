//! MIG needs a minimum driver per GPU (NVIDIA MIG user guide r620,
//! Deployment Considerations). `accelerators[].mig_mode` and
//! `accelerators[].mig_profile` are proposed fields.
#![no_std]

use pitfall_sdk::prelude::*;

/// (model fragment, minimum driver). Longer fragments first: `gb200`/`b200`
/// before anything else, `h200` before `h20`. GB300 (R595, DGX Station) is
/// left out.
const FLOORS: [(&str, &str); 11] = [
    ("b300", "580.82.07"),
    ("gb200", "570.133.20"),
    ("b200", "570.133.20"),
    ("h200", "550.90.07"),
    ("h100", "525.85.12"),
    ("h20", "535.161.07"),
    ("a100", "450.80.02"),
    ("a30", "460.73.01"),
    ("rtx pro 6000", "575.51.03"),
    ("rtx pro 5000", "575.57.08"),
    ("rtx pro 4500", "575.64"),
];

fn floor_for(model: &str) -> Option<&'static str> {
    let lower = model.to_ascii_lowercase();
    if lower.contains("gb300") {
        return None;
    }
    FLOORS.iter().find(|(fragment, _)| lower.contains(fragment)).map(|(_, floor)| *floor)
}

fn uses_mig(m: &Manifest, gpu: &Accelerator) -> bool {
    m.boolean(gpu.field_path("mig_mode").as_str()) == Some(true)
        || m.has(gpu.field_path("mig_profile").as_str())
}

fn evaluate(m: &Manifest) -> Outcome {
    let mut worst: Option<(Accelerator, String, Dotted)> = None;
    for gpu in m.nvidia_gpus() {
        if !uses_mig(m, &gpu) {
            continue;
        }
        let Some(model) = gpu.model() else { continue };
        let Some(floor) = floor_for(&model).and_then(|f| Dotted::parse(f).ok()) else {
            continue;
        };
        if worst.as_ref().is_none_or(|(_, _, w)| floor > *w) {
            worst = Some((gpu, model, floor));
        }
    }
    let Some((gpu, model, floor)) = worst else {
        return Outcome::clear();
    };
    let Some(driver) = m.nvidia_driver() else {
        return Outcome::needs("drivers.nvidia");
    };
    if driver >= floor {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched()
        .evidence("drivers.nvidia")
        .evidence(gpu.field_path("model").as_str())
        .param_field("driver", "drivers.nvidia")
        .param("floor", floor.as_str())
        .param("gpu", &model);
    for field in ["mig_mode", "mig_profile"] {
        let path = gpu.field_path(field);
        if m.has(path.as_str()) {
            outcome = outcome.evidence(path.as_str());
        }
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
