//! Retries, backoff, `Retry-After` and timeouts on the wire, against the
//! scripted server: what is retried, how long the client waits, and what
//! is never sent twice.

use std::time::{Duration, Instant};

use pitfall_client::{Client, Error, RetryPolicy, TransportKind};

use crate::scripted::{Scripted, Step, answer, busy};

const HEALTH: &str = r#"{"status":"ok","ruleset_revision":"3","rules":1,"store":true}"#;
const VERSION: &str = r#"{"rule_id":"r","version":"1.0.0","state":"pending","sha256":"00","meta":{"id":"r","version":"1.0.0","title":"t","severity":"error","summary":"s","message":"m","applies_to":[],"author":"a","references":[],"remedies":[]},"tests":[],"report":{},"published_by":"alice","created_at":"2026-01-01T00:00:00Z","reviewed_by":null,"review_reason":null,"module_url":"/x"}"#;

/// Quick retries, so tests take milliseconds where the defaults take seconds.
fn quick(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(40),
        max_delay: Duration::from_millis(400),
        max_retry_after: Duration::from_secs(5),
    }
}

fn client(url: &str, retry: RetryPolicy) -> Client {
    Client::builder(url).retry(retry).timeout(Duration::from_secs(5)).build().expect("client")
}

#[test]
fn reads_retry_5xx_and_429_with_growing_backoff_until_an_answer() {
    let server = Scripted::start(vec![
        busy(503, None),
        busy(502, None),
        busy(429, None),
        answer(200, HEALTH),
    ]);
    let health = client(&server.url, quick(4)).health().expect("answered on the fourth try");
    assert_eq!(health.ruleset_revision, "3");
    let seen = server.finish();
    assert_eq!(seen.len(), 4);
    // Equal jitter: retry n waits at least half of 40 ms * 2^n.
    for (n, pair) in seen.windows(2).enumerate() {
        let gap = pair[1].at - pair[0].at;
        let floor = Duration::from_millis(20 << n);
        assert!(gap >= floor, "retry {n} came after {gap:?}, before the backoff floor {floor:?}");
    }
}

#[test]
fn retry_after_is_waited_for() {
    let server = Scripted::start(vec![busy(503, Some("1")), answer(200, HEALTH)]);
    let start = Instant::now();
    client(&server.url, quick(2)).health().expect("answered after the wait");
    assert!(start.elapsed() >= Duration::from_secs(1), "{:?}", start.elapsed());
    assert_eq!(server.finish().len(), 2);
}

#[test]
fn a_retry_after_beyond_the_policy_is_not_waited_for() {
    let server = Scripted::start(vec![busy(503, Some("3600"))]);
    let start = Instant::now();
    let err = client(&server.url, quick(3)).health().expect_err("gives up at once");
    assert_eq!((err.status(), err.code()), (Some(503), Some("busy")));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(server.finish().len(), 1);
}

#[test]
fn the_last_answer_is_returned_when_retries_run_out() {
    let server = Scripted::start(vec![busy(503, None); 3]);
    let err = client(&server.url, quick(2)).health().expect_err("still failing");
    assert!(matches!(err, Error::Api { status: 503, attempts: 3, .. }), "{err}");
    assert_eq!(server.finish().len(), 3);
}

#[test]
fn client_errors_are_not_retried() {
    let server = Scripted::start(vec![Step::Answer(
        404,
        Vec::new(),
        r#"{"error":{"code":"not_found","message":"no rule x"}}"#.into(),
    )]);
    let err = client(&server.url, quick(3)).rule("x").expect_err("404");
    assert_eq!(
        (err.status(), err.code(), err.message()),
        (Some(404), Some("not_found"), "no rule x".to_owned())
    );
    assert_eq!(server.finish().len(), 1);
}

#[test]
fn a_publish_is_not_retried_after_a_5xx_or_a_lost_answer() {
    for step in [busy(503, None), busy(500, None), Step::Close] {
        let server = Scripted::start(vec![step.clone(), answer(201, VERSION)]);
        let result = client(&server.url, quick(3)).publish(b"\0asm");
        assert!(result.is_err(), "{step:?}: the first answer is the result");
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{step:?}: a publish was sent twice");
        assert_eq!((seen[0].method.as_str(), seen[0].path.as_str()), ("POST", "/v1/rules"));
        drop(Client::new(&server.url).map(|c| c.health())); // lets the script end
        server.finish();
    }
}

#[test]
fn a_publish_is_retried_after_429_which_did_nothing() {
    let server = Scripted::start(vec![busy(429, Some("0")), answer(201, VERSION)]);
    let version =
        client(&server.url, quick(3)).publish(b"\0asm").expect("published on the second try");
    assert_eq!(version.state, "pending");
    assert_eq!(server.finish().len(), 2);
}

#[test]
fn reads_are_retried_after_a_lost_answer() {
    let server = Scripted::start(vec![Step::Close, answer(200, HEALTH)]);
    client(&server.url, quick(2)).health().expect("answered on the second try");
    assert_eq!(server.finish().len(), 2);
}

#[test]
fn a_stalled_server_times_out_within_the_bound() {
    let server = Scripted::start(vec![Step::Stall(Duration::from_secs(3))]);
    let client = Client::builder(&server.url)
        .retry(RetryPolicy::none())
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    let start = Instant::now();
    let err = client.health().expect_err("times out");
    assert!(
        matches!(err, Error::Transport { kind: TransportKind::Timeout, attempts: 1, .. }),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    server.finish();
}

#[test]
fn nothing_listening_is_a_connect_error_retried_even_for_a_publish() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let start = Instant::now();
    let err = client(&url, quick(2)).publish(b"\0asm").expect_err("nothing there");
    assert!(
        matches!(err, Error::Transport { kind: TransportKind::Connect, attempts: 3, .. }),
        "{err}"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(20 + 40),
        "two backoffs were waited: {:?}",
        start.elapsed()
    );
}
