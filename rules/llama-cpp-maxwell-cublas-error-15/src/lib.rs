//! llama.cpp's CUDA backend from build b1422 to b1727 multiplies attention
//! (KQ, KQV) with a batched FP16 cuBLAS GEMM (`cublasGemmBatchedEx` /
//! `cublasGemmStridedBatchedEx`, `CUBLAS_COMPUTE_16F`) whatever the GPU,
//! and on a compute capability 5.2 (Maxwell GM20x) GPU cuBLAS refuses it:
//! `cuBLAS error 15 at ggml-cuda.cu:NNNN: the requested functionality is
//! not supported`, and the process aborts on the first prompt.
//!
//! Read in llama.cpp's source at the tags on both sides:
//! - b1421 / b1422 (PR 3749): `ggml_cuda_mul_mat_mat_batched_cublas`
//!   added, taken for any F16 `src0` with every tensor on the GPU;
//! - b1430 (PR 3776): single-token attention goes there too unless built
//!   with `GGML_CUDA_FORCE_MMQ` (the compile-time `CUDA_USE_TENSOR_CORES`
//!   off); b1467 (PR 3882): the batched branch requires
//!   `CUDA_USE_TENSOR_CORES`, so `LLAMA_CUDA_FORCE_MMQ` builds avoid it;
//! - b1727 / b1728 (PR 4682): gated on `fp16_performance_good`, the lowest
//!   compute capability being 7.0 (Volta) or more.
//!
//! Carried by: llama.cpp itself (`bNNNN`, or the build number alone, as it
//! prints `build = 1620`), llama-cpp-python 0.2.12 to 0.2.26 (vendored
//! b1457 to b1708; 0.2.27 vendors b1768), and Ollama 0.1.12 to 0.1.18
//! (vendored b1567 to b1662, built with llama.cpp's default architectures
//! 52;61;70). Ollama 0.1.19 to 0.1.22 leave 5.x GPUs out instead (rule
//! `ollama-gpu-below-compute-capability`); 0.1.23 ships b1999.
//!
//! llama.cpp and llama-cpp-python are CPU-only unless built with cuBLAS:
//! the rule judges them only when their `cuda` build field says so.
//! Not judged: compute capability 5.0 (no report read, and the default
//! builds carry no 5.0 code), 5.3, other programs that bundle ggml
//! (whisper.cpp, Tabby).
#![no_std]

use pitfall_sdk::image;
use pitfall_sdk::prelude::*;

const GM20X: ComputeCapability = ComputeCapability::new(5, 2);
const TEGRA_X1: ComputeCapability = ComputeCapability::new(5, 3);

const REPOSITORY: &str = "ollama/ollama";
const OLLAMA_VERSION: &str = "packages.ollama.version";
const PY_CUDA: &str = "packages.llama-cpp-python.cuda";
const CPP_VERSION: &str = "packages.llama-cpp.version";
const CPP_CUDA: &str = "packages.llama-cpp.cuda";

/// llama.cpp builds with the batched FP16 path on every GPU.
const FIRST_BUILD: u32 = 1422;
const FIXED_BUILD: u32 = 1728;
/// llama-cpp-python releases vendoring such a build.
const PY_AFFECTED: &str = ">=0.2.12,<0.2.27";
/// Ollama releases bundling such a build and using 5.x GPUs.
const OLLAMA_AFFECTED: &str = ">=0.1.12,<0.1.19";

const REMEDY_PY: u32 = 0;
const REMEDY_CPP: u32 = 1;
const REMEDY_OLLAMA: u32 = 2;
const REMEDY_IMAGE: u32 = 3;

/// A stack in the manifest that carries an affected llama.cpp.
enum Hit {
    /// A package whose version is quoted from its field.
    Package {
        stack: &'static str,
        version: Path,
        build: Option<&'static str>,
        bundles: &'static str,
        remedy: u32,
    },
    /// An `ollama/ollama` image, by its tag.
    Image(String),
}

/// What one stack says.
enum Answer {
    Absent,
    Clear,
    Hit(Hit),
    /// The field that decides is missing or unusable.
    Unknown(String),
}

fn ollama(m: &Manifest) -> Answer {
    let package = m.package("ollama");
    if let Some(p) = &package
        && p.version_text().is_some()
    {
        return match p.version_answer(OLLAMA_AFFECTED) {
            Ok(true) => Answer::Hit(Hit::Package {
                stack: "Ollama",
                version: p.version_path(),
                build: None,
                bundles: "its llama.cpp is one of builds b1567 to b1662",
                remedy: REMEDY_OLLAMA,
            }),
            Ok(false) => Answer::Clear,
            Err(_) => Answer::Unknown(String::from(p.version_path().as_str())),
        };
    }
    if let Some(reference) = m.image().filter(|i| image::is_of(i, REPOSITORY)) {
        let tag = image::tag(&reference).unwrap_or("latest");
        if tag.contains("rocm") {
            return Answer::Clear;
        }
        let release = image::release(&reference);
        return match release.map(|r| (pep440_ge(r, "0.1.12"), pep440_lt(r, "0.1.19"))) {
            Some((Some(true), Some(true))) => Answer::Hit(Hit::Image(String::from(tag))),
            Some((Some(_), Some(_))) => Answer::Clear,
            _ => Answer::Unknown(String::from(image::IMAGE)),
        };
    }
    match package {
        Some(p) => Answer::Unknown(String::from(p.version_path().as_str())),
        None if m.workload().engine().as_deref() == Some("ollama") => {
            Answer::Unknown(String::from(OLLAMA_VERSION))
        }
        None => Answer::Absent,
    }
}

fn llama_cpp_python(m: &Manifest) -> Answer {
    let Some(p) = m.package("llama-cpp-python") else {
        return Answer::Absent;
    };
    match p.version_answer(PY_AFFECTED) {
        Ok(true) if m.has(PY_CUDA) => Answer::Hit(Hit::Package {
            stack: "llama-cpp-python",
            version: p.version_path(),
            build: Some(PY_CUDA),
            bundles: "its vendored llama.cpp is one of builds b1457 to b1708",
            remedy: REMEDY_PY,
        }),
        Ok(true) => Answer::Unknown(String::from(PY_CUDA)),
        Ok(false) => Answer::Clear,
        Err(_) => Answer::Unknown(String::from(p.version_path().as_str())),
    }
}

/// A llama.cpp build number: `b1620`, `1620`, `b1620-fe680e3`.
fn build_number(text: &str) -> Option<u32> {
    let text = text.trim();
    let digits = text.strip_prefix(['b', 'B']).unwrap_or(text);
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    let rest = &digits[end..];
    if end == 0 || !(rest.is_empty() || rest.starts_with(['-', ' ', '+', '('])) {
        return None;
    }
    digits[..end].parse().ok()
}

fn llama_cpp(m: &Manifest) -> Answer {
    let Some(p) = m.package("llama.cpp") else {
        return Answer::Absent;
    };
    let Some(build) = p.version_text().as_deref().and_then(build_number) else {
        return Answer::Unknown(String::from(CPP_VERSION));
    };
    if !(FIRST_BUILD..FIXED_BUILD).contains(&build) {
        return Answer::Clear;
    }
    if !m.has(CPP_CUDA) {
        return Answer::Unknown(String::from(CPP_CUDA));
    }
    Answer::Hit(Hit::Package {
        stack: "llama.cpp",
        version: p.version_path(),
        build: Some(CPP_CUDA),
        bundles: "builds b1422 to b1727 take this path",
        remedy: REMEDY_CPP,
    })
}

fn evaluate(m: &Manifest) -> Outcome {
    let mut hit = None;
    let mut unknown = Vec::new();
    let mut present = false;
    for answer in [ollama(m), llama_cpp_python(m), llama_cpp(m)] {
        match answer {
            Answer::Absent => {}
            Answer::Clear => present = true,
            Answer::Hit(h) => {
                present = true;
                hit.get_or_insert(h);
            }
            Answer::Unknown(path) => {
                present = true;
                unknown.push(path);
            }
        }
    }
    if !present || (hit.is_none() && unknown.is_empty()) {
        return Outcome::clear();
    }
    // Any NVIDIA GPU of compute capability 5.2.
    let mut gpu = None;
    let mut no_cc = None;
    for g in m.nvidia_gpus() {
        match g.compute_capability() {
            Some(cc) if cc >= GM20X && cc < TEGRA_X1 => {
                gpu = Some((g, cc));
                break;
            }
            Some(_) => {}
            None => {
                no_cc.get_or_insert_with(|| g.field_path("compute_capability"));
            }
        }
    }
    let Some((gpu, cc)) = gpu else {
        return match no_cc {
            Some(path) => unknown.iter().fold(Outcome::needs(path.as_str()), |o, p| o.missing(p)),
            None => Outcome::clear(),
        };
    };
    let Some(hit) = hit else {
        return unknown.iter().fold(Outcome::undetermined(), |o, path| o.missing(path));
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    match &hit {
        Hit::Package { stack, version, build, bundles, remedy } => {
            let outcome = outcome
                .evidence(version.as_str())
                .param("stack", stack)
                .param_field("version", version.as_str())
                .param("bundles", bundles)
                .remedy(*remedy);
            match build {
                Some(path) => outcome.evidence(path),
                None => outcome,
            }
        }
        Hit::Image(tag) => outcome
            .evidence(image::IMAGE)
            .param("stack", "Ollama")
            .param("version", tag)
            .param("bundles", "its llama.cpp is one of builds b1567 to b1662")
            .remedy(REMEDY_IMAGE),
    }
}

pitfall_sdk::export_rule!(evaluate);
