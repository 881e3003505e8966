//! A health check that does not look at generated text passes a server whose
//! model is broken (KNOWLEDGE.md A8). vLLM's `/health` only asks whether the
//! engine has died (entrypoints/serve/instrumentator/health.py and
//! AsyncLLM.check_health at 0.27.1: no generation), and `/v1/models` returns
//! the model list (gpustack issue 6203: SGLang answers it before warm-up).
#![no_std]

use pitfall_sdk::prelude::*;

/// Paths that answer without running the model.
const NON_GENERATING: &[&str] = &[
    "/",
    "/health",
    "/healthz",
    "/ping",
    "/ready",
    "/readyz",
    "/livez",
    "/metrics",
    "/version",
    "/v1/models",
];

/// The path of an endpoint given as a path or a URL, without query and trailing `/`.
fn endpoint_path(endpoint: &str) -> &str {
    let e = endpoint.trim();
    let e = match e.find("://") {
        Some(i) => {
            let rest = &e[i + 3..];
            rest.find('/').map_or("/", |j| &rest[j..])
        }
        None => e,
    };
    let e = e.split(['?', '#']).next().unwrap_or(e);
    let trimmed = e.trim_end_matches('/');
    if trimmed.is_empty() { "/" } else { trimmed }
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.has("health_check") {
        return Outcome::clear();
    }
    let endpoint = m.text("health_check.endpoint");
    let verifies = m.boolean("health_check.verifies_output");
    let non_generating = endpoint
        .as_deref()
        .is_some_and(|e| NON_GENERATING.iter().any(|p| endpoint_path(e).eq_ignore_ascii_case(p)));
    let reason = if non_generating {
        "that endpoint answers without running the model"
    } else {
        match verifies {
            Some(true) => return Outcome::clear(),
            Some(false) => "accepts any non-empty response without checking the generated text",
            None => return Outcome::needs("health_check.verifies_output"),
        }
    };
    let mut outcome = Outcome::matched();
    if endpoint.is_some() {
        outcome = outcome.evidence("health_check.endpoint");
    }
    if verifies.is_some() {
        outcome = outcome.evidence("health_check.verifies_output");
    }
    outcome
        .param("endpoint", endpoint.as_deref().unwrap_or("an unnamed endpoint"))
        .param("reason", reason)
}

pitfall_sdk::export_rule!(evaluate);
