//! Container images carry binaries compiled for an x86 instruction set,
//! and a CPU without it stops them with SIGILL ("Illegal instruction").
//!
//! - Inference images in general are built for CPUs with AVX; NVIDIA's
//!   entrypoint warns that a CPU without it will likely hit an illegal
//!   instruction (SGLang issue 6025), and TGI's SIGILL in a VM was traced
//!   to hidden AVX (TGI issue 2238).
//! - vLLM's x86 CPU release images compile vLLM's kernels for the build
//!   machine's ISA (cmake/cpu_extension.cmake reads its /proc/cpuinfo):
//!   AVX-512 before 0.17.0, AVX-512 with BF16 and VNNI documented from
//!   0.10.1 (vLLM issues 18660, 24839; the x86 CPU install docs). 0.17.0
//!   adds an AVX2 build picked at run time when torch finds no AVX-512,
//!   while its AVX-512 build still uses BF16 and VNNI; 0.18.0 adds an
//!   AVX-512-only build, leaving AVX2 as the floor.
//! - Ollama's image up to 0.5.7 is left to Ollama's rules: before 0.1.23
//!   `ollama-runner-sigill-without-avx` (the flags of each release), from
//!   0.1.23 `ollama-gpu-disabled-without-avx` (the GPU turned off, nothing
//!   stops).
//!
//! Reads `host.cpu_flags` (the flags of /proc/cpuinfo).
#![no_std]

use pitfall_sdk::prelude::*;

const FLAGS: &str = "host.cpu_flags";
const VLLM_VERSION: &str = "packages.vllm.version";
/// CPU model names of generic virtual CPUs, which often hide AVX.
const VIRTUAL_CPUS: [&str; 3] = ["QEMU", "KVM", "Virtual CPU"];

/// vLLM's CPU release images: on Amazon ECR (the docs up to 0.17.0), and
/// on Docker Hub (the docs from 0.18.0).
const VLLM_ECR: &str = "q9t5s3a7/vllm-cpu-release-repo";
const VLLM_HUB: &str = "vllm/vllm-openai-cpu";
/// Ollama's image, judged by Ollama's own rules up to 0.5.7: before
/// 0.1.23 its runner dies with SIGILL (`ollama-runner-sigill-without-avx`,
/// which knows each release's flags), from 0.1.23 it turns the GPU off
/// and runs a CPU runner that needs no AVX
/// (`ollama-gpu-disabled-without-avx`), so nothing stops.
const OLLAMA: &str = "ollama/ollama";
const OLLAMA_JUDGED_BELOW: &str = "0.5.8rc0";

/// Remedy indices in rule.json.
const EXPOSE_HOST_CPU: u32 = 0;
const DISPATCHING_IMAGE: u32 = 1;
const BUILD_FOR_THIS_CPU: u32 = 2;

fn has(flags: &[String], flag: &str) -> bool {
    flags.iter().any(|f| f == flag)
}

/// A release's first three numbers: `0.10.2`, `v0.8.5.post1` and
/// `0.18.0-x86_64` give (0, 10, 2), (0, 8, 5), (0, 18, 0). A missing
/// number is 0; a pre-release counts as its release.
fn release(text: &str) -> Option<(u64, u64, u64)> {
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let mut parts = [0u64; 3];
    for (i, part) in text.split('.').take(3).enumerate() {
        let end = part.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(part.len());
        parts[i] = part.get(..end)?.parse().ok()?;
        if end < part.len() {
            break;
        }
    }
    Some((parts[0], parts[1], parts[2]))
}

/// The flags vLLM's CPU kernels need for release `v` on a CPU with
/// `flags`.
fn vllm_needs(v: (u64, u64, u64), flags: &[String]) -> &'static [&'static str] {
    if v < (0, 10, 1) {
        &["avx512f"]
    } else if v < (0, 17, 0) {
        &["avx512f", "avx512_bf16", "avx512_vnni"]
    } else if v < (0, 18, 0) && has(flags, "avx512f") {
        // 0.17's AVX-512 build, picked on any AVX-512 CPU, also uses these.
        &["avx512_bf16", "avx512_vnni"]
    } else {
        &["avx2"]
    }
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    if m.arch().as_deref() != Some("x86_64") {
        return Ok(Outcome::clear());
    }
    let Some(image) = m.image() else {
        return Ok(Outcome::clear());
    };
    if pitfall_sdk::image::is_of(&image, OLLAMA)
        && pitfall_sdk::image::release(&image)
            .is_some_and(|r| pep440_lt(r, OLLAMA_JUDGED_BELOW) == Some(true))
    {
        return Ok(Outcome::clear());
    }
    let flags = m.cpu_flags();
    let ecr = image.contains(VLLM_ECR);
    if ecr || image.contains(VLLM_HUB) {
        return vllm_cpu_image(m, &image, ecr, flags);
    }
    let Some(flags) = flags else {
        // Physical x86 CPUs since 2011 have AVX; ask when the CPU is a
        // generic virtual one or unknown.
        return match m.text_contains_any("host.cpu_model", &VIRTUAL_CPUS) {
            Some(false) => Ok(Outcome::clear()),
            Some(true) | None => Err(Outcome::needs(FLAGS)),
        };
    };
    if has(&flags, "avx") {
        return Ok(Outcome::clear());
    }
    Ok(finding(m, "AVX", "the container's binaries are built for CPUs with AVX", "they start")
        .remedy(EXPOSE_HOST_CPU))
}

/// vLLM's CPU release images: the ISA their kernels were built for.
fn vllm_cpu_image(
    m: &Manifest,
    image: &str,
    ecr: bool,
    flags: Option<Vec<String>>,
) -> Result<Outcome, Outcome> {
    // The release from the tag; for an ECR tag such as `latest`, from the
    // vLLM the image holds. Docker Hub's images (0.18.0 on, per the docs)
    // all have the AVX2 build, so their floor needs no release.
    let (version, from_package) = match pitfall_sdk::image::release(image).and_then(release) {
        Some(v) => (Some(v), false),
        None if ecr => match m.text(VLLM_VERSION) {
            Some(text) => match release(&text) {
                Some(v) => (Some(v), true),
                None => return Err(Outcome::unreadable(VLLM_VERSION)),
            },
            None if flags.is_none() => return Err(Outcome::needs(VLLM_VERSION).missing(FLAGS)),
            None => return Err(Outcome::needs(VLLM_VERSION)),
        },
        None => (None, false),
    };
    let Some(flags) = flags else {
        // AVX-512 is missing from many current x86 CPUs: always ask.
        return Err(Outcome::needs(FLAGS));
    };
    let needs: &[&str] = match version {
        Some(v) => vllm_needs(v, &flags),
        None => &["avx2"],
    };
    let missing = pitfall_sdk::text::missing(&flags, needs);
    if missing.is_empty() {
        return Ok(Outcome::clear());
    }
    let mut built = String::from("vLLM's CPU release image ");
    built.push_str(image);
    if from_package && let Some(text) = m.text(VLLM_VERSION) {
        built.push_str(" (vLLM ");
        built.push_str(&text);
        built.push(')');
    }
    built.push_str(" compiles vLLM's CPU kernels for ");
    for (i, flag) in needs.iter().enumerate() {
        if i > 0 {
            built.push_str(if i + 1 == needs.len() { " and " } else { ", " });
        }
        built.push_str(flag);
    }
    let mut outcome = finding(m, &missing, &built, "vLLM loads them")
        .remedy(DISPATCHING_IMAGE)
        .remedy(BUILD_FOR_THIS_CPU);
    if from_package {
        outcome = outcome.evidence(VLLM_VERSION);
    }
    Ok(outcome)
}

/// The finding: `missing` flags, what needs them, and when it stops.
fn finding(m: &Manifest, missing: &str, built: &str, when: &str) -> Outcome {
    let cpu = m.cpu_model().unwrap_or_else(|| String::from("this CPU"));
    let mut outcome = Outcome::matched()
        .evidence(FLAGS)
        .evidence("container.image")
        .param("cpu", &cpu)
        .param("missing", missing)
        .param("built", built)
        .param("when", when);
    if m.has("host.cpu_model") {
        outcome = outcome.evidence("host.cpu_model");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
