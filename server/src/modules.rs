//! Served versions into rules: what the live registry and the past
//! revisions' sets both load, reusing the modules already loaded.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use pitfall_engine::{Engine, Rule};

/// Loads `served` (the store's order kept) deferred, taking each module
/// `known` holds by sha256 as it is. Reading each new module's sections
/// runs on every core (a start with 10,000 rules is mostly this).
pub(crate) async fn load_rules(
    engine: &Engine,
    known: HashMap<String, Arc<Rule>>,
    served: Vec<crate::store::ServedVersion>,
) -> anyhow::Result<Vec<Arc<Rule>>> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || {
        use rayon::prelude::*;
        served
            .into_par_iter()
            .filter_map(|version| {
                if let Some(rule) = known.get(&version.sha256) {
                    return Some(rule.clone());
                }
                match engine.load_deferred(version.module.into()) {
                    Ok(rule) => Some(Arc::new(rule)),
                    // An approved module this engine no longer accepts (an
                    // engine upgrade tightened a limit): skip it, loudly,
                    // rather than stop serving every other rule.
                    Err(e) => {
                        tracing::error!(rule = %version.rule_id, version = %version.version, error = %e, "approved module does not load; not served");
                        None
                    }
                }
            })
            .collect::<Vec<_>>()
    })
    .await
    .context("loading modules")
}
