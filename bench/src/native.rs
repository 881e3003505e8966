//! The template rules' logic compiled into the host: the same field reads
//! (through the same `Session`, so the same lookups and output), the same
//! version and capability comparisons, and the same rendering of a
//! matched finding as `Engine::evaluate` does after the call. The
//! difference to the engine's figure is the price of the sandbox: a fresh
//! instance, fuel, the deadline, and the host-call boundary.

use pitfall_sdk::model::Prepared;
use pitfall_sdk::model::cases::Evaluation;
use pitfall_sdk::model::meta::RuleMeta;
use pitfall_sdk::model::report::{RawOutcome, render};
use pitfall_sdk::model::session::Session;

use crate::corpus::{RuleSpec, Template, encoded, package_name};

pub use crate::dotted::dotted;

/// One compiled-in rule: its spec, paths and metadata, prepared once.
#[derive(Debug, Clone)]
pub struct NativeRule {
    spec: RuleSpec,
    pkg_path: String,
    version_path: String,
    flag_path: String,
    meta: RuleMeta,
}

const GPU: &[u8] = b"accelerators.0";
const VENDOR: &[u8] = b"accelerators.0.vendor";
const CC: &[u8] = b"accelerators.0.compute_capability";

impl NativeRule {
    /// The rule of `spec`.
    pub fn new(spec: &RuleSpec) -> NativeRule {
        let pkg_path = format!("packages.{}", package_name(spec.package));
        let meta = serde_json::from_value(crate::corpus::meta(spec))
            .unwrap_or_else(|e| panic!("{}: {e}", spec.id()));
        NativeRule {
            version_path: format!("{pkg_path}.version"),
            pkg_path,
            flag_path: format!("env.SYNTH_FLAG_{:02}", spec.flag),
            spec: spec.clone(),
            meta,
        }
    }

    /// Evaluates on a prepared manifest, as the module would.
    pub fn evaluate(&self, prepared: &Prepared, output_limit: usize) -> Evaluation {
        let mut session = Session::new(prepared.fields.clone(), output_limit);
        let code = self.run(&mut session);
        let raw = session.take_output();
        match RawOutcome::from_code(code) {
            Some(RawOutcome::Clear) => Evaluation::Clear,
            Some(RawOutcome::Undetermined) => Evaluation::Undetermined(raw.missing),
            Some(RawOutcome::Matched) => match render(&self.meta, &raw, &prepared.fields) {
                Ok(finding) => Evaluation::Matched(Box::new(finding.into())),
                Err(e) => Evaluation::Failed(format!("malformed output: {e}")),
            },
            None => Evaluation::Failed(format!("returned {code}")),
        }
    }

    fn run(&self, s: &mut Session) -> i32 {
        if s.field_kind(self.pkg_path.as_bytes()) == 0 {
            return 0;
        }
        let version = match s.field_str(self.version_path.as_bytes()) {
            Ok(v) => v.into_owned(),
            Err(-1) => {
                let _ = s.missing(self.version_path.as_bytes());
                return 2;
            }
            Err(_) => return 0,
        };
        let Some(v) = dotted(&version) else { return 0 };
        if self.spec.lower.is_some_and(|lo| v < encoded(lo))
            || self.spec.upper.is_some_and(|hi| v >= encoded(hi))
        {
            return 0;
        }
        let mut cc_text = None;
        if self.spec.template != Template::VersionRange {
            if s.field_kind(GPU) == 0 || s.field_str(VENDOR).as_deref() != Ok("nvidia") {
                return 0;
            }
            if s.field_kind(CC) == 0 {
                let _ = s.missing(CC);
                return 2;
            }
            let cc = s.field_num(CC);
            let inside = match self.spec.template {
                Template::VersionAndCapability => cc < self.spec.capability_floor,
                _ => {
                    cc >= self.spec.family.0
                        && cc < self.spec.family.1
                        && s.field_kind(self.flag_path.as_bytes()) != 0
                }
            };
            if !inside {
                return 0;
            }
            cc_text = s.field_str(CC).ok().map(std::borrow::Cow::into_owned);
        }
        let _ = s.evidence(self.version_path.as_bytes());
        let _ = s.param(b"version", version.as_bytes());
        if let Some(cc) = cc_text {
            let _ = s.evidence(CC);
            let _ = s.param(b"cc", cc.as_bytes());
        }
        let _ = s.remedy(0);
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_matches_the_template_encoding() {
        assert_eq!(dotted("1.9.2"), Some(encoded(59)));
        assert_eq!(dotted("0.0.0"), Some(encoded(0)));
        assert_eq!(dotted("1.2"), dotted("1.2.0"));
        assert_eq!(dotted("1.2.0+cu126"), dotted("1.2.0"));
        for bad in [
            "",
            "1..2",
            "1.2.3.4",
            "0.27.2rc0",
            "v1.0",
            "1!2.0",
            "99999999",
        ] {
            assert_eq!(dotted(bad), None, "{bad}");
        }
    }
}
