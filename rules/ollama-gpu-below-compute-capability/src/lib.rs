//! Ollama uses an NVIDIA GPU only if its bundled CUDA libraries carry code
//! for the GPU's compute capability; any other GPU is left out at discovery
//! and the model runs on the CPU (or the remaining GPUs). Nothing fails.
//!
//! What official builds (release binaries, install script, the
//! `ollama/ollama` image) accept, per release:
//! - 0.1.19 to 0.1.22: 6.0 and up (`gpu/gpu.go`: `CudaComputeMajorMin = 6`,
//!   "CUDA GPU is too old. Falling back to CPU mode.");
//! - 0.1.23 to 0.12.3: 5.0 and up (`CudaComputeMin = [2]C.int{5, 0}`, later
//!   `CudaComputeMajorMin = "5"`; builds from `50;52;61;70;75;80`);
//! - 0.12.4 on: the runner probes each GPU (`discover/runner.go`,
//!   `GGML_CUDA_INIT=1`) and ggml asserts that the GPU's exact capability
//!   is in its compiled list (`ggml_cuda_has_arch`); 0.30.0 on, the same
//!   exact match in `discover/llama_server.go`. The CUDA 12 library starts
//!   at 5.0 in every release, but in 0.12.4 and 0.12.5 its list was
//!   `50;60;61;...`, without 52, so 5.2 GPUs were dropped until 0.12.6
//!   (ollama commit 1813ff85a, "cuda: bring back CC 5.2").
//!
//! Below 5.0 (Kepler and older) no release uses the GPU: 0.1.18 and
//! earlier crashed the runner on it (PR 1834). Not judged: 5.3 on 0.12.4
//! and later (Jetson TX1/Nano, no runner of theirs), builds from source
//! (their own architecture list), the ROCm image, and Ollama 0.11.11's
//! CUDA 13 choice for pre-Turing GPUs (`cuda13-no-pre-turing-gpus`).
#![no_std]

use pitfall_sdk::image::{IMAGE, Release};
use pitfall_sdk::prelude::*;

const MAXWELL: ComputeCapability = ComputeCapability::new(5, 0);
const GM20X: ComputeCapability = ComputeCapability::new(5, 2);
const PASCAL: ComputeCapability = ComputeCapability::new(6, 0);
/// Releases whose floor is 6.0 (`CudaComputeMajorMin = 6`).
const FLOOR_6_0: (&str, &str) = ("0.1.19", "0.1.23");
/// Releases whose CUDA 12 library has no 5.2 in its exact-match list.
const WITHOUT_5_2: (&str, &str) = ("0.12.4rc0", "0.12.6");
const REPOSITORY: &str = "ollama/ollama";

/// Why the GPU is left out, for the message.
const BELOW_5_0: &str = "no Ollama release carries CUDA code below compute capability 5.0";
const REASON_FLOOR_6_0: &str =
    "Ollama 0.1.19 to 0.1.22 accept compute capability 6.0 and newer only";
const REASON_WITHOUT_5_2: &str = "the CUDA 12 library of Ollama 0.12.4 up to (not including) 0.12.6 is built for 5.0 but not 5.2, and discovery wants an exact match";

const REMEDY_GPU: u32 = 0;
const REMEDY_UPGRADE: u32 = 1;
const REMEDY_IMAGE: u32 = 2;

fn evaluate(m: &Manifest) -> Outcome {
    let package = m.package("ollama");
    let image = m.image().filter(|image| pitfall_sdk::image::is_of(image, REPOSITORY));
    let engine = m.workload().engine();
    if package.is_none() && image.is_none() && engine.as_deref() != Some("ollama") {
        return Outcome::clear();
    }
    let rocm =
        image.as_deref().and_then(pitfall_sdk::image::tag).is_some_and(|t| t.contains("rocm"));
    if m.built_from_source("ollama") || rocm {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= PASCAL {
        return Outcome::clear();
    }
    let release = Release::of(m, "ollama", REPOSITORY);
    // Below 5.0 every release leaves the GPU out; 5.x only some.
    let reason = if cc < MAXWELL {
        BELOW_5_0
    } else {
        let Some(release) = &release else {
            return match &package {
                Some(p) => Outcome::needs(p.version_path().as_str()),
                None if image.is_some() => Outcome::needs(IMAGE),
                None => Outcome::needs("packages.ollama.version"),
            };
        };
        match release.need_in(FLOOR_6_0.0, FLOOR_6_0.1) {
            Ok(true) => REASON_FLOOR_6_0,
            Ok(false) if cc != GM20X => return Outcome::clear(),
            Ok(false) => match release.need_in(WITHOUT_5_2.0, WITHOUT_5_2.1) {
                Ok(true) => REASON_WITHOUT_5_2,
                Ok(false) => return Outcome::clear(),
                Err(outcome) => return outcome,
            },
            Err(outcome) => return outcome,
        }
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("reason", reason)
        .remedy(REMEDY_GPU);
    let Some(release) = &release else {
        return outcome.param("ollama", "(any release)");
    };
    let outcome = release.cite(outcome, "ollama");
    match release {
        _ if reason == BELOW_5_0 => outcome,
        Release::Package(_) => outcome.remedy(REMEDY_UPGRADE),
        Release::Image(_) => outcome.remedy(REMEDY_IMAGE),
    }
}

pitfall_sdk::export_rule!(evaluate);
