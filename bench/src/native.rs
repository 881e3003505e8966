//! The template rules' logic compiled into the host: the same field reads
//! and version questions (through the same `Session`, so the same lookups
//! and output), the same capability comparisons, and the same rendering of a
//! matched finding as `Engine::evaluate` does after the call. The
//! difference to the engine's figure is the price of the sandbox: a fresh
//! instance, fuel, the deadline, and the host-call boundary.

use pitfall_contract::Prepared;
use pitfall_contract::cases::Evaluation;
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::{RawOutcome, render};
use pitfall_contract::session::{Session, status};

use crate::corpus::{RuleSpec, Template, package_name};

/// One compiled-in rule: its spec, paths and metadata, prepared once.
#[derive(Debug, Clone)]
pub struct NativeRule {
    spec: RuleSpec,
    pkg_path: String,
    version_path: String,
    range: String,
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
            range: spec.version_spec(),
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
        match s.version_in(self.version_path.as_bytes(), self.range.as_bytes()) {
            Ok(1) => {}
            Ok(status::MISSING) => {
                let _ = s.missing(self.version_path.as_bytes());
                return 2;
            }
            _ => return 0,
        }
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
        }
        let _ = s.evidence(self.version_path.as_bytes());
        let _ = s.param_field(b"version", self.version_path.as_bytes());
        if self.spec.template != Template::VersionRange {
            let _ = s.evidence(CC);
            let _ = s.param_field(b"cc", CC);
        }
        let _ = s.remedy(0);
        1
    }
}
