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

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt;

use foldhash::fast::RandomState;

use super::Manifest;
use super::manifest::Package;
use super::normalize::{package_key, package_key_cow};
use pitfall_version::{Specifier, Version};

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
pub(crate) fn split_package(value: &str) -> (&str, &str) {
    let at = value.find(['<', '>', '=', '!', '~']).unwrap_or(value.len());
    (value[..at].trim(), value[at..].trim())
}

/// Whether `name` is a PEP 508 distribution name (letters, digits, `.-_`,
/// starting and ending with a letter or digit).
fn is_package_name(name: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    alnum(name.chars().next())
        && alnum(name.chars().last())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

impl Selector {
    /// How few manifests the selector admits, by kind, fewest first: a
    /// ranged package before a bare one, then capability, engine, vendor,
    /// arch, container. The engine's candidate index and the server's
    /// watch index both file a rule under its most selective selector.
    pub fn selectivity(&self) -> u8 {
        match self {
            Selector::Package { versions: Some(_), .. } => 0,
            Selector::Package { versions: None, .. } => 1,
            Selector::Capability(_) => 2,
            Selector::Engine(_) => 3,
            Selector::Accelerator(_) => 4,
            Selector::Arch(_) => 5,
            Selector::Container => 6,
        }
    }

    /// Parses `kind:value`.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let err = |reason: String| SelectorError { text: text.to_owned(), reason };
        if text == "container" {
            return Ok(Selector::Container);
        }
        let (kind, value) =
            text.split_once(':').ok_or_else(|| err("expected kind:value".into()))?;
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
                    return Err(err("a package name is letters, digits, '.', '-' and '_'".into()));
                }
                let versions = if spec.is_empty() { None } else { Some(specifier(spec)?) };
                Selector::Package { name: package_key(name), versions }
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
            Selector::Package { versions: Some(spec), .. } | Selector::Capability(spec) => spec,
            _ => return false,
        };
        matches!(spec.bounds(), (Some(lower), Some(upper)) if lower > upper)
    }

    /// Whether the selector holds for a normalised manifest. To ask many
    /// selectors about one manifest, derive its [`ManifestFacts`] once and
    /// use [`Selector::holds_in`].
    pub fn holds(&self, m: &Manifest) -> bool {
        self.holds_in(&ManifestFacts::new(m))
    }

    /// Whether the selector holds for the manifest `facts` were derived from.
    pub fn holds_in(&self, facts: &ManifestFacts<'_>) -> bool {
        match self {
            Selector::Package { name, versions } => {
                facts.package_versions(name).is_some_and(|vs| {
                    // Without a range the version is not even parsed.
                    versions.is_none() || vs.iter().any(|v| may_contain(versions.as_ref(), v.get()))
                })
            }
            Selector::Accelerator(vendor) => facts.vendors.contains(&vendor.as_str()),
            Selector::Capability(spec) => {
                facts.capabilities.iter().any(|c| may_contain(Some(spec), c.as_ref()))
            }
            Selector::Arch(arch) => facts.arch == Some(arch.as_str()),
            Selector::Engine(engine) => facts.engine == Some(engine.as_str()),
            Selector::Container => facts.container,
        }
    }
}

/// What selectors look at in one normalised manifest, derived once: each
/// package's PEP 503 key with its versions, the accelerators' vendors and
/// compute capabilities, the arch, the engine, whether a container image
/// is named. A check asks hundreds of selectors about one manifest of up
/// to hundreds of packages; asking the manifest itself re-derived every
/// package's key (an allocation) and re-parsed its version for every
/// `package:` selector. A package's version is parsed when a selector
/// first asks for it: most of a machine's packages concern no rule.
#[derive(Debug, Clone, Default)]
pub struct ManifestFacts<'m> {
    /// Each package key's group, numbered in order of first listing.
    groups: HashMap<Cow<'m, str>, u32, RandomState>,
    /// Each group's range of `versions`.
    spans: Vec<(u32, u32)>,
    /// Every package's version, grouped by key, in manifest order within
    /// a key: one allocation for all of them, where a list per key was one
    /// per package.
    versions: Vec<PackageVersion<'m>>,
    /// Each accelerator's capability (`None`: unknown after enrichment).
    capabilities: Vec<Option<Version>>,
    /// The accelerators' vendors, sorted, without repeats.
    vendors: Vec<&'m str>,
    arch: Option<&'m str>,
    engine: Option<&'m str>,
    container: bool,
}

/// A version a package is listed with, parsed on first use.
#[derive(Debug, Clone)]
pub struct PackageVersion<'m> {
    text: Option<&'m str>,
    parsed: OnceCell<Option<Version>>,
}

impl PackageVersion<'_> {
    /// The version, `None` when the manifest gives none or one that is not
    /// PEP 440 (so no range can exclude it).
    pub fn get(&self) -> Option<&Version> {
        self.parsed.get_or_init(|| self.text.and_then(|v| Version::parse(v).ok())).as_ref()
    }
}

impl<'m> ManifestFacts<'m> {
    /// Derives the facts of a normalised manifest.
    pub fn new(m: &'m Manifest) -> ManifestFacts<'m> {
        ManifestFacts::of_packages(m, |_| true)
    }

    /// [`ManifestFacts::new`] keeping only the packages whose key `wanted`
    /// admits; the others are as if not listed. For a caller that knows
    /// every package its selectors name (a rule set): a machine lists
    /// hundreds of packages, and most concern no rule.
    pub fn of_packages(m: &'m Manifest, wanted: impl Fn(&str) -> bool) -> ManifestFacts<'m> {
        ManifestFacts::of_keyed_packages(
            m,
            m.packages.iter().map(|p| (p, package_key_cow(&p.name))),
            wanted,
        )
    }

    /// [`ManifestFacts::of_packages`] with the packages given with their
    /// keys (`m`'s own are not read): a check's field map derived the
    /// keys already (`FieldMap::packages_with_keys`).
    pub fn of_keyed_packages(
        m: &'m Manifest,
        packages: impl Iterator<Item = (&'m Package, Cow<'m, str>)>,
        wanted: impl Fn(&str) -> bool,
    ) -> ManifestFacts<'m> {
        // Each package's key numbered in order of first listing, then the
        // versions placed by key (a counting sort, stable within a key).
        let mut groups: HashMap<Cow<'m, str>, u32, RandomState> = HashMap::default();
        let group_of: Vec<(&'m Package, u32)> = packages
            .filter_map(|(p, key)| {
                if !wanted(&key) {
                    return None;
                }
                let next = groups.len() as u32;
                Some((p, *groups.entry(key).or_insert(next)))
            })
            .collect();
        let mut counts = vec![0u32; groups.len()];
        for &(_, group) in &group_of {
            counts[group as usize] += 1;
        }
        let mut at = 0;
        let spans: Vec<(u32, u32)> = counts
            .iter()
            .map(|count| {
                at += count;
                (at - count, at)
            })
            .collect();
        let mut next: Vec<u32> = spans.iter().map(|&(start, _)| start).collect();
        let mut versions =
            vec![PackageVersion { text: None, parsed: OnceCell::new() }; at as usize];
        for (p, group) in group_of {
            let slot = &mut next[group as usize];
            versions[*slot as usize].text = p.version.as_deref();
            *slot += 1;
        }
        let mut vendors: Vec<&str> =
            m.accelerators.iter().filter_map(|a| a.vendor.as_deref()).collect();
        vendors.sort_unstable();
        vendors.dedup();
        ManifestFacts {
            groups,
            spans,
            versions,
            capabilities: m
                .accelerators
                .iter()
                .map(|a| a.compute_capability.as_deref().and_then(|v| Version::parse(v).ok()))
                .collect(),
            vendors,
            arch: m.host.as_ref().and_then(|h| h.arch.as_deref()),
            engine: m.workload.as_ref().and_then(|w| w.engine.as_deref()),
            container: m.container.as_ref().is_some_and(|c| c.image.is_some()),
        }
    }

    /// The packages: each key with the versions it is listed with.
    pub fn packages(&self) -> impl Iterator<Item = (&str, &[PackageVersion<'m>])> {
        self.groups.iter().map(|(k, &group)| (k.as_ref(), self.versions_of(group)))
    }

    /// The versions a package (by PEP 503 key) is listed with, if listed.
    pub fn package_versions(&self, key: &str) -> Option<&[PackageVersion<'m>]> {
        self.groups.get(key).map(|&group| self.versions_of(group))
    }

    fn versions_of(&self, group: u32) -> &[PackageVersion<'m>] {
        let (start, end) = self.spans[group as usize];
        &self.versions[start as usize..end as usize]
    }

    /// Each accelerator's compute capability, `None` where unknown.
    pub fn capabilities(&self) -> &[Option<Version>] {
        &self.capabilities
    }

    /// The accelerators' vendors, sorted, without repeats.
    pub fn vendors(&self) -> &[&'m str] {
        &self.vendors
    }

    /// The host's (normalised) architecture.
    pub fn arch(&self) -> Option<&'m str> {
        self.arch
    }

    /// The workload's serving engine.
    pub fn engine(&self) -> Option<&'m str> {
        self.engine
    }

    /// Whether a container image is named.
    pub fn container(&self) -> bool {
        self.container
    }
}

/// Whether a range admits a version as the manifest gives it: no range, or
/// no version it could parse, are both "cannot exclude".
fn may_contain(range: Option<&Specifier>, version: Option<&Version>) -> bool {
    match (range, version) {
        (Some(spec), Some(v)) => spec.contains(v),
        _ => true,
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Package { name, versions: None } => write!(f, "package:{name}"),
            Selector::Package { name, versions: Some(spec) } => {
                write!(f, "package:{name}{}", spec.as_str())
            }
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
    use crate::manifest_from_value;
    use crate::normalize::normalize;

    /// The manifest as a check sees it: normalised (`Prepared::new`'s step).
    fn prepared(json: serde_json::Value) -> Manifest {
        let mut manifest = manifest_from_value(json).expect("a valid manifest");
        normalize(&mut manifest);
        manifest
    }

    fn sel(text: &str) -> Selector {
        Selector::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn package_ranges_parse_and_print_back() {
        assert_eq!(sel("package:Flash_Attn").to_string(), "package:flash-attn");
        assert_eq!(sel("package:vllm<0.27.2rc0").to_string(), "package:vllm<0.27.2rc0");
        assert_eq!(sel("package: vllm >=0.20, <0.27 ").to_string(), "package:vllm>=0.20, <0.27");
        assert_eq!(sel("capability:>=8.0,<9.0").to_string(), "capability:>=8.0,<9.0");
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
        assert!(e.to_string().starts_with("selector \"package:vllm<<1\": version range:"), "{e}");
    }

    /// Spellings of one name are one key, whose versions keep the order
    /// the manifest lists them in; every key is listed once.
    #[test]
    fn facts_group_versions_by_package_key() {
        let m = prepared(serde_json::json!({"manifest_version": 1, "packages": [
            {"name": "Flash_Attn", "version": "2.5.0"},
            {"name": "torch", "version": "2.4.0"},
            {"name": "flash-attn", "version": "2.7.1"},
            {"name": "numpy"},
            {"name": "flash.attn", "version": "main"},
        ]}));
        let facts = ManifestFacts::new(&m);
        let texts = |key: &str| -> Vec<Option<String>> {
            facts
                .package_versions(key)
                .unwrap_or_else(|| panic!("{key} is listed"))
                .iter()
                .map(|v| v.get().map(|v| v.as_str().to_owned()))
                .collect()
        };
        assert_eq!(texts("flash-attn"), [Some("2.5.0".into()), Some("2.7.1".into()), None]);
        assert_eq!(texts("torch"), [Some("2.4.0".into())]);
        assert_eq!(texts("numpy"), [None]);
        assert!(facts.package_versions("Flash_Attn").is_none(), "looked up by key only");
        let mut keys: Vec<&str> = facts.packages().map(|(k, _)| k).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["flash-attn", "numpy", "torch"]);
        assert!(sel("package:flash-attn>=2.7").holds_in(&facts));
        assert!(!sel("package:torch<2.4").holds_in(&facts));
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
        assert!(pre_ampere.holds(&gpus(serde_json::json!([{"vendor": "nvidia", "model": "T4G"}]))));
        assert!(
            !pre_ampere.holds(&gpus(
                serde_json::json!([{"vendor": "nvidia", "compute_capability": "9.0"}])
            ))
        );
        assert!(pre_ampere.holds(&gpus(serde_json::json!([
            {"vendor": "nvidia", "compute_capability": "9.0"}, {"vendor": "nvidia", "compute_capability": "7.0"}
        ]))));
        assert!(
            !pre_ampere.holds(&gpus(
                serde_json::json!([{"vendor": "nvidia", "compute_capability": "12.0"}])
            ))
        );
        // An unknown model without a capability: cannot be decided.
        assert!(
            pre_ampere
                .holds(&gpus(serde_json::json!([{"vendor": "nvidia", "model": "Future GPU"}])))
        );
        assert!(!pre_ampere.holds(&gpus(serde_json::json!([]))));
    }
}
