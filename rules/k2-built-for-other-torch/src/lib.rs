//! k2 (k2-fsa/k2) compiles its extension (`_k2`, `libk2context.so`)
//! against one torch build. Its wheels say which in their local version
//! label (get_version.py: `+cuda{torch.version.cuda}.torch{torch release}`,
//! `+cpu.torch{release}` for CPU builds), and the build writes the torch
//! version and CUDA into k2/torch_version.py. From k2 pull request 949
//! (merged 2022-04-08, so the 1.14 dev wheels from that day and every
//! release from 1.15) `import k2` compares them with the running torch and
//! raises ImportError when torch's release or torch.version.cuda differs;
//! before it, the import failed with "undefined symbol" from the dynamic
//! linker (shown in that pull request for torch 1.11 against 1.10).
//!
//! What k2 was built for comes from its version's label, else from the
//! build facts `packages.k2.torch` / `packages.k2.cuda`. A source build
//! (`build.from_source`) is taken as built against the installed torch.
#![no_std]

use pitfall_sdk::prelude::*;
use pitfall_sdk::text::push_int;

const K2: &str = "k2";
const BUILT_TORCH: &str = "packages.k2.torch";
const BUILT_CUDA: &str = "packages.k2.cuda";
const TORCH_CUDA: &str = "packages.torch.cuda";
/// k2 releases whose `import k2` checks torch and CUDA: PR 949 landed while
/// CMakeLists.txt still said 1.14, so its dev wheels from that day
/// (1.14.dev20220408 on) have it, the 1.14 release does not.
const CHECKED: &str = ">=1.14.dev20220408,!=1.14";

const CHECK_TORCH: &str = "`import k2` raises ImportError 'k2 was built using PyTorch ... But you are using PyTorch ... to run it'";
const CHECK_CUDA: &str = "`import k2` raises ImportError 'k2 was built using CUDA ... But you are using CUDA ... to run it.'";
const SYMBOL: &str =
    "`import k2` fails with ImportError 'undefined symbol' (k2 before 1.15 has no version check)";
const EITHER: &str = "`import k2` fails: ImportError 'k2 was built using PyTorch ...' (k2 1.15 and later) or 'undefined symbol' (earlier releases)";

/// A CUDA release as (major, minor).
type Cuda = (u64, u64);

/// `12.1` (or `12.1.105`) as (12, 1).
fn cuda_release(text: &str) -> Option<Cuda> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// What a k2 wheel's local label says it was built for:
/// `cuda12.1.torch2.2.1` gives (torch `2.2.1`, CUDA `Some((12, 1))`);
/// `cpu.torch2.0.1` gives (`2.0.1`, `None`): a CPU build, which k2 does
/// not check against torch's CUDA.
fn from_label(local: &str) -> Option<(&str, Option<Cuda>)> {
    let at = local.find("torch")?;
    let torch = local.get(at + "torch".len()..)?;
    if !torch.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let cuda = local
        .get(..at)
        .and_then(|head| head.strip_prefix("cuda"))
        .map(|v| v.trim_end_matches('.'))
        .and_then(cuda_release);
    Some((torch, cuda))
}

fn push_cuda(out: &mut String, cuda: Cuda) {
    push_int(out, cuda.0 as i64);
    out.push('.');
    push_int(out, cuda.1 as i64);
}

/// The CUDA the installed torch runs (`torch.version.cuda`): its `+cuXYZ`
/// label, else `packages.torch.cuda`; `None` for a CPU build or unknown.
fn torch_cuda(m: &Manifest, torch: &Version) -> Option<Cuda> {
    if let Some(local) = torch.local() {
        return pitfall_sdk::version::cuda_tag(local);
    }
    m.text(TORCH_CUDA).as_deref().and_then(cuda_release)
}

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(k2), Some(torch)) = (m.package(K2), m.package("torch")) else {
        return Outcome::clear();
    };
    if m.built_from_source(K2) {
        return Outcome::clear();
    }
    let k2_version = k2.version();
    let label = k2_version.as_ref().and_then(|v| v.local().and_then(from_label));
    let stated_torch = m.text(BUILT_TORCH);
    let Some(built_text) = stated_torch.clone().or_else(|| label.map(|(t, _)| String::from(t)))
    else {
        return Outcome::needs(BUILT_TORCH);
    };
    // k2 compares releases: `torch.__version__.split("+")[0]`.
    let Ok(built) = Version::parse(&built_text).map(|v| v.without_local()) else {
        return Outcome::unreadable(if stated_torch.is_some() {
            BUILT_TORCH
        } else {
            "packages.k2.version"
        });
    };
    // A CUDA build names its CUDA; a CPU build (`+cpu.torch...`) none.
    let built_cuda = match m.text(BUILT_CUDA) {
        Some(text) => cuda_release(&text),
        None => label.and_then(|(_, cuda)| cuda),
    };
    let torch_text = match torch.version_text() {
        Some(text) => text,
        None => return Outcome::needs(torch.version_path().as_str()),
    };
    let Ok(installed) = Version::parse(&torch_text) else {
        return Outcome::unreadable(torch.version_path().as_str());
    };
    let checked = k2.version_in(CHECKED);
    let same_release = built == installed.without_local();
    let same_minor = built.release().get(..2) == installed.release().get(..2);

    let mut reason = String::from("k2 ");
    reason.push_str(k2.version_text().as_deref().unwrap_or("(version not stated)"));
    let effect = if !same_release {
        let effect = match (same_minor, checked) {
            (_, Some(true)) => CHECK_TORCH,
            // Before the check, a patch release of the same torch is not judged.
            (true, Some(false)) => return Outcome::clear(),
            (true, None) => return Outcome::needs(k2.version_path().as_str()),
            (false, Some(false)) => SYMBOL,
            (false, None) => EITHER,
        };
        reason.push_str(" was built for torch ");
        reason.push_str(built.as_str());
        reason.push_str(", but torch ");
        reason.push_str(&torch_text);
        reason.push_str(" is installed");
        effect
    } else {
        // Same torch release: k2 then compares torch.version.cuda with its
        // own CUDA, unless either side has none.
        let (Some(k2_cuda), Some(run_cuda)) = (built_cuda, torch_cuda(m, &installed)) else {
            return Outcome::clear();
        };
        if k2_cuda == run_cuda {
            return Outcome::clear();
        }
        match checked {
            Some(true) => {}
            Some(false) => return Outcome::clear(),
            None => return Outcome::needs(k2.version_path().as_str()),
        }
        reason.push_str(" was built with CUDA ");
        push_cuda(&mut reason, k2_cuda);
        reason.push_str(", but torch ");
        reason.push_str(&torch_text);
        reason.push_str(" runs CUDA ");
        push_cuda(&mut reason, run_cuda);
        CHECK_CUDA
    };

    let mut outcome = Outcome::matched().evidence(torch.version_path().as_str());
    outcome = if stated_torch.is_some() {
        outcome.evidence(BUILT_TORCH)
    } else {
        outcome.evidence(k2.version_path().as_str())
    };
    if same_release {
        if m.has(BUILT_CUDA) {
            outcome = outcome.evidence(BUILT_CUDA);
        }
        if installed.local().is_none() {
            outcome = outcome.evidence(TORCH_CUDA);
        }
    }
    // The torch to pin: k2's torch release, in the `+cuXYZ` build of k2's CUDA.
    let mut pin = String::from(built.as_str());
    if let Some((major, minor)) = built_cuda {
        pin.push_str("+cu");
        push_int(&mut pin, (major * 10 + minor) as i64);
    }
    outcome.param("reason", &reason).param("effect", effect).param("torch_pin", &pin)
}

pitfall_sdk::export_rule!(evaluate);
