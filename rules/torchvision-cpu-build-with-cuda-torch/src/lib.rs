//! A CPU build of torchvision beside a CUDA build of torch: torchvision's
//! compiled operators (nms, roi_align, deform_conv2d, ...) have CPU kernels
//! only, so the first one run on CUDA tensors fails with "Could not run
//! 'torchvision::nms' with arguments from the 'CUDA' backend" (sam2 issue
//! 220, ComfyUI-Impact-Pack issue 915, qupath-extension-sam issue 6).
//!
//! The build is read from the local label: `+cpu` is a CPU build, `+cuXXX`
//! a CUDA one. PyPI's torchvision wheels carry no label in their metadata:
//! the win_amd64 ones are CPU builds (their torchvision/version.py says
//! `0.15.2+cpu`, `0.20.1+cpu`, `0.22.0+cpu` and their _C.pyd has no
//! csrc/ops/cuda kernel), the manylinux x86_64 ones CUDA builds (0.15.2:
//! `0.15.2+cu117`, with the CUDA nms kernel). So an unlabelled torchvision
//! is a CPU build on Windows and a CUDA one on Linux x86_64; without the OS
//! the rule is undetermined.
#![no_std]

use pitfall_sdk::prelude::*;

const OS: &str = "host.os.id";

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(torch), Some(tv)) = (m.package("torch"), m.package("torchvision")) else {
        return Outcome::clear();
    };
    let Some(torch_version) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    // Only a CUDA build of torch puts tensors on the 'CUDA' backend.
    let Some(cuda) = torch_version.local().filter(|l| l.starts_with("cu")) else {
        return Outcome::clear();
    };
    let Some(tv_version) = tv.version() else {
        return Outcome::needs(tv.version_path().as_str());
    };
    let mut outcome = Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(tv.version_path().as_str());
    let how = match tv_version.local() {
        Some("cpu") => "a CPU build (+cpu)",
        Some(_) => return Outcome::clear(),
        None => match m.text(OS) {
            Some(os) if os == "windows" => {
                outcome = outcome.evidence(OS);
                "PyPI's Windows wheel, a CPU build"
            }
            Some(_) => return Outcome::clear(),
            None => return Outcome::needs(OS),
        },
    };
    let public = tv_version.without_local();
    let mut fix = String::from(public.as_str());
    fix.push('+');
    fix.push_str(cuda);
    outcome
        .param_field("torch", torch.version_path().as_str())
        .param_field("torchvision", tv.version_path().as_str())
        .param("how", how)
        .param("cuda", cuda)
        .param("tv_fix", &fix)
}

pitfall_sdk::export_rule!(evaluate);
