//! Inference containers are built for x86 CPUs with AVX; NVIDIA's
//! entrypoint warns that a CPU without it will likely hit an illegal
//! instruction (SGLang issue 6025), and TGI's SIGILL in a VM was traced to
//! hidden AVX (TGI issue 2238).
//!
//! Reads the proposed `host.cpu_flags` (the /proc/cpuinfo flags, a list or
//! one space-separated text).
#![no_std]

use pitfall_sdk::prelude::*;

const FLAGS: &str = "host.cpu_flags";
/// CPU model names of generic virtual CPUs, which often hide AVX.
const VIRTUAL_CPUS: [&str; 3] = ["QEMU", "KVM", "Virtual CPU"];

/// Whether the flags include `avx` (exactly; `avx2` and `avx512f` alone do
/// not occur without it). `None` when the manifest has no flags.
fn has_avx(m: &Manifest) -> Option<bool> {
    if let Some(n) = m.len(FLAGS) {
        let found = (0..n).any(|i| {
            m.text(Path::new(FLAGS).index(i).as_str())
                .is_some_and(|f| f.trim().eq_ignore_ascii_case("avx"))
        });
        return Some(found);
    }
    let text = m.text(FLAGS)?;
    Some(text.split_whitespace().any(|f| f.eq_ignore_ascii_case("avx")))
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.arch().as_deref() != Some("x86_64") || m.image().is_none() {
        return Outcome::clear();
    }
    let avx = match has_avx(m) {
        Some(avx) => avx,
        None => {
            // Physical x86 CPUs since 2011 have AVX; ask when the CPU is a
            // generic virtual one or unknown.
            return match m.text_contains_any("host.cpu_model", &VIRTUAL_CPUS) {
                Some(false) => Outcome::clear(),
                // A generic virtual CPU, or nothing known about the CPU.
                Some(true) | None => Outcome::needs(FLAGS),
            };
        }
    };
    if avx {
        return Outcome::clear();
    }
    let cpu = m.cpu_model().unwrap_or_else(|| String::from("this CPU"));
    let mut outcome =
        Outcome::matched().evidence(FLAGS).evidence("container.image").param("cpu", &cpu);
    if m.has("host.cpu_model") {
        outcome = outcome.evidence("host.cpu_model");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
