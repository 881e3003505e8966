//! `pitfall-server`: serves the bundled rules over the v1 API.

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use pitfall_engine::{Engine, Limits, RuleSet};
use pitfall_server::{AppState, Config, app};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let config = Config::parse();
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data dir {}", config.data_dir.display()))?;
    let engine = Engine::with_cache_dir(Limits::default(), config.data_dir.join("compiled"))
        .context("starting the rule engine")?;
    let rules = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| engine.load(m.wasm).map(Arc::new).with_context(|| format!("bundled rule {}", m.crate_name)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let rules = Arc::new(RuleSet::new(rules, pitfall_bundled_rules::REVISION));
    tracing::info!(rules = rules.rules().len(), revision = rules.revision(), "rules loaded");
    let router = app(AppState { max_body_bytes: config.max_body_bytes, engine, rules });
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    tracing::info!(listen = %config.listen, "serving");
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("serving")
}
