//! torch 2.2+ calls ncclCommRegister (added in NCCL 2.19.1); an older NCCL in
//! the environment makes `import torch` fail with an undefined symbol
//! (KNOWLEDGE.md D8; pytorch issues 119072, 119932; nccl.h.in at v2.18.6-1
//! and v2.19.1-1; torch 2.2.0 pins nvidia-nccl-cu12==2.19.3).
#![no_std]

use pitfall_sdk::prelude::*;

const NCCL_PACKAGES: [&str; 3] = ["nvidia-nccl-cu12", "nvidia-nccl-cu11", "nvidia-nccl-cu13"];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    match torch.version_in(">=2.2") {
        Some(true) => {}
        Some(false) => return Outcome::clear(),
        None => {
            // Only worth asking when an old NCCL is there.
            let old = NCCL_PACKAGES
                .iter()
                .any(|n| m.package(n).and_then(|p| p.version_in("<2.19")) == Some(true));
            return if old { Outcome::needs("packages.torch.version") } else { Outcome::clear() };
        }
    }
    for name in NCCL_PACKAGES {
        let Some(nccl) = m.package(name) else { continue };
        if nccl.version_in("<2.19") == Some(true) {
            return Outcome::matched()
                .evidence(torch.version_path().as_str())
                .evidence(nccl.version_path().as_str())
                .param_field("torch", torch.version_path().as_str())
                .param("nccl", name)
                .param_field("nccl_version", nccl.version_path().as_str());
        }
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
