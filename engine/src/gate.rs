//! Admission gates: each rule's `applies_to` selectors compiled into a few
//! integer tests, all rules' tests in one array by rule position, so a
//! check admits a candidate without reading its selectors.
//!
//! The index (`crate::index`) narrows a check to some fifty rules among
//! thousands; each must then satisfy all its selectors. Asked of the
//! selectors themselves, that read each candidate's rule, its selector
//! list, each package name's text and each specifier's clauses and their
//! versions, every one a separate heap block touched once a check, out of
//! the caches. A gate holds the same tests as numbers: package, vendor,
//! arch and engine names as small integers, version ranges as intervals
//! of packed public keys (`Specifier::packed_interval`, exact for the
//! shapes it compiles). A test that cannot decide (a selector whose range
//! is not one interval, a version that does not pack) leaves the rule to
//! its selectors, so a gate's answer is always the selectors' answer.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use pitfall_contract::selector::{ManifestFacts, PackageVersion, Selector};
use pitfall_version::{PackedInterval, Version};

/// Whether some version is in `range`: `Some(true)` as soon as one is (a
/// missing or unparsed version cannot be excluded), `None` when none was
/// but one did not pack.
fn admits_any<'v>(
    range: &PackedInterval,
    versions: impl Iterator<Item = Option<&'v Version>>,
) -> Option<bool> {
    let mut undecided = false;
    for version in versions {
        match version.map(Version::packed_public) {
            None => return Some(true),
            Some(Some(key)) if range.contains(key) => return Some(true),
            Some(Some(_)) => {}
            Some(None) => undecided = true,
        }
    }
    if undecided { None } else { Some(false) }
}

/// One selector as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    /// The package (by its number) is listed, at a version in the range.
    Package {
        name: u32,
        versions: PackedInterval,
    },
    Vendor(u32),
    Capability(PackedInterval),
    Arch(u32),
    Engine(u32),
    Container,
}

/// A rule's tests in [`Gates::tests`], or none: its selectors decide.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

const UNCOMPILED: Span = Span { start: 0, len: u32::MAX };

type Names = HashMap<String, u32, RandomState>;

/// The gates of a rule set, by rule position.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gates {
    tests: Vec<Test>,
    spans: Vec<Span>,
    packages: Names,
    vendors: Names,
    arches: Names,
    engines: Names,
}

/// A manifest's facts in its gates' numbers, derived once a check.
#[derive(Debug)]
pub(crate) struct GateFacts<'f, 'm> {
    /// Each listed package some selector names, by number, sorted.
    packages: Vec<(u32, &'f [PackageVersion<'m>])>,
    /// The vendors some selector names, by number, sorted.
    vendors: Vec<u32>,
    capabilities: &'f [Option<Version>],
    arch: Option<u32>,
    engine: Option<u32>,
    container: bool,
}

fn number(names: &mut Names, name: &str) -> u32 {
    let next = names.len() as u32;
    *names.entry(name.to_owned()).or_insert(next)
}

impl Gates {
    /// Compiles rules given by their selectors, in rule-set order.
    pub(crate) fn new<'a>(rules: impl IntoIterator<Item = &'a [Selector]>) -> Gates {
        let mut gates = Gates::default();
        for selectors in rules {
            let start = gates.tests.len();
            let compiled: Option<Vec<Test>> = selectors.iter().map(|s| gates.compile(s)).collect();
            let span = match compiled {
                Some(tests) => {
                    gates.tests.extend(tests);
                    Span { start: start as u32, len: (gates.tests.len() - start) as u32 }
                }
                None => UNCOMPILED,
            };
            gates.spans.push(span);
        }
        gates
    }

    fn compile(&mut self, selector: &Selector) -> Option<Test> {
        Some(match selector {
            Selector::Package { name, versions } => Test::Package {
                name: number(&mut self.packages, name),
                versions: match versions {
                    None => PackedInterval::ALL,
                    Some(spec) => spec.packed_interval()?,
                },
            },
            Selector::Accelerator(vendor) => Test::Vendor(number(&mut self.vendors, vendor)),
            Selector::Capability(spec) => Test::Capability(spec.packed_interval()?),
            Selector::Arch(arch) => Test::Arch(number(&mut self.arches, arch)),
            Selector::Engine(engine) => Test::Engine(number(&mut self.engines, engine)),
            Selector::Container => Test::Container,
        })
    }

    /// `facts` in these gates' numbers. A package, vendor, arch or engine
    /// no selector names gets none: no test asks for it.
    pub(crate) fn facts<'f, 'm>(&self, facts: &'f ManifestFacts<'m>) -> GateFacts<'f, 'm> {
        let mut packages: Vec<(u32, &[PackageVersion<'m>])> = facts
            .packages()
            .filter_map(|(key, versions)| Some((*self.packages.get(key)?, versions)))
            .collect();
        packages.sort_unstable_by_key(|&(name, _)| name);
        let mut vendors: Vec<u32> =
            facts.vendors().iter().filter_map(|v| self.vendors.get(*v).copied()).collect();
        vendors.sort_unstable();
        GateFacts {
            packages,
            vendors,
            capabilities: facts.capabilities(),
            arch: facts.arch().and_then(|a| self.arches.get(a).copied()),
            engine: facts.engine().and_then(|e| self.engines.get(e).copied()),
            container: facts.container(),
        }
    }

    /// Whether all the selectors of the rule at `position` hold, when its
    /// gate can tell; `None` when the caller must ask the selectors.
    pub(crate) fn admits(&self, position: u32, facts: &GateFacts<'_, '_>) -> Option<bool> {
        let span = *self.spans.get(position as usize)?;
        if span.len == UNCOMPILED.len {
            return None;
        }
        let tests = self.tests.get(span.start as usize..(span.start + span.len) as usize)?;
        let mut undecided = false;
        for test in tests {
            match facts.decide(test) {
                Some(true) => {}
                Some(false) => return Some(false),
                None => undecided = true,
            }
        }
        if undecided { None } else { Some(true) }
    }
}

impl GateFacts<'_, '_> {
    /// `Selector::holds_in`, in numbers; `None` where a version does not pack.
    fn decide(&self, test: &Test) -> Option<bool> {
        match *test {
            Test::Package { name, versions } => {
                let Ok(at) = self.packages.binary_search_by_key(&name, |&(n, _)| n) else {
                    return Some(false);
                };
                if versions == PackedInterval::ALL {
                    return Some(true);
                }
                admits_any(&versions, self.packages[at].1.iter().map(PackageVersion::get))
            }
            Test::Vendor(vendor) => Some(self.vendors.binary_search(&vendor).is_ok()),
            Test::Capability(range) => {
                admits_any(&range, self.capabilities.iter().map(Option::as_ref))
            }
            Test::Arch(arch) => Some(self.arch == Some(arch)),
            Test::Engine(engine) => Some(self.engine == Some(engine)),
            Test::Container => Some(self.container),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_contract::manifest_from_value;
    use pitfall_contract::normalize::normalize;

    /// Gates decide every rule as its selectors do, on manifests whose
    /// versions sit on and around every bound (pre-, dev-, post-releases,
    /// local labels, versions that do not pack or do not parse, missing
    /// ones, a package listed twice, GPUs of unknown capability); and they
    /// decide alone wherever the ranges are intervals and versions pack.
    #[test]
    fn gates_admit_exactly_what_the_selectors_do() {
        let rules: Vec<Vec<Selector>> = [
            &["package:vllm>=0.20,<0.27.2rc0", "accelerator:nvidia"][..],
            &["package:vllm<0.27.2"],
            &["package:vllm"],
            &["package:vllm<=0.27.1", "package:torch>=2.1,<2.6"],
            &["package:torch==2.5.1", "arch:aarch64"],
            &["package:flash-attn>=2.5", "accelerator:nvidia", "capability:>=8.0,<9.0"],
            &["capability:<8.0", "accelerator:nvidia"],
            &["engine:vllm", "container"],
            &["accelerator:amd"],
            &["package:vllm!=0.27.1"],
            &["package:vllm>0.27.1"],
            &["package:torch~=2.5"],
            &["capability:>7.5"],
            &[],
        ]
        .iter()
        .map(|texts| {
            texts.iter().map(|t| Selector::parse(t).unwrap_or_else(|e| panic!("{e}"))).collect()
        })
        .collect();
        let gates = Gates::new(rules.iter().map(Vec::as_slice));
        let vllms = [
            Some("0.19.9"),
            Some("0.20"),
            Some("0.27.1"),
            Some("0.27.1+cu121"),
            Some("0.27.2rc0"),
            Some("0.27.2.dev1"),
            Some("0.27.2rc0.post1"),
            Some("0.27.2"),
            Some("0.27.2.post1"),
            Some("65536.1"),
            Some("main"),
            None,
        ];
        let torches =
            [&["2.5.1"][..], &["2.0", "2.5.1+cpu"], &["2.6.0rc1"], &[], &["99999.0", "2.4"]];
        let gpus = [&[Some("7.5")][..], &[Some("8.6"), Some("9.0")], &[None], &[Some("9.0")], &[]];
        let (mut decided, mut asked) = (0, 0);
        for vllm in vllms {
            for torch in torches {
                for gpu in gpus {
                    for (arch, engine, container) in
                        [("aarch64", "vllm", true), ("x86_64", "sglang", false)]
                    {
                        let mut packages: Vec<serde_json::Value> = torch
                            .iter()
                            .map(|v| serde_json::json!({"name": "torch", "version": v}))
                            .collect();
                        packages.push(serde_json::json!({"name": "vllm", "version": vllm}));
                        packages
                            .push(serde_json::json!({"name": "Flash_Attn", "version": "2.6.3"}));
                        let accelerators: Vec<serde_json::Value> = gpu
                            .iter()
                            .map(|cc| match cc {
                                Some(cc) => serde_json::json!({"vendor": "nvidia", "compute_capability": cc}),
                                None => serde_json::json!({"vendor": "nvidia", "model": "Unknown Board"}),
                            })
                            .collect();
                        let mut m = manifest_from_value(serde_json::json!({
                            "manifest_version": 1, "host": {"arch": arch}, "accelerators": accelerators,
                            "packages": packages, "workload": {"engine": engine},
                            "container": if container { serde_json::json!({"image": "vllm/vllm-openai:v0.27.1"}) } else { serde_json::json!({}) },
                        }))
                        .expect("valid");
                        normalize(&mut m);
                        let facts = ManifestFacts::new(&m);
                        let gate_facts = gates.facts(&facts);
                        for (i, selectors) in rules.iter().enumerate() {
                            let truth = selectors.iter().all(|s| s.holds_in(&facts));
                            asked += 1;
                            if let Some(verdict) = gates.admits(i as u32, &gate_facts) {
                                decided += 1;
                                assert_eq!(
                                    verdict, truth,
                                    "rule {i} {selectors:?}: vllm {vllm:?}, torch {torch:?}, gpus {gpu:?}, {arch}"
                                );
                            }
                        }
                    }
                }
            }
        }
        // Rules 9-12 never compile; of the rest, only versions that do not
        // pack (65536.1, 99999.0) leave a rule to its selectors.
        assert!(decided * 10 > asked * 6, "{decided} of {asked} decided by the gates");
        for uncompiled in 9..=12 {
            assert_eq!(gates.spans[uncompiled].len, UNCOMPILED.len, "rule {uncompiled}");
        }
    }
}
