//! The API driven in-process with `oneshot`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use pitfall_engine::{Engine, Limits, RuleSet};
use pitfall_server::{AppState, app};
use serde_json::Value;
use tower::ServiceExt;

fn state() -> AppState {
    let engine = Engine::new(Limits::default()).expect("engine");
    let rules = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| Arc::new(engine.load(m.wasm).expect("loads")))
        .collect();
    AppState { max_body_bytes: 64 * 1024, engine, rules: Arc::new(RuleSet::new(rules, "test")) }
}

async fn post(state: &AppState, path: &str, body: impl Into<Body>) -> (StatusCode, Value) {
    let response = app(state.clone())
        .oneshot(Request::post(path).header("content-type", "application/json").body(body.into()).expect("request"))
        .await
        .expect("answered");
    let status = response.status();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn check_answers_findings_in_the_contract_shape() {
    let state = state();
    let manifest = std::fs::read("../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json")
        .or_else(|_| std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json")))
        .expect("fixture");
    let (status, answer) = post(&state, "/v1/check", manifest).await;
    assert_eq!(status, StatusCode::OK);
    for key in ["findings", "undetermined", "rule_errors", "ruleset_revision", "stats"] {
        assert!(answer.get(key).is_some(), "answer lacks {key}");
    }
    let ids: Vec<&str> = answer["findings"].as_array().expect("array").iter().filter_map(|f| f["rule_id"].as_str()).collect();
    assert!(ids.contains(&"vllm-bf16-needs-sm80"), "{ids:?}");
    assert_eq!(answer["ruleset_revision"], "test");
}

#[tokio::test]
async fn bad_input_gets_the_error_envelope() {
    let state = state();
    let cases: [(&str, StatusCode, &str); 4] = [
        ("{not json", StatusCode::BAD_REQUEST, "invalid_json"),
        (r#"{"manifest_version": 2}"#, StatusCode::UNPROCESSABLE_ENTITY, "unsupported_manifest_version"),
        (r#"{"host": {}}"#, StatusCode::BAD_REQUEST, "invalid_manifest"),
        (r#"{"manifest_version": 1, "accelerators": [{"count": "two"}]}"#, StatusCode::BAD_REQUEST, "invalid_manifest"),
    ];
    for (body, want_status, want_code) in cases {
        let (status, answer) = post(&state, "/v1/check", body).await;
        assert_eq!(status, want_status, "{body}");
        assert_eq!(answer["error"]["code"], want_code, "{body}: {answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (status, answer) = post(&state, "/v1/check", vec![b' '; 100 * 1024]).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer["error"]["code"], "body_too_large");
    let (status, answer) = post(&state, "/v1/nope", "{}").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(answer["error"]["code"], "not_found");
}
