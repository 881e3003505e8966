//! The answer to a fix: the plan (steps, cost, the patched manifest, what
//! it leaves, the artefacts), or why there is none on this hardware, and
//! the plan on other hardware. `POST /v1/fix` answers with it as JSON.

use pitfall_contract::Manifest;
use pitfall_contract::actions::Action;
use pitfall_contract::meta::Severity;
use pitfall_contract::report::Undetermined;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::artefacts::Artefacts;
use crate::cost::{Cost, Tier};

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

/// The answer of `pitfall fix` and `POST /v1/fix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FixAnswer {
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
    /// What the changes cost (see the crate's cost model).
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
