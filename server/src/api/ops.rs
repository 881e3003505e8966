//! Operations endpoints: liveness, readiness, metrics, the API document.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde_json::Value;

use crate::api::types::{Health, LimitsView};
use crate::state::AppState;

fn health(state: &AppState, ready: bool) -> Health {
    let rules = state.registry().rules();
    Health {
        status: if ready { "ok" } else { "not_ready" }.to_owned(),
        ruleset_revision: rules.revision().to_owned(),
        rules: rules.rules().len(),
        store: state.registry().store_ok(),
    }
}

/// `GET /healthz`: the process is up and serving a rule set.
pub async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(health(&state, true))
}

/// How long `/readyz` waits for the store's answer.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /readyz`: the store answers now (checks are still answered from
/// memory when it does not, but writes would fail: a load balancer should
/// prefer a ready replica).
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    // Bounded: a load balancer's probe wants an answer, not a hang while
    // the database is unreachable.
    let ready = matches!(
        tokio::time::timeout(READY_TIMEOUT, state.registry().store().ping()).await,
        Ok(Ok(()))
    );
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(health(&state, ready)))
}

/// `GET /v1/limits`: the bounds on one request, so clients can split a
/// fleet into batches this server accepts.
pub async fn limits(State(state): State<AppState>) -> Json<LimitsView> {
    let limits = state.limits();
    Json(LimitsView {
        max_batch: limits.max_batch,
        max_manifest_bytes: limits.max_manifest_bytes,
        max_body_bytes: limits.max_body_bytes,
    })
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let rules = state.registry().rules();
    let revision = rules.revision().parse::<f64>().unwrap_or(0.0);
    let memo = state.registry().engine().memo_stats();
    let instances = state.registry().engine().instance_stats();
    let gauges = [
        ("pitfall_ruleset_revision", "The ruleset revision served.", revision),
        ("pitfall_rules_served", "Rules in the served set.", rules.rules().len() as f64),
        ("pitfall_result_cache_entries", "Check answers cached.", state.cache().len() as f64),
        (
            "pitfall_result_cache_bytes",
            "Bytes of check answers cached.",
            state.cache().bytes() as f64,
        ),
        (
            "pitfall_store_up",
            "Whether the store answered the last refresh (1) or not (0).",
            f64::from(u8::from(state.registry().store_ok())),
        ),
        ("pitfall_rule_memo_bytes", "Bytes the memo of evaluations holds.", memo.bytes as f64),
    ];
    let counters = [
        (
            "pitfall_rule_memo_hits_total",
            "Rule evaluations answered from the memo (what the rule read was seen before).",
            memo.hits,
        ),
        (
            "pitfall_rule_memo_misses_total",
            "Rule evaluations run in the sandbox with the memo on.",
            memo.misses,
        ),
        (
            "pitfall_rule_instantiations_total",
            "Rule evaluations in the sandbox that instantiated their rule.",
            instances.instantiations,
        ),
        (
            "pitfall_rule_instances_reused_total",
            "Rule evaluations in the sandbox that reused an instance of their rule, reset to its fresh state.",
            instances.reuses,
        ),
    ];
    // prometheus-client writes the OpenMetrics text format.
    (
        [(CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        state.metrics().render(&gauges, &counters),
    )
}

/// `GET /v1/openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(crate::openapi::document())
}
