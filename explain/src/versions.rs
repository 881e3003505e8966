//! Versions a log states for a package, against the releases a rule is
//! about. A pip line (`torch==2.1.2`), a file name (`vllm-0.3.3.tar.gz`,
//! `flash_attn-2.5.8+cu122torch2.3-cp310-...whl`) or `vllm version 0.6.3`
//! says which release the log is about; a rule
//! whose `applies_to` covers only other releases of that package
//! (`package:torch>=2.6` on a log that installs torch 2.1.2) explains it
//! less. So does a rule about GPUs of other compute capabilities than
//! those the log names (`capability:<7.5` on a log about an A800).

use std::sync::LazyLock;

use pitfall_contract::meta::RuleMeta;
use pitfall_contract::selector::Selector;
use pitfall_version::{Specifier, Version};
use regex::Regex;

/// A PEP 440 version as logs print it: a release, pre/post/dev parts, a
/// local label (`2.7.0+cu128`).
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^v?(\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[0-9a-z.]+)?)")
        .expect("the version pattern")
});

/// The packages a rule is about only in some releases: each name (as a
/// log spells it, `-` and `_` both) with the range.
#[derive(Debug, Clone, Default)]
pub struct Ranges {
    packages: Vec<(Vec<String>, Specifier)>,
    /// The `capability:` selectors' ranges.
    capabilities: Vec<Specifier>,
}

impl Ranges {
    /// The ranged `package:` selectors of `meta`.
    pub fn of(meta: &RuleMeta) -> Ranges {
        let mut out = Ranges::default();
        for selector in &meta.applies_to {
            match Selector::parse(selector) {
                Ok(Selector::Package { name, versions: Some(spec) }) => {
                    let mut names = vec![name.clone()];
                    let underscored = name.replace('-', "_");
                    if underscored != name {
                        names.push(underscored);
                    }
                    out.packages.push((names, spec));
                }
                Ok(Selector::Capability(spec)) => out.capabilities.push(spec),
                _ => {}
            }
        }
        out
    }

    /// Whether the log names GPUs (`gpus`: their compute capabilities,
    /// from the hardware table) and none is in one of the rule's
    /// capability ranges.
    pub fn capability_contradicted_by(&self, gpus: &[Version]) -> bool {
        !gpus.is_empty()
            && self.capabilities.iter().any(|spec| !gpus.iter().any(|v| spec.contains(v)))
    }

    /// Whether the rule is about GPU capabilities and the log names a GPU
    /// within every one of its ranges (a GTX 1080 Ti, 6.1, for
    /// `capability:<7.0`).
    pub fn capability_confirmed_by(&self, gpus: &[Version]) -> bool {
        !self.capabilities.is_empty()
            && gpus.iter().any(|v| self.capabilities.iter().all(|spec| spec.contains(v)))
    }

    /// How many of the rule's release and capability conditions the log
    /// does not confirm: a rule about flash-attn before 2.8 on Blackwell
    /// GPUs asks more of a log that names neither than one about any GPU
    /// below 8.0.
    pub fn unconfirmed(&self, log_lower: &str, gpus: &[Version]) -> usize {
        let packages = self
            .packages
            .iter()
            .filter(|(names, spec)| {
                !names.iter().flat_map(|n| stated(log_lower, n)).any(|v| spec.contains(&v))
            })
            .count();
        let gpus =
            usize::from(!self.capabilities.is_empty() && !self.capability_confirmed_by(gpus));
        packages + gpus
    }

    /// Whether the lowercased log states versions of one of these
    /// packages and none of them is in the rule's range.
    pub fn contradicted_by(&self, log_lower: &str) -> bool {
        self.packages.iter().any(|(names, spec)| {
            let stated: Vec<Version> = names.iter().flat_map(|n| stated(log_lower, n)).collect();
            !stated.is_empty() && !stated.iter().any(|v| spec.contains(v))
        })
    }
}

/// The versions `log_lower` states for the package `name`: right after
/// `name==`, `name-` (a file name) or `name version `, the name starting a
/// word; or after a colon or blanks (`xformers: 0.0.21`, pip list's
/// `torch      2.1.2`) when the version has a dot, so that `torch 2 gpus`
/// states nothing.
pub fn stated(log_lower: &str, name: &str) -> Vec<Version> {
    let mut out = Vec::new();
    for (i, _) in log_lower.match_indices(name) {
        let before = log_lower[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let rest = &log_lower[i + name.len()..];
        let strict = ["==", "-", " version "].iter().find_map(|sep| rest.strip_prefix(sep));
        let (rest, needs_dot) = match strict {
            Some(rest) => (rest, false),
            None => {
                let loose = rest.strip_prefix(':').unwrap_or(rest);
                let blanks = loose.trim_start_matches([' ', '\t']);
                if blanks.len() == loose.len() {
                    continue;
                }
                (blanks, true)
            }
        };
        let Some(found) = VERSION.captures(rest).and_then(|c| c.get(1)) else { continue };
        if needs_dot && !found.as_str().contains('.') {
            continue;
        }
        if let Ok(v) = Version::parse(found.as_str()) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(log: &str, name: &str) -> Vec<String> {
        stated(log, name).iter().map(|v| v.as_str().to_owned()).collect()
    }

    #[test]
    fn a_log_states_versions_in_pip_lines_file_names_and_banners() {
        let log = "error: could not find a version that satisfies the requirement torch==2.1.2\n\
                   downloading vllm-0.3.3.tar.gz (315 kb)\n\
                   vllm version 0.27.1 and its cuda version 12.8\n\
                   using cached torchvision-0.17.0-cp312-none-any.whl\n\
                   pytorch-triton==3.0.0";
        assert_eq!(versions(log, "torch"), ["2.1.2"]);
        assert_eq!(versions(log, "vllm"), ["0.3.3", "0.27.1"]);
        assert_eq!(versions(log, "cuda"), ["12.8"]);
        assert_eq!(versions(log, "triton"), Vec::<String>::new(), "pytorch-triton is not triton");
        assert_eq!(
            versions("flash_attn-2.5.8+cu122torch2.3-cp310", "flash_attn"),
            ["2.5.8+cu122torch2.3"]
        );
    }

    #[test]
    fn environment_pastes_state_versions_after_a_colon_or_blanks() {
        assert_eq!(versions("python: 3.10.8\nxformers: 0.0.21", "xformers"), ["0.0.21"]);
        assert_eq!(versions("torch            2.1.2+cu121", "torch"), ["2.1.2+cu121"]);
        assert_eq!(versions("torch 2 gpus, torch: 3", "torch"), Vec::<String>::new());
        assert_eq!(versions("torch:2.1.2", "torch"), Vec::<String>::new(), "no blank");
    }

    #[test]
    fn a_rule_about_other_releases_is_contradicted() {
        let meta: RuleMeta = serde_json::from_value(serde_json::json!({
            "id": "r", "version": "1.0.0", "title": "t", "severity": "error", "summary": "s",
            "message": "m", "remedies": [], "references": [], "author": "a",
            "applies_to": ["package:torch>=2.6"],
        }))
        .expect("a rule");
        let ranges = Ranges::of(&meta);
        assert!(ranges.contradicted_by("requirement torch==2.1.2 (from versions: 2.2.0)"));
        assert!(!ranges.contradicted_by("requirement torch==2.7.0"));
        assert!(!ranges.contradicted_by("torch 2.1 and torch==2.7.1"), "one in range is enough");
        assert!(!ranges.contradicted_by("no version stated"));
    }
}
