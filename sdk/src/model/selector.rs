//! `applies_to` selectors: what a rule declares it concerns, so the engine
//! evaluates it only for manifests where it can match.
//!
//! A rule is a candidate for a manifest when every one of its selectors
//! holds. Selectors are a promise: a rule must return `clear` for any
//! manifest its selectors exclude.

use std::fmt;

use super::Manifest;
use super::normalize::package_key;

/// One selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Selector {
    /// `package:NAME`: the package is installed (PEP 503 name).
    Package(String),
    /// `accelerator:VENDOR`: an accelerator of this vendor is present.
    Accelerator(String),
    /// `arch:ARCH`: the host has this (normalised) CPU architecture.
    Arch(String),
    /// `engine:NAME`: the workload's serving engine.
    Engine(String),
    /// `container`: the stack runs in a container image.
    Container,
}

/// A selector that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("selector {text:?}: {reason}")]
pub struct SelectorError {
    /// The selector text.
    pub text: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl Selector {
    /// Parses `kind:value`.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let err = |reason| SelectorError { text: text.to_owned(), reason };
        if text == "container" {
            return Ok(Selector::Container);
        }
        let (kind, value) = text.split_once(':').ok_or_else(|| err("expected kind:value"))?;
        let value = value.trim();
        if value.is_empty() {
            return Err(err("empty value"));
        }
        Ok(match kind {
            "package" => Selector::Package(package_key(value)),
            "accelerator" => Selector::Accelerator(value.to_ascii_lowercase()),
            "arch" => Selector::Arch(super::normalize::canonical_arch(value)),
            "engine" => Selector::Engine(value.to_ascii_lowercase()),
            _ => return Err(err("unknown kind (package, accelerator, arch, engine, container)")),
        })
    }

    /// Whether the selector holds for a normalised manifest.
    pub fn holds(&self, m: &Manifest) -> bool {
        match self {
            Selector::Package(name) => m.packages.iter().any(|p| package_key(&p.name) == *name),
            Selector::Accelerator(vendor) => m.accelerators.iter().any(|a| a.vendor.as_deref() == Some(vendor)),
            Selector::Arch(arch) => m.host.as_ref().and_then(|h| h.arch.as_deref()) == Some(arch),
            Selector::Engine(engine) => m.workload.as_ref().and_then(|w| w.engine.as_deref()) == Some(engine),
            Selector::Container => m.container.as_ref().is_some_and(|c| c.image.is_some()),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Package(v) => write!(f, "package:{v}"),
            Selector::Accelerator(v) => write!(f, "accelerator:{v}"),
            Selector::Arch(v) => write!(f, "arch:{v}"),
            Selector::Engine(v) => write!(f, "engine:{v}"),
            Selector::Container => f.write_str("container"),
        }
    }
}
