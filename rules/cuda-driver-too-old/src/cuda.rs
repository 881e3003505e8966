//! CUDA driver floors, the stack's CUDA version, `cuda-compat` packages and
//! consumer GPUs. `cuda-forward-compat-datacenter-only` (B12) includes this
//! file by path, so the two rules agree on all of it: keep it free of
//! anything specific to one rule.

#![allow(dead_code)] // each of the two rules uses part of this file

use pitfall_sdk::prelude::*;

/// A CUDA `major.minor` and where it was read.
pub(crate) struct Cuda {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    /// For messages: `12.8`.
    pub(crate) text: String,
    /// For messages: `drivers.cuda` or `torch 2.8.0+cu128`.
    pub(crate) source: String,
    /// The evidence path.
    pub(crate) path: String,
}

/// Appends `n` in decimal (the SDK's formatter, kept under this name).
pub(crate) fn push_u64(out: &mut String, n: u64) {
    pitfall_sdk::text::push_int(out, i64::try_from(n).unwrap_or(i64::MAX));
}

fn cuda_text(major: u64, minor: u64) -> String {
    let mut s = String::new();
    push_u64(&mut s, major);
    s.push('.');
    push_u64(&mut s, minor);
    s
}

/// The most demanding CUDA version the stack needs: `drivers.cuda`, or the
/// CUDA runtime bundled in a `+cuXYZ` PyTorch wheel, whichever is newer.
pub(crate) fn required_cuda(m: &Manifest) -> Option<Cuda> {
    let from_drivers = m.cuda().map(|c| Cuda {
        major: c.major(),
        minor: c.minor(),
        text: cuda_text(c.major(), c.minor()),
        source: String::from("drivers.cuda"),
        path: String::from("drivers.cuda"),
    });
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
    match (from_drivers, from_torch) {
        (Some(a), Some(b)) => Some(if (b.major, b.minor) > (a.major, a.minor) { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The lowest driver branch for a CUDA major version under minor-version
/// compatibility, and the driver to upgrade to (NVIDIA CUDA compatibility
/// guide). `None` for CUDA majors this rule does not know.
pub(crate) fn driver_floor(cuda_major: u64) -> Option<(u64, &'static str)> {
    match cuda_major {
        13 => Some((580, "580.65.06")),
        12 => Some((525, "525.60.13")),
        11 => Some((450, "450.80.02")),
        _ => None,
    }
}

/// The driver a CUDA release shipped with (its GA driver), where known.
pub(crate) fn ga_driver(major: u64, minor: u64) -> Option<&'static str> {
    match (major, minor) {
        (12, 0) => Some("525.60.13"),
        (12, 8) => Some("570.26"),
        (12, 9) => Some("575.51.03"),
        (13, 0) => Some("580.65.06"),
        _ => None,
    }
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
