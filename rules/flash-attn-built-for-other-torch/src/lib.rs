//! flash-attn's compiled extension (`flash_attn_2_cuda`) links against one
//! torch release and one C++ ABI (KNOWLEDGE.md D7). Its prebuilt wheels are
//! named `flash_attn-V+cuXtorchA.BcxxabiTRUE|FALSE` (setup.py
//! `get_wheel_url`, .github/workflows/publish.yml at v2.8.3), and setup.py
//! picks the one matching the torch present at install time. Swapping torch
//! afterwards (another minor release, or a torch built with the other C++
//! ABI: pip wheels from 2.7 on use the C++11 ABI, per the comment in
//! publish.yml on main; NGC images always have) leaves a library whose
//! symbols the new libtorch does not export: importing it fails with
//! "undefined symbol".
//!
//! What flash-attn was built against comes from `packages.flash-attn.torch`
//! and the proposed `packages.flash-attn.cxx11_abi` (a collector reads them
//! from the wheel name in the install's direct_url.json), or from a local
//! version label that carries the wheel tag. A source build
//! (`build.from_source`) is taken as built against the installed torch.
#![no_std]

use pitfall_sdk::prelude::*;

const FA: &str = "flash-attn";
const BUILT_FOR: &str = "packages.flash-attn.torch";
const FA_ABI: &str = "packages.flash-attn.cxx11_abi";
const TORCH_ABI: &str = "packages.torch.cxx11_abi";
/// PyTorch pip wheels use the C++11 ABI from this release on.
const PIP_CXX11_FROM: &str = ">=2.7.0";

/// `major.minor` at the start of `text` (`2.6`, `2.6.0`, `2.6cxx11abi...`).
fn major_minor(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor_text: &str = parts.next()?;
    let end = minor_text.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(minor_text.len());
    let minor = minor_text.get(..end)?.parse().ok()?;
    Some((major, minor))
}

/// The torch release and ABI a wheel tag in the local version names:
/// `2.5.5+cu118torch2.2cxx11abiTRUE` -> (`2.2`, true).
fn from_label(version: &str) -> (Option<(u64, u64)>, Option<bool>) {
    let Some((_, local)) = version.split_once('+') else {
        return (None, None);
    };
    // PEP 440 normalisation lower-cases local labels (`cxx11abitrue`).
    let local = local.to_ascii_lowercase();
    let torch = local.find("torch").and_then(|at| local.get(at + 5..)).and_then(major_minor);
    let abi = if local.contains("cxx11abitrue") {
        Some(true)
    } else if local.contains("cxx11abifalse") {
        Some(false)
    } else {
        None
    };
    (torch, abi)
}

fn yes_no(abi: bool) -> &'static str {
    if abi { "with" } else { "without" }
}

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(fa), Some(torch)) = (m.package(FA), m.package("torch")) else {
        return Outcome::clear();
    };
    if m.built_from_source(FA) {
        return Outcome::clear();
    }
    let label = fa.version_text().map(|v| from_label(&v)).unwrap_or((None, None));
    let built_for = m.text(BUILT_FOR).as_deref().and_then(major_minor).or(label.0);
    let fa_abi = m.boolean(FA_ABI).or(label.1);
    if built_for.is_none() && fa_abi.is_none() {
        return Outcome::needs(BUILT_FOR);
    }
    let Some(torch_text) = torch.version_text() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    let Some(installed) = major_minor(&torch_text) else {
        return Outcome::clear();
    };
    let fa_text = fa.version_text().unwrap_or_else(|| String::from("(unknown version)"));
    let mut reason = String::from("flash-attn ");
    reason.push_str(&fa_text);
    if let Some(built) = built_for.filter(|b| *b != installed) {
        reason.push_str(" was built for torch ");
        pitfall_sdk::text::push_int(&mut reason, built.0 as i64);
        reason.push('.');
        pitfall_sdk::text::push_int(&mut reason, built.1 as i64);
        reason.push_str(", but torch ");
        reason.push_str(&torch_text);
        reason.push_str(" is installed");
        let mut outcome = Outcome::matched().evidence(torch.version_path().as_str());
        outcome = if m.has(BUILT_FOR) {
            outcome.evidence(BUILT_FOR)
        } else {
            outcome.evidence(fa.version_path().as_str())
        };
        return outcome.param("reason", &reason);
    }
    let Some(fa_abi) = fa_abi else {
        return Outcome::clear();
    };
    // The installed torch's ABI: stated, or known for PyPI wheels from 2.7 on.
    let pip_wheel = torch.ecosystem().is_none_or(|e| e == "pypi")
        && torch_text
            .split_once('+')
            .is_none_or(|(_, l)| l.starts_with("cu") || l.starts_with("cpu"));
    let torch_abi = match m.boolean(TORCH_ABI) {
        Some(abi) => Some(abi),
        None if pip_wheel && torch.version_in(PIP_CXX11_FROM) == Some(true) => Some(true),
        None => None,
    };
    let Some(torch_abi) = torch_abi else {
        return Outcome::needs(TORCH_ABI);
    };
    if torch_abi == fa_abi {
        return Outcome::clear();
    }
    reason.push_str(" was built ");
    reason.push_str(yes_no(fa_abi));
    reason.push_str(" the C++11 ABI, but torch ");
    reason.push_str(&torch_text);
    reason.push_str(" is built ");
    reason.push_str(yes_no(torch_abi));
    reason.push_str(" it");
    let mut outcome = Outcome::matched().evidence(torch.version_path().as_str());
    outcome = if m.has(FA_ABI) {
        outcome.evidence(FA_ABI)
    } else {
        outcome.evidence(fa.version_path().as_str())
    };
    if m.has(TORCH_ABI) {
        outcome = outcome.evidence(TORCH_ABI);
    }
    outcome.param("reason", &reason)
}

pitfall_sdk::export_rule!(evaluate);
