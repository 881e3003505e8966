//! A Blackwell GPU on a driver older than the first release that lists it
//! (NVIDIA/open-gpu-kernel-modules README, "Compatible GPUs", first tag
//! naming each product). Model names are matched without case.
#![no_std]

use pitfall_sdk::prelude::*;

/// (name fragment, first driver listing it). Longer names first: `gb200`
/// before `b200`, the Server Edition before the other RTX PRO 6000 editions.
const FLOORS: [(&str, &str); 11] = [
    ("gb300", "580.82.07"),
    ("b300", "580.82.07"),
    ("gb200", "570.123.10"),
    ("b200", "570.86.15"),
    ("rtx pro 6000 blackwell server", "575.57.08"),
    ("rtx pro 6000 blackwell", "570.123.07"),
    ("rtx 5090", "570.86.16"),
    ("rtx 5080", "570.86.16"),
    ("rtx 5070", "570.123.01"),
    ("rtx 5060 ti", "570.123.10"),
    ("rtx 5060ti", "570.123.10"),
];

const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);

fn floor_for(model: &str) -> Option<&'static str> {
    let lower = model.to_ascii_lowercase();
    FLOORS.iter().find(|(fragment, _)| lower.contains(fragment)).map(|(_, floor)| *floor)
}

fn evaluate(m: &Manifest) -> Outcome {
    // The GPU with the highest floor decides; a GPU whose stated capability
    // is below 10.0 is not Blackwell whatever its name says.
    let mut worst: Option<(Accelerator, String, Dotted)> = None;
    for gpu in m.nvidia_gpus() {
        if gpu.compute_capability().is_some_and(|cc| cc < BLACKWELL) {
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
    Outcome::matched()
        .evidence("drivers.nvidia")
        .evidence(gpu.field_path("model").as_str())
        .param_field("driver", "drivers.nvidia")
        .param("floor", floor.as_str())
        .param("gpu", &model)
}

pitfall_sdk::export_rule!(evaluate);
