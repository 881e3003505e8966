//! TensorFlow's Linux x86_64 wheels dlopen the CUDA and cuDNN libraries of
//! the majors they were built with (libcudart.so.<CUDA major>,
//! libcudnn.so.<cuDNN major>); when one is missing, every GPU is skipped
//! and TensorFlow runs on the CPU (gpu_device.cc, "Cannot dlopen some GPU
//! libraries"; dlopen_checker.cc needs cudart, cublas, cublasLt, cufft,
//! cusolver, cusparse and cudnn).
//!
//! Per release (tested build configurations, tensorflow/docs
//! site/en/install/source.md; the `and-cuda` extra in each wheel's METADATA
//! on PyPI, read for every x.y.z from 2.13.1 to 2.21.0):
//! - 2.12, 2.13: CUDA 11.8, cuDNN 8.6 (cuda_config.h in the wheels), no
//!   extra, and libtensorflow_framework.so.2's RUNPATH is `$ORIGIN/` only:
//!   the libraries must be on the library path (their pip guide: conda's
//!   cudatoolkit 11.8.0, nvidia-cudnn-cu11 8.6.0.163, LD_LIBRARY_PATH);
//! - 2.14: CUDA 11.8, cuDNN 8.7 (nvidia-*-cu11 wheels);
//! - 2.15: CUDA 12.2, cuDNN 8.9 (nvidia-*-cu12, nvidia-cudnn-cu12 8.9.4.25);
//! - 2.16, 2.17: CUDA 12.3, cuDNN 8.9 (8.9.7.29);
//! - 2.18 to 2.21: CUDA 12.5, cuDNN 9.3 (9.3.0.75; from 2.20 a range <10).
//!
//! The wheels' libraries are found through the RUNPATH of
//! libtensorflow_framework.so.2 ($ORIGIN/../nvidia/<lib>/lib). This rule
//! matches when the listed NVIDIA wheels (or conda's cudatoolkit/cudnn)
//! provide another major than the release needs and none provides its own:
//! a system CUDA outside the package lists (a runfile install,
//! LD_LIBRARY_PATH) is not visible, hence a warning.
#![no_std]

use pitfall_sdk::prelude::*;

/// A run of TensorFlow releases built with one CUDA and cuDNN.
struct Build {
    /// The releases (PEP 440 specifier).
    range: &'static str,
    /// What the tested build configurations table lists.
    built: &'static str,
    cuda: u32,
    cudnn: u32,
    /// The cuDNN minor the release's compiled check asks for at least
    /// (read in each wheel's libtensorflow_framework.so.2 for
    /// `tensorflow-cudnn-older-than-build`: 8.6.0, 8.9.4, 8.9.6, 9.3.0).
    cudnn_minor: u32,
    /// The `and-cuda` extra's pins (the floor from 2.20 on).
    cudart_pin: &'static str,
    cudnn_pin: &'static str,
    /// The newest release of the run (for the "pin TensorFlow" remedy).
    newest: &'static str,
    /// Whether `pip install tensorflow[and-cuda]` brings the libraries
    /// and the RUNPATH finds them (from 2.14); 2.12 and 2.13 are never
    /// offered as the release to pin.
    and_cuda: bool,
}

const BUILDS: &[Build] = &[
    Build {
        range: ">=2.12,<2.14",
        built: "CUDA 11.8 and cuDNN 8.6",
        cuda: 11,
        cudnn: 8,
        cudnn_minor: 6,
        // 2.14's and-cuda pin (the same CUDA 11.8); the cuDNN of their guide.
        cudart_pin: "11.8.89",
        cudnn_pin: "8.6.0.163",
        newest: "2.13.1",
        and_cuda: false,
    },
    Build {
        range: ">=2.14,<2.15",
        built: "CUDA 11.8 and cuDNN 8.7",
        cuda: 11,
        cudnn: 8,
        cudnn_minor: 6,
        cudart_pin: "11.8.89",
        cudnn_pin: "8.7.0.84",
        newest: "2.14.1",
        and_cuda: true,
    },
    Build {
        range: ">=2.15,<2.16",
        built: "CUDA 12.2 and cuDNN 8.9",
        cuda: 12,
        cudnn: 8,
        cudnn_minor: 9,
        cudart_pin: "12.2.140",
        cudnn_pin: "8.9.4.25",
        newest: "2.15.1",
        and_cuda: true,
    },
    Build {
        range: ">=2.16,<2.18",
        built: "CUDA 12.3 and cuDNN 8.9",
        cuda: 12,
        cudnn: 8,
        cudnn_minor: 9,
        cudart_pin: "12.3.101",
        cudnn_pin: "8.9.7.29",
        newest: "2.17.1",
        and_cuda: true,
    },
    Build {
        range: ">=2.18,<2.20",
        built: "CUDA 12.5 and cuDNN 9.3",
        cuda: 12,
        cudnn: 9,
        cudnn_minor: 3,
        cudart_pin: "12.5.82",
        cudnn_pin: "9.3.0.75",
        newest: "2.19.1",
        and_cuda: true,
    },
    Build {
        range: ">=2.20,<2.22",
        built: "CUDA 12.5 and cuDNN 9.3",
        cuda: 12,
        cudnn: 9,
        cudnn_minor: 3,
        cudart_pin: "12.5.82",
        cudnn_pin: "9.3.0.75",
        newest: "2.21.0",
        and_cuda: true,
    },
];

/// CUDA runtime wheels, each named for its CUDA major.
const CUDART_WHEELS: [(&str, u32); 3] = [
    ("nvidia-cuda-runtime-cu11", 11),
    ("nvidia-cuda-runtime-cu12", 12),
    ("nvidia-cuda-runtime-cu13", 13),
];
/// cuDNN wheels: the library's major is the wheel's version's.
const CUDNN_WHEELS: [&str; 3] = ["nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"];
/// conda packages TensorFlow's install guide used (`conda install -c
/// conda-forge cudatoolkit=11.2 cudnn=8.1.0`): the major is the version's.
const CONDA_CUDART: &str = "cudatoolkit";
const CONDA_CUDNN: &str = "cudnn";
const ARCH: &str = "host.arch";

const REMEDY_WHEELS: u32 = 0;
const REMEDY_PIN_TF: u32 = 1;
/// 2.12 and 2.13: CUDA 11.8 and cuDNN 8.6 on the library path.
const REMEDY_LIBRARY_PATH: u32 = 2;

/// What the listed packages say about one library.
#[derive(Default)]
struct Seen<'a> {
    /// A package provides the needed major.
    ok: bool,
    /// The first package that provides another major: (name, version
    /// path, major).
    other: Option<(&'a str, Path, u32)>,
}

impl<'a> Seen<'a> {
    fn add(&mut self, name: &'a str, path: Path, major: u32, needed: u32) {
        if major == needed {
            self.ok = true;
        } else if self.other.is_none() {
            self.other = Some((name, path, major));
        }
    }

    /// Another major is there and the needed one is not.
    fn wrong(&self) -> Option<&(&'a str, Path, u32)> {
        if self.ok { None } else { self.other.as_ref() }
    }
}

/// The leading number of a version (`8.9.4.25` -> 8).
fn major(version: &str) -> Option<u32> {
    version.trim().split('.').next()?.parse().ok()
}

/// The major of a package's version, or the outcome naming the field.
fn version_major(p: &Package) -> Result<u32, Outcome> {
    let Some(text) = p.version_text() else {
        return Err(Outcome::needs(p.version_path().as_str()));
    };
    major(&text).ok_or_else(|| Outcome::unreadable(p.version_path().as_str()))
}

fn is_conda(p: &Package) -> bool {
    p.ecosystem().is_some_and(|e| e.trim().eq_ignore_ascii_case("conda"))
}

fn is_pypi(p: &Package) -> bool {
    p.ecosystem().is_none_or(|e| e.trim().eq_ignore_ascii_case("pypi"))
}

/// The second number of a version (`8.9.4.25` -> 9).
fn minor(version: &str) -> Option<u32> {
    version.trim().split('.').nth(1)?.parse().ok()
}

/// The newest release built for this CUDA and cuDNN major whose cuDNN
/// check the installed cuDNN passes (`minor`: the newest minor listed of
/// that major; `None` with no cuDNN package listed, which nothing here
/// can judge), if any. An older minor would only trade this error for
/// `tensorflow-cudnn-older-than-build`'s.
fn release_for(cuda: u32, cudnn: u32, minor: Option<u32>) -> Option<&'static Build> {
    BUILDS.iter().rev().find(|b| {
        b.and_cuda && b.cuda == cuda && b.cudnn == cudnn && minor.is_none_or(|m| m >= b.cudnn_minor)
    })
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    // Selectors: `package:tensorflow` and `accelerator:nvidia`.
    let Some(tf) = m.package("tensorflow") else {
        return Ok(Outcome::clear());
    };
    if m.nvidia_gpus().next().is_none() || !is_pypi(&tf) {
        return Ok(Outcome::clear());
    }
    // The CUDA runtimes and cuDNNs listed, with their majors.
    let mut runtimes: Vec<(&str, Path, u32)> = Vec::new();
    for (name, cuda) in CUDART_WHEELS {
        if let Some(p) = m.package(name).filter(is_pypi) {
            runtimes.push((name, p.version_path(), cuda));
        }
    }
    if let Some(p) = m.package(CONDA_CUDART).filter(is_conda) {
        runtimes.push((CONDA_CUDART, p.version_path(), version_major(&p)?));
    }
    let mut cudnns: Vec<(&str, Path, u32)> = Vec::new();
    // Each cuDNN's (major, minor), the minor 0 when unreadable.
    let mut cudnn_versions: Vec<(u32, u32)> = Vec::new();
    for (name, p) in CUDNN_WHEELS
        .iter()
        .filter_map(|n| m.package(n).filter(is_pypi).map(|p| (*n, p)))
        .chain(m.package(CONDA_CUDNN).filter(is_conda).map(|p| (CONDA_CUDNN, p)))
    {
        let major = version_major(&p)?;
        let minor = p.version_text().and_then(|t| minor(&t)).unwrap_or(0);
        cudnns.push((name, p.version_path(), major));
        cudnn_versions.push((major, minor));
    }
    // Without any, the libraries can only come from the system: not judged.
    if runtimes.is_empty() && cudnns.is_empty() {
        return Ok(Outcome::clear());
    }
    let mut build = None;
    for b in BUILDS {
        if tf.need_version_in(b.range)? {
            build = Some(b);
            break;
        }
    }
    let Some(build) = build else {
        return Ok(Outcome::clear());
    };
    let mut cudart = Seen::default();
    for (name, path, major) in runtimes {
        cudart.add(name, path, major, build.cuda);
    }
    let mut cudnn = Seen::default();
    for (name, path, major) in cudnns {
        cudnn.add(name, path, major, build.cudnn);
    }

    let (lib, wrong, needed) = match (cudart.wrong(), cudnn.wrong()) {
        (Some(w), _) => ("CUDA", w, build.cuda),
        (None, Some(w)) => ("cuDNN", w, build.cudnn),
        (None, None) => return Ok(Outcome::clear()),
    };
    // The tabled wheels are the Linux x86_64 ones.
    if m.need_arch()? != "x86_64" {
        return Ok(Outcome::clear());
    }
    let (name, path, other) = wrong;
    // A release built for what is installed, if the table has one.
    let have_cuda = cudart.wrong().map_or(build.cuda, |w| w.2);
    let have_cudnn = cudnn.wrong().map_or(build.cudnn, |w| w.2);
    let mut so = String::from(if lib == "CUDA" { "libcudart.so." } else { "libcudnn.so." });
    if lib == "CUDA" && needed == 11 {
        so.push_str("11.0");
    } else {
        push_u32(&mut so, needed);
    }
    let mut cu = String::from("cu");
    push_u32(&mut cu, build.cuda);
    let mut cudart_wheel = String::from("nvidia-cuda-runtime-");
    cudart_wheel.push_str(&cu);
    let mut cudnn_wheel = String::from("nvidia-cudnn-");
    cudnn_wheel.push_str(&cu);
    let mut other_text = String::new();
    push_u32(&mut other_text, *other);
    let mut outcome = Outcome::matched()
        .evidence(tf.version_path().as_str())
        .evidence(path.as_str())
        .evidence(ARCH)
        .param_field("tensorflow", tf.version_path().as_str())
        .param("built", build.built)
        .param("lib", lib)
        .param("so", &so)
        .param("package", name)
        .param_field("package_version", path.as_str())
        .param("other", &other_text)
        .param("cu", &cu)
        .param("cudart_wheel", &cudart_wheel)
        .param("cudart_pin", build.cudart_pin)
        .param("cudnn_wheel", &cudnn_wheel)
        .param("cudnn_pin", build.cudnn_pin)
        .remedy(if build.and_cuda { REMEDY_WHEELS } else { REMEDY_LIBRARY_PATH });
    let have_minor = if cudnn_versions.is_empty() {
        None
    } else {
        Some(cudnn_versions.iter().filter(|v| v.0 == have_cudnn).map(|v| v.1).max().unwrap_or(0))
    };
    if let Some(fit) = release_for(have_cuda, have_cudnn, have_minor) {
        outcome = outcome.param("tf_fix", fit.newest).remedy(REMEDY_PIN_TF);
    }
    Ok(outcome)
}

fn push_u32(out: &mut String, n: u32) {
    pitfall_sdk::text::push_int(out, i64::from(n));
}

pitfall_sdk::export_rule!(evaluate);
