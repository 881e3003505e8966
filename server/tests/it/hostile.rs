//! The engine's hostile module corpus (engine/tests/hostile/) published
//! through the real pipeline (`POST /v1/rules`, in-process with `oneshot`)
//! on SQLite and on PostgreSQL: each module is refused with its step and a
//! clear reason, and nothing refused is stored.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use pitfall_engine::{Engine, Limits};
use pitfall_server::registry::Registry;
use pitfall_server::store::{Actor, Role, Store};
use pitfall_server::{AppState, ServerLimits, app};
use serde_json::Value;
use tower::ServiceExt;

use crate::common::databases;

#[path = "../../../engine/tests/hostile/corpus.rs"]
mod corpus;

use corpus::Fate;

async fn publish(state: &AppState, token: &str, wasm: Vec<u8>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/rules")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(wasm))
        .expect("request");
    let response = app(state.clone()).oneshot(request).await.expect("answered");
    let status = response.status();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn hostile_modules_are_refused_at_publish_on_both_backends() {
    let corpus = corpus::load_corpus(&corpus::corpus_dir());
    assert!(corpus.len() >= 30, "the hostile corpus has {} modules", corpus.len());
    for db in databases().await {
        eprintln!("-- hostile publish on {}", db.backend().as_str());
        let store = Store::connect(db.url()).await.expect("store");
        let account = store
            .create_account("mallory", Role::Contributor, &Actor::System)
            .await
            .expect("account");
        let token = store.issue_token(account.id, "test", &Actor::System).await.expect("token").0;
        let engine = Engine::new(Limits::default()).expect("engine");
        let registry = Arc::new(
            Registry::open(
                store.clone(),
                engine,
                pitfall_server::secret_box::SealingKey::generate().expect("sealing key"),
            )
            .await
            .expect("registry"),
        );
        // 60+ publishes with one token in a few seconds: the publish rate
        // limits (tested in authz.rs) would answer 429 long before the end.
        let limits = ServerLimits {
            rate_publish_per_token: 0,
            rate_publish_per_ip: 0,
            ..ServerLimits::default()
        };
        let state = AppState::new(registry, limits);
        let revision = store.revision().await.expect("revision");

        for m in &corpus {
            let (status, answer) = publish(&state, &token, m.wasm.clone()).await;
            let error = &answer["error"];
            assert_eq!(error["code"], "publish_refused", "{}: {status} {answer}", m.name);
            let message = error["message"].as_str().unwrap_or_default();
            match &m.fate {
                Fate::Refused { step, reason } => {
                    let want = if step == "size" {
                        StatusCode::PAYLOAD_TOO_LARGE
                    } else {
                        StatusCode::UNPROCESSABLE_ENTITY
                    };
                    assert_eq!(status, want, "{}: {answer}", m.name);
                    assert_eq!(error["step"], step.as_str(), "{}: {answer}", m.name);
                    assert!(
                        message.contains(reason.as_str()),
                        "{}: {message:?} lacks {reason:?}",
                        m.name
                    );
                }
                // They load, but carry no embedded cases: the reviewer's
                // lint (step `metadata`, a case for every outcome) refuses
                // them, and nothing earlier does.
                Fate::Contained { .. } | Fate::Clean => {
                    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{}: {answer}", m.name);
                    assert_eq!(error["step"], "metadata", "{}: {answer}", m.name);
                    assert!(message.contains("no case expects `matched`"), "{}: {message}", m.name);
                }
            }
        }
        assert_eq!(
            store.revision().await.expect("revision"),
            revision,
            "a refused module moved the revision"
        );
    }
}
