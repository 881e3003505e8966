//! FlashInfer (0.2.0+) JIT-compiles kernels with CUDA_HOME's nvcc; its
//! sources include cuda_fp8.h and its docs start at CUDA 11.8, so an older
//! toolkit fails the JIT build (SGLang issue 5389: nvcc 11.7).
#![no_std]

use pitfall_sdk::prelude::*;

const JIT: &str = ">=0.2.0";
const NVCC: &str = "build.tools.nvcc";

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
    let Some(flashinfer) = m.package("flashinfer-python").or_else(|| m.package("flashinfer"))
    else {
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
    if (release.major(), release.minor()) >= (11, 8) {
        return Outcome::clear();
    }
    let cuda = torch_cuda(m).unwrap_or_else(|| String::from("12.4"));
    let mut outcome = Outcome::matched()
        .evidence(flashinfer.version_path().as_str())
        .evidence(NVCC)
        .param_field("flashinfer", flashinfer.version_path().as_str())
        .param("nvcc", release.as_str())
        .param("cuda", &cuda);
    if let Some(torch) = m.package("torch")
        && torch.version_text().is_some()
    {
        outcome = outcome.evidence(torch.version_path().as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
