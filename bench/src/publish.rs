//! Publish cost: the server's pipeline (`pitfall_server::publish::
//! assess_blocking`: validation, bounded compile, the embedded cases) on
//! each module, in an engine of its own whose compiled-code cache is cold
//! for every module, with validation (`inspect`) also timed alone so the
//! compile's share shows.

use std::time::{Duration, Instant};

use anyhow::Context;
use pitfall_engine::{Engine, Limits};

use crate::stats::Summary;

/// The cost of publishing a set of modules, per module.
#[derive(Debug, Clone)]
pub struct PublishCost {
    /// Modules assessed.
    pub modules: usize,
    /// Validation and metadata (`inspect`) alone.
    pub validate: Summary,
    /// Compile (the pipeline's load time less validation).
    pub compile: Summary,
    /// Running the embedded cases.
    pub tests: Summary,
    /// The whole pipeline.
    pub total: Summary,
    /// Median module size, bytes.
    pub bytes_median: f64,
}

/// Runs the pipeline on each module; every one must be accepted.
pub fn measure(modules: &[&[u8]]) -> anyhow::Result<PublishCost> {
    let engine = Engine::new(Limits::default())?;
    let limits = Limits::default();
    let (mut validate, mut compile, mut tests, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for bytes in modules {
        let start = Instant::now();
        pitfall_engine::inspect::inspect(bytes, &limits)?;
        let v = start.elapsed();
        let start = Instant::now();
        let accepted = pitfall_server::publish::assess_blocking(&engine, bytes)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("the pipeline refused a module")?;
        total.push(start.elapsed());
        validate.push(v);
        let load = Duration::from_micros(accepted.report.load_us);
        compile.push(load.saturating_sub(v));
        tests.push(Duration::from_micros(accepted.report.tests_us));
    }
    let sizes: Vec<f64> = modules.iter().map(|m| m.len() as f64).collect();
    Ok(PublishCost {
        modules: modules.len(),
        validate: Summary::of(&validate),
        compile: Summary::of(&compile),
        tests: Summary::of(&tests),
        total: Summary::of(&total),
        bytes_median: crate::stats::median(&sizes),
    })
}
