//! Watches with real processes: a loopback webhook receiver, approvals and
//! yanks through the API, the server killed with SIGKILL between the
//! outbox write and the delivery, two replicas on one PostgreSQL; and the
//! fact index's cost, counted on 20,000 stored manifests.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::{databases, postgres};
use crate::live::Server;
use crate::processes::admin_token;

const SECRET: &str = "a-webhook-secret-for-tests";
const RULE: &str = "vllm-bf16-needs-sm80";

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    status_answered: u16,
    event_id: String,
    signature: String,
    body: Vec<u8>,
}

/// A webhook receiver on loopback: answers 500 to its first `fail_first`
/// requests, then 200; keeps every request.
struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start(fail_first: usize) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let sink = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut headers = BTreeMap::new();
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue;
                }
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                    }
                }
                let length: usize =
                    headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
                let mut body = vec![0u8; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let mut got = sink.lock().unwrap_or_else(|p| p.into_inner());
                let status = if got.len() < fail_first { 500 } else { 200 };
                got.push(Received {
                    status_answered: status,
                    event_id: headers.get("pitfall-event-id").cloned().unwrap_or_default(),
                    signature: headers.get("pitfall-signature").cloned().unwrap_or_default(),
                    body,
                });
                drop(got);
                let reason = if status == 200 { "OK" } else { "Internal Server Error" };
                let _ = stream.write_all(
                    format!("HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .as_bytes(),
                );
            }
        });
        Receiver { addr, got }
    }

    fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The requests answered 200, once `count` of them arrived (bounded wait).
    fn await_delivered(&self, count: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let ok: Vec<Received> =
                self.received().into_iter().filter(|r| r.status_answered == 200).collect();
            if ok.len() >= count {
                return ok;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {count} deliveries after {within:?}: {:?}",
                ok.len(),
                self.received()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Checks `Pitfall-Signature: t=..,v1=..` against the body with the secret.
fn verify(received: &Received, secret: &str) {
    let (t, v1) = received
        .signature
        .split_once(',')
        .and_then(|(t, v)| Some((t.strip_prefix("t=")?, v.strip_prefix("v1=")?)))
        .unwrap_or_else(|| panic!("malformed signature {:?}", received.signature));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let t: i64 = t.parse().expect("a timestamp");
    assert!((now - t).abs() < 300, "the timestamp is current: {t} vs {now}");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{t}.").as_bytes());
    mac.update(&received.body);
    let expected: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(v1, expected, "the signature verifies with the secret");
    let mut wrong = Hmac::<Sha256>::new_from_slice(b"another secret").expect("key");
    wrong.update(format!("{t}.").as_bytes());
    wrong.update(&received.body);
    let other: String = wrong.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_ne!(v1, other, "and not with another");
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json")
}

fn module(crate_name: &str) -> &'static [u8] {
    pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == crate_name)
        .unwrap_or_else(|| panic!("{crate_name} is bundled"))
        .wasm
}

/// Watch settings for tests: loopback receivers, fast retries.
fn watch_env(workers: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PITFALL_WATCH_ALLOW_PRIVATE_URLS", "true".into()),
        ("PITFALL_WATCH_BACKOFF_BASE_MS", "100".into()),
        ("PITFALL_WATCH_BACKOFF_MAX_MS", "400".into()),
        ("PITFALL_WATCH_TIMEOUT_MS", "3000".into()),
        ("PITFALL_WATCH_WORKERS", workers.into()),
    ]
}

fn start(data_dir: &Path, url: Option<&str>, workers: &str) -> Server {
    Server::start_with_vars(data_dir, url, false, &watch_env(workers))
}

/// Creates a watch of the g5g machine as `token`; its id.
fn create_watch(server: &Server, token: &str, webhook: &str) -> i64 {
    create_named_watch(server, token, webhook, "g5g fleet")
}

/// [`create_watch`] with its name.
fn create_named_watch(server: &Server, token: &str, webhook: &str, name: &str) -> i64 {
    let body = json!({
        "name": name,
        "webhook_url": webhook,
        "secret": SECRET,
        "manifests": {"g5g-1": fixture("g5g-gemma4-vllm0271.json")},
    });
    let (status, watch) =
        server.call("POST", "/v1/watches", Some(token), body.to_string().as_bytes());
    assert_eq!(status, 201, "{watch}");
    assert!(watch.get("secret").is_none(), "a secret given is never echoed");
    watch["id"].as_i64().expect("id")
}

/// Publishes the rule as `author` and approves it as `reviewer`; its version.
fn publish_and_approve(server: &Server, author: &str, reviewer: &str) -> String {
    let (status, version) =
        server.call("POST", "/v1/rules", Some(author), module("rule-vllm-bf16-needs-sm80"));
    assert_eq!(status, 201, "{version}");
    let version = version["version"].as_str().expect("version").to_owned();
    let (status, approved) = server.call(
        "POST",
        &format!("/v1/rules/{RULE}/versions/{version}/approve"),
        Some(reviewer),
        b"",
    );
    assert_eq!(status, 200, "{approved}");
    version
}

/// Waits until the watch has `count` deliveries in its log.
fn await_enqueued(server: &Server, token: &str, watch: i64, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, log) =
            server.call("GET", &format!("/v1/watches/{watch}/deliveries"), Some(token), b"");
        assert_eq!(status, 200, "{log}");
        let log = log.as_array().cloned().unwrap_or_default();
        if log.len() >= count {
            return log;
        }
        assert!(Instant::now() < deadline, "{} of {count} events enqueued: {log:?}", log.len());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn body(received: &Received) -> Value {
    serde_json::from_slice(&received.body).expect("a JSON body")
}

/// Approve then yank, the receiver failing its first three requests: two
/// events, each delivered once, signed, in order; the log shows the tries.
fn approve_and_yank_notify_once_each(database_url: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mia = admin_token(dir.path(), database_url, "mia", "maintainer");
    let alice = admin_token(dir.path(), database_url, "alice", "contributor");
    let receiver = Receiver::start(3);
    let server = start(dir.path(), database_url, "2");
    let watch = create_watch(&server, &alice, &receiver.url());

    let version = publish_and_approve(&server, &alice, &mia);
    await_enqueued(&server, &alice, watch, 1);
    let (status, yanked) =
        server.call("POST", &format!("/v1/rules/{RULE}/versions/{version}/yank"), Some(&mia), b"");
    assert_eq!(status, 200, "{yanked}");

    let delivered = receiver.await_delivered(2, Duration::from_secs(30));
    // Nothing more comes: each event once.
    std::thread::sleep(Duration::from_millis(1500));
    let all = receiver.received();
    assert_eq!(all.len(), 5, "three failures, then each event once: {all:?}");
    assert_eq!(delivered.len(), 2);
    // In order: the first event was tried until it went through, and only
    // then the second.
    let ids: Vec<&str> = all.iter().map(|r| r.event_id.as_str()).collect();
    assert_eq!(ids[..4], [ids[0]; 4], "{ids:?}");
    assert_ne!(ids[4], ids[0]);
    for r in &all {
        verify(r, SECRET);
    }

    let approved = body(&delivered[0]);
    assert_eq!(approved["type"], "findings");
    assert_eq!(approved["event_id"], delivered[0].event_id);
    assert!(
        approved["revision_before"].as_i64() < approved["revision_after"].as_i64(),
        "{approved}"
    );
    let changes = approved["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{approved}");
    assert_eq!(changes[0]["label"], "g5g-1");
    let new: Vec<&str> = changes[0]["new"]
        .as_array()
        .expect("new")
        .iter()
        .filter_map(|f| f["rule_id"].as_str())
        .collect();
    assert_eq!(new, [RULE], "{approved}");
    assert_eq!(changes[0]["gone"], json!([]));
    assert!(changes[0]["new"][0]["remedies"].is_array(), "a new finding comes whole");

    let yanked = body(&delivered[1]);
    assert_eq!(yanked["revision_before"], approved["revision_after"], "{yanked}");
    let gone: Vec<&str> = yanked["changes"][0]["gone"]
        .as_array()
        .expect("gone")
        .iter()
        .filter_map(|f| f["rule_id"].as_str())
        .collect();
    assert_eq!(gone, [RULE], "{yanked}");
    assert_eq!(yanked["changes"][0]["new"], json!([]));

    // The delivery log: newest first, the tries with their statuses.
    let log = await_enqueued(&server, &alice, watch, 2);
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|d| d["state"] == "delivered"), "{log:?}");
    let statuses: Vec<i64> = log[1]["tries"]
        .as_array()
        .expect("tries")
        .iter()
        .filter_map(|t| t["status"].as_i64())
        .collect();
    assert_eq!(statuses, [500, 500, 500, 200]);
    assert_eq!(log[1]["attempts"], 4);

    // The watch's findings are current: the rule is gone again.
    let (_, shown) = server.call("GET", &format!("/v1/watches/{watch}"), Some(&alice), b"");
    assert_eq!(shown["labels"][0]["findings"], json!([]), "{shown}");
    assert_eq!(shown["failing"], false);

    // A ping goes out too, and only the owner (or an admin) sees the watch.
    let (status, ping) =
        server.call("POST", &format!("/v1/watches/{watch}/test"), Some(&alice), b"");
    assert_eq!(status, 202, "{ping}");
    let delivered = receiver.await_delivered(3, Duration::from_secs(10));
    assert_eq!(delivered[2].event_id, ping["event_id"].as_str().expect("id"));
    assert_eq!(body(&delivered[2])["type"], "ping");
    verify(&delivered[2], SECRET);
    let (status, _) = server.call("GET", &format!("/v1/watches/{watch}"), Some(&mia), b"");
    assert_eq!(status, 404, "another account's watch is not found");
    let (status, list) = server.call("GET", "/v1/watches", Some(&mia), b"");
    assert_eq!((status, list), (200, json!([])));
}

#[test]
fn a_receiver_gets_one_signed_notification_per_change_in_order_on_sqlite() {
    approve_and_yank_notify_once_each(None);
}

#[test]
fn a_receiver_gets_one_signed_notification_per_change_in_order_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    approve_and_yank_notify_once_each(Some(db.url()));
    drop(db);
}

/// A receiver that never answers 2xx: the delivery is retried with
/// backoff until its window ends (1.5 s here, 24 h by default), then given
/// up, and the watch is marked failing.
#[test]
fn a_delivery_failing_past_its_window_is_given_up_and_the_watch_marked_failing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), None, "alice", "contributor");
    let receiver = Receiver::start(usize::MAX);
    let mut env = watch_env("2");
    env.push(("PITFALL_WATCH_RETRY_FOR_MS", "1500".into()));
    let server = Server::start_with_vars(dir.path(), None, false, &env);
    let watch = create_watch(&server, &alice, &receiver.url());
    let (status, _) = server.call("POST", &format!("/v1/watches/{watch}/test"), Some(&alice), b"");
    assert_eq!(status, 202);
    let deadline = Instant::now() + Duration::from_secs(20);
    let log = loop {
        let (_, log) =
            server.call("GET", &format!("/v1/watches/{watch}/deliveries"), Some(&alice), b"");
        if log[0]["state"] == "failed" {
            break log;
        }
        assert!(Instant::now() < deadline, "not given up: {log}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let tries = log[0]["tries"].as_array().expect("tries");
    assert!(tries.len() >= 3, "retried before giving up: {log}");
    assert!(tries.iter().all(|t| t["status"] == 500), "{log}");
    assert_eq!(receiver.received().len(), tries.len(), "each try reached the receiver once");
    // The tries are logged in the order they were made.
    let at: Vec<i64> = tries.iter().filter_map(|t| t["at"].as_i64()).collect();
    assert!(at.windows(2).all(|w| w[1] >= w[0]), "{at:?}");
    let (_, shown) = server.call("GET", &format!("/v1/watches/{watch}"), Some(&alice), b"");
    assert_eq!(shown["failing"], true, "{shown}");
    assert_eq!(shown["failed_deliveries"], 1, "{shown}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(receiver.received().len(), tries.len(), "nothing after giving up");
}

/// The event is in the outbox when the server dies (it runs no delivery
/// worker, so it cannot have sent it); the next start delivers it once.
fn kill_between_outbox_and_delivery(database_url: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mia = admin_token(dir.path(), database_url, "mia", "maintainer");
    let alice = admin_token(dir.path(), database_url, "alice", "contributor");
    let receiver = Receiver::start(0);
    let server = start(dir.path(), database_url, "0");
    let watch = create_watch(&server, &alice, &receiver.url());
    publish_and_approve(&server, &alice, &mia);
    let log = await_enqueued(&server, &alice, watch, 1);
    assert_eq!(log[0]["state"], "pending");
    server.kill();
    assert!(receiver.received().is_empty(), "nothing was sent before the kill");

    let again = start(dir.path(), database_url, "2");
    let delivered = receiver.await_delivered(1, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(receiver.received().len(), 1, "delivered once: {:?}", receiver.received());
    assert_eq!(delivered[0].event_id, log[0]["event_id"].as_str().expect("id"));
    verify(&delivered[0], SECRET);
    // The restart did not decide the transition again.
    let log = await_enqueued(&again, &alice, watch, 1);
    assert_eq!(log.len(), 1, "{log:?}");
}

#[test]
fn kill_9_between_outbox_write_and_delivery_loses_and_repeats_nothing() {
    kill_between_outbox_and_delivery(None);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    kill_between_outbox_and_delivery(Some(db.url()));
    drop(db);
}

/// Two replicas, both evaluating and delivering, on one database: the
/// approval and the yank are each decided once and every event (pings
/// included, many at once) is delivered once.
#[test]
fn two_replicas_on_postgres_deliver_each_event_once() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    let url = Some(db.url());
    let (dir_a, dir_b) =
        (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let mia = admin_token(dir_a.path(), url, "mia", "maintainer");
    let alice = admin_token(dir_a.path(), url, "alice", "contributor");
    let receiver = Receiver::start(0);
    // One registry, one key: a secret sealed by one replica is opened by
    // whichever delivers.
    let key_file = dir_a.path().join("shared-watch-secret-key");
    std::fs::write(&key_file, format!("{}\n", "5e".repeat(32))).expect("key file");
    let mut env = watch_env("4");
    env.push(("PITFALL_SECRET_KEY_FILE", key_file.display().to_string()));
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Server::start_with_vars(dir_a.path(), url, false, &env));
        let b = s.spawn(|| Server::start_with_vars(dir_b.path(), url, false, &env));
        (a.join().expect("a"), b.join().expect("b"))
    });
    let watch = create_watch(&a, &alice, &receiver.url());
    let version = publish_and_approve(&a, &alice, &mia);
    await_enqueued(&b, &alice, watch, 1);
    let (status, _) =
        b.call("POST", &format!("/v1/rules/{RULE}/versions/{version}/yank"), Some(&mia), b"");
    assert_eq!(status, 200);
    await_enqueued(&a, &alice, watch, 2);
    let pings = 20;
    for i in 0..pings {
        let server = if i % 2 == 0 { &a } else { &b };
        let (status, _) =
            server.call("POST", &format!("/v1/watches/{watch}/test"), Some(&alice), b"");
        assert_eq!(status, 202);
    }
    receiver.await_delivered(2 + pings, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(2000));
    let all = receiver.received();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &all {
        *counts.entry(r.event_id.as_str()).or_default() += 1;
    }
    assert_eq!(all.len(), 2 + pings, "{counts:?}");
    assert!(counts.values().all(|&n| n == 1), "an event delivered twice: {counts:?}");
    let kinds: Vec<String> =
        all.iter().map(|r| body(r)["type"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(kinds.iter().filter(|k| *k == "findings").count(), 2, "{kinds:?}");
    // Both replicas delivered some (workers race on one outbox), or one
    // did all: either way once. Each replica's log says which it sent.
    let sent = |s: &Server| s.log().matches("webhook delivered").count();
    assert_eq!(sent(&a) + sent(&b), 2 + pings);
    drop((a, b));
    drop(db);
}

/// The database URL a test server uses: `database_url`, else the SQLite
/// file in its data dir.
fn db_url(data_dir: &Path, database_url: Option<&str>) -> String {
    database_url.map_or_else(
        || format!("sqlite://{}", data_dir.join("pitfall.db").display()),
        str::to_owned,
    )
}

/// Runs `f` on a pool of the database at `url`.
fn with_pool<T>(url: &str, f: impl AsyncFnOnce(&sqlx::AnyPool) -> T) -> T {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(url).await.expect("connect");
        let value = f(&pool).await;
        pool.close().await;
        value
    })
}

/// The secret column of watch `id`, as stored.
fn stored_secret(url: &str, id: i64) -> String {
    use sqlx::Row as _;
    with_pool(url, async |pool| {
        let row = sqlx::query("SELECT secret FROM watches WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("a watch row");
        row.get::<String, _>(0)
    })
}

/// Writes `text` into watch `id`'s secret column, as another writer would.
fn store_secret(url: &str, id: i64, text: &str) {
    with_pool(url, async |pool| {
        let done = sqlx::query("UPDATE watches SET secret = $1 WHERE id = $2")
            .bind(text)
            .bind(id)
            .execute(pool)
            .await
            .expect("update");
        assert_eq!(done.rows_affected(), 1);
    });
}

/// Pings the watch; its delivery log once the ping's delivery has `tries`
/// tries, checking that its state agrees with its last try.
fn ping_and_await_tries(server: &Server, token: &str, watch: i64, tries: usize) -> Value {
    let (status, ping) =
        server.call("POST", &format!("/v1/watches/{watch}/test"), Some(token), b"");
    assert_eq!(status, 202, "{ping}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, log) =
            server.call("GET", &format!("/v1/watches/{watch}/deliveries"), Some(token), b"");
        let ours = log
            .as_array()
            .and_then(|l| l.iter().find(|d| d["event_id"] == ping["event_id"]))
            .cloned();
        // The log is read as of one moment: a try shows with the state it
        // left its delivery in (`watch_store` tests it under races).
        if let Some(delivery) =
            ours.filter(|d| d["tries"].as_array().is_some_and(|t| t.len() >= tries))
        {
            let last =
                delivery["tries"].as_array().and_then(|t| t.last()).cloned().unwrap_or_default();
            let succeeded = last["status"].as_u64().is_some_and(|s| (200..300).contains(&s));
            assert_eq!(succeeded, delivery["state"] == "delivered", "{delivery}");
            return delivery;
        }
        assert!(Instant::now() < deadline, "{tries} tries not made: {log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A watch's secret at rest: sealed by create and left sealed by a
/// change, so the row holds nothing a receiver's key could be read from;
/// deliveries still verify with the secret given. A row stored before
/// sealing existed still delivers, and a start seals it unless an earlier
/// one recorded that none is left; one sealed under another key fails
/// each try with the reason recorded and logged, sends nothing, and the
/// server goes on.
fn secrets_are_sealed_at_rest(database_url: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), database_url, "alice", "contributor");
    let receiver = Receiver::start(0);
    let server = start(dir.path(), database_url, "2");
    let url = db_url(dir.path(), database_url);
    let watch = create_watch(&server, &alice, &receiver.url());

    let created = stored_secret(&url, watch);
    assert!(created.starts_with("sealed:v2:"), "{created}");
    assert!(!created.contains(SECRET), "the row holds the secret in the clear");
    let (status, changed) = server.call(
        "PATCH",
        &format!("/v1/watches/{watch}"),
        Some(&alice),
        json!({"webhook_url": format!("{}?changed", receiver.url()), "min_severity": "info"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 200, "{changed}");
    assert!(changed.get("secret").is_none(), "a change never answers the secret: {changed}");
    assert_eq!(stored_secret(&url, watch), created, "a change leaves the sealed secret as it is");

    let sealed = ping_and_await_tries(&server, &alice, watch, 1);
    assert_eq!(sealed["state"], "delivered", "{sealed}");
    verify(&receiver.await_delivered(1, Duration::from_secs(10))[0], SECRET);

    // As a row written before sealing existed holds it.
    let legacy = "a-legacy-secret-in-the-clear";
    store_secret(&url, watch, legacy);
    let delivery = ping_and_await_tries(&server, &alice, watch, 1);
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    verify(&receiver.await_delivered(2, Duration::from_secs(10))[1], legacy);

    // A start reads the table only while no start recorded that none is
    // in the clear (the first start did; no server writes one since): the
    // row is left. A database from before the record has none, and the
    // start seals it; deliveries still sign with it.
    drop(server);
    let server = start(dir.path(), database_url, "2");
    assert_eq!(stored_secret(&url, watch), legacy, "a start after the record reads no row");
    drop(server);
    with_pool(&url, async |pool| {
        sqlx::query("UPDATE watch_state SET secrets_sealed_under = NULL")
            .execute(pool)
            .await
            .expect("the record dropped")
    });
    let server = start(dir.path(), database_url, "2");
    let resealed = stored_secret(&url, watch);
    assert!(resealed.starts_with("sealed:v2:"), "sealed at start: {resealed}");
    assert!(!resealed.contains(legacy), "the row holds the secret in the clear");
    let delivery = ping_and_await_tries(&server, &alice, watch, 1);
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    verify(&receiver.await_delivered(3, Duration::from_secs(10))[2], legacy);

    // Sealed by a registry with another key (a replica without the shared
    // --secret-key-file).
    let foreign =
        pitfall_server::secret_box::SealingKey::from_bytes([7; 32]).seal(SECRET).expect("sealed");
    store_secret(&url, watch, foreign.as_stored());
    let delivery = ping_and_await_tries(&server, &alice, watch, 2);
    let tries = delivery["tries"].as_array().expect("tries");
    for t in tries {
        let error = t["error"].as_str().unwrap_or_default();
        assert!(error.contains("does not open with this server's secret key"), "{delivery}");
        assert_eq!(t["status"], Value::Null, "nothing was sent: {delivery}");
    }
    assert_eq!(delivery["state"], "pending", "retried, as another replica may hold the key");
    assert_eq!(receiver.received().len(), 3, "nothing reached the receiver");
    let (status, _) = server.call("GET", "/healthz", None, b"");
    assert_eq!(status, 200, "the server goes on");
    let log = server.log();
    assert!(log.contains("does not open with this server's secret key"), "the reason is logged");
    assert!(!log.contains("panicked"), "{log}");
    for secret in [SECRET, legacy] {
        assert!(!log.contains(secret), "a secret reached the log");
    }
}

#[test]
fn a_watch_secret_is_sealed_at_rest_and_old_or_foreign_rows_are_handled_on_sqlite() {
    secrets_are_sealed_at_rest(None);
}

#[test]
fn a_watch_secret_is_sealed_at_rest_and_old_or_foreign_rows_are_handled_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    secrets_are_sealed_at_rest(Some(db.url()));
    drop(db);
}

/// Runs `pitfall-server admin secret-key rotate` on `data_dir` with these
/// variables (DATABASE_URL among them, or the data dir's SQLite file).
fn rotate(
    data_dir: &Path,
    database_url: Option<&str>,
    env: &[(&str, String)],
) -> std::process::Output {
    let mut command = std::process::Command::new(crate::live::SERVER);
    command
        .arg("--data-dir")
        .arg(data_dir)
        .args(["admin", "secret-key", "rotate"])
        .env_remove("DATABASE_URL")
        .env_remove("PITFALL_SECRET_KEY_FILE")
        .envs(env.iter().map(|(k, v)| (*k, v)));
    if let Some(url) = database_url {
        command.env("DATABASE_URL", url);
    }
    command.output().expect("run admin secret-key rotate")
}

/// The id of the key a stored secret names (`sealed:v2:<id>:...`).
fn key_id_of(stored: &str) -> String {
    stored
        .strip_prefix("sealed:v2:")
        .and_then(|r| r.split(':').next())
        .unwrap_or_default()
        .to_owned()
}

/// A delivery the ping made, once: one try, answered 200.
fn delivered_at_once(server: &Server, token: &str, watch: i64) {
    let delivery = ping_and_await_tries(server, token, watch, 1);
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    assert_eq!(delivery["tries"].as_array().map(Vec::len), Some(1), "no failed try: {delivery}");
}

/// A rotation under a running server: `admin secret-key rotate` moves the
/// key to `watch-secret-key.previous` and writes a new one. The server,
/// started before, still delivers the watch sealed under the old key,
/// seals a new watch under the new key (it reads the files before it
/// seals) and delivers it. A second rotation is refused while a secret is
/// not re-sealed; the restart re-seals it and says the previous key is no
/// longer needed; then a rotation goes through. Every try succeeds, every
/// request verifies with the secret given.
fn rotation_fails_no_delivery(database_url: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), database_url, "alice", "contributor");
    let receiver = Receiver::start(0);
    let server = start(dir.path(), database_url, "2");
    let url = db_url(dir.path(), database_url);
    let first = create_named_watch(&server, &alice, &receiver.url(), "first");
    let old_id = key_id_of(&stored_secret(&url, first));
    delivered_at_once(&server, &alice, first);

    let rotated = rotate(dir.path(), database_url, &[]);
    assert!(rotated.status.success(), "{}", String::from_utf8_lossy(&rotated.stderr));
    let new_id = String::from_utf8(rotated.stdout).expect("utf-8").trim().to_owned();
    assert!(new_id.len() == 16 && new_id != old_id, "{new_id:?} after {old_id:?}");
    let told = String::from_utf8_lossy(&rotated.stderr).into_owned();
    assert!(told.contains("Restart every server"), "{told}");
    let key_file = dir.path().join("watch-secret-key");
    let previous = dir.path().join("watch-secret-key.previous");
    for file in [&key_file, &previous] {
        let key = std::fs::read_to_string(file).expect("a key file");
        assert!(!told.contains(key.trim()) && !new_id.contains(key.trim()), "a key was printed");
    }

    // The server from before the rotation.
    delivered_at_once(&server, &alice, first);
    let second = create_named_watch(&server, &alice, &receiver.url(), "second");
    assert_eq!(key_id_of(&stored_secret(&url, second)), new_id, "sealed under the new key");
    delivered_at_once(&server, &alice, second);
    assert_eq!(key_id_of(&stored_secret(&url, first)), old_id, "re-sealed only at a start");

    // The first watch still needs the previous key: no second rotation.
    let key_text = std::fs::read_to_string(&key_file).expect("key");
    let refused = rotate(dir.path(), database_url, &[]);
    assert_eq!(refused.status.code(), Some(2));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("1 watch secret(s) are not yet sealed under the current key"), "{why}");
    assert_eq!(std::fs::read_to_string(&key_file).expect("key"), key_text, "nothing written");

    drop(server);
    let server = start(dir.path(), database_url, "2");
    assert_eq!(key_id_of(&stored_secret(&url, first)), new_id, "the start re-sealed it");
    assert!(server.log().contains("the previous key file is no longer needed"), "{}", server.log());
    delivered_at_once(&server, &alice, first);
    delivered_at_once(&server, &alice, second);
    let again = rotate(dir.path(), database_url, &[]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));

    let all = receiver.received();
    assert_eq!(all.len(), 5, "each ping once: {all:?}");
    for r in &all {
        assert_eq!(r.status_answered, 200);
        verify(r, SECRET);
    }
    assert!(!server.log().contains("does not open"), "{}", server.log());
}

#[test]
fn a_secret_key_rotation_under_a_running_server_fails_no_delivery_on_sqlite() {
    rotation_fails_no_delivery(None);
}

#[test]
fn a_secret_key_rotation_under_a_running_server_fails_no_delivery_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    rotation_fails_no_delivery(Some(db.url()));
    drop(db);
}

/// Two replicas sharing one key file through a rotation: A restarts and
/// re-seals every secret under the new key; B, started before and the only
/// one delivering, meets the new key, reads the files again and delivers
/// at the first try; a watch B makes then is sealed under the new key.
/// The rotation itself refuses a SQLite file that is not there (it reads
/// the registry's database first).
#[test]
fn replicas_sharing_the_key_file_agree_through_a_rotation_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    let url = Some(db.url());
    let (dir_a, dir_b) =
        (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let alice = admin_token(dir_a.path(), url, "alice", "contributor");
    let receiver = Receiver::start(0);
    let keys = tempfile::tempdir().expect("tempdir");
    let key_file = keys.path().join("watch-secret-key");
    std::fs::write(&key_file, format!("{}\n", "5e".repeat(32))).expect("key file");
    let shared = ("PITFALL_SECRET_KEY_FILE", key_file.display().to_string());
    let env = |workers: &str| {
        let mut env = watch_env(workers);
        env.push(shared.clone());
        env
    };
    let a = Server::start_with_vars(dir_a.path(), url, false, &env("0"));
    let b = Server::start_with_vars(dir_b.path(), url, false, &env("2"));
    let first = create_named_watch(&a, &alice, &receiver.url(), "first");
    delivered_at_once(&a, &alice, first);

    let no_database = rotate(dir_a.path(), None, std::slice::from_ref(&shared));
    assert_eq!(no_database.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_database.stderr).contains("set DATABASE_URL"));
    assert!(!dir_a.path().join("pitfall.db").exists(), "no database made");
    let rotated = rotate(dir_a.path(), url, std::slice::from_ref(&shared));
    assert!(rotated.status.success(), "{}", String::from_utf8_lossy(&rotated.stderr));
    let new_id = String::from_utf8(rotated.stdout).expect("utf-8").trim().to_owned();

    drop(a);
    let a = Server::start_with_vars(dir_a.path(), url, false, &env("0"));
    assert_eq!(key_id_of(&stored_secret(db.url(), first)), new_id, "A's start re-sealed it");
    assert!(!b.log().contains("the watch secret key files changed"), "B has read nothing yet");
    delivered_at_once(&a, &alice, first);
    assert!(b.log().contains("the watch secret key files changed"), "{}", b.log());
    let second = create_named_watch(&b, &alice, &receiver.url(), "second");
    assert_eq!(key_id_of(&stored_secret(db.url(), second)), new_id, "B sealed under the new key");
    delivered_at_once(&a, &alice, second);
    assert_eq!(b.log().matches("webhook delivered").count(), 3, "{}", b.log());
    for r in receiver.received() {
        assert_eq!(r.status_answered, 200);
        verify(&r, SECRET);
    }
    drop((a, b));
    drop(db);
}

/// The index's promise, counted: a rule whose selectors admit 1% of
/// 20,000 stored manifests is evaluated on those 1% only, though half of
/// the fleet lists the rule's package.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_rule_evaluates_only_the_manifests_its_selectors_admit() {
    use pitfall_server::store::{Actor, NewWatch, NewWatchManifest, Store, VersionState};
    for db in databases().await {
        let store = Store::connect(db.url()).await.expect("store");
        let engine =
            pitfall_engine::Engine::new(pitfall_engine::Limits::default()).expect("engine");
        // Another rule is served already, so the cursor has a set to compare with.
        let other = module("rule-aarch64-official-image-needs-sm80");
        pitfall_server::registry::seed_modules(
            &store,
            &engine,
            vec![
                *pitfall_bundled_rules::MODULES.iter().find(|m| m.wasm == other).expect("bundled"),
            ],
        )
        .await
        .expect("seed");
        let registry = Arc::new(
            pitfall_server::Registry::open(
                store.clone(),
                engine.clone(),
                pitfall_server::secret_box::SealingKey::generate().expect("sealing key"),
            )
            .await
            .expect("registry"),
        );
        let account = store
            .create_account("fleet", pitfall_server::store::Role::Contributor, &Actor::System)
            .await
            .expect("account");
        // 20,000 machines: 200 with vLLM on a T4 (capability 7.5, what the
        // rule's `capability:<8.0` admits), 9,800 with vLLM on an H100
        // (9.0), 10,000 without vLLM.
        let manifest = |i: usize| -> String {
            let (gpu, cc, packages) = match i % 100 {
                0 => ("T4", "7.5", json!([{"name": "vllm", "version": "0.27.1"}])),
                1..50 => ("H100", "9.0", json!([{"name": "vllm", "version": "0.27.1"}])),
                _ => ("T4", "7.5", json!([{"name": "torch", "version": "2.4.0"}])),
            };
            json!({"manifest_version": 1, "packages": packages,
                   "accelerators": [{"vendor": "nvidia", "model": gpu, "compute_capability": cc, "count": 1}],
                   "workload": {"dtype": "bfloat16"}})
            .to_string()
        };
        let revision = store.revision().await.expect("revision");
        for w in 0..2 {
            let manifests = (0..10_000)
                .map(|i| NewWatchManifest {
                    label: format!("host-{i}"),
                    manifest: manifest(w * 10_000 + i),
                    findings: Vec::new(),
                })
                .collect();
            store
                .create_watch(
                    account.id,
                    NewWatch {
                        name: format!("fleet {w}"),
                        webhook_url: "https://hooks.example.com/p".into(),
                        secret: registry.secret_keys().seal(SECRET).expect("sealed"),
                        min_severity: "warning".into(),
                        manifests,
                        evaluated_revision: revision,
                    },
                )
                .await
                .expect("watch");
        }
        let watcher = pitfall_server::watch::Watcher::new(
            registry.clone(),
            pitfall_server::watch::WatchOptions::from_settings(
                &pitfall_server::ServerLimits::default().watch,
                Duration::from_secs(1),
            ),
        );
        // The first pass only sets the cursor at the served set.
        watcher.pass().await.expect("first pass");

        let accepted = pitfall_server::publish::assess(
            &engine,
            Arc::from(module("rule-vllm-bf16-needs-sm80")),
        )
        .await
        .expect("accepted");
        let version =
            pitfall_server::registry::new_version(&accepted, module("rule-vllm-bf16-needs-sm80"));
        let stored = store
            .insert_version(version, &Actor::System, VersionState::Pending)
            .await
            .expect("stored");
        store
            .set_state(
                &stored.rule_id,
                &stored.version,
                VersionState::Approved,
                &Actor::System,
                None,
            )
            .await
            .expect("approved");
        registry.refresh().await.expect("refresh");
        let stats = watcher.pass().await.expect("pass");
        assert_eq!(stats.changed_rules, 1, "{:?}: {stats:?}", db.backend());
        assert_eq!(stats.indexed, 20_000, "{stats:?}");
        assert_eq!(stats.evaluated, 200, "only the admitted 1% are evaluated: {stats:?}");
        assert_eq!(stats.events, 2, "one event per watch: {stats:?}");
        // Nothing left to do: the transition is not evaluated twice.
        assert_eq!(
            watcher.pass().await.expect("again"),
            pitfall_server::watch::PassStats::default()
        );
        store.close().await;
    }
}
