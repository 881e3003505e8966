//! The answer of `POST /v1/fix` (`pitfall-fix`'s, which the server sends
//! and the client reads): the plan, its cost, what it leaves and the
//! artefacts that carry it out. The request is the manifest itself
//! ([`FixRequest`]).
//!
//! The cost model the answer reports, cheapest first:
//!
//! 1. [`Tier::FlagOrEnv`]: a command-line flag, a workload setting (each
//!    is a `vllm serve` flag), an environment variable, a health probe;
//! 2. [`Tier::SameMajor`]: a pin or upgrade of an installed package that
//!    stays within its major release (the first number of the version);
//! 3. [`Tier::Package`]: any other package change: across a major release,
//!    a package not installed yet, a removal, a build from source, a build
//!    tool, another CUDA for the wheels, another model checkpoint;
//! 4. [`Tier::Platform`]: the container image, the driver, the OS;
//! 5. [`Tier::Hardware`]: another accelerator or host. Never part of a
//!    plan: offered only as "or, on other hardware".
//!
//! Plans are compared tier by tier from the most expensive down (one image
//! change costs more than any number of flags), then by their number of
//! changes, then by how far their versions are from the lowest each
//! remedy names (so the lowest version that passes wins).

use std::cmp::Ordering;

use pitfall_contract::Manifest;
use pitfall_contract::actions::Action;
use pitfall_contract::meta::Severity;
use pitfall_contract::report::Undetermined;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/fix` body: one manifest (v1), as `POST /v1/check` takes it.
pub type FixRequest = Manifest;

/// What a fix found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The manifest has no error as it is (the plan, if any, answers warnings).
    Clear,
    /// The plan clears every error on this hardware.
    Plan,
    /// No plan on this hardware: remedies collide (see `conflicts`).
    Conflict,
    /// No plan on this hardware; `on_other_hardware` has one.
    HardwareOnly,
    /// No plan found, on this hardware or another.
    NoPlan,
}

impl Status {
    /// Whether a plan clears every error on this hardware (the CLI exits 0).
    pub fn clears_errors(self) -> bool {
        matches!(self, Status::Clear | Status::Plan)
    }
}

/// The answer of `POST /v1/fix`, and what `pitfall fix --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FixResponse {
    /// What was found.
    pub status: Status,
    /// The rules with an error finding on the manifest as sent.
    pub errors_before: Vec<RuleRef>,
    /// The plan on this hardware: present for `clear` and `plan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// "Or, on other hardware": a plan that changes the hardware, given
    /// when none clears the errors without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_other_hardware: Option<Plan>,
    /// Remedies that bring another rule into range where no combination
    /// tried clears both (given when there is no plan on this hardware).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
    /// Remedies that cannot be applied to this manifest, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<UnavailableRemedy>,
    /// Manifests checked (a repeated one is answered from memory and not counted).
    pub evaluations: u32,
    /// The most this request may check.
    pub evaluation_bound: u32,
    /// Whether the search stopped at the bound: then a plan may not be the
    /// cheapest, and "no plan" may only mean "none found in time".
    pub bound_hit: bool,
    /// Whether a cheaper plan may exist (the bound was hit with cheaper
    /// combinations left untried).
    pub may_not_be_minimal: bool,
    /// The rule set that answered.
    pub ruleset_revision: String,
}

/// A rule, named in an answer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct RuleRef {
    /// The rule's id.
    pub rule_id: String,
    /// Its title.
    pub title: String,
    /// The severity of its finding.
    pub severity: Severity,
}

/// A set of changes and what it leads to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The changes, in the order to make them.
    pub steps: Vec<Step>,
    /// What the changes cost: their number per tier of the cost model (flags
    /// and environment < same-major versions < other packages <
    /// image, OS or driver < hardware), then in all.
    pub cost: Cost,
    /// The cost in words.
    pub cost_summary: String,
    /// Whether the patched manifest has no error finding.
    pub clears_errors: bool,
    /// The manifest with every step applied.
    pub patched_manifest: Manifest,
    /// What the patched manifest still has.
    pub leaves: Leaves,
    /// Commands and files that carry the steps out, where the manifest has
    /// their inputs.
    pub artefacts: Artefacts,
}

/// One change of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// The change, as a machine-applicable action.
    pub action: Action,
    /// The change for people.
    pub text: String,
    /// Its tier in the cost model.
    pub tier: Tier,
    /// The rule whose finding it answers.
    pub answers: RuleRef,
    /// The remedy of that finding it comes from.
    pub remedy: String,
    /// Whether the rule could not decide on the manifest as it stood: the
    /// step sidesteps it rather than answering a finding.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undetermined: bool,
}

/// What a plan leaves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Leaves {
    /// Error findings (only in a plan on other hardware that could not clear them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<RuleRef>,
    /// Warning findings.
    pub warnings: Vec<RuleRef>,
    /// Informational findings.
    pub info: Vec<RuleRef>,
    /// Rules that could not decide, with the fields each needs.
    pub undetermined: Vec<Undetermined>,
    /// Every field that would settle an undetermined rule, once each.
    pub settle_with: Vec<String>,
}

/// A remedy that brings another rule into range.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Conflict {
    /// The rule the remedy answers.
    pub rule_id: String,
    /// The remedy.
    pub remedy: String,
    /// The rule it brings into range.
    pub brings: String,
    /// Why: that rule's finding on the remedied manifest.
    pub why: String,
}

/// A remedy that cannot be applied here.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct UnavailableRemedy {
    /// The rule that offers it.
    pub rule_id: String,
    /// The remedy.
    pub remedy: String,
    /// Why it cannot be applied.
    pub reason: String,
}

/// How expensive one change is (see the module's documentation).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// A flag, a workload setting, an environment variable.
    FlagOrEnv,
    /// A pin or upgrade within the installed major release.
    SameMajor,
    /// Any other package change.
    Package,
    /// The container image, the driver or the OS.
    Platform,
    /// Another accelerator or host.
    Hardware,
}

impl Tier {
    /// Every tier, cheapest first.
    pub const ALL: [Tier; 5] =
        [Tier::FlagOrEnv, Tier::SameMajor, Tier::Package, Tier::Platform, Tier::Hardware];

    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::FlagOrEnv => "flag or environment",
            Tier::SameMajor => "version within the same major release",
            Tier::Package => "package change",
            Tier::Platform => "image, OS or driver",
            Tier::Hardware => "hardware",
        }
    }
}

/// What a plan costs: its changes per tier, their number, and how far its
/// versions are from the lowest its remedies name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    /// Flags, workload settings and environment variables.
    pub flag_or_env: u32,
    /// Pins and upgrades within the installed major release.
    pub same_major: u32,
    /// Other package changes.
    pub package: u32,
    /// Image, OS or driver changes.
    pub platform: u32,
    /// Hardware changes (only in the "on other hardware" answer).
    pub hardware: u32,
    /// Every change.
    pub changes: u32,
    /// How many release steps above the lowest version each remedy names
    /// the plan's versions are (0: every version is the lowest named).
    pub version_steps: u32,
}

impl Cost {
    /// Adds one change of `tier`.
    pub fn add(&mut self, tier: Tier) {
        *self.slot(tier) += 1;
        self.changes += 1;
    }

    fn slot(&mut self, tier: Tier) -> &mut u32 {
        match tier {
            Tier::FlagOrEnv => &mut self.flag_or_env,
            Tier::SameMajor => &mut self.same_major,
            Tier::Package => &mut self.package,
            Tier::Platform => &mut self.platform,
            Tier::Hardware => &mut self.hardware,
        }
    }

    /// The changes of `tier`.
    pub fn of(&self, tier: Tier) -> u32 {
        match tier {
            Tier::FlagOrEnv => self.flag_or_env,
            Tier::SameMajor => self.same_major,
            Tier::Package => self.package,
            Tier::Platform => self.platform,
            Tier::Hardware => self.hardware,
        }
    }

    /// This cost plus `other`.
    pub fn plus(&self, other: &Cost) -> Cost {
        Cost {
            flag_or_env: self.flag_or_env + other.flag_or_env,
            same_major: self.same_major + other.same_major,
            package: self.package + other.package,
            platform: self.platform + other.platform,
            hardware: self.hardware + other.hardware,
            changes: self.changes + other.changes,
            version_steps: self.version_steps + other.version_steps,
        }
    }

    /// One line for people: `2 flag or environment, 1 package change`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = Tier::ALL
            .iter()
            .rev()
            .filter(|t| self.of(**t) > 0)
            .map(|t| format!("{} {}", self.of(*t), t.describe()))
            .collect();
        if parts.is_empty() { "no change".to_owned() } else { parts.join(", ") }
    }
}

impl Ord for Cost {
    fn cmp(&self, other: &Cost) -> Ordering {
        Tier::ALL
            .iter()
            .rev()
            .map(|t| self.of(*t).cmp(&other.of(*t)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(self.changes.cmp(&other.changes))
            .then(self.version_steps.cmp(&other.version_steps))
    }
}

impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Cost) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The artefacts of a plan; each is absent when the manifest lacks its
/// inputs or the plan does not touch it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Artefacts {
    /// `vllm serve MODEL --flag value ...`, for a vLLM workload with a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm_serve: Option<String>,
    /// A pip constraints file (`pip install -c FILE ...`): each package
    /// the plan installs or moves, at its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pip_constraints: Option<String>,
    /// The environment variables the plan sets (`value` absent: unset it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvChange>,
    /// The container settings the plan changes, as `docker run` flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_run_flags: Option<String>,
    /// The same settings as a compose fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compose: Option<String>,
}

/// One environment variable to set or unset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvChange {
    /// The variable.
    pub name: String,
    /// Its value; absent: unset it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}
