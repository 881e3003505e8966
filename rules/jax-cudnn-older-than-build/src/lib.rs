//! XLA refuses a cuDNN whose major differs from, or whose minor is below,
//! the one it was compiled with (xla/stream_executor/cuda/cuda_dnn.cc,
//! `IsSourceCompatibleWithCudnnLibrary`), and JAX's CUDA backend then fails
//! with "DNN library initialization failed". The PyPI CUDA 12 plugin
//! (jax-cuda12-pjrt, which runs XLA, pinned to the same version by
//! jax-cuda12-plugin) finds cuDNN in the nvidia-cudnn-cu1x wheels, which
//! all install nvidia/cudnn/lib/libcudnn.so.<major>: an older cuDNN 9 wheel
//! (torch's pin, a manual downgrade, jax 0.4.30's own `>=9.0` floor) is the
//! one it loads. Build versions: `cudnn_build_version()` of each release's
//! jax_cuda12_plugin/_versions.so (Linux x86_64 wheel on PyPI).
#![no_std]

use pitfall_sdk::cudnn;
use pitfall_sdk::prelude::*;

/// The cuDNN a range of plugin releases was compiled with.
struct Build {
    /// The releases (jax-cuda12-pjrt and jax-cuda12-plugin versions).
    releases: &'static [&'static str],
    /// `cudnn_build_version()` as major.minor.patch.
    cudnn: &'static str,
    major: u32,
    minor: u32,
    /// An nvidia-cudnn-cu12 wheel on PyPI of that major and minor.
    wheel: &'static str,
}

/// Every x86_64 release of jax-cuda12-plugin on PyPI compiled with cuDNN 9
/// (read from its _versions.so); 0.4.22-0.4.28 were built with 8.9.
const BUILDS: &[Build] = &[
    Build {
        releases: &[
            "0.4.29", "0.4.30", "0.4.31", "0.4.32", "0.4.33", "0.4.34", "0.4.35", "0.4.36",
            "0.4.38", "0.5.0", "0.5.1", "0.5.3",
        ],
        cudnn: "9.1.1",
        major: 9,
        minor: 1,
        wheel: "9.1.1.17",
    },
    Build {
        releases: &[
            "0.6.0", "0.6.1", "0.6.2", "0.7.0", "0.7.1", "0.7.2", "0.8.0", "0.8.1", "0.8.2",
            "0.8.3", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.2", "0.11.0",
            "0.11.1",
        ],
        cudnn: "9.8.0",
        major: 9,
        minor: 8,
        wheel: "9.8.0.87",
    },
    Build {
        releases: &["0.11.2", "0.12.0", "0.12.0.1"],
        cudnn: "9.10.2",
        major: 9,
        minor: 10,
        wheel: "9.10.2.21",
    },
];

const PJRT: &str = "jax-cuda12-pjrt";
const PLUGIN: &str = "jax-cuda12-plugin";
const ARCH: &str = "host.arch";

const REMEDY_UPGRADE_CUDNN: u32 = 0;
const REMEDY_TORCH: u32 = 1;

fn build(version: &str) -> Option<&'static Build> {
    let version = version.trim();
    BUILDS.iter().find(|b| b.releases.contains(&version))
}

fn from_pypi(p: &Package) -> bool {
    p.ecosystem().is_none_or(|e| e.eq_ignore_ascii_case("pypi"))
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    // XLA and its check live in the PJRT wheel; the plugin pins the same
    // version, so either names the build.
    let Some(pjrt) = m.package(PJRT) else {
        return Ok(Outcome::clear());
    };
    if !from_pypi(&pjrt) {
        return Ok(Outcome::clear());
    }
    let (release, release_path) = match pjrt.version_text() {
        Some(v) => (v, pjrt.version_path()),
        None => match m.package(PLUGIN).and_then(|p| p.version_text().map(|v| (v, p))) {
            Some((v, plugin)) => (v, plugin.version_path()),
            None => return Err(Outcome::needs(pjrt.version_path().as_str())),
        },
    };
    let Some(b) = build(&release) else {
        return Ok(Outcome::clear());
    };
    let wheels: Vec<(&str, Package)> = cudnn::WHEELS
        .iter()
        .filter_map(|n| m.package(n).map(|p| (*n, p)))
        .filter(|(_, p)| from_pypi(p))
        .collect();
    // Every wheel of the build's major writes the same libcudnn.so.9; one
    // of another major is a different failure (the library is missing).
    // No such wheel: a system or conda cuDNN, not visible here.
    let Some((name, wheel)) = cudnn::all_older_than(wheels, b.major, b.minor)? else {
        return Ok(Outcome::clear());
    };
    if m.need_arch()? != "x86_64" {
        return Ok(Outcome::clear());
    }
    let mut minimum = String::new();
    push_u32(&mut minimum, b.major);
    minimum.push('.');
    push_u32(&mut minimum, b.minor);
    let mut found = Outcome::matched()
        .evidence(release_path.as_str())
        .evidence(wheel.version_path().as_str())
        .evidence(ARCH)
        .param("release", &release)
        .param("compiled", b.cudnn)
        .param("minimum", &minimum)
        .param("target", b.wheel)
        .param("cudnn", name)
        .param_field("cudnn_version", wheel.version_path().as_str())
        .remedy(REMEDY_UPGRADE_CUDNN);
    if let Some(torch) = m.package("torch") {
        found = found.remedy(REMEDY_TORCH);
        found = match torch.version_text() {
            Some(_) => found.param_field("torch", torch.version_path().as_str()),
            None => found.param("torch", "(version not reported)"),
        };
    }
    Ok(found)
}

fn push_u32(out: &mut String, n: u32) {
    pitfall_sdk::text::push_int(out, i64::from(n));
}

pitfall_sdk::export_rule!(evaluate);
