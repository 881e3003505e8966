//! The authorization matrix (`server/tests/authz-matrix.json`): every
//! write endpoint × every kind of caller, on SQLite and PostgreSQL, driven
//! in-process. A refused cell must leave the store exactly as it was
//! (accounts, tokens, the target version, the audit log, the revision);
//! an allowed one must change it. Then: no issued secret is stored in the
//! clear (the SQLite files and every PostgreSQL table are searched), and
//! none reaches a log line (every event of the run is captured at debug
//! level). Rate limits are tested per token here and per IP on a real
//! process.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use pitfall_engine::{Engine, Limits};
use pitfall_server::registry::{Registry, new_version};
use pitfall_server::store::{Actor, NewVersion, Principal, Role, Store, VersionState};
use pitfall_server::{AppState, ServerLimits, app};
use serde_json::{Value, json};
use sqlx::{Connection, Row};
use tower::ServiceExt;

use crate::common::{TestDb, databases};

fn matrix() -> (Vec<String>, BTreeMap<String, BTreeMap<String, u16>>) {
    let path = format!("{}/tests/authz-matrix.json", env!("CARGO_MANIFEST_DIR"));
    let spec: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the matrix")).expect("matrix JSON");
    let callers = spec["callers"]
        .as_array()
        .expect("callers")
        .iter()
        .map(|c| c.as_str().expect("caller").to_owned())
        .collect();
    let matrix = serde_json::from_value(spec["matrix"].clone())
        .expect("matrix: endpoint -> caller -> status");
    (callers, matrix)
}

/// The operations that write: not GET, and not open to anyone (checks are
/// POSTs that write nothing).
fn write_endpoints() -> Vec<String> {
    pitfall_server::openapi::operations()
        .iter()
        .filter(|op| op.method != "GET" && op.access != pitfall_server::openapi::Access::Anonymous)
        .map(|op| format!("{} {}", op.method, op.path))
        .collect()
}

#[test]
fn the_matrix_lists_every_write_endpoint() {
    let (_, matrix) = matrix();
    let mut listed: Vec<String> = matrix.keys().cloned().collect();
    let mut writes = write_endpoints();
    listed.sort();
    writes.sort();
    assert_eq!(listed, writes, "authz-matrix.json and openapi.rs's write operations differ");
}

/// Everything a write could change, minus bookkeeping that is not a
/// registry write (a token's last use).
async fn snapshot(store: &Store, target: Option<(&str, &str)>) -> String {
    let accounts = store.accounts().await.expect("accounts");
    let tokens: Vec<_> = store
        .list_tokens(None)
        .await
        .expect("tokens")
        .into_iter()
        .map(|t| (t.id, t.account_id, t.label, t.created_at, t.revoked_at))
        .collect();
    let audit = store.audit(1000, 0).await.expect("audit");
    let version = match target {
        Some((id, version)) => format!("{:?}", store.version(id, version).await.expect("version")),
        None => String::new(),
    };
    let watches: Vec<_> = store
        .watches(None)
        .await
        .expect("watches")
        .into_iter()
        .map(|w| {
            (
                w.id,
                w.account_id,
                w.name,
                w.webhook_url,
                w.updated_at,
                w.manifests,
                w.pending_deliveries,
            )
        })
        .collect();
    format!(
        "revision {}\naccounts {accounts:?}\ntokens {tokens:?}\naudit {} {:?}\nversion {version}\nwatches {watches:?}",
        store.revision().await.expect("revision"),
        audit.len(),
        audit.first().map(|a| a.id)
    )
}

struct Harness {
    store: Store,
    state: AppState,
    /// Secret per caller column (none for `no_token`).
    tokens: BTreeMap<&'static str, String>,
    alice: Principal,
    /// Every secret issued in the run, for the at-rest and log searches.
    secrets: Vec<String>,
    /// A real, accepted module's stored form, to make versions from.
    template: NewVersion,
    /// Modules not yet used, for the publish cells (one rule id each).
    unused: Vec<&'static [u8]>,
    engine: Engine,
}

impl Harness {
    async fn new(db: &TestDb, limits: ServerLimits) -> Harness {
        let store = Store::connect(db.url()).await.expect("store");
        let engine = Engine::new(Limits::default()).expect("engine");
        let mut secrets = Vec::new();
        let mut tokens = BTreeMap::new();
        let mut alice = None;
        for (column, name, role) in [
            ("admin", "root", Role::Admin),
            ("maintainer", "mia", Role::Maintainer),
            ("contributor_own", "alice", Role::Contributor),
            ("contributor_other", "bob", Role::Contributor),
        ] {
            let account = store.create_account(name, role, &Actor::System).await.expect("account");
            let (secret, _) =
                store.issue_token(account.id, "test", &Actor::System).await.expect("token");
            if name == "alice" {
                alice = store.authenticate(&secret).await.expect("authenticate");
                // Alice's second token, revoked: it must open nothing.
                let (revoked, info) = store
                    .issue_token(account.id, "old laptop", &Actor::System)
                    .await
                    .expect("token");
                store.revoke_token(info.id, &Actor::System).await.expect("revoke");
                tokens.insert("revoked_token", revoked.clone());
                secrets.push(revoked);
            }
            tokens.insert(column, secret.clone());
            secrets.push(secret);
        }
        tokens.insert("bad_token", "pft_0123456789abcdef0123456789abcdef".to_owned());
        let mut unused: Vec<&'static [u8]> =
            pitfall_bundled_rules::MODULES.iter().map(|m| m.wasm).collect();
        let first = unused.pop().expect("a bundled module");
        let accepted = pitfall_server::publish::assess_blocking(&engine, first)
            .expect("a bundled module is accepted");
        let template = new_version(&accepted, first);
        let registry = Arc::new(
            Registry::open(
                store.clone(),
                engine.clone(),
                pitfall_server::secret_box::SealingKey::generate().expect("sealing key"),
            )
            .await
            .expect("registry"),
        );
        Harness {
            store,
            state: AppState::new(registry, limits),
            tokens,
            alice: alice.expect("alice"),
            secrets,
            template,
            unused,
            engine,
        }
    }

    /// A call with no body.
    async fn call_empty(&self, method: &str, path: &str, token: Option<&str>) -> (u16, Value) {
        self.call(method, path, token, "application/json", vec![]).await
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        body: Vec<u8>,
    ) -> (u16, Value) {
        let mut request = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).expect("method"))
            .uri(path);
        request = request.header("content-type", content_type);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = app(self.state.clone())
            .oneshot(request.body(Body::from(body)).expect("request"))
            .await
            .expect("answered");
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.expect("body").to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// A pending version `version` of rule `id`, owned by alice.
    async fn alice_version(&self, id: &str, version: &str) {
        let mut new = self.template.clone();
        new.meta.id = id.to_owned();
        new.meta.version = version.to_owned();
        self.store
            .insert_version(new, &Actor::Account(self.alice.clone()), VersionState::Pending)
            .await
            .expect("alice's version");
    }
}

/// One cell's request: method, path, content type, body, and the version
/// it targets (for the snapshot).
type CellRequest = (String, String, &'static str, Vec<u8>, Option<(String, String)>);

/// Sets up a fresh object for one cell (so an allowed cell never changes
/// what another cell sees) and builds its request.
async fn prepare(h: &mut Harness, endpoint: &str, caller: &str, n: usize) -> CellRequest {
    let (method, _) = endpoint.split_once(' ').expect("METHOD path");
    let json_body = |v: Value| serde_json::to_vec(&v).expect("json");
    match endpoint {
        "POST /v1/rules" => {
            // A real module whose rule alice already owns (an earlier
            // version): a new version is hers alone to publish.
            let module = h.unused.pop().expect("enough bundled modules for every publish cell");
            let accepted =
                pitfall_server::publish::assess_blocking(&h.engine, module).expect("accepted");
            let (id, version) =
                (accepted.rule.meta().id.clone(), accepted.rule.meta().version.clone());
            h.alice_version(&id, "0.0.1").await;
            (
                method.into(),
                "/v1/rules".into(),
                "application/wasm",
                module.to_vec(),
                Some((id, version)),
            )
        }
        "POST /v1/rules/{id}/versions/{version}/approve"
        | "POST /v1/rules/{id}/versions/{version}/reject"
        | "POST /v1/rules/{id}/versions/{version}/yank" => {
            let id = format!("authz-rule-{n}");
            h.alice_version(&id, "1.0.0").await;
            let action = endpoint.rsplit('/').next().expect("action");
            let path = format!("/v1/rules/{id}/versions/1.0.0/{action}");
            (
                method.into(),
                path,
                "application/json",
                json_body(json!({"reason": "matrix"})),
                Some((id, "1.0.0".into())),
            )
        }
        "POST /v1/accounts" => (
            method.into(),
            "/v1/accounts".into(),
            "application/json",
            json_body(json!({"name": format!("new-{n}"), "role": "contributor"})),
            None,
        ),
        "PUT /v1/accounts/{name}/role" => {
            // Alice tries to make herself an admin; the others change a
            // fresh account, so an allowed cell changes no caller's role.
            if caller == "contributor_own" {
                (
                    method.into(),
                    "/v1/accounts/alice/role".into(),
                    "application/json",
                    json_body(json!({"role": "admin"})),
                    None,
                )
            } else {
                let name = format!("carol-{n}");
                h.store
                    .create_account(&name, Role::Contributor, &Actor::System)
                    .await
                    .expect("account");
                (
                    method.into(),
                    format!("/v1/accounts/{name}/role"),
                    "application/json",
                    json_body(json!({"role": "maintainer"})),
                    None,
                )
            }
        }
        "POST /v1/tokens" => {
            let body = if caller == "contributor_own" {
                json!({"label": "ci"})
            } else {
                json!({"label": "ci", "account": "alice"})
            };
            (method.into(), "/v1/tokens".into(), "application/json", json_body(body), None)
        }
        "DELETE /v1/tokens/{id}" => {
            let (secret, info) = h
                .store
                .issue_token(h.alice.account_id, "to revoke", &Actor::System)
                .await
                .expect("token");
            h.secrets.push(secret);
            (method.into(), format!("/v1/tokens/{}", info.id), "application/json", Vec::new(), None)
        }
        "POST /v1/watches" => {
            let mut body = json!({
                "name": format!("watch-{n}"),
                "webhook_url": "https://hooks.example.com/pitfall",
                "manifests": {"default": {"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.1"}]}},
            });
            // Every other cell gives its own secret; the rest get one made
            // (kept from the answer).
            if n.is_multiple_of(2) {
                let secret = format!("a-watch-secret-given-in-cell-{n:04}");
                body["secret"] = json!(secret);
                h.secrets.push(secret);
            }
            (method.into(), "/v1/watches".into(), "application/json", json_body(body), None)
        }
        "PATCH /v1/watches/{id}" | "DELETE /v1/watches/{id}" | "POST /v1/watches/{id}/test" => {
            // A fresh watch of alice's for each cell.
            let id = h
                .store
                .create_watch(
                    h.alice.account_id,
                    pitfall_server::store::NewWatch {
                        name: format!("alice-watch-{n}"),
                        webhook_url: "https://hooks.example.com/pitfall".into(),
                        secret: h
                            .state
                            .registry()
                            .secret_keys()
                            .seal(STORED_WATCH_SECRET)
                            .expect("sealed"),
                        min_severity: "warning".into(),
                        manifests: vec![pitfall_server::store::NewWatchManifest {
                            label: "default".into(),
                            manifest: r#"{"manifest_version":1}"#.into(),
                            findings: Vec::new(),
                        }],
                        evaluated_revision: 0,
                    },
                )
                .await
                .expect("alice's watch");
            let (path, body) = match endpoint {
                "PATCH /v1/watches/{id}" => (
                    format!("/v1/watches/{id}"),
                    json_body(json!({"webhook_url": "https://other.example.com/hook"})),
                ),
                "DELETE /v1/watches/{id}" => (format!("/v1/watches/{id}"), Vec::new()),
                _ => (format!("/v1/watches/{id}/test"), Vec::new()),
            };
            // Updated within the same millisecond would look unchanged.
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            (method.into(), path, "application/json", body, None)
        }
        other => panic!("no setup for {other}: add one here and a row to authz-matrix.json"),
    }
}

/// Collects every log line the run emits, at debug level.
#[derive(Clone, Default)]
struct LogSink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The secret of the watches the store is given directly (sealed, as the
/// API seals them).
const STORED_WATCH_SECRET: &str = "a-secret-of-sixteen-or-more";

/// The whole database's text, searched for secrets in the clear.
async fn stored_text(db: &TestDb) -> Vec<u8> {
    if let Some(path) = db.url().strip_prefix("sqlite://") {
        let mut bytes = Vec::new();
        for suffix in ["", "-wal", "-shm"] {
            bytes.extend(std::fs::read(format!("{path}{suffix}")).unwrap_or_default());
        }
        assert!(!bytes.is_empty(), "no SQLite file at {path}");
        return bytes;
    }
    let mut conn = sqlx::PgConnection::connect(db.url()).await.expect("connect");
    let tables: Vec<String> = sqlx::query(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .fetch_all(&mut conn)
    .await
    .expect("tables")
    .iter()
    .map(|r| r.get::<String, _>(0))
    .collect();
    assert!(tables.iter().any(|t| t == "api_tokens"), "tables: {tables:?}");
    let mut text = Vec::new();
    for table in tables {
        let rows = sqlx::query(&format!("SELECT t::text FROM \"{table}\" t"))
            .fetch_all(&mut conn)
            .await
            .expect("rows");
        for row in rows {
            text.extend(row.get::<String, _>(0).into_bytes());
        }
    }
    text
}

#[test]
fn every_write_endpoint_refuses_every_caller_it_should_and_stores_no_secret_in_the_clear() {
    let sink = LogSink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // The current thread's subscriber, with a runtime on this thread: every
    // handler and store call of the run logs here.
    let _guard = tracing::subscriber::set_default(subscriber);
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (callers, matrix) = matrix();
    let mut all_secrets = Vec::new();
    runtime.block_on(async {
        for db in databases().await {
            let backend = db.backend().as_str();
            let mut h = Harness::new(&db, ServerLimits::default()).await;
            let mut failures = Vec::new();
            let mut n = 0;
            for (endpoint, row) in &matrix {
                for caller in &callers {
                    n += 1;
                    let expected = row[caller];
                    let (method, path, content_type, body, target) = prepare(&mut h, endpoint, caller, n).await;
                    let target_ref = target.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
                    let before = snapshot(&h.store, target_ref).await;
                    let token = h.tokens.get(caller.as_str()).cloned();
                    let (status, answer) = h.call(&method, &path, token.as_deref(), content_type, body).await;
                    if let Some(secret) = answer["token"].as_str() {
                        h.secrets.push(secret.to_owned());
                    }
                    if let Some(secret) = answer["secret"].as_str() {
                        h.secrets.push(secret.to_owned());
                    }
                    let after = snapshot(&h.store, target_ref).await;
                    let allowed = (200..300).contains(&status);
                    let cell = format!("{backend}: {endpoint} as {caller}");
                    if status != expected {
                        failures.push(format!("{cell}: {status}, expected {expected}: {}", answer["error"]));
                    }
                    if !allowed && before != after {
                        failures.push(format!("{cell}: refused ({status}) but the store changed:\n{before}\n---\n{after}"));
                    }
                    if !allowed && answer["error"]["code"].as_str().is_none() {
                        failures.push(format!("{cell}: refused without an envelope: {answer}"));
                    }
                    if allowed && before == after {
                        failures.push(format!("{cell}: allowed but nothing was written"));
                    }
                }
            }
            assert!(failures.is_empty(), "{} cells wrong:\n{}", failures.len(), failures.join("\n"));
            eprintln!("{backend}: {n} cells as expected");
            let stored = stored_text(&db).await;
            h.secrets.push(STORED_WATCH_SECRET.to_owned());
            assert!(h.secrets.iter().any(|s| s.starts_with("whsec_")), "a made watch secret is checked too");
            for secret in &h.secrets {
                assert!(!contains(&stored, secret.as_bytes()), "{backend} stores a secret in the clear");
            }
            all_secrets.extend(h.secrets);
            h.store.close().await;
        }
    });
    let log = sink.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(
        log.len() > 1000,
        "the run logged almost nothing ({} bytes): the capture is not working",
        log.len()
    );
    for secret in &all_secrets {
        assert!(!contains(&log, secret.as_bytes()), "a secret reached the log");
    }
    eprintln!("{} secrets absent from {} bytes of debug log", all_secrets.len(), log.len());
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn checks_and_publishes_are_rate_limited_per_token() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let db = crate::common::sqlite();
        let limits = ServerLimits {
            rate_check_per_token: 3,
            rate_publish_per_token: 1,
            ..ServerLimits::default()
        };
        let h = Harness::new(&db, limits).await;
        let manifest = br#"{"manifest_version": 1}"#.to_vec();
        let alice = h.tokens["contributor_own"].clone();
        let bob = h.tokens["contributor_other"].clone();
        for i in 0..3 {
            let (status, answer) = h
                .call("POST", "/v1/check", Some(&alice), "application/json", manifest.clone())
                .await;
            assert_eq!(status, 200, "check {i}: {answer}");
        }
        let (status, answer) = h
            .call(
                "POST",
                "/v1/check/batch",
                Some(&alice),
                "application/json",
                br#"{"manifests": []}"#.to_vec(),
            )
            .await;
        assert_eq!(status, 429, "{answer}");
        assert_eq!(answer["error"]["code"], "rate_limited");
        let retry = answer["error"]["retry_after_s"].as_u64().expect("retry_after_s");
        assert!((1..=20).contains(&retry), "3 a minute refill one every 20 s; retry after {retry}");
        // Another token has its own bucket.
        let (status, _) =
            h.call("POST", "/v1/check", Some(&bob), "application/json", manifest.clone()).await;
        assert_eq!(status, 200);
        // Publishes have their own limit: one, then 429 before any work.
        let (status, answer) = h
            .call("POST", "/v1/rules", Some(&alice), "application/wasm", b"not wasm".to_vec())
            .await;
        assert_eq!(status, 422, "{answer}");
        let (status, answer) = h
            .call("POST", "/v1/rules", Some(&alice), "application/wasm", b"not wasm".to_vec())
            .await;
        assert_eq!(status, 429, "{answer}");
    });
}

#[test]
fn a_batch_is_charged_per_manifest_on_a_real_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::live::Server::start_with_vars(
        dir.path(),
        None,
        false,
        &[("PITFALL_RATE_CHECK_PER_IP", "6")],
    );
    let batch = |n: usize| {
        let manifests = vec![r#"{"manifest_version": 1}"#; n].join(",");
        format!(r#"{{"manifests": [{manifests}]}}"#).into_bytes()
    };
    // Five manifests take five of the six a minute.
    let (status, body) =
        crate::live::exchange(server.addr, "POST", "/v1/check/batch", &[], &batch(5));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // So a batch of two is over, and nothing is taken by its refusal...
    let (status, body) =
        crate::live::exchange(server.addr, "POST", "/v1/check/batch", &[], &batch(2));
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    // ...and one more single check is still admitted, then none.
    let manifest = br#"{"manifest_version": 1}"#;
    let (status, _) = crate::live::exchange(server.addr, "POST", "/v1/check", &[], manifest);
    assert_eq!(status, 200);
    let (status, _) = crate::live::exchange(server.addr, "POST", "/v1/check", &[], manifest);
    assert_eq!(status, 429);
}

#[test]
fn checks_are_rate_limited_per_ip_on_a_real_server_with_retry_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::live::Server::start_with_vars(
        dir.path(),
        None,
        false,
        &[("PITFALL_RATE_CHECK_PER_IP", "4")],
    );
    let manifest = br#"{"manifest_version": 1}"#;
    for i in 0..4 {
        // A made-up token each time: it must not buy a fresh bucket.
        let token = format!("Bearer pft_made-up-{i}");
        let (status, _) = crate::live::exchange(
            server.addr,
            "POST",
            "/v1/check",
            &[("authorization", &token)],
            manifest,
        );
        assert_eq!(status, 200, "check {i}");
    }
    let (status, body) = crate::live::exchange(
        server.addr,
        "POST",
        "/v1/check",
        &[("authorization", "Bearer pft_other")],
        manifest,
    );
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).expect("envelope");
    assert_eq!(answer["error"]["code"], "rate_limited");
    // The Retry-After header says what the envelope says.
    let mut stream = std::net::TcpStream::connect(server.addr).expect("connect");
    let head = format!(
        "POST /v1/check HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        server.addr,
        manifest.len()
    );
    std::io::Write::write_all(&mut stream, head.as_bytes()).expect("write");
    std::io::Write::write_all(&mut stream, manifest).expect("write");
    let mut response = String::new();
    std::io::Read::read_to_string(&mut stream, &mut response).expect("read");
    let retry_after = response
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no Retry-After header: {response}"));
    assert!(
        (1..=15).contains(&retry_after),
        "4 a minute refill one every 15 s; Retry-After {retry_after}"
    );
    // Reads are not limited.
    let (status, _) = server.call("GET", "/healthz", None, b"");
    assert_eq!(status, 200);
}

#[test]
fn a_maintainer_cannot_approve_their_own_rule_unless_the_sole_one_with_the_flag() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        for db in databases().await {
            let backend = db.backend();
            let mut h = Harness::new(&db, ServerLimits::default()).await;
            let mia_token = h.tokens["maintainer"].clone();
            let mia = h.store.authenticate(&mia_token).await.expect("auth").expect("mia");
            let publish_as_mia = |id: &str| {
                let mut new = h.template.clone();
                new.meta.id = id.to_owned();
                new.meta.version = "1.0.0".to_owned();
                let store = h.store.clone();
                let mia = mia.clone();
                async move {
                    store
                        .insert_version(new, &Actor::Account(mia), VersionState::Pending)
                        .await
                        .expect("mia's version");
                }
            };
            let approve = |id: &str| format!("/v1/rules/{id}/versions/1.0.0/approve");

            // Two reviewers (root and mia): mia's own rule needs root.
            publish_as_mia("mias-rule").await;
            let (status, answer) =
                h.call_empty("POST", &approve("mias-rule"), Some(mia_token.as_str())).await;
            assert_eq!(status, 403, "{backend:?}: {answer}");
            assert_eq!(answer["error"]["code"], "forbidden");
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("another maintainer"))
            );
            let version =
                h.store.version("mias-rule", "1.0.0").await.expect("read").expect("there");
            assert_eq!(version.state, VersionState::Pending, "{backend:?}: nothing changed");
            // Rejecting their own is no risk and stays allowed; approving
            // someone else's is review.
            let root = h.tokens["admin"].clone();
            let (status, answer) =
                h.call_empty("POST", &approve("mias-rule"), Some(root.as_str())).await;
            assert_eq!(status, 200, "{backend:?}: {answer}");

            // The flag does not help while there are two reviewers.
            let flagged =
                ServerLimits { sole_maintainer_self_approval: true, ..ServerLimits::default() };
            h.state = AppState::new(h.state.registry().clone(), flagged.clone());
            publish_as_mia("mias-second").await;
            let (status, _) =
                h.call_empty("POST", &approve("mias-second"), Some(mia_token.as_str())).await;
            assert_eq!(status, 403, "{backend:?}: two reviewers, flag or not");

            // Root steps down: mia is the sole maintainer. Without the flag
            // still refused; with it, allowed.
            let root_account = h.store.account_by_name("root").await.expect("read").expect("root");
            h.store
                .set_role(root_account.id, Role::Contributor, &Actor::System)
                .await
                .expect("demote");
            h.state = AppState::new(h.state.registry().clone(), ServerLimits::default());
            let (status, _) =
                h.call_empty("POST", &approve("mias-second"), Some(mia_token.as_str())).await;
            assert_eq!(status, 403, "{backend:?}: sole maintainer without the flag");
            h.state = AppState::new(h.state.registry().clone(), flagged);
            let (status, answer) =
                h.call_empty("POST", &approve("mias-second"), Some(mia_token.as_str())).await;
            assert_eq!(status, 200, "{backend:?}: sole maintainer with the flag: {answer}");
            h.store.close().await;
        }
    });
}

#[test]
fn a_token_is_bound_by_its_scopes_and_its_expiry() {
    use pitfall_server::store::{Scope, Scopes, TokenGrant};
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        for db in databases().await {
            let backend = db.backend();
            let h = Harness::new(&db, ServerLimits::default()).await;
            let root_id = h.store.account_by_name("root").await.expect("read").expect("root").id;
            let issue = |scopes: &[Scope], expires_at: Option<i64>| {
                let store = h.store.clone();
                let grant = TokenGrant { expires_at, scopes: Scopes::of(scopes.iter().copied()) };
                async move {
                    store
                        .issue_token_with(root_id, "scoped", grant, &Actor::System)
                        .await
                        .expect("token")
                        .0
                }
            };
            let json = |v: Value| serde_json::to_vec(&v).expect("json");

            // An admin's check-only token: no admin power, no publishing.
            let check_only = issue(&[Scope::Check], None).await;
            let (status, answer) =
                h.call_empty("GET", "/v1/audit", Some(check_only.as_str())).await;
            assert_eq!(status, 403, "{backend:?}: {answer}");
            assert!(
                answer["error"]["message"].as_str().is_some_and(|m| m.contains("admin scope")),
                "{answer}"
            );
            let (status, _) = h.call_empty("GET", "/v1/review", Some(check_only.as_str())).await;
            assert_eq!(status, 403, "{backend:?}: review needs the review scope");
            // The same account's full token can.
            let (status, _) =
                h.call_empty("GET", "/v1/audit", Some(h.tokens["admin"].as_str())).await;
            assert_eq!(status, 200);
            let review_only = issue(&[Scope::Review], None).await;
            let (status, _) = h.call_empty("GET", "/v1/review", Some(review_only.as_str())).await;
            assert_eq!(status, 200, "{backend:?}");

            // A token mints only narrower tokens.
            let body = json(json!({"label": "wider", "scopes": ["check", "admin"]}));
            let (status, answer) = h
                .call("POST", "/v1/tokens", Some(check_only.as_str()), "application/json", body)
                .await;
            assert_eq!(status, 403, "{backend:?}: {answer}");
            let body = json(json!({"label": "ci", "scopes": ["check"], "expires_in_days": 2}));
            let (status, answer) = h
                .call(
                    "POST",
                    "/v1/tokens",
                    Some(h.tokens["admin"].as_str()),
                    "application/json",
                    body,
                )
                .await;
            assert_eq!(status, 201, "{backend:?}: {answer}");
            assert_eq!(answer["scopes"], json!(["check"]));
            assert!(answer["expires_at"].as_str().is_some(), "{answer}");
            let body = json(json!({"label": "x", "scopes": ["sudo"]}));
            let (status, answer) = h
                .call(
                    "POST",
                    "/v1/tokens",
                    Some(h.tokens["admin"].as_str()),
                    "application/json",
                    body,
                )
                .await;
            assert_eq!((status, answer["error"]["code"].as_str()), (400, Some("invalid_scope")));

            // Expired: refused outright, like a revoked token.
            let past = issue(&Scope::ALL, Some(1_000)).await;
            let (status, answer) = h.call_empty("GET", "/v1/whoami", Some(past.as_str())).await;
            assert_eq!(status, 401, "{backend:?}: {answer}");
            // One that expires later works, and what it mints expires no later.
            let soon = now_millis() + 3_600_000;
            let short = issue(&Scope::ALL, Some(soon)).await;
            let (status, _) = h.call_empty("GET", "/v1/whoami", Some(short.as_str())).await;
            assert_eq!(status, 200);
            let body = json(json!({"label": "longer", "expires_in_days": 30}));
            let (status, answer) =
                h.call("POST", "/v1/tokens", Some(short.as_str()), "application/json", body).await;
            assert_eq!(status, 201, "{answer}");
            let id = answer["id"].as_i64().expect("id");
            let minted = h.store.token(id).await.expect("read").expect("token");
            assert_eq!(minted.expires_at, Some(soon), "{backend:?}: capped at the caller's expiry");
            h.store.close().await;
        }
    });
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).expect("millis"))
}

/// The history and answers as of a past revision are reads open to
/// anyone (a served version is public, and stays public once yanked):
/// every kind of caller, a bad or revoked token included, gets the same
/// answer, and none of their calls changes the store.
#[test]
fn the_history_and_past_answers_are_the_same_for_every_caller_and_write_nothing() {
    fn timeless(mut answer: Value) -> Value {
        for one in answer["results"].as_array_mut().into_iter().flatten() {
            one["stats"]["elapsed_us"] = json!(0);
        }
        if answer["stats"].is_object() {
            answer["stats"]["elapsed_us"] = json!(0);
        }
        answer
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (callers, _) = matrix();
    runtime.block_on(async {
        for db in databases().await {
            let backend = db.backend().as_str();
            let h = Harness::new(&db, ServerLimits::default()).await;
            h.alice_version("authz-history", "1.0.0").await;
            h.store
                .set_state("authz-history", "1.0.0", VersionState::Approved, &Actor::System, None)
                .await
                .expect("approve");
            h.state.registry().refresh().await.expect("refresh");
            let manifest = br#"{"manifest_version": 1, "host": {"arch": "aarch64"}}"#.to_vec();
            let batch = br#"{"manifests": [{"manifest_version": 1}]}"#.to_vec();
            let reads: [(&str, &str, Vec<u8>); 6] = [
                ("GET", "/v1/revisions", vec![]),
                ("GET", "/v1/revisions/1", vec![]),
                ("POST", "/v1/check?revision=1", manifest.clone()),
                ("POST", "/v1/check?revision=2", manifest.clone()),
                ("POST", "/v1/check/batch?revision=0", batch.clone()),
                ("POST", "/v1/check?revision=99", manifest.clone()),
            ];
            for (method, path, body) in reads {
                let mut first: Option<(u16, Value)> = None;
                for caller in &callers {
                    let token = h.tokens.get(caller.as_str()).cloned();
                    let before = snapshot(&h.store, None).await;
                    let (status, answer) = h
                        .call(method, path, token.as_deref(), "application/json", body.clone())
                        .await;
                    assert_eq!(
                        before,
                        snapshot(&h.store, None).await,
                        "{backend}: {path} as {caller} wrote"
                    );
                    let answer = timeless(answer);
                    match &first {
                        None => {
                            let expected = if path.ends_with("=99") { 404 } else { 200 };
                            assert_eq!(status, expected, "{backend}: {path} as {caller}: {answer}");
                            first = Some((status, answer));
                        }
                        Some(first) => assert_eq!(
                            (status, &answer),
                            (first.0, &first.1),
                            "{backend}: {path} as {caller} differs"
                        ),
                    }
                }
            }
            h.store.close().await;
        }
    });
}
