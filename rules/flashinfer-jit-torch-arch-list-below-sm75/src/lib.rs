//! FlashInfer 0.2.0 to 0.2.14.post1 check their JIT targets before they
//! build or load any module (`check_cuda_arch`, called by `gen_jit_spec`
//! in flashinfer/jit/core.py), and take those targets from torch's
//! `_get_cuda_arch_flags()`: TORCH_CUDA_ARCH_LIST when it is set, at run
//! time. Any target below 7.5 raises "FlashInfer requires sm75+", so an
//! image or recipe that sets TORCH_CUDA_ARCH_LIST="7.0;...;9.0" for its
//! builds breaks FlashInfer on an H100 (FlashInfer issue 1115). 0.3.0
//! raises only when every target is below 7.5 (pull request 1598), and
//! from 0.3.1 the targets come from FLASHINFER_CUDA_ARCH_LIST or the GPUs
//! (flashinfer/compilation_context.py). Without the variable the targets
//! are the visible GPUs, which this rule does not judge.
#![no_std]

use pitfall_sdk::prelude::*;

/// The JIT releases whose check fails on any target below 7.5.
const ANY_BELOW: &str = ">=0.2.0,<0.3.0";
const LIST: &str = "TORCH_CUDA_ARCH_LIST";
const FLOOR: ComputeCapability = ComputeCapability::new(7, 5);

/// torch's named architectures (torch/utils/cpp_extension.py), as the
/// lowest capability each name stands for.
const NAMED: [(&str, ComputeCapability); 9] = [
    ("Kepler", ComputeCapability::new(3, 5)),
    ("Maxwell", ComputeCapability::new(5, 0)),
    ("Pascal", ComputeCapability::new(6, 0)),
    ("Volta", ComputeCapability::new(7, 0)),
    ("Turing", ComputeCapability::new(7, 5)),
    ("Ampere", ComputeCapability::new(8, 0)),
    ("Ada", ComputeCapability::new(8, 9)),
    ("Hopper", ComputeCapability::new(9, 0)),
    ("Blackwell", ComputeCapability::new(10, 0)),
];

/// One entry of the list: `8.0`, `9.0+PTX`, `9.0a`, `Volta`.
fn entry(text: &str) -> Option<ComputeCapability> {
    let text = text.trim_end_matches("+PTX").trim_end_matches("+ptx");
    if let Some((_, cc)) = NAMED.iter().find(|(name, _)| text.starts_with(name)) {
        return Some(*cc);
    }
    ComputeCapability::parse(text).ok()
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    // The host files the other name, flashinfer (the wheels up to 0.2.0,
    // and the import SGLang's check_env names), under this one.
    let Some(fi) = m.package("flashinfer-python") else {
        return Ok(Outcome::clear());
    };
    // torch reads an empty variable as unset (`if not _arch_list`).
    let Some(list) = m.env(LIST).filter(|v| !v.trim().is_empty()) else {
        return Ok(Outcome::clear());
    };
    if !fi.need_version_in(ANY_BELOW)? {
        return Ok(Outcome::clear());
    }
    // torch splits on `;` and spaces; entries it cannot read make it raise
    // its own ValueError and are left out here.
    let targets: Vec<ComputeCapability> =
        list.split(|c: char| c == ';' || c.is_whitespace()).filter_map(entry).collect();
    let Some(lowest) = targets.iter().min().filter(|cc| **cc < FLOOR) else {
        return Ok(Outcome::clear());
    };
    let mut buf = [0u8; 24];
    Ok(Outcome::matched()
        .evidence(fi.version_path().as_str())
        .evidence("env.TORCH_CUDA_ARCH_LIST")
        .param_field("flashinfer", fi.version_path().as_str())
        .param_field("list", "env.TORCH_CUDA_ARCH_LIST")
        .param("lowest", lowest.write_to(&mut buf)))
}

pitfall_sdk::export_rule!(evaluate);
