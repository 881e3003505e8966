//! Watches at fleet scale: 100,000 stored manifests in 10 watches, one new
//! rule whose selectors admit 1% of them, and the time from its approval
//! until every delivery is enqueued (the evaluator's pass over the change);
//! and what the fact index costs per stored manifest (its own count of
//! heap bytes, and the process's resident memory before and after it was
//! built). In process, on a SQLite file, as a single server runs it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use pitfall_engine::{Engine, Limits};
use pitfall_server::store::{Actor, NewWatch, NewWatchManifest, Role, Store, VersionState};
use serde_json::json;

/// What one run measured.
#[derive(Debug)]
pub struct WatchCost {
    /// Manifests stored.
    pub manifests: usize,
    /// Manifests the new rule admits (and were evaluated).
    pub evaluated: usize,
    /// Events enqueued (one per watch with a change).
    pub events: usize,
    /// From the approval's commit until the pass wrote every event.
    pub approval_to_enqueued: Duration,
    /// The same, the evaluator's pass alone (the registry's reload excluded).
    pub pass: Duration,
    /// Building the index from the stored manifests.
    pub index_build: Duration,
    /// The index's heap, by its own count, per manifest.
    pub index_bytes_per_manifest: f64,
    /// Resident memory the index added, per manifest.
    pub rss_bytes_per_manifest: f64,
}

/// A machine of the fleet: 1 in 100 runs vLLM on a T4 (what the rule
/// admits), half run vLLM on an H100 (same package, excluded by its
/// capability selector), the rest other stacks; a few dozen packages each.
fn machine(i: usize) -> String {
    let (gpu, cc, engine) = match i % 100 {
        0 => ("T4", "7.5", true),
        1..50 => ("H100", "9.0", true),
        _ => ("A10G", "8.6", false),
    };
    let mut packages: Vec<serde_json::Value> = (0..30)
        .map(|p| json!({"name": format!("lib{}", (i + p * 7) % 400), "version": format!("1.{}.{}", p % 9, i % 13)}))
        .collect();
    packages.push(json!({"name": "torch", "version": "2.4.0"}));
    if engine {
        packages.push(json!({"name": "vllm", "version": format!("0.{}.1", 20 + i % 8)}));
    }
    json!({"manifest_version": 1, "host": {"arch": "x86_64"}, "packages": packages,
           "accelerators": [{"vendor": "nvidia", "model": gpu, "compute_capability": cc, "count": 1}],
           "workload": {"dtype": "bfloat16", "engine": if engine { "vllm" } else { "tgi" }}})
    .to_string()
}

/// The process's resident bytes.
fn rss() -> u64 {
    crate::startup::rss(std::process::id()).map(|(rss, _)| rss).unwrap_or(0)
}

/// Runs the measurement with `manifests` stored in watches of 10,000.
pub fn measure(manifests: usize) -> anyhow::Result<WatchCost> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run(manifests))
}

async fn run(manifests: usize) -> anyhow::Result<WatchCost> {
    let dir = tempfile::tempdir()?;
    let store =
        Store::connect(&format!("sqlite://{}", dir.path().join("watch.db").display())).await?;
    let engine = Engine::new(Limits::default()).context("engine")?;
    let module = |name: &str| {
        pitfall_bundled_rules::MODULES
            .iter()
            .find(|m| m.crate_name == name)
            .copied()
            .context("bundled")
    };
    pitfall_server::registry::seed_modules(
        &store,
        &engine,
        vec![module("rule-aarch64-official-image-needs-sm80")?],
    )
    .await?;
    let registry = Arc::new(
        pitfall_server::Registry::open(
            store.clone(),
            engine.clone(),
            pitfall_server::secret_box::SealingKey::generate()?,
        )
        .await?,
    );
    let account = store.create_account("fleet", Role::Contributor, &Actor::System).await?;
    let revision = store.revision().await?;
    let per_watch = 10_000;
    for w in 0..manifests.div_ceil(per_watch) {
        let rows = (w * per_watch..((w + 1) * per_watch).min(manifests))
            .map(|i| NewWatchManifest {
                label: format!("host-{i}"),
                manifest: machine(i),
                findings: Vec::new(),
            })
            .collect();
        store
            .create_watch(
                account.id,
                NewWatch {
                    name: format!("pool {w}"),
                    webhook_url: "https://hooks.example.com/pitfall".into(),
                    secret: registry.secret_keys().seal("a-bench-secret-0123456789")?,
                    min_severity: "warning".into(),
                    manifests: rows,
                    evaluated_revision: revision,
                },
            )
            .await?;
    }
    let options = pitfall_server::watch::WatchOptions::from_settings(
        &pitfall_server::ServerLimits::default().watch,
        Duration::from_secs(1),
    );
    let watcher = pitfall_server::watch::Watcher::new(registry.clone(), options);
    let before = rss();
    let started = Instant::now();
    // The first pass sets the cursor and builds the index.
    watcher.pass().await?;
    let index_build = started.elapsed();
    let index_bytes = watcher.index_heap_bytes().await;
    let after = rss();

    let bytes = module("rule-vllm-bf16-needs-sm80")?.wasm;
    let accepted = pitfall_server::publish::assess(&engine, Arc::from(bytes))
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let version = pitfall_server::registry::new_version(&accepted, bytes);
    let stored = store.insert_version(version, &Actor::System, VersionState::Pending).await?;
    let approved_at = Instant::now();
    store
        .set_state(&stored.rule_id, &stored.version, VersionState::Approved, &Actor::System, None)
        .await?;
    registry.refresh().await?;
    let pass_started = Instant::now();
    let stats = watcher.pass().await?;
    let pass = pass_started.elapsed();
    let approval_to_enqueued = approved_at.elapsed();
    store.close().await;
    Ok(WatchCost {
        manifests,
        evaluated: stats.evaluated,
        events: stats.events,
        approval_to_enqueued,
        pass,
        index_build,
        index_bytes_per_manifest: index_bytes as f64 / manifests as f64,
        rss_bytes_per_manifest: after.saturating_sub(before) as f64 / manifests as f64,
    })
}
