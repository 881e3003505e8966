//! `GET /v1/bundle` in-process on both backends: the served set, signed by
//! the state's key with an issue time and the configured expiry, with an
//! entity tag that answers 304 until the revision moves.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use pitfall_api::{Bundle, BundleSigner};
use pitfall_engine::{Engine, Limits};
use pitfall_server::registry::{Registry, new_version, seed_modules};
use pitfall_server::store::{Actor, Store, VersionState};
use pitfall_server::{AppState, ServerLimits, app};
use tower::ServiceExt;

use crate::common::databases;

const SEEDED: &[&str] =
    &["rule-aarch64-official-image-needs-sm80", "rule-vllm-heterogeneous-head-dim"];
const LATER: &str = "rule-vllm-bf16-needs-sm80";

fn module(crate_name: &str) -> &'static [u8] {
    pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == crate_name)
        .expect("bundled")
        .wasm
}

async fn get(
    state: &AppState,
    if_none_match: Option<&str>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut request = Request::get("/v1/bundle");
    if let Some(tag) = if_none_match {
        request = request.header(header::IF_NONE_MATCH, tag);
    }
    let response = app(state.clone())
        .oneshot(request.body(Body::empty()).expect("request"))
        .await
        .expect("answered");
    let (parts, body) = response.into_parts();
    (parts.status, parts.headers, body.collect().await.expect("body").to_bytes().to_vec())
}

#[tokio::test]
async fn the_bundle_is_the_served_set_signed_and_tagged_on_both_backends() {
    for db in databases().await {
        let backend = db.backend();
        let store = Store::connect(db.url()).await.expect("store");
        let engine = Engine::new(Limits::default()).expect("engine");
        let seeded = pitfall_bundled_rules::MODULES
            .iter()
            .copied()
            .filter(|m| SEEDED.contains(&m.crate_name))
            .collect();
        seed_modules(&store, &engine, seeded).await.expect("seed");
        let registry = Arc::new(
            Registry::open(
                store.clone(),
                engine.clone(),
                pitfall_server::secret_box::SealingKey::generate().expect("sealing key"),
            )
            .await
            .expect("registry"),
        );
        let signer = BundleSigner::from_seed(&[5; 32]);
        let key = signer.public_key();
        let limits = ServerLimits { bundle_validity_hours: 2, ..ServerLimits::default() };
        let state = AppState::with_signer(registry.clone(), limits, signer);

        let (status, headers, bytes) = get(&state, None).await;
        assert_eq!(status, StatusCode::OK, "{backend:?}");
        assert_eq!(headers[header::CONTENT_TYPE], pitfall_api::bundle::MEDIA_TYPE);
        let etag = headers[header::ETAG].to_str().expect("etag").to_owned();
        let revision = registry.rules().revision().to_owned();
        assert_eq!(headers["x-pitfall-ruleset-revision"], revision.as_str());
        let bundle = Bundle::verify(&bytes, &key).expect("verifies with the state's key");
        assert_eq!(bundle.index.ruleset_revision, revision);
        assert_eq!(bundle.etag(), etag);
        // Issued at the start of the current half-validity window (one
        // hour), current for the configured two hours.
        let now = pitfall_api::bundle::unix_seconds(std::time::SystemTime::now());
        let issued = bundle.index.issued_at.expect("an issue time");
        assert!(issued <= now && now - issued < 3600, "issued {issued}, now {now}");
        assert_eq!(issued % 3600, 0, "a window's start");
        assert_eq!(bundle.index.expires_at, Some(issued + 2 * 3600));
        assert!(bundle.freshness(std::time::SystemTime::now()).is_current());
        let mut served: Vec<_> = registry
            .rules()
            .rules()
            .iter()
            .map(|r| (r.id().to_owned(), r.sha256.clone()))
            .collect();
        served.sort();
        let listed: Vec<_> =
            bundle.index.rules.iter().map(|r| (r.id.clone(), r.sha256.clone())).collect();
        assert_eq!(listed, served, "{backend:?}: the bundle is exactly the served set");

        // Conditional fetches: the tag, a list with it, a weak form, `*`.
        for tag in [etag.clone(), format!("\"0-x\", {etag}"), format!("W/{etag}"), "*".to_owned()] {
            let (status, headers, body) = get(&state, Some(&tag)).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{backend:?}: If-None-Match: {tag}");
            assert_eq!(headers[header::ETAG], etag.as_str());
            assert!(body.is_empty());
        }
        assert_eq!(get(&state, Some("\"0-other\"")).await.0, StatusCode::OK);

        // An approval moves the revision: a new bundle, a new tag.
        let accepted =
            pitfall_server::publish::assess(&engine, module(LATER).into()).await.expect("accepted");
        store
            .insert_version(
                new_version(&accepted, module(LATER)),
                &Actor::System,
                VersionState::Approved,
            )
            .await
            .expect("stored");
        registry.refresh().await.expect("refreshed");
        let (status, headers, bytes) = get(&state, Some(&etag)).await;
        assert_eq!(status, StatusCode::OK, "{backend:?}: the old tag no longer matches");
        assert_ne!(headers[header::ETAG], etag.as_str());
        let bundle = Bundle::verify(&bytes, &key).expect("verifies");
        assert_eq!(bundle.index.rules.len(), SEEDED.len() + 1);
        let bf16 = bundle.modules().find(|(e, _)| e.id == "vllm-bf16-needs-sm80").expect("listed");
        assert_eq!(bf16.1, module(LATER));

        // Another server's key does not verify it.
        let other = BundleSigner::from_seed(&[6; 32]).public_key();
        assert!(Bundle::verify(&bytes, &other).is_err());
        drop(db);
    }
}
