//! CUDA driver floors, the stack's CUDA version, the driver's own CUDA,
//! `cuda-compat` packages and consumer GPUs. `cuda-forward-compat-datacenter-only`
//! and `cuda-driver-older-than-runtime` include this file by path, so the
//! rules agree on all of it: keep it free of anything specific to one rule.
//!
//! The stack's CUDA is read from `drivers.cuda_runtime` (collect_env's "CUDA
//! used to build PyTorch", or the release table) and torch's `+cuXYZ` local
//! version; the driver's from `drivers.nvidia` or nvidia-smi's "CUDA
//! Version" (`drivers.cuda_driver`). The ambiguous `drivers.cuda` is not read.

#![allow(dead_code)] // each rule uses part of this file

use pitfall_sdk::prelude::*;

/// A CUDA `major.minor` and where it was read.
pub(crate) struct Cuda {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    /// For messages: `12.8`.
    pub(crate) text: String,
    /// For messages: `drivers.cuda_runtime` or `torch 2.8.0+cu128`.
    pub(crate) source: String,
    /// The evidence path.
    pub(crate) path: String,
}

/// Appends `n` in decimal (the SDK's formatter, kept under this name).
pub(crate) fn push_u64(out: &mut String, n: u64) {
    pitfall_sdk::text::push_int(out, i64::try_from(n).unwrap_or(i64::MAX));
}

pub(crate) fn cuda_text(major: u64, minor: u64) -> String {
    let mut s = String::new();
    push_u64(&mut s, major);
    s.push('.');
    push_u64(&mut s, minor);
    s
}

fn dotted_cuda(m: &Manifest, path: &str) -> Option<Cuda> {
    let d = m.text(path).and_then(|t| Dotted::parse(&t).ok())?;
    Some(Cuda {
        major: d.major(),
        minor: d.minor(),
        text: cuda_text(d.major(), d.minor()),
        source: String::from(path),
        path: String::from(path),
    })
}

/// The newest CUDA the stack runs: `drivers.cuda_runtime`, or the CUDA of a
/// `+cuXYZ` PyTorch wheel (which bundles its runtime), whichever is newer.
pub(crate) fn required_cuda(m: &Manifest) -> Option<Cuda> {
    let from_runtime = dotted_cuda(m, "drivers.cuda_runtime");
    let from_torch = m.package("torch").and_then(|p| {
        let v = p.version()?;
        let (major, minor) = v.cuda_build()?;
        let mut source = String::from("torch ");
        source.push_str(v.as_str());
        Some(Cuda {
            major,
            minor,
            text: cuda_text(major, minor),
            source,
            path: String::from(p.version_path().as_str()),
        })
    });
    match (from_runtime, from_torch) {
        // The same CUDA either way: name the wheel, which is what the user
        // installed (the runtime field is often filled from it).
        (Some(a), Some(b)) => Some(if (b.major, b.minor) >= (a.major, a.minor) { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// nvidia-smi's "CUDA Version": the newest CUDA the installed driver supports.
pub(crate) fn driver_cuda(m: &Manifest) -> Option<Cuda> {
    dotted_cuda(m, "drivers.cuda_driver")
}

/// The lowest driver branch for a CUDA major version under minor-version
/// compatibility, and the driver to upgrade to (CUDA compatibility guide,
/// "Minor Version Compatibility", Table 1: 11.x >= 450, 12.x >= 525, 13.x >=
/// 580; the exact versions are each major's first GA driver in Table 3 of
/// the CUDA release notes, 450.80.02 being the 11.x minimum the guide names).
pub(crate) fn driver_floor(cuda_major: u64) -> Option<(u64, &'static str)> {
    match cuda_major {
        13 => Some((580, "580.65.06")),
        12 => Some((525, "525.60.13")),
        11 => Some((450, "450.80.02")),
        _ => None,
    }
}

/// Linux driver of each CUDA release's GA (CUDA release notes, Table 3
/// "CUDA Toolkit and Corresponding Driver Versions", as of CUDA 13.2).
const GA_DRIVERS: [((u64, u64), &str); 21] = [
    ((11, 1), "455.23"),
    ((11, 2), "460.27.03"),
    ((11, 3), "465.19.01"),
    ((11, 4), "470.42.01"),
    ((11, 5), "495.29.05"),
    ((11, 6), "510.39.01"),
    ((11, 7), "515.43.04"),
    ((11, 8), "520.61.05"),
    ((12, 0), "525.60.13"),
    ((12, 1), "530.30.02"),
    ((12, 2), "535.54.03"),
    ((12, 3), "545.23.06"),
    ((12, 4), "550.54.14"),
    ((12, 5), "555.42.02"),
    ((12, 6), "560.28.03"),
    ((12, 8), "570.26"),
    ((12, 9), "575.51.03"),
    ((13, 0), "580.65.06"),
    ((13, 1), "590.44.01"),
    ((13, 2), "595.45.04"),
    ((11, 0), "450.51.05"),
];

/// The driver a CUDA release shipped with (its GA driver), where known.
pub(crate) fn ga_driver(major: u64, minor: u64) -> Option<&'static str> {
    GA_DRIVERS.iter().find(|(v, _)| *v == (major, minor)).map(|(_, d)| *d)
}

/// The newest CUDA in the table whose GA driver `driver` meets: what
/// nvidia-smi would print as "CUDA Version" (`None` below 11.0's driver).
pub(crate) fn supported_by_driver(driver: &Dotted) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    for (version, ga) in GA_DRIVERS.iter() {
        let Ok(ga) = Dotted::parse(ga) else { continue };
        if *driver >= ga && best.is_none_or(|b| *version > b) {
            best = Some(*version);
        }
    }
    best
}

/// The newest CUDA the table knows (beyond it nothing can be derived).
pub(crate) fn newest_known() -> (u64, u64) {
    (13, 2)
}

/// An installed forward-compatibility package and the CUDA it provides.
pub(crate) struct Compat {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    /// Its (normalised) package name, e.g. `cuda-compat-12-8`.
    pub(crate) name: String,
}

/// The newest `cuda-compat` package: Debian/RPM `cuda-compat-12-8`, or
/// conda's `cuda-compat` whose version is the CUDA version.
pub(crate) fn newest_compat(m: &Manifest) -> Option<Compat> {
    let mut best: Option<Compat> = None;
    for major in 11..=13u64 {
        for minor in 0..=9u64 {
            let mut name = String::from("cuda-compat-");
            push_u64(&mut name, major);
            name.push('-');
            push_u64(&mut name, minor);
            if m.package(&name).is_some()
                && best.as_ref().is_none_or(|b| (major, minor) > (b.major, b.minor))
            {
                best = Some(Compat { major, minor, name });
            }
        }
    }
    if let Some(p) = m.package("cuda-compat") {
        let parsed = p.version_text().and_then(|t| Dotted::parse(&t).ok());
        if let Some(v) = parsed.filter(|v| (11..=13).contains(&v.major()))
            && best.as_ref().is_none_or(|b| (v.major(), v.minor()) > (b.major, b.minor))
        {
            best = Some(Compat {
                major: v.major(),
                minor: v.minor(),
                name: String::from("cuda-compat"),
            });
        }
    }
    best
}

/// Whether a GPU model name is a GeForce / TITAN consumer card. Forward
/// compatibility works only on data-center GPUs (and some NGC-ready RTX
/// workstation SKUs), so only clear consumer names count here: `RTX 3090`,
/// `NVIDIA GeForce RTX 5090`, `GTX 1080 Ti`, `TITAN RTX`. Workstation cards
/// (`RTX A6000`, `RTX 6000 Ada`, `Quadro RTX 8000`, `RTX PRO 6000`) do not.
pub(crate) fn is_consumer(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    if lower.contains("quadro") || lower.contains("rtx pro") {
        return false;
    }
    if lower.contains("geforce") || lower.contains("gtx") || lower.contains("titan") {
        return true;
    }
    let mut words = lower.split(|c: char| c.is_whitespace() || c == '-' || c == '_');
    while let Some(word) = words.next() {
        if word == "rtx"
            && let Some(next) = words.next()
        {
            let b = next.as_bytes();
            // GeForce numbers: 2060 ... 5090 (x0y0 with y from 5 to 9).
            if b.len() == 4
                && (b'2'..=b'5').contains(&b[0])
                && b[1] == b'0'
                && (b'5'..=b'9').contains(&b[2])
                && b[3] == b'0'
            {
                return true;
            }
        }
    }
    false
}

/// The first NVIDIA consumer GPU, with its model name.
pub(crate) fn consumer_gpu(m: &Manifest) -> Option<(Accelerator, String)> {
    m.nvidia_gpus().find_map(|g| {
        let model = g.model()?;
        is_consumer(&model).then_some((g, model))
    })
}

/// Whether `cuda-forward-compat-datacenter-only` reports this manifest: a
/// `cuda-compat` package on a consumer GPU whose driver is below the
/// package's CUDA major floor, so the compat libraries would be loaded.
pub(crate) fn forward_compat_on_consumer(m: &Manifest, driver: &Dotted) -> bool {
    let Some(compat) = newest_compat(m) else {
        return false;
    };
    consumer_gpu(m).is_some()
        && driver_floor(compat.major).is_some_and(|(floor, _)| driver.major() < floor)
}

/// Whether an installed `cuda-compat` package provides at least `required`.
pub(crate) fn compat_covers(m: &Manifest, required: &Cuda) -> bool {
    newest_compat(m).is_some_and(|c| (c.major, c.minor) >= (required.major, required.minor))
}
