//! The API driven in-process with `oneshot`, on SQLite and on PostgreSQL.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use pitfall_engine::{Engine, Limits};
use pitfall_server::registry::{Registry, plan_seed, seed_modules};
use pitfall_server::store::{Actor, Role, Store};
use pitfall_server::{AppState, ServerLimits, app};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::{TestDb, databases};

/// The bundled rule the publish tests leave out of the seed and publish.
const PUBLISHED_CRATE: &str = "rule-vllm-bf16-needs-sm80";
const PUBLISHED_ID: &str = "vllm-bf16-needs-sm80";

/// A registry on a fresh database with every bundled rule but one seeded,
/// and accounts of each role.
struct Harness {
    _db: TestDb,
    store: Store,
    state: AppState,
    admin: String,
    maintainer: String,
    alice: String,
    bob: String,
}

impl Harness {
    async fn new(db: TestDb) -> Harness {
        Harness::with_limits(db, ServerLimits { max_batch: 4, ..ServerLimits::default() }).await
    }

    async fn with_limits(db: TestDb, limits: ServerLimits) -> Harness {
        let store = Store::connect(db.url()).await.expect("store");
        let engine = Engine::new(Limits::default()).expect("engine");
        let seeded = pitfall_bundled_rules::MODULES
            .iter()
            .copied()
            .filter(|m| m.crate_name != PUBLISHED_CRATE)
            .collect();
        seed_modules(&store, &engine, seeded).await.expect("seed");
        let mut tokens = Vec::new();
        for (name, role) in [
            ("root", Role::Admin),
            ("mia", Role::Maintainer),
            ("alice", Role::Contributor),
            ("bob", Role::Contributor),
        ] {
            let account = store.create_account(name, role, &Actor::System).await.expect("account");
            tokens.push(
                store.issue_token(account.id, "test", &Actor::System).await.expect("token").0,
            );
        }
        let registry = Arc::new(
            Registry::open(
                store.clone(),
                engine,
                pitfall_server::secret_box::SealingKey::generate().expect("sealing key"),
            )
            .await
            .expect("registry"),
        );
        let [admin, maintainer, alice, bob] = <[String; 4]>::try_from(tokens).expect("four tokens");
        Harness {
            _db: db,
            store,
            state: AppState::new(registry, limits),
            admin,
            maintainer,
            alice,
            bob,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: impl Into<Body>,
    ) -> (StatusCode, Value) {
        let (status, bytes) = self.call_raw(method, path, token, body).await;
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn call_raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: impl Into<Body>,
    ) -> (StatusCode, Vec<u8>) {
        let mut request =
            Request::builder().method(method).uri(path).header("content-type", "application/json");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = app(self.state.clone())
            .oneshot(request.body(body.into()).expect("request"))
            .await
            .expect("answered");
        let status = response.status();
        (status, response.into_body().collect().await.expect("body").to_bytes().to_vec())
    }

    async fn check(&self, manifest: &[u8]) -> Value {
        let (status, answer) = self.call(Method::POST, "/v1/check", None, manifest.to_vec()).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn published_module() -> &'static [u8] {
    pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == PUBLISHED_CRATE)
        .expect("bundled")
        .wasm
}

fn finding_ids(answer: &Value) -> Vec<String> {
    answer["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule_id"].as_str().map(str::to_owned))
        .collect()
}

/// Runs `test` against a harness on each backend.
macro_rules! on_both_backends {
    ($test:ident) => {
        for db in databases().await {
            let backend = db.backend();
            eprintln!("-- {} on {}", stringify!($test), backend.as_str());
            $test(Harness::new(db).await).await;
        }
    };
}

#[tokio::test]
async fn check_answers_the_g5g_errors_in_the_contract_shape() {
    async fn run(h: Harness) {
        let answer = h.check(&fixture("g5g-gemma4-vllm0271.json")).await;
        for key in ["findings", "undetermined", "rule_errors", "ruleset_revision", "stats"] {
            assert!(answer.get(key).is_some(), "answer lacks {key}");
        }
        let ids = finding_ids(&answer);
        for id in ["aarch64-official-image-needs-sm80", "gemma4-transformers-5-15-breaks-vllm"] {
            assert!(ids.contains(&id.to_owned()), "{id} missing from {ids:?}");
        }
        assert_eq!(
            answer["ruleset_revision"],
            h.store.revision().await.expect("revision").to_string()
        );
        assert_eq!(answer["stats"]["rules_total"], pitfall_bundled_rules::MODULES.len() - 1);
    }
    on_both_backends!(run);
}

#[tokio::test]
async fn fix_answers_a_plan_whose_manifest_checks_clear() {
    async fn run(h: Harness) {
        let (status, answer) =
            h.call(Method::POST, "/v1/fix", None, fixture("g5g-gemma4-vllm0271.json")).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["status"], "plan", "{answer}");
        let evaluations = answer["evaluations"].as_u64().expect("evaluations");
        assert!(evaluations >= 2 && evaluations <= u64::from(pitfall_fix::EVALUATION_BOUND));
        let plan = &answer["plan"];
        assert!(plan["steps"].as_array().is_some_and(|s| !s.is_empty()), "{plan}");
        assert!(plan["artefacts"]["vllm_serve"].as_str().is_some_and(|s| s.contains("vllm serve")));
        // The patched manifest, checked through the API, has no error.
        let patched = serde_json::to_vec(&plan["patched_manifest"]).expect("serialises");
        let checked = h.check(&patched).await;
        let errors: Vec<&Value> = checked["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["severity"] == "error")
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        // A manifest with no error answers `clear`.
        let (status, answer) =
            h.call(Method::POST, "/v1/fix", None, fixture("h100x8-llama70b-healthy.json")).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["status"], "clear", "{answer}");
    }
    on_both_backends!(run);
}

#[tokio::test]
async fn fix_refuses_bad_input_with_the_error_envelope() {
    let h = Harness::new(crate::common::sqlite()).await;
    for (body, want_status, want_code) in [
        ("{not json".to_owned(), StatusCode::BAD_REQUEST, "invalid_json"),
        (
            r#"{"manifest_version": 2}"#.to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_manifest_version",
        ),
        (
            format!(
                r#"{{"manifest_version": 1, "env": {{"X": "{}"}}}}"#,
                "x".repeat(ServerLimits::default().max_manifest_bytes)
            ),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
    ] {
        let (status, answer) = h.call(Method::POST, "/v1/fix", None, body.clone()).await;
        assert_eq!(status, want_status, "{}", &body[..body.len().min(60)]);
        assert_eq!(answer["error"]["code"], want_code, "{answer}");
    }
}

#[tokio::test]
async fn bad_input_gets_the_error_envelope() {
    let h = Harness::new(crate::common::sqlite()).await;
    let cases: [(&str, StatusCode, &str); 5] = [
        ("{not json", StatusCode::BAD_REQUEST, "invalid_json"),
        (
            r#"{"manifest_version": 2}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_manifest_version",
        ),
        (r#"{"host": {}}"#, StatusCode::BAD_REQUEST, "invalid_manifest"),
        (
            r#"{"manifest_version": 1, "accelerators": [{"count": "two"}]}"#,
            StatusCode::BAD_REQUEST,
            "invalid_manifest",
        ),
        (
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
    ];
    for (body, want_status, want_code) in cases {
        let (status, answer) = h.call(Method::POST, "/v1/check", None, body).await;
        assert_eq!(status, want_status, "{body}");
        assert_eq!(answer["error"]["code"], want_code, "{body}: {answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{answer}");
    }
    // Over the manifest bound: 413 in the envelope.
    let huge = format!(
        r#"{{"manifest_version": 1, "env": {{"X": "{}"}}}}"#,
        "x".repeat(ServerLimits::default().max_manifest_bytes)
    );
    let (status, answer) = h.call(Method::POST, "/v1/check", None, huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    assert_eq!(answer["error"]["code"], "body_too_large");
    // Routes that do not exist, and wrong path parameters, too.
    let (status, answer) = h.call(Method::GET, "/v2/nothing", None, "").await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, answer) =
        h.call(Method::DELETE, "/v1/tokens/not-a-number", Some(&h.admin), "").await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_path")),
        "{answer}"
    );
    let (status, answer) = h.call(Method::GET, "/v1/rules?limit=lots", None, "").await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_query")),
        "{answer}"
    );
}

#[tokio::test]
async fn batch_answers_in_order_with_errors_in_place_and_a_bound() {
    let h = Harness::new(crate::common::sqlite()).await;
    let g5g: Value = serde_json::from_slice(&fixture("g5g-gemma4-vllm0271.json")).expect("json");
    let healthy: Value =
        serde_json::from_slice(&fixture("h100x8-llama70b-healthy.json")).expect("json");
    let body = json!({ "manifests": [g5g, {"manifest_version": 9}, healthy, g5g] });
    let (status, answer) = h.call(Method::POST, "/v1/check/batch", None, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    assert!(finding_ids(&results[0]).contains(&"aarch64-official-image-needs-sm80".to_owned()));
    assert_eq!(results[1]["error"]["code"], "unsupported_manifest_version");
    assert!(
        results[2]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .all(|f| f["severity"] != "error")
    );
    assert_eq!(
        finding_ids(&results[3]),
        finding_ids(&results[0]),
        "the same manifest, the same findings"
    );
    let single = h.check(&fixture("g5g-gemma4-vllm0271.json")).await;
    assert_eq!(
        single["findings"], results[0]["findings"],
        "a batch entry is the full /v1/check answer"
    );

    // One manifest over the manifest bound: its own error, the rest answered.
    let huge = json!({"manifest_version": 1, "env": {"X": "x".repeat(ServerLimits::default().max_manifest_bytes)}});
    let body = json!({ "manifests": [huge, g5g] });
    let (status, answer) = h.call(Method::POST, "/v1/check/batch", None, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["results"][0]["error"]["code"], "body_too_large");
    assert!(
        finding_ids(&answer["results"][1])
            .contains(&"aarch64-official-image-needs-sm80".to_owned())
    );

    let too_many = json!({ "manifests": vec![json!({"manifest_version": 1}); 5] });
    let (status, answer) =
        h.call(Method::POST, "/v1/check/batch", None, too_many.to_string()).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("batch_too_large")),
        "{answer}"
    );
}

#[tokio::test]
async fn search_finds_rules_by_error_text_and_filters() {
    async fn run(h: Harness) {
        let (status, answer) =
            h.call(Method::GET, "/v1/rules?q=no%20kernel%20image%20is%20available", None, "").await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let ids: Vec<&str> = answer["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|r| r["id"].as_str())
            .collect();
        assert!(ids.contains(&"aarch64-official-image-needs-sm80"), "{ids:?}");
        let hit = answer["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|r| r["id"] == "aarch64-official-image-needs-sm80")
            .expect("hit");
        assert!(
            hit["signature"].as_str().expect("signature").contains("no kernel image is available"),
            "{hit}"
        );

        let (_, errors) = h.call(Method::GET, "/v1/rules?severity=error&limit=200", None, "").await;
        assert!(
            errors["items"].as_array().expect("items").iter().all(|r| r["severity"] == "error")
        );
        let (_, all) = h.call(Method::GET, "/v1/rules?limit=200", None, "").await;
        assert!(errors["total"].as_u64() < all["total"].as_u64(), "the filter narrows");

        // A GPU model stands for its vendor.
        let (_, t4g) = h.call(Method::GET, "/v1/rules?accelerator=T4G&limit=200", None, "").await;
        let (_, nvidia) =
            h.call(Method::GET, "/v1/rules?accelerator=nvidia&limit=200", None, "").await;
        assert_eq!(t4g["total"], nvidia["total"]);
        assert!(nvidia["total"].as_u64().unwrap_or(0) > 0);

        let (_, page1) = h.call(Method::GET, "/v1/rules?limit=5", None, "").await;
        let (_, page2) = h.call(Method::GET, "/v1/rules?limit=5&offset=5", None, "").await;
        assert_eq!(page1["total"], page2["total"]);
        assert_ne!(page1["items"][0]["id"], page2["items"][0]["id"]);

        // Pending versions are for reviewers.
        let (status, _) = h.call(Method::GET, "/v1/rules?state=pending", None, "").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = h.call(Method::GET, "/v1/rules?state=pending", Some(&h.alice), "").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) =
            h.call(Method::GET, "/v1/rules?state=pending", Some(&h.maintainer), "").await;
        assert_eq!(status, StatusCode::OK);
        let (status, answer) = h.call(Method::GET, "/v1/rules?severity=fatal", None, "").await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_query"))
        );
    }
    on_both_backends!(run);
}

/// The catalogue is generated from the served rules: one entry each,
/// sorted, with the component, the date checked and the sources, under
/// the revision the check answers carry.
#[tokio::test]
async fn catalogue_lists_the_served_rules_with_their_sources() {
    let h = Harness::new(crate::common::sqlite()).await;
    let (status, catalogue) = h.call(Method::GET, "/v1/catalogue", None, "").await;
    assert_eq!(status, StatusCode::OK, "{catalogue}");
    let (_, all) = h.call(Method::GET, "/v1/rules?limit=200", None, "").await;
    let entries = catalogue["rules"].as_array().expect("rules");
    assert_eq!(Some(entries.len() as u64), all["total"].as_u64());
    let ids: Vec<&str> = entries.iter().filter_map(|r| r["id"].as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
    let entry = entries.iter().find(|r| r["id"] == "vllm-torch-abi-mismatch").expect("entry");
    assert_eq!(entry["component"], "vllm");
    assert!(
        entry["sources"].as_array().expect("sources").iter().any(|u| u
            .as_str()
            .is_some_and(|u| u.starts_with("https://github.com/vllm-project/vllm/issues/"))),
        "{entry}"
    );
    let fixture = fixture("h100x8-llama70b-healthy.json");
    let (_, answer) = h.call(Method::POST, "/v1/check", None, fixture).await;
    assert_eq!(catalogue["ruleset_revision"], answer["ruleset_revision"]);
}

#[tokio::test]
async fn publish_review_and_serve_end_to_end() {
    async fn run(h: Harness) {
        let g5g = fixture("g5g-gemma4-vllm0271.json");
        let before = h.check(&g5g).await;
        assert!(!finding_ids(&before).contains(&PUBLISHED_ID.to_owned()));

        // Anonymous and unknown tokens cannot publish.
        let (status, answer) = h.call(Method::POST, "/v1/rules", None, published_module()).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized"))
        );
        let (status, _) =
            h.call(Method::POST, "/v1/rules", Some("pft_not-a-token"), published_module()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);

        let (status, version) =
            h.call(Method::POST, "/v1/rules", Some(&h.alice), published_module()).await;
        assert_eq!(status, StatusCode::CREATED, "{version}");
        assert_eq!(version["state"], "pending");
        assert_eq!(version["published_by"], "alice");
        assert!(
            version["report"]["tests"].as_array().is_some_and(|t| t.len() >= 3),
            "{}",
            version["report"]
        );
        let v = version["version"].as_str().expect("version").to_owned();

        // Pending: not served, not public.
        assert!(!finding_ids(&h.check(&g5g).await).contains(&PUBLISHED_ID.to_owned()));
        let (status, _) = h.call(Method::GET, &format!("/v1/rules/{PUBLISHED_ID}"), None, "").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) =
            h.call(Method::GET, &format!("/v1/rules/{PUBLISHED_ID}"), Some(&h.alice), "").await;
        assert_eq!(status, StatusCode::OK, "the owner sees their pending version");
        let (_, queue) = h.call(Method::GET, "/v1/review", Some(&h.maintainer), "").await;
        assert!(queue.as_array().expect("queue").iter().any(|q| q["rule_id"] == PUBLISHED_ID));

        // The same version again is a conflict; someone else's rule is not theirs.
        let (status, answer) =
            h.call(Method::POST, "/v1/rules", Some(&h.alice), published_module()).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::CONFLICT, Some("conflict")),
            "{answer}"
        );
        let (status, answer) =
            h.call(Method::POST, "/v1/rules", Some(&h.bob), published_module()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");

        // Contributors do not review.
        let approve = format!("/v1/rules/{PUBLISHED_ID}/versions/{v}/approve");
        let (status, _) = h.call(Method::POST, &approve, Some(&h.alice), "").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, approved) = h
            .call(
                Method::POST,
                &approve,
                Some(&h.maintainer),
                r#"{"reason": "matches KNOWLEDGE B1"}"#,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{approved}");
        assert_eq!(
            (approved["state"].as_str(), approved["reviewed_by"].as_str()),
            (Some("approved"), Some("mia"))
        );

        // Served at once by this process.
        let after = h.check(&g5g).await;
        assert!(
            finding_ids(&after).contains(&PUBLISHED_ID.to_owned()),
            "{:?}",
            finding_ids(&after)
        );
        assert_ne!(after["ruleset_revision"], before["ruleset_revision"]);
        let (status, bytes) = h
            .call_raw(
                Method::GET,
                &format!("/v1/rules/{PUBLISHED_ID}/versions/{v}/module"),
                None,
                "",
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(bytes, published_module(), "the module comes back byte for byte");
        let (_, detail) = h.call(Method::GET, &format!("/v1/rules/{PUBLISHED_ID}"), None, "").await;
        assert_eq!(detail["served_version"], v.as_str());
        assert_eq!(detail["owners"], json!(["alice"]));

        // Approving twice is not a transition review allows.
        let (status, answer) = h.call(Method::POST, &approve, Some(&h.maintainer), "").await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::CONFLICT, Some("invalid_transition"))
        );

        // Bob may not yank Alice's rule; Alice may.
        let yank = format!("/v1/rules/{PUBLISHED_ID}/versions/{v}/yank");
        let (status, _) = h.call(Method::POST, &yank, Some(&h.bob), "").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, yanked) =
            h.call(Method::POST, &yank, Some(&h.alice), r#"{"reason": "superseded"}"#).await;
        assert_eq!(
            (status, yanked["state"].as_str()),
            (StatusCode::OK, Some("yanked")),
            "{yanked}"
        );
        assert!(
            !finding_ids(&h.check(&g5g).await).contains(&PUBLISHED_ID.to_owned()),
            "yanked is not served"
        );

        // Every write is in the audit log, which only admins read.
        let (status, _) = h.call(Method::GET, "/v1/audit", Some(&h.maintainer), "").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (_, audit) = h.call(Method::GET, "/v1/audit?limit=1000", Some(&h.admin), "").await;
        let actions: Vec<(&str, &str)> = audit
            .as_array()
            .expect("audit")
            .iter()
            .filter(|e| e["subject"].as_str().is_some_and(|s| s.contains(PUBLISHED_ID)))
            .filter_map(|e| Some((e["action"].as_str()?, e["actor"].as_str()?)))
            .collect();
        assert_eq!(actions.len(), 3, "{actions:?}");
        assert!(actions.contains(&("version.publish", "alice")), "{actions:?}");
    }
    on_both_backends!(run);
}

#[tokio::test]
async fn publish_refusals_name_the_step() {
    let h = Harness::new(crate::common::sqlite()).await;
    let wat = |text: &str| wat::parse_str(text).expect("wat");
    let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        ("not wasm", b"hello, registry".to_vec(), StatusCode::UNPROCESSABLE_ENTITY, "validation"),
        ("empty", Vec::new(), StatusCode::UNPROCESSABLE_ENTITY, "validation"),
        (
            "a WASI import",
            wat(
                r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32))) (memory (export "memory") 1) (func (export "pitfall_evaluate") (result i32) i32.const 0))"#,
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "imports",
        ),
        (
            "over the size bound",
            vec![0u8; Limits::default().max_module_bytes + 1],
            StatusCode::PAYLOAD_TOO_LARGE,
            "size",
        ),
    ];
    for (what, bytes, want_status, want_step) in cases {
        let (status, answer) = h.call(Method::POST, "/v1/rules", Some(&h.alice), bytes).await;
        assert_eq!(status, want_status, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], "publish_refused", "{what}: {answer}");
        assert_eq!(answer["error"]["step"], want_step, "{what}: {answer}");
    }
    // A valid module without a `fixed` case: refused by the reviewer's
    // lint (the SDK's, as `pitfall rule lint` prints it), after validation.
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../sdk/examples/wat-vllm-cc-floor.wat"
    ))
    .expect("the WAT example");
    let no_fixed = example.replace(
        r#"{\"name\":\"P100 swapped for a T4\",\"expect\":\"fixed\",\"from\":\"Tesla P100\"},"#,
        "",
    );
    assert_ne!(no_fixed, example, "the example's fixed case was removed");
    let (status, answer) = h.call(Method::POST, "/v1/rules", Some(&h.alice), wat(&no_fixed)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["step"], "metadata", "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "metadata: tests: no case expects `fixed` (add one showing a remedy that clears a matched case)"
    );
    // Nothing refused was stored.
    let (_, queue) = h.call(Method::GET, "/v1/review", Some(&h.maintainer), "").await;
    assert_eq!(queue, json!([]));
    let (_, metrics) = h.call_raw(Method::GET, "/metrics", None, "").await;
    let metrics = String::from_utf8(metrics).expect("utf-8");
    assert!(metrics.contains("pitfall_publishes_total{outcome=\"imports\"} 1"), "{metrics}");
}

#[tokio::test]
async fn tokens_are_shown_once_listed_without_secrets_and_revocable() {
    async fn run(h: Harness) {
        // Admins create accounts; others may not.
        let (status, _) =
            h.call(Method::POST, "/v1/accounts", Some(&h.maintainer), r#"{"name": "carol"}"#).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, carol) =
            h.call(Method::POST, "/v1/accounts", Some(&h.admin), r#"{"name": "carol"}"#).await;
        assert_eq!(
            (status, carol["role"].as_str()),
            (StatusCode::CREATED, Some("contributor")),
            "{carol}"
        );
        let (status, answer) =
            h.call(Method::POST, "/v1/accounts", Some(&h.admin), r#"{"name": "bad name!"}"#).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_account_name"))
        );

        let (status, issued) = h
            .call(
                Method::POST,
                "/v1/tokens",
                Some(&h.admin),
                r#"{"label": "ci", "account": "carol"}"#,
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{issued}");
        let secret = issued["token"].as_str().expect("secret").to_owned();
        let (_, me) = h.call(Method::GET, "/v1/whoami", Some(&secret), "").await;
        assert_eq!(me["name"], "carol");

        // Listing never shows a secret; carol sees only her own.
        let (_, listed) = h.call_raw(Method::GET, "/v1/tokens", Some(&secret), "").await;
        let listed_text = String::from_utf8(listed.clone()).expect("utf-8");
        assert!(!listed_text.contains(&secret), "a listing leaked a secret");
        let listed: Value = serde_json::from_slice(&listed).expect("json");
        assert!(listed.as_array().expect("tokens").iter().all(|t| t["account"] == "carol"));
        let (_, all) = h.call_raw(Method::GET, "/v1/tokens", Some(&h.admin), "").await;
        for s in [&h.admin, &h.alice, &secret] {
            assert!(
                !String::from_utf8_lossy(&all).contains(s.as_str()),
                "a listing leaked a secret"
            );
        }

        // Carol cannot revoke Alice's token, nor issue one for Alice.
        let (_, alice_tokens) = h.call(Method::GET, "/v1/tokens", Some(&h.alice), "").await;
        let alice_token = alice_tokens[0]["id"].as_i64().expect("id");
        let (status, _) =
            h.call(Method::DELETE, &format!("/v1/tokens/{alice_token}"), Some(&secret), "").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = h
            .call(
                Method::POST,
                "/v1/tokens",
                Some(&secret),
                r#"{"label": "x", "account": "alice"}"#,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Revoked: refused from then on.
        let id = issued["id"].as_i64().expect("id");
        let (status, revoked) =
            h.call(Method::DELETE, &format!("/v1/tokens/{id}"), Some(&secret), "").await;
        assert_eq!(status, StatusCode::OK, "{revoked}");
        assert!(revoked["revoked_at"].is_string());
        let (status, answer) = h.call(Method::GET, "/v1/whoami", Some(&secret), "").await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized"))
        );

        // Roles: an admin makes carol a maintainer.
        let (status, changed) = h
            .call(
                Method::PUT,
                "/v1/accounts/carol/role",
                Some(&h.admin),
                r#"{"role": "maintainer"}"#,
            )
            .await;
        assert_eq!(
            (status, changed["role"].as_str()),
            (StatusCode::OK, Some("maintainer")),
            "{changed}"
        );
    }
    on_both_backends!(run);
}

#[tokio::test]
async fn identical_manifests_are_answered_from_the_cache_until_the_revision_moves() {
    let h = Harness::new(crate::common::sqlite()).await;
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let hits = |metrics: &[u8]| {
        String::from_utf8_lossy(metrics)
            .lines()
            .find_map(|l| l.strip_prefix("pitfall_check_cache_hits_total ").map(str::to_owned))
    };
    let first = h.check(&g5g).await;
    let second = h.check(&g5g).await;
    assert_eq!(first["findings"], second["findings"]);
    let (_, metrics) = h.call_raw(Method::GET, "/metrics", None, "").await;
    assert_eq!(hits(&metrics).as_deref(), Some("1"), "the same text is answered from the cache");
    // The same manifest written as another text (keys in another order, no
    // whitespace) is another key: evaluated afresh, answered alike.
    let reordered: serde_json::Map<String, Value> =
        serde_json::from_slice::<serde_json::Map<String, Value>>(&g5g)
            .expect("json")
            .into_iter()
            .rev()
            .collect();
    let third = h.check(serde_json::to_string(&reordered).expect("json").as_bytes()).await;
    assert_eq!(first["findings"], third["findings"]);
    let (_, metrics) = h.call_raw(Method::GET, "/metrics", None, "").await;
    assert_eq!(hits(&metrics).as_deref(), Some("1"), "another text was answered from the cache");

    // A publish and approval move the revision: the cached answer is not reused.
    let (_, version) = h.call(Method::POST, "/v1/rules", Some(&h.alice), published_module()).await;
    let v = version["version"].as_str().expect("version");
    let (status, _) = h
        .call(
            Method::POST,
            &format!("/v1/rules/{PUBLISHED_ID}/versions/{v}/approve"),
            Some(&h.maintainer),
            "",
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let after = h.check(&g5g).await;
    assert_ne!(after["ruleset_revision"], first["ruleset_revision"]);
    assert!(
        finding_ids(&after).contains(&PUBLISHED_ID.to_owned()),
        "an answer from the older revision was served"
    );
}

#[tokio::test]
async fn the_cli_output_schemas_are_served_with_their_id() {
    let limits = ServerLimits {
        public_url: Some("https://pitfall.example.org/".into()),
        ..ServerLimits::default()
    };
    let h = Harness::with_limits(crate::common::sqlite(), limits).await;
    for name in ["check.json", "scan.json", "explain.json", "fix.json"] {
        let request =
            Request::get(format!("/v1/schemas/{name}")).body(Body::empty()).expect("request");
        let response = app(h.state.clone()).oneshot(request).await.expect("answered");
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        assert_eq!(
            response.headers().get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/schema+json"),
            "{name}"
        );
        let body = response.into_body().collect().await.expect("body").to_bytes();
        let schema: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(schema["$id"], format!("https://pitfall.example.org/v1/schemas/{name}"));
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    }
    let (status, answer) = h.call(Method::GET, "/v1/schemas/manifest.json", None, "").await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn openapi_lists_every_route_and_every_route_is_listed() {
    let h = Harness::new(crate::common::sqlite()).await;
    let (status, doc) = h.call(Method::GET, "/v1/openapi.json", None, "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.0.3");
    let paths = doc["paths"].as_object().expect("paths");
    let mut documented = 0;
    for (path, methods) in paths {
        for method in methods.as_object().expect("methods").keys() {
            documented += 1;
            let concrete =
                path.replace("{id}", "x").replace("{version}", "1.0.0").replace("{name}", "x");
            let concrete = if concrete.starts_with("/v1/tokens/") {
                "/v1/tokens/999999".to_owned()
            } else {
                concrete
            };
            let method =
                Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("method");
            let (status, answer) = h.call(method.clone(), &concrete, Some(&h.admin), "").await;
            assert!(
                !(status == StatusCode::NOT_FOUND && answer["error"]["message"] == "no such route")
                    && status != StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path} is documented but not routed"
            );
            // Every schema reference resolves.
        }
    }
    let text = doc.to_string();
    for reference in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = reference.split('"').next().expect("name");
        assert!(doc["components"]["schemas"].get(name).is_some(), "unresolved $ref {name}");
    }
    // The router's routes, as the source lists them, are all documented.
    let source = include_str!("../../src/app.rs");
    // (`.route(` whether the path follows on its line or the next.)
    let routed = source.matches(".route(").count();
    let listed_routes: usize = paths.len();
    assert_eq!(
        routed, listed_routes,
        "a route in app.rs is missing from openapi.rs, or the reverse"
    );
    assert!(documented >= routed);
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let h = Harness::new(crate::common::sqlite()).await;
    let (status, health) = h.call(Method::GET, "/healthz", None, "").await;
    assert_eq!((status, health["status"].as_str()), (StatusCode::OK, Some("ok")));
    assert_eq!(health["rules"], pitfall_bundled_rules::MODULES.len() - 1);
    let (status, ready) = h.call(Method::GET, "/readyz", None, "").await;
    assert_eq!((status, ready["store"].as_bool()), (StatusCode::OK, Some(true)));
    let (_, before) = h.call_raw(Method::GET, "/metrics", None, "").await;
    let before = String::from_utf8(before).expect("utf-8");
    h.check(&fixture("g5g-gemma4-vllm0271.json")).await;
    let (status, metrics) = h.call_raw(Method::GET, "/metrics", None, "").await;
    assert_eq!(status, StatusCode::OK);
    let metrics = String::from_utf8(metrics).expect("utf-8");
    for needle in
        ["pitfall_checks_total 1", "pitfall_rules_served ", "route=\"/v1/check\",status=\"200\""]
    {
        assert!(metrics.contains(needle), "{needle} missing from\n{metrics}");
    }
    // The memo of evaluations: the first check ran its candidates in the
    // sandbox; the same machine under another name (new to the result
    // cache) has them answered from what they read.
    let metric = |text: &str, name: &str| -> f64 {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{name} missing"));
        line.trim().parse().expect("a number")
    };
    let misses = metric(&metrics, "pitfall_rule_memo_misses_total");
    assert!(misses > 0.0 && metric(&metrics, "pitfall_rule_memo_hits_total") == 0.0, "{metrics}");
    assert!(metric(&metrics, "pitfall_rule_memo_bytes") > 0.0);
    // Each of the check's evaluations in the sandbox got an instance: a new
    // one, or one reset for its rule's next evaluation (the bundled rules'
    // publish-time cases took theirs before).
    let instances = |text: &str| {
        metric(text, "pitfall_rule_instantiations_total")
            + metric(text, "pitfall_rule_instances_reused_total")
    };
    assert_eq!(instances(&metrics) - instances(&before), misses, "{metrics}");
    let mut renamed: Value =
        serde_json::from_slice(&fixture("g5g-gemma4-vllm0271.json")).expect("json");
    renamed["host"]["hostname"] = json!("another-g5g");
    let first = h.check(&fixture("g5g-gemma4-vllm0271.json")).await;
    let again = h.check(renamed.to_string().as_bytes()).await;
    assert_eq!(first["findings"], again["findings"]);
    let (_, metrics) = h.call_raw(Method::GET, "/metrics", None, "").await;
    let metrics = String::from_utf8(metrics).expect("utf-8");
    assert_eq!(
        metric(&metrics, "pitfall_rule_memo_misses_total"),
        misses,
        "the renamed machine ran rules again"
    );
    assert_eq!(metric(&metrics, "pitfall_rule_memo_hits_total"), misses);
    // Readiness follows the store: closed, not ready; checks still answered.
    h.store.close().await;
    let (status, ready) = h.call(Method::GET, "/readyz", None, "").await;
    assert_eq!(
        (status, ready["status"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("not_ready"))
    );
    h.check(&fixture("g5g-gemma4-vllm0271.json")).await;
}

#[tokio::test]
async fn a_request_over_the_time_bound_gets_503_in_the_envelope() {
    // A zero bound. A check evaluates without waiting, on the worker that
    // serves it, so the middleware could not cut it off: the check itself
    // stops at the request's deadline, before its first evaluation.
    let limits = ServerLimits { request_timeout_ms: 0, ..ServerLimits::default() };
    let h = Harness::with_limits(crate::common::sqlite(), limits).await;
    let (status, answer) =
        h.call(Method::POST, "/v1/check", None, fixture("g5g-gemma4-vllm0271.json")).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("timeout")),
        "{answer}"
    );
    // The web pages that check stop at the same deadline.
    for page in ["/check?packages=vllm%3D%3D0.27.1&gpu=T4G", "/matrix?package=vllm"] {
        let (status, _) = h.call_raw(Method::GET, page, None, "").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "GET {page}");
    }
}

/// A restart with the bundled rules already stored assesses none of them:
/// the seed reads id and version with `inspect` and skips what the store
/// has, byte for byte. (An engine that cannot compile in time would fail
/// any module it assessed.)
#[tokio::test]
async fn a_second_seed_assesses_nothing_already_stored() {
    for db in databases().await {
        let store = Store::connect(db.url()).await.expect("store");
        let engine = Engine::new(Limits::default()).expect("engine");
        let first: Vec<_> = pitfall_bundled_rules::MODULES.iter().copied().take(3).collect();
        assert_eq!(seed_modules(&store, &engine, first.clone()).await.expect("seed"), 3);
        let revision = store.revision().await.expect("revision");
        let strict =
            Engine::new(Limits { compile_timeout: std::time::Duration::ZERO, ..Limits::default() })
                .expect("engine");
        assert_eq!(seed_modules(&store, &strict, first).await.expect("nothing to assess"), 0);
        assert_eq!(store.revision().await.expect("revision"), revision);
        let new: Vec<_> = pitfall_bundled_rules::MODULES.iter().copied().skip(3).take(1).collect();
        let refused =
            seed_modules(&store, &strict, new).await.expect_err("a new module is assessed");
        assert!(format!("{refused:#}").contains("fails the publish pipeline"), "{refused:#}");
    }
}

/// The same bundled version built again (an SDK change, another
/// toolchain: other bytes, same id and version) is left as stored, and
/// the rest of the seed goes on: the rebuilt one's refusal used to fail
/// the whole seed, so an upgrade's new bundled versions never arrived.
#[tokio::test]
async fn a_rebuilt_bundled_version_is_kept_as_stored_and_the_rest_is_seeded() {
    for db in databases().await {
        let store = Store::connect(db.url()).await.expect("store");
        let engine = Engine::new(Limits::default()).expect("engine");
        let modules = pitfall_bundled_rules::MODULES;
        assert_eq!(seed_modules(&store, &engine, vec![modules[0]]).await.expect("seed"), 1);
        let before = store.version_digests().await.expect("digests");
        // A custom section the host ignores: the same rule, other bytes.
        let mut bytes = modules[0].wasm.to_vec();
        bytes.extend_from_slice(&[0, 8, 7]);
        bytes.extend_from_slice(b"rebuilt");
        let rebuilt = pitfall_bundled_rules::BundledModule {
            wasm: Box::leak(bytes.into_boxed_slice()),
            ..modules[0]
        };
        let plan = plan_seed(&store, &engine, vec![rebuilt, modules[1]]).await.expect("plan");
        let id = pitfall_engine::inspect::inspect(modules[0].wasm, engine.limits())
            .expect("inspects")
            .meta;
        assert_eq!(plan.rebuilt, vec![format!("{}@{}", id.id, id.version)]);
        assert_eq!(plan.unstored.len(), 1, "only the new version is assessed");
        assert_eq!(
            seed_modules(&store, &engine, vec![rebuilt, modules[1]])
                .await
                .expect("the seed goes on"),
            1
        );
        let after = store.version_digests().await.expect("digests");
        assert!(
            before.iter().all(|(version, sha256)| after.get(version) == Some(sha256)),
            "the stored version keeps its bytes"
        );
        assert_eq!(after.len(), before.len() + 1);
    }
}

/// The G5g field report's stack failing its first kernel launch, as vLLM
/// logs it on each of its ranks.
const G5G_LOG: &str = "\
INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.27.1
(VllmWorker rank=0 pid=101) ERROR 05-01 10:00:05 [multiproc_executor.py:1] WorkerProc failed to start.
(VllmWorker rank=0 pid=101) Traceback (most recent call last):
(VllmWorker rank=0 pid=101)   File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py\", line 200, in init_device
(VllmWorker rank=0 pid=101) RuntimeError: CUDA error: no kernel image is available for execution on the device
(VllmWorker rank=1 pid=102) RuntimeError: CUDA error: no kernel image is available for execution on the device
";

#[tokio::test]
async fn explain_ranks_the_rules_that_explain_a_log() {
    async fn run(h: Harness) {
        let (status, answer) =
            h.call(Method::POST, "/v1/explain", None, json!({ "log": G5G_LOG }).to_string()).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let causes = answer["causes"].as_array().expect("causes");
        assert!(!causes.is_empty(), "{answer}");
        let threshold = answer["threshold"].as_f64().expect("threshold");
        for c in causes {
            let score = c["score"].as_f64().expect("score");
            assert!((threshold..=1.0).contains(&score), "{c}");
            assert_eq!(c["lines"], json!([5, 6]), "both ranks' lines: {c}");
            assert!(c["matched"].as_str().expect("matched").contains("no kernel image"));
            assert!(c["finding"]["remedies"].as_array().is_some_and(|r| !r.is_empty()), "{c}");
            assert!(c.get("outcome").is_none(), "no manifest, no outcome");
        }
        assert_eq!(answer["manifest_checked"], false);

        // With the G5g manifest: the rule it matches ranks first, and says so.
        let manifest: Value =
            serde_json::from_slice(&fixture("g5g-gemma4-vllm0271.json")).expect("fixture");
        let (status, answer) = h
            .call(
                Method::POST,
                "/v1/explain",
                None,
                json!({ "log": G5G_LOG, "manifest": manifest }).to_string(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["manifest_checked"], true);
        let causes = answer["causes"].as_array().expect("causes");
        assert_eq!(causes[0]["outcome"], "matched", "{answer}");
        assert_eq!(causes[0]["rule_id"], "aarch64-official-image-needs-sm80", "{answer}");
        assert!(causes[0]["finding"]["evidence"].as_array().is_some_and(|e| !e.is_empty()));
        let ranks: Vec<u8> = causes
            .iter()
            .map(|c| match c["outcome"].as_str() {
                Some("matched") => 0,
                Some("undetermined" | "error") => 1,
                _ => 2,
            })
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "matched before cleared: {ranks:?}");
        assert!(ranks.contains(&2), "some rule is cleared by the manifest: {answer}");

        // A log no signature explains: no cause, and the text search's leads.
        let (status, answer) = h
            .call(
                Method::POST,
                "/v1/explain",
                None,
                json!({ "log": "  File \"x.py\", line 1\n    print 'hi'\nSyntaxError: Missing parentheses in call to 'print'" }).to_string(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["causes"], json!([]), "{answer}");
    }
    on_both_backends!(run);
}

#[tokio::test]
async fn explain_takes_plain_text_and_replaces_bad_bytes() {
    let h = Harness::new(crate::common::sqlite()).await;
    let mut log = b"\xff\xfe garbage\n".to_vec();
    log.extend_from_slice(G5G_LOG.as_bytes());
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/explain")
        .header("content-type", "text/plain; charset=utf-8")
        .body(Body::from(log))
        .expect("request");
    let response = app(h.state.clone()).oneshot(request).await.expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.expect("body").to_bytes();
    let answer: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(answer["lines_total"], 7, "{answer}");
    assert_eq!(answer["causes"][0]["lines"], json!([6, 7]), "{answer}");
}

#[tokio::test]
async fn explain_refuses_bad_input_in_the_envelope() {
    let h = Harness::new(crate::common::sqlite()).await;
    let big = "x".repeat(pitfall_server::api::explain::MAX_LOG_BYTES + 1);
    for (body, want_status, want_code) in [
        ("{not json".to_owned(), StatusCode::BAD_REQUEST, "invalid_json"),
        (json!({ "lines": "x" }).to_string(), StatusCode::BAD_REQUEST, "invalid_json"),
        (json!({ "log": "" }).to_string(), StatusCode::BAD_REQUEST, "empty_log"),
        (json!({ "log": big }).to_string(), StatusCode::BAD_REQUEST, "log_too_large"),
        (
            json!({ "log": G5G_LOG, "manifest": { "host": {} } }).to_string(),
            StatusCode::BAD_REQUEST,
            "invalid_manifest",
        ),
    ] {
        let (status, answer) = h.call(Method::POST, "/v1/explain", None, body.clone()).await;
        assert_eq!(status, want_status, "{}: {answer}", &body[..body.len().min(80)]);
        assert_eq!(answer["error"]["code"], want_code, "{answer}");
    }
}
