//! FlashInfer (0.2.0+) JIT-compiles kernels with CUDA_HOME's nvcc; its
//! sources include cuda_fp8.h and its docs start at CUDA 11.8, so an older
//! toolkit fails the JIT build (SGLang issue 5389: nvcc 11.7).
//!
//! From 0.6.7 its JIT targets `12.0f` on an SM 12.x GPU (RTX 50xx, RTX PRO
//! 6000, DGX Spark) and raises "SM 12.x requires CUDA >= 12.9" when the
//! nvcc of CUDA_HOME is older (flashinfer/compilation_context.py,
//! `_normalize_cuda_arch`; 0.6.6 still built `120a`). For the local GPUs that
//! error is caught and only logged ("Failed to get device capability"), the
//! GPU is left out of the targets, and every JIT module then fails with
//! "FlashInfer requires GPUs with sm75 or higher" (jit/core.py,
//! `check_cuda_arch`, called by `gen_jit_spec`) or "No supported CUDA
//! architectures found for major versions [12]". From 0.7.1 SM 12.0 builds
//! `120a` with CUDA 12.8; SM 12.1 and up still need 12.9.
#![no_std]

use pitfall_sdk::prelude::*;

const JIT: &str = ">=0.2.0";
const NVCC: &str = "build.tools.nvcc";
/// Releases whose JIT needs CUDA 12.9 for every SM 12.x target.
const SM12_ALL_NEED_129: &str = ">=0.6.7,<0.7.1";
/// Releases where SM 12.0 needs 12.8 and SM 12.1 and up 12.9 (the
/// change is in 0.7.1rc1 already).
const SM120_NEEDS_128: &str = ">=0.7.1rc1";
const ARCH_ENV: &str = "FLASHINFER_CUDA_ARCH_LIST";
const CUDA_FP8: &str = "kernel builds fail (its sources include cuda_fp8.h)";
const DROPPED: &str = "its JIT leaves the GPU out of its targets (it logs 'Failed to get device capability' with its CUDA requirement for SM 12.x) and every kernel it builds then fails with 'FlashInfer requires GPUs with sm75 or higher' or 'No supported CUDA architectures found for major versions [12]'";
const ENV_RAISES: &str = "importing its JIT raises RuntimeError 'SM 12.x requires CUDA >= 12.9' (from 0.7.1 'SM 120 requires CUDA >= 12.8' or 'SM 12.1+ requires CUDA >= 12.9') for FLASHINFER_CUDA_ARCH_LIST";

/// The release in an nvcc version text: `11.7`, `11.7.64`, or nvcc's
/// `Cuda compilation tools, release 11.7, V11.7.64`.
fn nvcc_release(text: &str) -> Option<Dotted> {
    let t = text.trim();
    let t = match t.find("release ") {
        Some(i) => &t[i + "release ".len()..],
        None => t,
    };
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    Dotted::parse(&t[..end]).ok()
}

/// torch's CUDA from its local version (`2.5.1+cu124` gives `12.4`).
fn torch_cuda(m: &Manifest) -> Option<String> {
    let torch = m.package("torch")?.version()?;
    let (major, minor) = pitfall_sdk::version::cuda_tag(torch.local()?)?;
    // A torch older than FlashInfer's CUDA floor is no model to copy.
    if (major, minor) < (11, 8) {
        return None;
    }
    let mut s = String::with_capacity(8);
    let mut buf = [0u8; 24];
    s.push_str(pitfall_sdk::text::format_int(major as i64, &mut buf));
    s.push('.');
    s.push_str(pitfall_sdk::text::format_int(minor as i64, &mut buf));
    Some(s)
}

fn evaluate(m: &Manifest) -> Outcome {
    // The host files the older wheels' name, flashinfer, under this one.
    let Some(flashinfer) = m.package("flashinfer-python") else {
        return Outcome::clear();
    };
    match flashinfer.version_in(JIT) {
        None => return Outcome::needs(flashinfer.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let nvcc = match m.build_tool("nvcc") {
        Some(Some(text)) => text,
        // No toolkit at all: another failure, not judged here.
        Some(None) => return Outcome::clear(),
        None => return Outcome::needs(NVCC),
    };
    let Some(release) = nvcc_release(&nvcc) else {
        return Outcome::needs(NVCC);
    };
    if (release.major(), release.minor()) < (11, 8) {
        let cuda = torch_cuda(m).unwrap_or_else(|| String::from("12.4"));
        let outcome = Outcome::matched()
            .evidence(flashinfer.version_path().as_str())
            .evidence(NVCC)
            .param("floor", "11.8")
            .param("target", "")
            .param("effect", CUDA_FP8);
        return finish(m, outcome, &flashinfer, &release, &cuda);
    }
    // SM 12.x: the release decides the CUDA each target needs.
    let all_129 = match flashinfer.need_version_in(SM12_ALL_NEED_129) {
        Ok(answer) => answer,
        Err(undetermined) => return undetermined,
    };
    let split = !all_129
        && match flashinfer.need_version_in(SM120_NEEDS_128) {
            Ok(answer) => answer,
            Err(undetermined) => return undetermined,
        };
    if !all_129 && !split {
        return Outcome::clear();
    }
    // The CUDA (major, minor) a 12.x target needs in this release.
    let needs = |minor: u32| -> (u64, u64) { if split && minor == 0 { (12, 8) } else { (12, 9) } };
    let have = (release.major(), release.minor());
    let mut cc_buf = [0u8; 24];
    let (outcome, floor) = if let Some(list) = m.env(ARCH_ENV) {
        // Entries with a suffix (`12.0a`) are taken as they are.
        let short = list
            .split_whitespace()
            .filter(|a| a.ends_with(|c: char| c.is_ascii_digit()))
            .filter_map(|a| ComputeCapability::parse(a).ok())
            .filter(|cc| cc.major == 12)
            .map(|cc| needs(cc.minor))
            .filter(|need| have < *need)
            .max();
        let Some(floor) = short else {
            return Outcome::clear();
        };
        let outcome = Outcome::matched()
            .evidence(flashinfer.version_path().as_str())
            .evidence(NVCC)
            .evidence("env.FLASHINFER_CUDA_ARCH_LIST")
            .param("target", " for SM 12.x in FLASHINFER_CUDA_ARCH_LIST")
            .param("effect", ENV_RAISES);
        (outcome, floor)
    } else {
        let mut unknown = None;
        let mut found = None;
        for gpu in m.nvidia_gpus() {
            match gpu.compute_capability() {
                Some(cc) if cc.major == 12 && have < needs(cc.minor) => {
                    found = Some((gpu, cc));
                    break;
                }
                Some(_) => {}
                None => {
                    unknown.get_or_insert(gpu);
                }
            }
        }
        let (gpu, cc) = match (found, unknown) {
            (Some(found), _) => found,
            (None, Some(gpu)) => {
                return Outcome::needs(gpu.field_path("compute_capability").as_str());
            }
            (None, None) => return Outcome::clear(),
        };
        let floor = needs(cc.minor);
        let mut target = String::from(" for the ");
        target.push_str(&gpu.model().unwrap_or_else(|| String::from("GPU")));
        target.push_str(" (SM ");
        target.push_str(cc.write_to(&mut cc_buf));
        target.push(')');
        let outcome = Outcome::matched()
            .evidence(flashinfer.version_path().as_str())
            .evidence(NVCC)
            .evidence(gpu.field_path("compute_capability").as_str())
            .param("target", &target)
            .param("effect", DROPPED);
        (outcome, floor)
    };
    let mut floor_text = String::with_capacity(8);
    pitfall_sdk::text::push_int(&mut floor_text, floor.0 as i64);
    floor_text.push('.');
    pitfall_sdk::text::push_int(&mut floor_text, floor.1 as i64);
    // torch's CUDA when it is new enough, else the floor.
    let cuda = torch_cuda(m)
        .filter(|c| Dotted::parse(c).is_ok_and(|d| (d.major(), d.minor()) >= floor))
        .unwrap_or_else(|| floor_text.clone());
    let outcome = outcome.param("floor", &floor_text);
    finish(m, outcome, &flashinfer, &release, &cuda)
}

fn finish(
    m: &Manifest,
    outcome: Outcome,
    flashinfer: &Package,
    release: &Dotted,
    cuda: &str,
) -> Outcome {
    let mut outcome = outcome
        .param_field("flashinfer", flashinfer.version_path().as_str())
        .param("nvcc", release.as_str())
        .param("cuda", cuda);
    if let Some(torch) = m.package("torch")
        && torch.version_text().is_some()
    {
        outcome = outcome.evidence(torch.version_path().as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
