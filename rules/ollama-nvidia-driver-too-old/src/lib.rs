//! Ollama's llama-server releases (0.30.0 on) check the NVIDIA driver
//! before they use a CUDA GPU, and leave out the GPUs the driver is too old
//! for: the model runs on the CPU (or the remaining GPUs). Nothing fails.
//!
//! Read in `discover/cuda_compat.go` (`filterOldCUDADriver`, applied to
//! the devices of the `cuda_v12` library) at the tags on both sides:
//! - 0.24.0 and 0.25.0-rc0: no such check (docs: driver 531 and newer);
//! - 0.30.0-rc0 to 0.30.11-rc0: a GPU of compute capability below 7.0 is
//!   dropped when the driver's major version is below 570 ("NVIDIA driver
//!   too old" ... `required_driver="570 or newer"`); a newer GPU is kept,
//!   and on a driver below 550 it was seen to fail with "CUDA error:
//!   device kernel image is invalid" (issue 16449, a V100 on 535);
//! - 0.30.11-rc1 on (PR 16895, unchanged to 0.33.0-rc2): with the CUDA
//!   12.8 runtime it ships, every CUDA GPU is dropped below driver 550
//!   (fatbin compression), and below 7.0 below 570. The runtime's minor
//!   is read from `libcudart.so.12.8.*`; on Windows the DLL is
//!   `cudart64_12.dll`, which names none, so the check does not apply
//!   there: Windows is not judged for these releases.
//!
//! Not judged: builds from source (their own toolkit), the ROCm image,
//! Jetson GPUs (compute capability 7.2 and 8.7, JetPack libraries), and
//! whether NVIDIA's Vulkan driver then serves the GPU (Vulkan is on by
//! default from 0.30.0; the reports read fell back to the CPU).
#![no_std]

use pitfall_sdk::image::{self, Release};
use pitfall_sdk::prelude::*;

const REPOSITORY: &str = "ollama/ollama";
const DRIVER: &str = "drivers.nvidia";
const OS: &str = "host.os.id";
const OLLAMA_VERSION: &str = "packages.ollama.version";

/// First release with the driver check, and first with the 550 floor.
const CHECKED: &str = "0.30.0rc0";
const FLOOR_550: &str = "0.30.11rc1";

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const XAVIER: ComputeCapability = ComputeCapability::new(7, 2);
const ORIN: ComputeCapability = ComputeCapability::new(8, 7);

const DROPPED_570: &str = "it leaves out CUDA GPUs below compute capability 7.0 unless the driver is 570 or newer ('NVIDIA driver too old' ... required_driver=\"570 or newer\": their code is PTX that the driver compiles) and runs the model on the CPU, or on the other GPUs";
const DROPPED_550: &str = "its CUDA 12.8 library needs driver 550 or newer (compressed fatbins), so it leaves out every CUDA GPU on an older driver ('NVIDIA driver too old' ... required_driver=\"550 or newer\") and runs the model on the CPU, or on the other GPUs";
const CRASH_550: &str = "its CUDA 12.8 library needs driver 550 or newer (compressed fatbins) and releases before 0.30.11 do not check it: a Tesla V100 on driver 535 failed with 'CUDA error: device kernel image is invalid' (issue 16449)";

const REMEDY_DRIVER: u32 = 0;
const REMEDY_PIN: u32 = 1;
const REMEDY_IMAGE: u32 = 2;

/// Whether `release` is `first` or later; `Err` with the undetermined
/// outcome when it cannot be read.
fn from(release: &Release, first: &str) -> Result<bool, Outcome> {
    release.need_in("0", first).map(|before| !before)
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let package = m.package("ollama");
    let image = m.image().filter(|image| image::is_of(image, REPOSITORY));
    let engine = m.workload().engine();
    if package.is_none() && image.is_none() && engine.as_deref() != Some("ollama") {
        return Ok(Outcome::clear());
    }
    let rocm = image.as_deref().and_then(image::tag).is_some_and(|t| t.contains("rocm"));
    if m.built_from_source("ollama") || rocm {
        return Ok(Outcome::clear());
    }
    if m.nvidia_gpus().next().is_none() {
        return Ok(Outcome::clear());
    }
    let Some(release) = Release::of(m, "ollama", REPOSITORY) else {
        return Err(match &package {
            Some(p) => Outcome::needs(p.version_path().as_str()),
            None => Outcome::needs(OLLAMA_VERSION),
        });
    };
    if !from(&release, CHECKED)? {
        return Ok(Outcome::clear());
    }
    let text = m.need(DRIVER)?;
    let Some(driver) = Dotted::parse(&text).ok().map(|d| d.major()) else {
        return Err(Outcome::unreadable(DRIVER));
    };
    if driver >= 570 {
        return Ok(Outcome::clear());
    }
    let floor_550 = from(&release, FLOOR_550)?;
    let os = m.text(OS);
    if floor_550 {
        match (&release, os.as_deref()) {
            (_, Some("windows")) => return Ok(Outcome::clear()),
            (Release::Package(_), None) => return Err(Outcome::needs(OS)),
            _ => {}
        }
    }
    let mut found = None;
    let mut no_cc = None;
    for gpu in m.nvidia_gpus() {
        let Some(cc) = gpu.compute_capability() else {
            no_cc.get_or_insert_with(|| gpu.field_path("compute_capability"));
            continue;
        };
        if cc == XAVIER || cc == ORIN {
            continue;
        }
        let how = match (floor_550, cc < VOLTA, driver < 550) {
            (true, _, true) => DROPPED_550,
            (_, true, _) => DROPPED_570,
            (false, false, true) => CRASH_550,
            _ => continue,
        };
        found = Some((gpu, cc, how));
        break;
    }
    let Some((gpu, cc, how)) = found else {
        return match no_cc {
            Some(path) => Err(Outcome::needs(path.as_str())),
            None => Ok(Outcome::clear()),
        };
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("NVIDIA GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence(DRIVER)
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("driver", DRIVER)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("how", how)
        .remedy(REMEDY_DRIVER);
    if floor_550 && os.is_some() {
        outcome = outcome.evidence(OS);
    }
    let outcome = release.cite(outcome, "ollama");
    Ok(match release {
        Release::Package(_) => outcome.remedy(REMEDY_PIN),
        Release::Image(_) => outcome.remedy(REMEDY_IMAGE),
    })
}

pitfall_sdk::export_rule!(evaluate);
