//! Each PyPI release of onnxruntime-gpu is built for one CUDA major and one
//! cuDNN major. Its CUDA execution provider (`libonnxruntime_providers_cuda.so`)
//! links that major's `libcublasLt.so.N` and `libcudnn.so.M`, so with
//! only the other major's libraries in the process the provider fails to
//! load ("Failed to load library libonnxruntime_providers_cuda.so with
//! error: libcublasLt.so.11: cannot open shared object file", env.cc's
//! `LoadDynamicLibrary`) and ONNX Runtime falls back to the CPU.
//!
//! The builds, read from the DT_NEEDED entries of the provider library in
//! every Linux x86_64 wheel on PyPI from 1.16.0 to 1.31.1 (and their
//! `capi/build_and_package_info.py` and METADATA extras from 1.21.0):
//! - 1.16.0 to 1.18.1: CUDA 11 (`libcublasLt.so.11`), cuDNN 8;
//! - 1.19.0 to 1.26.0: CUDA 12 (`libcublasLt.so.12`), cuDNN 9;
//! - 1.27.0: CUDA 13 (`libcublasLt.so.13`), cuDNN 9;
//! - 1.28.0 to 1.31.1: CUDA 13; cuDNN is no longer a DT_NEEDED entry
//!   (METADATA's `cudnn` extra still asks for nvidia-cudnn-cu13~=9.0), so
//!   only CUDA is judged there.
//!
//! The CUDA the process has is read where the manifest states it: torch's
//! `+cuXYZ` (its wheels bring that major's libraries), `drivers.cuda_runtime`,
//! a CUDA toolkit (`build.tools.nvcc`) and the nvidia-cublas wheels
//! installed; the cuDNN from the nvidia-cudnn wheels. Not visible: a system or conda CUDA found through the loader
//! path, and builds of the same version from ONNX Runtime's Azure feeds
//! (CUDA 12 for 1.17 and 1.18, CUDA 11.8 for 1.19 and later): hence a
//! warning.
#![no_std]

use pitfall_sdk::prelude::*;

const PACKAGE: &str = "onnxruntime-gpu";
const RUNTIME: &str = "drivers.cuda_runtime";

const REMEDY_PIN: u32 = 0;
const REMEDY_WHEELS: u32 = 1;

/// One range of PyPI releases and what its provider library links.
struct Build {
    spec: &'static str,
    cuda: u64,
    /// `None` where cuDNN is not a load-time dependency (not judged).
    cudnn: Option<u64>,
}

const BUILDS: [Build; 4] = [
    Build { spec: ">=1.16,<1.19", cuda: 11, cudnn: Some(8) },
    Build { spec: ">=1.19,<1.27", cuda: 12, cudnn: Some(9) },
    Build { spec: ">=1.27,<1.28", cuda: 13, cudnn: Some(9) },
    Build { spec: ">=1.28,<1.32", cuda: 13, cudnn: None },
];

/// Releases from which PyPI also carries aarch64 wheels (not read).
const AARCH64_WHEELS: &str = ">=1.29";

/// The newest PyPI release built for each CUDA major (and its cuDNN).
fn pypi_build_for(cuda: u64) -> Option<(&'static str, u64)> {
    match cuda {
        11 => Some(("1.18.1", 8)),
        12 => Some(("1.26.0", 9)),
        13 => Some(("1.31.1", 9)),
        _ => None,
    }
}

/// The runtime wheels of a CUDA major: cuBLAS and cuDNN, with the
/// specifier to install (the cuDNN one as onnxruntime-gpu's METADATA
/// spells it).
fn wheels_for(cuda: u64, cudnn: u64) -> (&'static str, &'static str, &'static str, &'static str) {
    match (cuda, cudnn) {
        (11, _) => ("nvidia-cublas-cu11", "~=11.0", "nvidia-cudnn-cu11", "~=8.0"),
        (12, _) => ("nvidia-cublas-cu12", "~=12.0", "nvidia-cudnn-cu12", "~=9.0"),
        _ => ("nvidia-cublas", "~=13.0", "nvidia-cudnn-cu13", "~=9.0"),
    }
}

/// The cuBLAS wheels and the CUDA major each provides (`nvidia-cublas`
/// is versioned by its CUDA major: 13.x installs `libcublasLt.so.13`).
const CUBLAS_WHEELS: [(&str, Option<u64>); 3] =
    [("nvidia-cublas-cu11", Some(11)), ("nvidia-cublas-cu12", Some(12)), ("nvidia-cublas", None)];

const CUDNN_WHEELS: [&str; 3] = ["nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"];

/// A CUDA major the process has, and where the manifest says so.
struct Have {
    major: u64,
    /// For the message: `torch 2.3.1+cu118`, `drivers.cuda_runtime 11.8`.
    label: String,
    path: String,
}

fn leading_major(text: &str) -> Option<u64> {
    text.trim().split('.').next()?.parse().ok()
}

fn push_u64(out: &mut String, n: u64) {
    pitfall_sdk::text::push_int(out, i64::try_from(n).unwrap_or(i64::MAX));
}

/// Every CUDA major the manifest says the process has, strongest first.
fn cuda_present(m: &Manifest) -> Vec<Have> {
    let mut found = Vec::new();
    if let Some(torch) = m.package("torch")
        && let Some(v) = torch.version()
        && let Some((major, _)) = v.cuda_build()
    {
        let mut label = String::from("torch ");
        label.push_str(v.as_str());
        found.push(Have { major, label, path: String::from(torch.version_path().as_str()) });
    }
    if let Some(text) = m.text(RUNTIME)
        && let Some(major) = leading_major(&text)
    {
        let mut label = String::from("drivers.cuda_runtime ");
        label.push_str(text.trim());
        found.push(Have { major, label, path: String::from(RUNTIME) });
    }
    // A CUDA toolkit (nvcc) brings its major's cuBLAS to the system.
    if let Some(Some(text)) = m.build_tool("nvcc")
        && let Some(major) = leading_major(&text)
    {
        let mut label = String::from("nvcc ");
        label.push_str(text.trim());
        found.push(Have { major, label, path: String::from("build.tools.nvcc") });
    }
    for (name, fixed) in CUBLAS_WHEELS {
        let Some(wheel) = m.package(name) else { continue };
        let text = wheel.version_text();
        let Some(major) = fixed.or_else(|| text.as_deref().and_then(leading_major)) else {
            continue;
        };
        let mut label = String::from(name);
        if let Some(t) = text {
            label.push(' ');
            label.push_str(t.trim());
        }
        found.push(Have { major, label, path: String::from(wheel.version_path().as_str()) });
    }
    found
}

/// The installed cuDNN wheels: (name, major, version path).
fn cudnn_present(m: &Manifest) -> Vec<(&'static str, u64, String)> {
    CUDNN_WHEELS
        .iter()
        .filter_map(|name| {
            let wheel = m.package(name)?;
            let major = wheel.version_text().as_deref().and_then(leading_major)?;
            Some((*name, major, String::from(wheel.version_path().as_str())))
        })
        .collect()
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(ort) = m.package(PACKAGE) else {
        return Ok(Outcome::clear());
    };
    // conda and other channels build their own; only PyPI's wheels are read.
    if ort.ecosystem().is_some_and(|e| !e.eq_ignore_ascii_case("pypi")) {
        return Ok(Outcome::clear());
    }
    // Windows wheels were not read; an AMD or other accelerator has no CUDA.
    if m.text("host.os.id").is_some_and(|os| os.trim().eq_ignore_ascii_case("windows"))
        || m.arch().is_some_and(|a| a.trim() != "x86_64")
        || (m.len("accelerators").is_some_and(|n| n > 0) && m.nvidia_gpus().next().is_none())
    {
        return Ok(Outcome::clear());
    }
    let mut build = None;
    for b in &BUILDS {
        if ort.need_version_in(b.spec)? {
            build = Some(b);
            break;
        }
    }
    let Some(build) = build else {
        return Ok(Outcome::clear());
    };
    let present = cuda_present(m);
    let Some(first) = present.first() else {
        return Err(Outcome::needs(RUNTIME));
    };
    let cudnn = cudnn_present(m);
    let mut need = String::from("CUDA ");
    push_u64(&mut need, build.cuda);
    if let Some(w) = build.cudnn {
        need.push_str(" and cuDNN ");
        push_u64(&mut need, w);
    }
    let (cublas_pkg, cublas_to, cudnn_pkg, cudnn_to) =
        wheels_for(build.cuda, build.cudnn.unwrap_or(9));

    let mut evidence: Vec<&str> = Vec::new();
    let (lib, have, have_cuda) = if present.iter().all(|h| h.major != build.cuda) {
        // No CUDA of the build's major anywhere the manifest looks.
        let mut lib = String::from("libcublasLt.so.");
        push_u64(&mut lib, build.cuda);
        let mut have = String::from("this environment's CUDA is ");
        push_u64(&mut have, first.major);
        have.push_str(" (");
        have.push_str(&first.label);
        have.push_str(") and no CUDA ");
        push_u64(&mut have, build.cuda);
        have.push_str(" cuBLAS wheel (");
        have.push_str(cublas_pkg);
        have.push_str(") is installed");
        evidence.extend(present.iter().map(|h| h.path.as_str()));
        (lib, have, first.major)
    } else {
        // The CUDA major is there; the cuDNN wheels may be of another major.
        let Some(w) = build.cudnn else {
            return Ok(Outcome::clear());
        };
        let Some((name, major, _)) = cudnn.first() else {
            return Ok(Outcome::clear());
        };
        if cudnn.iter().any(|(_, major, _)| *major == w) {
            return Ok(Outcome::clear());
        }
        let mut lib = String::from("libcudnn.so.");
        push_u64(&mut lib, w);
        let mut have = String::from("the cuDNN installed is ");
        have.push_str(name);
        have.push(' ');
        push_u64(&mut have, *major);
        have.push_str(".x (libcudnn.so.");
        push_u64(&mut have, *major);
        have.push(')');
        evidence.extend(cudnn.iter().map(|(_, _, p)| p.as_str()));
        (lib, have, build.cuda)
    };
    // aarch64 wheels exist from 1.29 and were not read: the arch must be known.
    if m.arch().is_none() && ort.version_in(AARCH64_WHEELS) == Some(true) {
        return Err(Outcome::needs("host.arch"));
    }

    // A PyPI build for the CUDA (and cuDNN, when stated) the process has.
    let fix = pypi_build_for(have_cuda)
        .filter(|(_, w)| cudnn.is_empty() || cudnn.iter().any(|(_, major, _)| major == w));
    let mut target = String::from("CUDA ");
    push_u64(&mut target, have_cuda);
    let mut outcome = Outcome::matched();
    for path in evidence {
        outcome = outcome.evidence(path);
    }
    let outcome = outcome
        .evidence(ort.version_path().as_str())
        .param_field("ort", ort.version_path().as_str())
        .param("need", &need)
        .param("lib", &lib)
        .param("have", &have)
        .param("target", &target)
        .param("cublas", cublas_pkg)
        .param("cublas_to", cublas_to)
        .param("cudnn", cudnn_pkg)
        .param("cudnn_to", cudnn_to);
    Ok(match fix {
        Some((version, w)) => {
            let mut fix_note = String::from(" (cuDNN ");
            push_u64(&mut fix_note, w);
            fix_note.push(')');
            outcome
                .param("fix", version)
                .param("fix_note", &fix_note)
                .remedy(REMEDY_PIN)
                .remedy(REMEDY_WHEELS)
        }
        // CUDA 12 with cuDNN 8 (torch 2.1 to 2.3): no PyPI build has it.
        None => outcome.param("fix", "").param("fix_note", "").remedy(REMEDY_WHEELS),
    })
}

pitfall_sdk::export_rule!(evaluate);
