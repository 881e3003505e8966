//! Python interpreter versions outside what vLLM 0.14.0-0.26.0 (3.10-3.13)
//! or PyTorch 2.9-2.12 (3.10-3.14) publish wheels for (KNOWLEDGE.md B21):
//! pip finds no matching distribution. The interpreter is the package
//! named `python`.
#![no_std]

use pitfall_sdk::prelude::*;

/// One package's supported Python range, for the releases KNOWLEDGE.md covers.
struct Support {
    package: &'static str,
    label: &'static str,
    /// Releases covered, as (major, minor, micro), inclusive.
    from: (u64, u64, u64),
    to: (u64, u64, u64),
    /// Python minor versions supported (3.x), inclusive.
    python: (u64, u64),
    python_label: &'static str,
}

const SUPPORT: [Support; 2] = [
    Support {
        package: "vllm",
        label: "vLLM",
        from: (0, 14, 0),
        to: (0, 26, 0),
        python: (10, 13),
        python_label: "3.10 to 3.13",
    },
    Support {
        package: "torch",
        label: "PyTorch",
        from: (2, 9, 0),
        to: (2, 12, u64::MAX),
        python: (10, 14),
        python_label: "3.10 to 3.14",
    },
];

fn release3(v: &Version) -> (u64, u64, u64) {
    let r = v.release();
    let at = |i: usize| r.get(i).copied().unwrap_or(0);
    (at(0), at(1), at(2))
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(python) = m.package("python") else {
        return Outcome::clear();
    };
    // The packages whose release KNOWLEDGE.md covers.
    let mut covered: Vec<(&Support, Package, Version)> = Vec::new();
    for s in &SUPPORT {
        if let Some(p) = m.package(s.package)
            && let Some(v) = p.version()
        {
            let rel = release3(&v);
            if rel >= s.from && rel <= s.to {
                covered.push((s, p, v));
            }
        }
    }
    if covered.is_empty() {
        return Outcome::clear();
    }
    let Some(py) = python.version() else {
        return Outcome::needs(python.version_path().as_str());
    };
    let (major, minor, _) = release3(&py);
    for (s, p, v) in &covered {
        if major == 3 && minor >= s.python.0 && minor <= s.python.1 {
            continue;
        }
        return Outcome::matched()
            .evidence(python.version_path().as_str())
            .evidence(p.version_path().as_str())
            .param("python", py.as_str())
            .param("package", s.label)
            .param("version", v.as_str())
            .param("supported", s.python_label);
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
