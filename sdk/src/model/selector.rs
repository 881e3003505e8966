//! `applies_to` selectors: what a rule declares it concerns, so the engine
//! evaluates it only for manifests where it can match.
//!
//! A rule is a candidate for a manifest when every one of its selectors
//! holds. Selectors are a promise: a rule must return `clear` for any
//! manifest its selectors exclude.
//!
//! Version and capability ranges only ever exclude what they can decide: a
//! package listed without a version (or with one that is not PEP 440), or an
//! accelerator without a known compute capability, keeps the rule a
//! candidate, so the rule runs and can answer `undetermined`.

use std::fmt;

use super::Manifest;
use super::normalize::package_key;
use crate::version::{Specifier, Version};

/// One selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `package:NAME` or `package:NAME SPEC` (`package:vllm<0.27.2rc0`):
    /// the package is installed (PEP 503 name) and, with a PEP 440
    /// specifier, its version is in range or cannot be decided.
    Package {
        /// The PEP 503 name.
        name: String,
        /// The version range, if any.
        versions: Option<Specifier>,
    },
    /// `accelerator:VENDOR`: an accelerator of this vendor is present.
    Accelerator(String),
    /// `capability:SPEC` (`capability:<8.0`, `capability:>=9.0,<10.0`): an
    /// accelerator's compute capability is in range, or an accelerator's
    /// capability is unknown (after enrichment) and so cannot be decided.
    Capability(Specifier),
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
    pub reason: String,
}

/// Where a package name ends and its PEP 440 specifier begins.
fn split_package(value: &str) -> (&str, &str) {
    let at = value.find(['<', '>', '=', '!', '~']).unwrap_or(value.len());
    (value[..at].trim(), value[at..].trim())
}

/// Whether `name` is a PEP 508 distribution name (letters, digits, `.-_`,
/// starting and ending with a letter or digit).
fn is_package_name(name: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    alnum(name.chars().next())
        && alnum(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

impl Selector {
    /// Parses `kind:value`.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let err = |reason: String| SelectorError {
            text: text.to_owned(),
            reason,
        };
        if text == "container" {
            return Ok(Selector::Container);
        }
        let (kind, value) = text
            .split_once(':')
            .ok_or_else(|| err("expected kind:value".into()))?;
        let value = value.trim();
        if value.is_empty() {
            return Err(err("empty value".into()));
        }
        let specifier =
            |spec: &str| Specifier::parse(spec).map_err(|e| err(format!("version range: {e}")));
        Ok(match kind {
            "package" => {
                let (name, spec) = split_package(value);
                if !is_package_name(name) {
                    return Err(err(
                        "a package name is letters, digits, '.', '-' and '_'".into()
                    ));
                }
                let versions = if spec.is_empty() {
                    None
                } else {
                    Some(specifier(spec)?)
                };
                Selector::Package {
                    name: package_key(name),
                    versions,
                }
            }
            "accelerator" => Selector::Accelerator(value.to_ascii_lowercase()),
            "capability" => Selector::Capability(specifier(value)?),
            "arch" => Selector::Arch(super::normalize::canonical_arch(value)),
            "engine" => Selector::Engine(value.to_ascii_lowercase()),
            _ => {
                return Err(err(
                    "unknown kind (package, accelerator, capability, arch, engine, container)"
                        .into(),
                ));
            }
        })
    }

    /// Whether a range's bounds cross (`package:vllm>2,<1`): such a
    /// selector can only hold where the version cannot be decided.
    pub fn admits_nothing(&self) -> bool {
        let spec = match self {
            Selector::Package {
                versions: Some(spec),
                ..
            }
            | Selector::Capability(spec) => spec,
            _ => return false,
        };
        matches!(spec.bounds(), (Some(lower), Some(upper)) if lower > upper)
    }

    /// Whether the selector holds for a normalised manifest.
    pub fn holds(&self, m: &Manifest) -> bool {
        match self {
            Selector::Package { name, versions } => m.packages.iter().any(|p| {
                package_key(&p.name) == *name
                    && may_contain(versions.as_ref(), p.version.as_deref())
            }),
            Selector::Accelerator(vendor) => m
                .accelerators
                .iter()
                .any(|a| a.vendor.as_deref() == Some(vendor)),
            Selector::Capability(spec) => m
                .accelerators
                .iter()
                .any(|a| may_contain(Some(spec), a.compute_capability.as_deref())),
            Selector::Arch(arch) => m.host.as_ref().and_then(|h| h.arch.as_deref()) == Some(arch),
            Selector::Engine(engine) => {
                m.workload.as_ref().and_then(|w| w.engine.as_deref()) == Some(engine)
            }
            Selector::Container => m.container.as_ref().is_some_and(|c| c.image.is_some()),
        }
    }
}

/// Whether a range admits a version as the manifest gives it: no range, no
/// version, or a version that does not parse are all "cannot exclude".
fn may_contain(range: Option<&Specifier>, version: Option<&str>) -> bool {
    match (range, version.map(Version::parse)) {
        (Some(spec), Some(Ok(v))) => spec.contains(&v),
        _ => true,
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Package {
                name,
                versions: None,
            } => write!(f, "package:{name}"),
            Selector::Package {
                name,
                versions: Some(spec),
            } => write!(f, "package:{name}{}", spec.as_str()),
            Selector::Accelerator(v) => write!(f, "accelerator:{v}"),
            Selector::Capability(spec) => write!(f, "capability:{}", spec.as_str()),
            Selector::Arch(v) => write!(f, "arch:{v}"),
            Selector::Engine(v) => write!(f, "engine:{v}"),
            Selector::Container => f.write_str("container"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Prepared, manifest_from_value};

    fn prepared(json: serde_json::Value) -> Manifest {
        Prepared::new(manifest_from_value(json).expect("a valid manifest")).manifest
    }

    fn sel(text: &str) -> Selector {
        Selector::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn package_ranges_parse_and_print_back() {
        assert_eq!(sel("package:Flash_Attn").to_string(), "package:flash-attn");
        assert_eq!(
            sel("package:vllm<0.27.2rc0").to_string(),
            "package:vllm<0.27.2rc0"
        );
        assert_eq!(
            sel("package: vllm >=0.20, <0.27 ").to_string(),
            "package:vllm>=0.20, <0.27"
        );
        assert_eq!(
            sel("capability:>=8.0,<9.0").to_string(),
            "capability:>=8.0,<9.0"
        );
        for bad in [
            "package:<1.0",
            "package:vllm<",
            "package:vllm<abc",
            "package:vl lm",
            "capability:8.0",
            "gpu:t4",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad} should not parse");
        }
        assert!(sel("package:vllm>2,<1").admits_nothing());
        assert!(
            !sel("package:vllm>=1,<=1").admits_nothing() && !sel("package:vllm").admits_nothing()
        );
        let e = Selector::parse("package:vllm<<1").expect_err("bad range");
        assert!(
            e.to_string()
                .starts_with("selector \"package:vllm<<1\": version range:"),
            "{e}"
        );
    }

    #[test]
    fn a_version_range_excludes_only_versions_it_can_decide() {
        let with = |version: serde_json::Value| {
            prepared(
                serde_json::json!({"manifest_version": 1, "packages": [{"name": "vLLM", "version": version}]}),
            )
        };
        let s = sel("package:vllm<0.27.2rc0");
        assert!(s.holds(&with("0.27.1".into())));
        assert!(!s.holds(&with("0.27.2".into())));
        assert!(!s.holds(&with("0.27.2rc0".into())));
        // Undecidable: the rule must run so it can say `undetermined`.
        assert!(s.holds(&with(serde_json::Value::Null)));
        assert!(s.holds(&with("a-git-checkout".into())));
        let none = prepared(
            serde_json::json!({"manifest_version": 1, "packages": [{"name": "torch", "version": "2.0"}]}),
        );
        assert!(!s.holds(&none));
    }

    #[test]
    fn a_capability_range_holds_for_any_gpu_in_range_or_unknown() {
        let gpus = |gpus: serde_json::Value| {
            prepared(serde_json::json!({"manifest_version": 1, "accelerators": gpus}))
        };
        let pre_ampere = sel("capability:<8.0");
        assert!(pre_ampere.holds(&gpus(
            serde_json::json!([{"vendor": "nvidia", "model": "T4G"}])
        )));
        assert!(!pre_ampere.holds(&gpus(
            serde_json::json!([{"vendor": "nvidia", "compute_capability": "9.0"}])
        )));
        assert!(pre_ampere.holds(&gpus(serde_json::json!([
            {"vendor": "nvidia", "compute_capability": "9.0"}, {"vendor": "nvidia", "compute_capability": "7.0"}
        ]))));
        assert!(!pre_ampere.holds(&gpus(
            serde_json::json!([{"vendor": "nvidia", "compute_capability": "12.0"}])
        )));
        // An unknown model without a capability: cannot be decided.
        assert!(pre_ampere.holds(&gpus(
            serde_json::json!([{"vendor": "nvidia", "model": "Future GPU"}])
        )));
        assert!(!pre_ampere.holds(&gpus(serde_json::json!([]))));
    }
}
