//! Synthetic rule corpora: real ABI-v1 modules from three WAT templates,
//! each with real metadata and embedded cases (matched, fixed, clear,
//! undetermined) so the publish pipeline runs on them, generated
//! deterministically from a seed.
//!
//! The distribution follows what a registry of known breakages looks like
//! (compare OSV's advisories): every rule concerns one package, drawn
//! Zipf-like from a pool of names that grows with the registry (the real ML
//! packages at the head, a long tail of others); most rules concern a
//! range of versions, mostly old ones (the upper bound, where the breakage
//! was fixed, is drawn towards the start of the package's history; about 1%
//! are still open); a fifth also concern one GPU family (a compute
//! capability range) and a fifth a capability floor.
//!
//! A registry grows in breadth, not depth: a package has only so many known
//! breakages ([`package_capacity`]: 200 for the most popular, fewer down
//! the ranks, at least 25), so once the popular packages are covered, more
//! rules go to packages further down the tail. A machine's candidates are
//! the rules of the packages it has, so they stop growing with the
//! registry once its packages are covered (by 10,000 rules here).
//!
//! The templates:
//! - [`Template::VersionRange`]: `package:P>=lo,<hi`; matched when the
//!   installed version is in range; remedy: upgrade to `hi`.
//! - [`Template::VersionAndCapability`]: the same plus `accelerator:nvidia`;
//!   matched when also the first GPU is an NVIDIA one below a capability.
//! - [`Template::GpuFamily`]: a package range plus `accelerator:nvidia` and
//!   `capability:>=X,<Y`; matched when the first GPU is of that family and
//!   an environment variable is set; remedy: unset it.
//!
//! Each rule reads the fields through the host calls and asks the host
//! whether its package's version is in its range (`version_in`, PEP 440 as
//! in its selector; a version that is not PEP 440 is `clear`), compares
//! capabilities in its own code, and quotes the version and capability
//! through parameters bound to their fields (`param_field`): what the
//! SDK's rules do (`Package::version_in`), so a rule's outcome depends on
//! the answer, not on the version, and the registry's memo can reuse it
//! for every release in the range.

use serde_json::{Value, json};

use crate::rng::{Rng, Zipf};

/// The real packages at the head of the pool, most often concerned first.
pub const HEAD_PACKAGES: &[&str] = &[
    "vllm",
    "torch",
    "transformers",
    "flash-attn",
    "triton",
    "xformers",
    "sglang",
    "accelerate",
    "bitsandbytes",
    "numpy",
    "tokenizers",
    "safetensors",
];

/// Releases in each package's synthetic history (index 0 is the oldest).
pub const RELEASES: usize = 60;

/// The `i`-th release of every synthetic history: `0.0.0` ... `1.9.2`.
pub fn release(i: usize) -> String {
    format!("{}.{}.{}", i / 30, (i / 3) % 10, i % 3)
}

/// The name of the package of pool rank `k`.
pub fn package_name(k: usize) -> String {
    match HEAD_PACKAGES.get(k) {
        Some(name) => (*name).to_owned(),
        None => format!("synth-pkg-{k:05}"),
    }
}

/// How many package names a registry of `rules` rules draws from.
pub fn pool_size(rules: usize) -> usize {
    (rules / 20).max(HEAD_PACKAGES.len() * 4)
}

/// The Zipf exponent of package popularity.
pub const ZIPF_EXPONENT: f64 = 1.1;

/// The most rules the package of pool rank `k` gets: 200 for the most
/// popular (the largest advisory histories of single projects are a few
/// hundred), falling as 1/sqrt(rank), at least 25. The capacity of the
/// whole pool (`pool_size`) is above every corpus size, so drawing always
/// ends.
pub fn package_capacity(k: usize) -> usize {
    ((200.0 / ((k + 1) as f64).sqrt()) as usize).max(25)
}

/// GPU families by compute capability range, oldest first, with how often
/// a rule concerns each (old hardware has the most known breakages).
const FAMILIES: &[(f64, f64, f64)] = &[
    (5.0, 6.0, 0.18),
    (6.0, 7.0, 0.22),
    (7.0, 7.5, 0.16),
    (7.5, 8.0, 0.16),
    (8.0, 8.6, 0.10),
    (8.6, 8.9, 0.08),
    (8.9, 9.0, 0.05),
    (9.0, 10.0, 0.05),
];

/// Capability floors of [`Template::VersionAndCapability`] (matched below).
const FLOORS: &[(f64, f64)] = &[(6.0, 0.3), (7.0, 0.3), (7.5, 0.2), (8.0, 0.15), (9.0, 0.05)];

/// Environment variables the GPU-family template looks for.
const FLAGS: usize = 50;

/// Which template a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// A package version range.
    VersionRange,
    /// A version range and a compute capability floor.
    VersionAndCapability,
    /// A version range, a GPU family and an environment variable.
    GpuFamily,
}

/// What one synthetic rule concerns (its module is built from this).
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSpec {
    /// Position in the corpus.
    pub n: usize,
    /// The template.
    pub template: Template,
    /// The package (pool rank).
    pub package: usize,
    /// First affected release index (inclusive), if bounded.
    pub lower: Option<usize>,
    /// First fixed release index (exclusive bound), if fixed.
    pub upper: Option<usize>,
    /// `VersionAndCapability`: matched below this capability.
    pub capability_floor: f64,
    /// `GpuFamily`: the family's capability range.
    pub family: (f64, f64),
    /// `GpuFamily`: the environment variable.
    pub flag: usize,
    /// `error`, `warning` or `info`.
    pub severity: &'static str,
}

impl RuleSpec {
    /// The rule's id.
    pub fn id(&self) -> String {
        let kind = match self.template {
            Template::VersionRange => "range",
            Template::VersionAndCapability => "floor",
            Template::GpuFamily => "family",
        };
        format!("synth-{kind}-{:06}", self.n)
    }

    /// The `package:` selector's specifier, e.g. `>=0.2.1,<0.5.0`.
    pub fn version_spec(&self) -> String {
        match (self.lower, self.upper) {
            (Some(lo), Some(hi)) => format!(">={},<{}", release(lo), release(hi)),
            (None, Some(hi)) => format!("<{}", release(hi)),
            (Some(lo), None) => format!(">={}", release(lo)),
            (None, None) => String::new(),
        }
    }

    /// The `applies_to` selectors.
    pub fn selectors(&self) -> Vec<String> {
        let mut s = vec![format!("package:{}{}", package_name(self.package), self.version_spec())];
        if self.template != Template::VersionRange {
            s.push("accelerator:nvidia".into());
        }
        if self.template == Template::GpuFamily {
            s.push(format!("capability:>={:.1},<{:.1}", self.family.0, self.family.1));
        }
        s
    }

    fn flag_name(&self) -> String {
        format!("SYNTH_FLAG_{:02}", self.flag)
    }

    /// A release inside the affected range.
    fn affected_release(&self) -> String {
        release(self.upper.map_or_else(|| self.lower.unwrap_or(0), |hi| hi - 1))
    }
}

/// Draws the specs of a corpus of `rules` rules.
pub fn specs(rules: usize, seed: u64) -> Vec<RuleSpec> {
    let mut rng = Rng::new(seed);
    let pool = pool_size(rules);
    let zipf = Zipf::new(pool, ZIPF_EXPONENT);
    let mut per_package = vec![0usize; pool];
    let family_weights: Vec<f64> = FAMILIES.iter().map(|f| f.2).collect();
    let floor_weights: Vec<f64> = FLOORS.iter().map(|f| f.1).collect();
    (0..rules)
        .map(|n| {
            let template = match rng.weighted(&[0.6, 0.2, 0.2]) {
                0 => Template::VersionRange,
                1 => Template::VersionAndCapability,
                _ => Template::GpuFamily,
            };
            // A package whose known breakages are all in already gets no
            // more: draw again (further down the tail, mostly).
            let package = loop {
                let k = zipf.sample(&mut rng);
                if per_package[k] < package_capacity(k) {
                    per_package[k] += 1;
                    break k;
                }
            };
            // Fixed in release `upper`, drawn towards the old end (u³); 1%
            // still open (no fix yet). The range starts a few releases
            // before the fix, or (30%) covers all earlier releases.
            let open = rng.unit() < 0.01;
            let upper = (!open).then(|| 1 + ((RELEASES - 1) as f64 * rng.unit().powi(3)) as usize);
            let lower = match upper {
                None => Some(RELEASES - 1 - rng.below(3)),
                Some(_) if rng.unit() < 0.3 => None,
                Some(hi) => Some(hi.saturating_sub(1 + rng.below(4))),
            };
            let (fl, fh, _) = FAMILIES[rng.weighted(&family_weights)];
            let severity = ["error", "warning", "info"][rng.weighted(&[0.5, 0.4, 0.1])];
            RuleSpec {
                n,
                template,
                package,
                lower,
                upper,
                capability_floor: FLOORS[rng.weighted(&floor_weights)].0,
                family: (fl, fh),
                flag: rng.below(FLAGS),
                severity,
            }
        })
        .collect()
}

/// The metadata (`pitfall.meta`) of a rule.
pub fn meta(spec: &RuleSpec) -> Value {
    let pkg = package_name(spec.package);
    let range = spec.version_spec();
    let (title, summary, message, remedy) = match spec.template {
        Template::VersionRange => (
            format!("{pkg} {range} has synthetic breakage {}", spec.n),
            format!(
                "Releases {range} of {pkg} fail in a synthetic way; a benchmark rule of pitfall-bench."
            ),
            format!("{pkg} {{version}} is in the affected range {range}."),
            upgrade(spec, &pkg),
        ),
        Template::VersionAndCapability => (
            format!("{pkg} {range} needs compute capability {:.1}", spec.capability_floor),
            format!(
                "Releases {range} of {pkg} have no kernels below compute capability {:.1} (synthetic).",
                spec.capability_floor
            ),
            format!(
                "{pkg} {{version}} on a GPU of compute capability {{cc}} (below {:.1}).",
                spec.capability_floor
            ),
            upgrade(spec, &pkg),
        ),
        Template::GpuFamily => (
            format!(
                "{pkg} {range} with {} fails on sm {:.1}-{:.1}",
                spec.flag_name(),
                spec.family.0,
                spec.family.1
            ),
            format!(
                "With {} set, {pkg} {range} fails on GPUs of compute capability {:.1} to {:.1} (synthetic).",
                spec.flag_name(),
                spec.family.0,
                spec.family.1
            ),
            format!("{pkg} {{version}} with {} on compute capability {{cc}}.", spec.flag_name()),
            json!({"summary": format!("Unset {}.", spec.flag_name()), "actions": [{"kind": "unset_env", "name": spec.flag_name()}]}),
        ),
    };
    let mut reads = vec![format!("packages.{pkg}.version")];
    if spec.template != Template::VersionRange {
        reads.push("accelerators.0.vendor".into());
        reads.push("accelerators.0.compute_capability".into());
    }
    if spec.template == Template::GpuFamily {
        reads.push(format!("env.{}", spec.flag_name()));
    }
    json!({
        "id": spec.id(),
        "version": "1.0.0",
        "title": title,
        "severity": spec.severity,
        "summary": summary,
        "message": message,
        "applies_to": spec.selectors(),
        "reads": reads,
        "error_signatures": [format!("SyntheticError: breakage {} in {pkg}", spec.n)],
        "remedies": [remedy],
        "references": [{"title": "pitfall-bench synthetic corpus", "url": "https://example.org/pitfall-bench/synthetic"}],
        "author": "pitfall-bench",
    })
}

fn upgrade(spec: &RuleSpec, pkg: &str) -> Value {
    match spec.upper {
        Some(hi) => json!({
            "summary": format!("Upgrade {pkg} to {}.", release(hi)),
            "actions": [{"kind": "upgrade_package", "package": pkg, "to": release(hi)}]
        }),
        None => {
            let before = release(spec.lower.unwrap_or(1).saturating_sub(1));
            json!({
                "summary": format!("Pin {pkg} to {before}, before the breakage."),
                "actions": [{"kind": "pin_package", "package": pkg, "version": before}]
            })
        }
    }
}

/// A manifest of one NVIDIA GPU of capability `cc` (or an unknown model
/// without one) and one package.
fn case_manifest(pkg: &str, version: Option<&str>, cc: Option<f64>, env: Option<&str>) -> Value {
    let gpu = match cc {
        Some(cc) => {
            json!({"vendor": "nvidia", "model": "Synthetic GPU", "compute_capability": format!("{cc:.1}")})
        }
        None => json!({"vendor": "nvidia", "model": "Unknown Synthetic Board"}),
    };
    let mut m = json!({
        "manifest_version": 1,
        "accelerators": [gpu],
        "packages": [match version { Some(v) => json!({"name": pkg, "version": v}), None => json!({"name": pkg}) }],
    });
    if let Some(flag) = env {
        m["env"] = Value::Object([(flag.to_owned(), Value::from("1"))].into_iter().collect());
    }
    m
}

/// The embedded cases (`pitfall.tests`) of a rule.
pub fn cases(spec: &RuleSpec) -> Value {
    let pkg = package_name(spec.package);
    let affected = spec.affected_release();
    let unaffected = match spec.upper {
        Some(hi) => release(hi),
        None => release(spec.lower.unwrap_or(1).saturating_sub(1)),
    };
    let (gpu_in, gpu_out, flag) = match spec.template {
        Template::VersionRange => (Some(8.0), Some(8.0), None),
        Template::VersionAndCapability => {
            (Some(spec.capability_floor - 1.0), Some(spec.capability_floor), None)
        }
        Template::GpuFamily => (Some(spec.family.0), Some(spec.family.1), Some(spec.flag_name())),
    };
    let flag = flag.as_deref();
    let (clear, undetermined, missing) = match spec.template {
        Template::VersionRange | Template::VersionAndCapability => (
            case_manifest(&pkg, Some(&unaffected), gpu_in, flag),
            case_manifest(&pkg, None, gpu_in, flag),
            format!("packages.{pkg}.version"),
        ),
        Template::GpuFamily => (
            case_manifest(&pkg, Some(&affected), gpu_out, flag),
            case_manifest(&pkg, Some(&affected), None, flag),
            "accelerators.0.compute_capability".to_owned(),
        ),
    };
    json!([
        {"name": "affected", "expect": "matched", "message_contains": affected,
         "manifest": case_manifest(&pkg, Some(&affected), gpu_in, flag)},
        {"name": "remedied", "expect": "fixed", "from": "affected"},
        {"name": "unaffected", "expect": "clear", "manifest": clear},
        {"name": "cannot tell", "expect": "undetermined", "missing": [missing], "manifest": undetermined},
    ])
}

/// WAT string literal of raw text (quotes and backslashes escaped).
fn wat_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for b in text.bytes() {
        match b {
            b'"' | b'\\' => out.push_str(&format!("\\{:02x}", b)),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:02x}")),
        }
    }
    out
}

/// The WAT text of a rule.
pub fn wat(spec: &RuleSpec) -> String {
    let pkg = package_name(spec.package);
    let pkg_path = format!("packages.{pkg}");
    let ver_len = pkg_path.len() + ".version".len();
    let pkg_len = pkg_path.len();
    let flag_path = format!("env.{}", spec.flag_name());
    let range = spec.version_spec();
    assert!(!range.is_empty(), "{}: a template rule concerns a range of versions", spec.id());
    // The first GPU must be an NVIDIA one with a known capability.
    let gpu_prelude = r#"
    (if (i32.eqz (call $field_kind (i32.const 176) (i32.const 14))) (then (return (i32.const 0))))
    (if (i32.ne (call $field_str (i32.const 176) (i32.const 21) (i32.const 320) (i32.const 32)) (i32.const 6))
      (then (return (i32.const 0))))
    (if (i32.ne (i32.load (i32.const 320)) (i32.const 0x6469766e)) (then (return (i32.const 0))))
    (if (i32.ne (i32.load16_u (i32.const 324)) (i32.const 0x6169)) (then (return (i32.const 0))))
    (if (i32.eqz (call $field_kind (i32.const 128) (i32.const 33)))
      (then (call $missing (i32.const 128) (i32.const 33)) (return (i32.const 2))))
    (local.set $cc (call $field_num (i32.const 128) (i32.const 33)))"#;
    let gpu = match spec.template {
        Template::VersionRange => String::new(),
        Template::VersionAndCapability => format!(
            "{gpu_prelude}\n    (if (i32.eqz (f64.lt (local.get $cc) (f64.const {:.1}))) (then (return (i32.const 0))))",
            spec.capability_floor
        ),
        Template::GpuFamily => format!(
            "{gpu_prelude}
    (if (i32.eqz (f64.ge (local.get $cc) (f64.const {:.1}))) (then (return (i32.const 0))))
    (if (i32.eqz (f64.lt (local.get $cc) (f64.const {:.1}))) (then (return (i32.const 0))))
    (if (i32.eqz (call $field_kind (i32.const 224) (i32.const {}))) (then (return (i32.const 0))))",
            spec.family.0,
            spec.family.1,
            flag_path.len()
        ),
    };
    let cc_param = if spec.template == Template::VersionRange {
        ""
    } else {
        r#"(call $evidence (i32.const 128) (i32.const 33))
    (call $param_field (i32.const 216) (i32.const 2) (i32.const 128) (i32.const 33))"#
    };
    let spec_len = range.len();
    let meta = wat_string(&meta(spec).to_string());
    let tests = wat_string(&cases(spec).to_string());
    format!(
        r#"(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (import "pitfall" "field_num" (func $field_num (param i32 i32) (result f64)))
  (import "pitfall" "field_str" (func $field_str (param i32 i32 i32 i32) (result i32)))
  (import "pitfall" "version_in" (func $version_in (param i32 i32 i32 i32) (result i32)))
  (import "pitfall" "evidence" (func $evidence (param i32 i32)))
  (import "pitfall" "missing" (func $missing (param i32 i32)))
  (import "pitfall" "param_field" (func $param_field (param i32 i32 i32 i32)))
  (import "pitfall" "remedy" (func $remedy (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{pkg_path}.version")
  (data (i32.const 128) "accelerators.0.compute_capability")
  (data (i32.const 176) "accelerators.0.vendor")
  (data (i32.const 208) "version")
  (data (i32.const 216) "cc")
  (data (i32.const 224) "{flag_path}")
  (data (i32.const 256) "{range}")
  (func (export "pitfall_evaluate") (result i32) (local $in i32) (local $cc f64)
    (if (i32.eqz (call $field_kind (i32.const 16) (i32.const {pkg_len}))) (then (return (i32.const 0))))
    (local.set $in (call $version_in (i32.const 16) (i32.const {ver_len}) (i32.const 256) (i32.const {spec_len})))
    (if (i32.eq (local.get $in) (i32.const -1))
      (then (call $missing (i32.const 16) (i32.const {ver_len})) (return (i32.const 2))))
    (if (i32.ne (local.get $in) (i32.const 1)) (then (return (i32.const 0))))
    {gpu}
    (call $evidence (i32.const 16) (i32.const {ver_len}))
    (call $param_field (i32.const 208) (i32.const 7) (i32.const 16) (i32.const {ver_len}))
    {cc_param}
    (call $remedy (i32.const 0))
    (i32.const 1))
  (@custom "pitfall.abi" "1")
  (@custom "pitfall.meta" "{meta}")
  (@custom "pitfall.tests" "{tests}"))"#
    )
}

/// The module bytes of a rule.
pub fn module(spec: &RuleSpec) -> Vec<u8> {
    wat::parse_str(wat(spec)).unwrap_or_else(|e| panic!("template of {}: {e}", spec.id()))
}

/// A corpus: its specs and their modules.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// What each rule concerns.
    pub specs: Vec<RuleSpec>,
    /// The modules, in the same order.
    pub modules: Vec<Vec<u8>>,
}

/// Generates `rules` rules from `seed`.
pub fn generate(rules: usize, seed: u64) -> Corpus {
    let specs = specs(rules, seed);
    let modules = specs.iter().map(module).collect();
    Corpus { specs, modules }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_seeded() {
        assert_eq!(specs(300, 7), specs(300, 7));
        assert_ne!(specs(300, 7), specs(300, 8));
        assert_eq!(generate(20, 3).modules, generate(20, 3).modules);
    }

    #[test]
    fn releases_are_ordered() {
        for i in 1..RELEASES {
            let (a, b) = (
                pitfall_version::Version::parse(&release(i)).expect("pep 440"),
                pitfall_version::Version::parse(&release(i - 1)).expect("pep 440"),
            );
            assert!(a > b, "{} vs {}", release(i), release(i - 1));
        }
    }

    #[test]
    fn the_distribution_is_zipf_over_packages_and_mostly_old_versions() {
        let specs = specs(10_000, 1);
        let rules_of = |k: usize| specs.iter().filter(|s| s.package == k).count();
        // The head is covered to its capacity, the tail takes the rest.
        assert_eq!(rules_of(0), package_capacity(0), "vllm");
        assert_eq!(rules_of(1), package_capacity(1), "torch");
        for k in 0..pool_size(10_000) {
            assert!(rules_of(k) <= package_capacity(k), "rank {k}");
        }
        let tail = specs.iter().filter(|s| s.package >= HEAD_PACKAGES.len()).count();
        assert!(tail > 7000, "tail rules: {tail}");
        // Few rules still concern the newest releases.
        let current = specs.iter().filter(|s| s.upper.is_none_or(|hi| hi > RELEASES - 5)).count();
        assert!(current < 600, "rules concerning the last releases: {current}");
        let old = specs.iter().filter(|s| s.upper.is_some_and(|hi| hi < RELEASES / 2)).count();
        assert!(old > 7000, "rules fixed in the first half of history: {old}");
        for t in [Template::VersionRange, Template::VersionAndCapability, Template::GpuFamily] {
            assert!(specs.iter().filter(|s| s.template == t).count() > 1500);
        }
    }

    #[test]
    fn every_rule_parses_its_selectors_and_passes_its_lint() {
        for spec in specs(200, 5) {
            let meta: pitfall_contract::meta::RuleMeta =
                serde_json::from_value(meta(&spec)).expect("meta");
            assert!(meta.problems().is_empty(), "{}: {:?}", spec.id(), meta.problems());
            for s in &meta.applies_to {
                pitfall_contract::selector::Selector::parse(s).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
