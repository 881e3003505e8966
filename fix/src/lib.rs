//! # pitfall-fix
//!
//! The nearest configuration that passes: a search over the remedies of a
//! manifest's error findings for the cheapest set that leaves no error,
//! each candidate manifest checked by the rule set itself (`search`), with
//! remedies made concrete from the release and model tables (`options`),
//! priced by a documented cost model (`cost`), and carried out by the
//! artefacts a plan writes (`artefacts`). No HTTP, no I/O: the server and
//! the CLI call [`fix`] or [`solve`].

mod artefacts;
mod cost;
mod options;
mod patch;
mod search;

use pitfall_contract::Manifest;
use pitfall_contract::report::CheckResponse;
use pitfall_engine::{Engine, PastDeadline, RuleSet};

pub use artefacts::vllm_serve;
pub use options::VERSION_CHOICES;
pub use patch::merge_patch;
// The answer's types are the API's: the server sends them, the client reads them.
pub use pitfall_api::fix::{
    Artefacts, Conflict, Cost, EnvChange, FixResponse, Leaves, Plan, RuleRef, Status, Step, Tier,
    UnavailableRemedy,
};
pub use search::{EVALUATION_BOUND, FixError, solve, solve_within};

/// The fix of `manifest` (as the client sent it) against `rules`, every
/// candidate checked with [`RuleSet::check`].
pub fn fix(engine: &Engine, rules: &RuleSet, manifest: &Manifest) -> FixResponse {
    let mut check =
        |m: Manifest| -> Result<CheckResponse, PastDeadline> { Ok(rules.check(engine, m)) };
    match solve(manifest, rules, &mut check) {
        Ok(answer) => answer,
        // `RuleSet::check` has no deadline.
        Err(FixError::PastDeadline(_)) => unreachable!("an unbounded check has no deadline"),
    }
}
