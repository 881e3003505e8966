//! The search for the cheapest set of remedies that leaves no error.
//!
//! A state is the client's manifest with some remedies applied; each state
//! is checked once (a manifest checked before is answered from memory and
//! costs no evaluation). From a state with errors, the search branches on
//! one error (the one with the fewest options) over that finding's
//! remedies, each with its choices made (`options`). First a dive, cheapest
//! option first, finds a plan quickly; then a uniform-cost search looks for
//! a cheaper one, in cost order, so the first state without errors it takes
//! is the cheapest (`cost`). Both stop at the evaluation bound.
//!
//! A remedy that leaves its own rule matched, or brings another rule into
//! range, is remembered: when no plan exists on this hardware, those are
//! the conflicts the answer names. Hardware remedies are left out of that
//! search and tried in a second one, "on other hardware", only when the
//! first finds nothing.
//!
//! Once errors are clear, each warning's cheapest remedy that keeps them
//! clear is added, one warning at a time.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::rc::Rc;

use pitfall_contract::Manifest;
use pitfall_contract::meta::Severity;
use pitfall_contract::report::{CheckResponse, Finding};
use pitfall_engine::{PastDeadline, RuleSet};

use crate::artefacts::artefacts;
use crate::options::{self, Applied, Candidate};
use pitfall_api::fix::{
    Conflict, FixResponse, Leaves, Plan, RuleRef, Status, Step, UnavailableRemedy,
};
use pitfall_api::fix::{Cost, Tier};

/// The most manifests one fix may check. Each is one check of the whole
/// rule set; the bound keeps a request's time within a few hundred checks.
pub const EVALUATION_BOUND: u32 = 256;

/// The share of the bound the first dive may use before the cost-ordered
/// search takes over.
const DIVE_EVALUATIONS: u32 = 64;

/// How many remedies of one warning are tried once errors are clear.
const WARNING_TRIES: usize = 3;

/// How many conflicts an answer lists.
const MAX_CONFLICTS: usize = 16;

/// What a fix could not do.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// A check ran past the caller's deadline.
    #[error("a check ran past its deadline: {0}")]
    PastDeadline(#[from] PastDeadline),
}

/// A checked manifest: its answer and its errors.
struct Outcome {
    answer: CheckResponse,
    errors: Vec<Finding>,
}

impl Outcome {
    fn new(answer: CheckResponse) -> Outcome {
        let mut errors: Vec<Finding> = answer
            .findings
            .iter()
            .filter(|f| f.severity() == Severity::Error)
            .map(|f| f.finding().clone())
            .collect();
        errors.sort_by(|a, b| a.rule_id.cmp(&b.rule_id));
        Outcome { answer, errors }
    }

    fn error_ids(&self) -> BTreeSet<&str> {
        self.errors.iter().map(|f| f.rule_id.as_str()).collect()
    }

    fn has(&self, rule_id: &str) -> bool {
        self.answer.findings.iter().any(|f| f.rule_id() == rule_id)
    }
}

/// Checks manifests, each once, within the bound.
struct Checker<'c> {
    check: &'c mut dyn FnMut(Manifest) -> Result<CheckResponse, PastDeadline>,
    memo: HashMap<String, Rc<Outcome>>,
    used: u32,
    bound: u32,
    bound_hit: bool,
}

impl Checker<'_> {
    /// The outcome of `manifest`; `None` when checking it would pass the bound.
    fn outcome(&mut self, manifest: &Manifest) -> Result<Option<Rc<Outcome>>, FixError> {
        let key = serde_json::to_string(manifest).unwrap_or_default();
        if let Some(hit) = self.memo.get(&key) {
            return Ok(Some(Rc::clone(hit)));
        }
        if self.used >= self.bound {
            self.bound_hit = true;
            return Ok(None);
        }
        self.used += 1;
        let outcome = Rc::new(Outcome::new((self.check)(manifest.clone())?));
        self.memo.insert(key, Rc::clone(&outcome));
        Ok(Some(outcome))
    }
}

/// A state of the search: the steps taken and where they lead.
#[derive(Clone)]
struct Node {
    manifest: Manifest,
    steps: Vec<Step>,
    cost: Cost,
    /// The errors of the state this one came from, and the remedy taken.
    came_from: Option<(Rc<Outcome>, Rc<Candidate>)>,
}

/// What the searches learnt along the way.
#[derive(Default)]
struct Notes {
    conflicts: BTreeSet<Conflict>,
    unavailable: BTreeSet<UnavailableRemedy>,
    /// Rules left with no option on this hardware at some state.
    stuck: BTreeSet<String>,
}

/// How a search orders the states it has yet to check.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Depth first, cheapest child first.
    Dive,
    /// Cheapest state first.
    Cost,
}

/// Finds the cheapest plan for `manifest` (see the module's documentation).
/// `check` answers one manifest as `rules` does (the caller decides how:
/// in parallel, or on its own thread until a deadline); `rules` gives the
/// metadata of undetermined rules and names the rule set in the answer.
pub fn solve(
    manifest: &Manifest,
    rules: &RuleSet,
    check: &mut dyn FnMut(Manifest) -> Result<CheckResponse, PastDeadline>,
) -> Result<FixResponse, FixError> {
    solve_within(manifest, rules, EVALUATION_BOUND, check)
}

/// [`solve`] with another evaluation bound.
pub fn solve_within(
    manifest: &Manifest,
    rules: &RuleSet,
    bound: u32,
    check: &mut dyn FnMut(Manifest) -> Result<CheckResponse, PastDeadline>,
) -> Result<FixResponse, FixError> {
    let revision = rules.revision();
    let mut checker = Checker { check, memo: HashMap::new(), used: 0, bound, bound_hit: false };
    let mut notes = Notes::default();
    let root = Node {
        manifest: manifest.clone(),
        steps: Vec::new(),
        cost: Cost::default(),
        came_from: None,
    };
    let Some(first) = checker.outcome(manifest)? else {
        // A bound of zero: nothing was checked.
        return Ok(answer_without_check(revision, &checker));
    };
    let errors_before = refs(&first.errors);
    let open_before: BTreeSet<String> =
        first.answer.undetermined.iter().map(|u| u.rule_id.clone()).collect();

    let (status, plan, on_other_hardware, may_not_be_minimal) = if first.errors.is_empty() {
        let node = warnings(&mut checker, root, first)?;
        let node = settle(&mut checker, rules, &open_before, node.0, node.1)?;
        (Status::Clear, Some(node), None, false)
    } else {
        let (found, open_cheaper) = search(&mut checker, &mut notes, &root, false)?;
        match found {
            Some((node, outcome)) => {
                let node = warnings(&mut checker, node, outcome)?;
                let node = settle(&mut checker, rules, &open_before, node.0, node.1)?;
                (Status::Plan, Some(node), None, open_cheaper)
            }
            None => {
                let (other, open_cheaper) = search(&mut checker, &mut notes, &root, true)?;
                let other = match other {
                    Some((node, outcome)) => Some(warnings(&mut checker, node, outcome)?),
                    None => None,
                };
                // A collision on this hardware is named as such; with none,
                // the answer is the other hardware's.
                let status = if !notes.conflicts.is_empty() {
                    Status::Conflict
                } else if other.is_some() {
                    Status::HardwareOnly
                } else {
                    Status::NoPlan
                };
                (status, None, other, open_cheaper)
            }
        }
    };

    let plan = plan.map(|(node, outcome)| finish(manifest, node, &outcome));
    let on_other_hardware =
        on_other_hardware.map(|(node, outcome)| finish(manifest, node, &outcome));
    let conflicts = if status.clears_errors() {
        Vec::new()
    } else {
        notes.conflicts.into_iter().take(MAX_CONFLICTS).collect()
    };
    Ok(FixResponse {
        status,
        errors_before,
        plan,
        on_other_hardware,
        conflicts,
        unavailable: notes.unavailable.into_iter().collect(),
        evaluations: checker.used,
        evaluation_bound: checker.bound,
        bound_hit: checker.bound_hit,
        may_not_be_minimal: may_not_be_minimal || (checker.bound_hit && !status.clears_errors()),
        ruleset_revision: revision.to_owned(),
    })
}

fn answer_without_check(revision: &str, checker: &Checker<'_>) -> FixResponse {
    FixResponse {
        status: Status::NoPlan,
        errors_before: Vec::new(),
        plan: None,
        on_other_hardware: None,
        conflicts: Vec::new(),
        unavailable: Vec::new(),
        evaluations: checker.used,
        evaluation_bound: checker.bound,
        bound_hit: true,
        may_not_be_minimal: true,
        ruleset_revision: revision.to_owned(),
    }
}

fn rule_ref(finding: &Finding) -> RuleRef {
    RuleRef {
        rule_id: finding.rule_id.clone(),
        title: finding.title.clone(),
        severity: finding.severity,
    }
}

fn refs(findings: &[Finding]) -> Vec<RuleRef> {
    findings.iter().map(rule_ref).collect()
}

/// A search's answer: the cheapest plan found (its state and that state's
/// check), and whether cheaper states were left unchecked at the bound.
type Searched = (Option<(Node, Rc<Outcome>)>, bool);

/// A dive for a first plan, then the cost-ordered search for a cheaper
/// one. Gives the cheapest plan found and whether cheaper states were left
/// unchecked at the bound.
fn search(
    checker: &mut Checker<'_>,
    notes: &mut Notes,
    root: &Node,
    hardware: bool,
) -> Result<Searched, FixError> {
    let dive_bound = checker.used.saturating_add(DIVE_EVALUATIONS).min(checker.bound);
    let (mut best, _) = run(checker, notes, root, hardware, Order::Dive, dive_bound, None)?;
    let limit = best.as_ref().map(|(n, _)| n.cost.clone());
    let bound = checker.bound;
    let (cheaper, open_cheaper) = run(checker, notes, root, hardware, Order::Cost, bound, limit)?;
    if cheaper.is_some() {
        best = cheaper;
    }
    Ok((best, open_cheaper))
}

/// One search from `root`, checking until `bound` evaluations in all; only
/// states cheaper than `limit` are considered. Gives the first state
/// without errors and whether states cheaper than it (or than `limit`)
/// were left unchecked.
fn run(
    checker: &mut Checker<'_>,
    notes: &mut Notes,
    root: &Node,
    hardware: bool,
    order: Order,
    bound: u32,
    limit: Option<Cost>,
) -> Result<Searched, FixError> {
    let mut nodes: Vec<Node> = vec![root.clone()];
    let mut heap: BinaryHeap<Reverse<(Cost, usize)>> = BinaryHeap::new();
    let mut stack: Vec<usize> = Vec::new();
    match order {
        Order::Dive => stack.push(0),
        Order::Cost => heap.push(Reverse((Cost::default(), 0))),
    }
    let mut expanded: HashSet<String> = HashSet::new();
    let cheaper = |cost: &Cost| limit.as_ref().is_none_or(|l| cost < l);
    loop {
        let id = match order {
            Order::Dive => stack.pop(),
            Order::Cost => heap.pop().map(|Reverse((_, id))| id),
        };
        let Some(id) = id else { return Ok((None, false)) };
        let node = nodes[id].clone();
        if !cheaper(&node.cost) {
            // In cost order every state left is at least as dear.
            if order == Order::Cost {
                return Ok((None, false));
            }
            continue;
        }
        if checker.used >= bound && !checker.memo.contains_key(&key(&node.manifest)) {
            checker.bound_hit |= bound == checker.bound;
            return Ok((None, true));
        }
        let Some(outcome) = checker.outcome(&node.manifest)? else {
            return Ok((None, true));
        };
        if let Some((parent, via)) = &node.came_from {
            learn(notes, parent, via, &outcome);
        }
        if outcome.errors.is_empty() {
            return Ok((Some((node, outcome)), false));
        }
        if !expanded.insert(key(&node.manifest)) {
            continue;
        }
        let mut children =
            children(notes, &node, &outcome, hardware, |f| f.severity == Severity::Error);
        children.retain(|c| cheaper(&c.cost));
        match order {
            Order::Dive => {
                // Cheapest on top of the stack.
                children.sort_by(|a, b| b.cost.cmp(&a.cost));
                for child in children {
                    nodes.push(child);
                    stack.push(nodes.len() - 1);
                }
            }
            Order::Cost => {
                for child in children {
                    let cost = child.cost.clone();
                    nodes.push(child);
                    heap.push(Reverse((cost, nodes.len() - 1)));
                }
            }
        }
    }
}

fn key(manifest: &Manifest) -> String {
    serde_json::to_string(manifest).unwrap_or_default()
}

/// What a checked child teaches: its remedy left its own rule matched, or
/// brought rules into range that its parent did not have.
fn learn(notes: &mut Notes, parent: &Outcome, via: &Candidate, outcome: &Outcome) {
    let before = parent.error_ids();
    for finding in &outcome.errors {
        if !before.contains(finding.rule_id.as_str()) {
            notes.conflicts.insert(Conflict {
                rule_id: via.rule_id.clone(),
                remedy: via.remedy.clone(),
                brings: finding.rule_id.clone(),
                why: finding.message.clone(),
            });
        }
    }
    if outcome.has(&via.rule_id) && via.severity == Severity::Error {
        notes.unavailable.insert(UnavailableRemedy {
            rule_id: via.rule_id.clone(),
            remedy: via.remedy.clone(),
            reason: "applied here, the rule still matches".to_owned(),
        });
    }
}

/// The states one remedy away from `node`: the options of the finding
/// (among those `pick` selects) with the fewest options, each applied.
fn children(
    notes: &mut Notes,
    node: &Node,
    outcome: &Rc<Outcome>,
    hardware: bool,
    pick: impl Fn(&Finding) -> bool,
) -> Vec<Node> {
    let mut best: Option<Vec<Node>> = None;
    for finding in outcome.answer.findings.iter().map(|f| f.finding()).filter(|f| pick(f)) {
        let options = options_of(notes, node, outcome, finding, hardware);
        if options.is_empty() {
            notes.stuck.insert(finding.rule_id.clone());
            // An error nothing here can clear: no child can be a plan.
            return Vec::new();
        }
        if best.as_ref().is_none_or(|b| options.len() < b.len()) {
            best = Some(options);
        }
    }
    best.unwrap_or_default()
}

/// Each option of `finding`'s remedies applied to `node`.
fn options_of(
    notes: &mut Notes,
    node: &Node,
    outcome: &Rc<Outcome>,
    finding: &Finding,
    hardware: bool,
) -> Vec<Node> {
    let (candidates, unavailable) = options::expand(finding, &node.manifest);
    for u in unavailable {
        notes.unavailable.insert(UnavailableRemedy {
            rule_id: u.rule_id,
            remedy: u.remedy,
            reason: u.reason,
        });
    }
    let mut out = Vec::new();
    for candidate in candidates {
        let (manifest, applied, cost) = match options::apply(&candidate, &node.manifest) {
            Ok(done) => done,
            Err(reason) => {
                notes.unavailable.insert(UnavailableRemedy {
                    rule_id: candidate.rule_id.clone(),
                    remedy: candidate.remedy.clone(),
                    reason,
                });
                continue;
            }
        };
        if applied.is_empty() {
            continue;
        }
        if !hardware && applied.iter().any(|a| a.tier == Tier::Hardware) {
            continue;
        }
        let candidate = Rc::new(candidate);
        let mut steps = node.steps.clone();
        steps.extend(applied.into_iter().map(|a| step(&candidate, a)));
        out.push(Node {
            manifest,
            steps,
            cost: node.cost.plus(&cost),
            came_from: Some((Rc::clone(outcome), candidate)),
        });
    }
    out
}

fn step(candidate: &Candidate, applied: Applied) -> Step {
    Step {
        text: applied.action.to_string(),
        action: applied.action,
        tier: applied.tier,
        answers: RuleRef {
            rule_id: candidate.rule_id.clone(),
            title: candidate.rule_title.clone(),
            severity: candidate.severity,
        },
        remedy: candidate.remedy.clone(),
        undetermined: false,
    }
}

/// `node` (without errors) with each warning's cheapest remedy that keeps
/// it free of errors, one warning at a time, within the bound.
fn warnings(
    checker: &mut Checker<'_>,
    mut node: Node,
    mut outcome: Rc<Outcome>,
) -> Result<(Node, Rc<Outcome>), FixError> {
    let hardware_allowed = node.steps.iter().any(|s| s.tier == Tier::Hardware);
    let warning_ids: Vec<String> = outcome
        .answer
        .findings
        .iter()
        .filter(|f| f.severity() == Severity::Warning)
        .map(|f| f.rule_id().to_owned())
        .collect();
    let mut scratch = Notes::default();
    for rule_id in warning_ids {
        let Some(finding) =
            outcome.answer.findings.iter().map(|f| f.finding()).find(|f| f.rule_id == rule_id)
        else {
            // An earlier warning's remedy cleared it too.
            continue;
        };
        let finding = finding.clone();
        let mut options = options_of(&mut scratch, &node, &outcome, &finding, hardware_allowed);
        options.sort_by(|a, b| a.cost.cmp(&b.cost));
        for child in options.into_iter().take(WARNING_TRIES) {
            let Some(next) = checker.outcome(&child.manifest)? else { return Ok((node, outcome)) };
            let warnings_before = count(&outcome, Severity::Warning);
            if next.errors.is_empty()
                && !next.has(&rule_id)
                && count(&next, Severity::Warning) < warnings_before
            {
                node = child;
                outcome = next;
                break;
            }
        }
    }
    Ok((node, outcome))
}

/// `node` (without errors) with, for each error rule the plan itself left
/// unable to decide (building from source asks which tools are there), the
/// cheapest of its remedies (those whose actions need no value from a
/// finding) that lets it decide clear while keeping errors clear and
/// adding no warning. A rule the manifest as sent already left open is
/// the client's question, not the plan's: the answer names the fields
/// that would settle it.
fn settle(
    checker: &mut Checker<'_>,
    rules: &RuleSet,
    open_before: &BTreeSet<String>,
    mut node: Node,
    mut outcome: Rc<Outcome>,
) -> Result<(Node, Rc<Outcome>), FixError> {
    let hardware_allowed = node.steps.iter().any(|s| s.tier == Tier::Hardware);
    let open: Vec<String> = outcome.answer.undetermined.iter().map(|u| u.rule_id.clone()).collect();
    let mut scratch = Notes::default();
    for rule_id in open {
        if !outcome.answer.undetermined.iter().any(|u| u.rule_id == rule_id) {
            continue;
        }
        let Some(rule) = rules.rules().iter().find(|r| r.id() == rule_id) else { continue };
        let meta = rule.meta();
        if open_before.contains(&rule_id) || meta.severity != Severity::Error {
            continue;
        }
        let stand_in = Finding {
            rule_id: meta.id.clone(),
            rule_version: meta.version.clone(),
            severity: meta.severity,
            title: meta.title.clone(),
            message: meta.summary.clone(),
            error_signatures: Vec::new(),
            remedies: meta.remedies.clone(),
            evidence: Vec::new(),
            references: Vec::new(),
        };
        let mut options = options_of(&mut scratch, &node, &outcome, &stand_in, hardware_allowed);
        options.sort_by(|a, b| a.cost.cmp(&b.cost));
        for mut child in options.into_iter().take(WARNING_TRIES) {
            let Some(next) = checker.outcome(&child.manifest)? else { return Ok((node, outcome)) };
            let decided = !next.answer.undetermined.iter().any(|u| u.rule_id == rule_id);
            if next.errors.is_empty()
                && decided
                && !next.has(&rule_id)
                && count(&next, Severity::Warning) <= count(&outcome, Severity::Warning)
            {
                let taken = node.steps.len();
                for step in &mut child.steps[taken..] {
                    step.undetermined = true;
                }
                node = child;
                outcome = next;
                break;
            }
        }
    }
    Ok((node, outcome))
}

fn count(outcome: &Outcome, severity: Severity) -> usize {
    outcome.answer.findings.iter().filter(|f| f.severity() == severity).count()
}

/// The plan of a final state: its steps in the order to make them, what
/// it leaves and its artefacts.
fn finish(original: &Manifest, node: Node, outcome: &Outcome) -> Plan {
    let mut steps = node.steps;
    steps.sort_by_key(|s| do_order(&s.action));
    let findings = |severity| {
        let mut out: Vec<RuleRef> = outcome
            .answer
            .findings
            .iter()
            .filter(|f| f.severity() == severity)
            .map(|f| rule_ref(f.finding()))
            .collect();
        out.sort();
        out
    };
    let undetermined = outcome.answer.undetermined.clone();
    let settle_with: BTreeSet<String> =
        undetermined.iter().flat_map(|u| u.missing.iter().cloned()).collect();
    let leaves = Leaves {
        errors: findings(Severity::Error),
        warnings: findings(Severity::Warning),
        info: findings(Severity::Info),
        undetermined,
        settle_with: settle_with.into_iter().collect(),
    };
    Plan {
        steps,
        cost_summary: node.cost.summary(),
        cost: node.cost,
        clears_errors: outcome.errors.is_empty(),
        artefacts: artefacts(original, &node.manifest),
        patched_manifest: node.manifest,
        leaves,
    }
}

/// The order to make changes in: the platform, then packages, then builds,
/// then the environment and container, then the server's flags.
fn do_order(action: &pitfall_contract::actions::Action) -> u8 {
    use pitfall_contract::actions::Action as A;
    match action {
        A::ChangeAccelerator { .. } | A::SetHost { .. } => 0,
        A::ChangeImage { .. } | A::UpgradeDriver { .. } | A::ChangeCuda { .. } => 1,
        A::RemovePackage { .. } => 2,
        A::UpgradePackage { .. } | A::PinPackage { .. } | A::InstallTool { .. } => 3,
        A::BuildFromSource { .. } => 4,
        A::SetEnv { .. } | A::UnsetEnv { .. } => 5,
        A::AddFlag { tool, .. } if tool == "docker" => 6,
        A::AddFlag { .. } | A::SetWorkload { .. } => 7,
        A::ChangeHealthCheck { .. } => 8,
    }
}
