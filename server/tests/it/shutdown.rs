//! SIGTERM on a real `pitfall-server` process under load: it stops
//! accepting, answers what is in flight, closes idle kept-alive
//! connections at once, logs one access line per answer, and exits 0;
//! what outlives the drain bound is cut and the exit is still 0.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::drain::{Got, Load, SlowCheck, assert_nothing_cut, logged_request_ids, read_answer};
use crate::live::{RATE_LIMITS_OFF, Server};

fn g5g() -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

/// A kept-alive connection that has had one answer and sits idle.
fn idle_connection(server: &Server) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let head = format!("GET /healthz HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr);
    stream.write_all(head.as_bytes()).expect("write");
    let got = read_answer(&mut BufReader::new(stream.try_clone().expect("clone")));
    assert!(matches!(got, Got::Answered { status: 200, closed: false, .. }), "{got:?}");
    stream
}

fn vars(log_format: &str, drain_ms: u64) -> Vec<(&'static str, String)> {
    let mut vars: Vec<(&str, String)> =
        RATE_LIMITS_OFF.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    vars.push(("PITFALL_LOG_FORMAT", log_format.to_owned()));
    vars.push(("PITFALL_SHUTDOWN_TIMEOUT_MS", drain_ms.to_string()));
    vars
}

#[test]
fn sigterm_mid_load_answers_what_is_in_flight_and_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_with_vars(dir.path(), None, true, &vars("json", 20_000));
    let body = g5g();
    let mut idle = idle_connection(&server);
    let slow = SlowCheck::start(server.addr, &body, "slow-check");
    let load = Load::start(server.addr, 3, &body, "load");
    std::thread::sleep(Duration::from_millis(700));

    let signalled = Instant::now();
    server.terminate();
    // The idle connection is closed at once, not at the drain bound.
    let mut byte = [0u8; 1];
    assert_eq!(idle.read(&mut byte).expect("an orderly close"), 0);
    let idle_closed = signalled.elapsed();
    assert!(idle_closed < Duration::from_secs(3), "idle connection closed after {idle_closed:?}");
    // The request in flight is answered, and its connection closed after.
    std::thread::sleep(Duration::from_millis(300));
    let got = slow.finish();
    assert!(
        matches!(&got, Got::Answered { status: 200, closed: true, request_id: Some(id) } if id == "slow-check"),
        "{got:?}"
    );
    let outcomes = load.finish(Duration::from_secs(30));
    let status = server.wait_exit(Duration::from_secs(30)).expect("exited within the drain bound");
    let stopped = signalled.elapsed();
    assert_eq!(status.code(), Some(0), "{}", server.log());

    let log = server.log();
    let tally = assert_nothing_cut(&outcomes, &logged_request_ids(&log), signalled);
    eprintln!("{tally:?}; idle closed after {idle_closed:?}; exited {stopped:?} after SIGTERM");
    assert!(tally.answered > 10, "{tally:?}");
    assert!(log.contains("\"drained\""), "{log}");

    // The access line of the slow check, as a log shipper reads it.
    let line = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["span"]["request_id"] == "slow-check")
        .expect("an access line for the slow check");
    assert_eq!(line["target"], "pitfall_server::access", "{line}");
    assert_eq!(line["span"]["method"], "POST", "{line}");
    assert_eq!(line["span"]["route"], "/v1/check", "{line}");
    assert_eq!(line["status"], 200, "{line}");
    assert!(line["latency_ms"].as_f64().is_some_and(|ms| ms >= 300.0), "{line}");
    assert!(line["bytes"].as_u64().is_some_and(|b| b > 1000), "{line}");
}

#[test]
fn a_request_past_the_drain_bound_is_cut_and_the_exit_is_still_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_with_vars(dir.path(), None, true, &vars("text", 500));
    let held = SlowCheck::start(server.addr, &g5g(), "held");
    std::thread::sleep(Duration::from_millis(100));
    let signalled = Instant::now();
    server.terminate();
    let status = server.wait_exit(Duration::from_secs(10)).expect("exited");
    assert_eq!(status.code(), Some(0));
    assert!(signalled.elapsed() < Duration::from_secs(5), "took {:?}", signalled.elapsed());
    let log = server.log();
    assert!(log.contains("drain bound reached") && log.contains("cut=1"), "{log}");
    drop(held);
}

#[test]
fn request_ids_are_kept_when_plain_and_made_otherwise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, false);
    let ask = |id: Option<&str>| {
        let mut headers = vec![];
        if let Some(id) = id {
            headers.push(("x-request-id", id));
        }
        let head = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect::<String>();
        let mut stream = TcpStream::connect(server.addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let request =
            format!("GET /healthz HTTP/1.1\r\nhost: x\r\n{head}connection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).expect("write");
        match read_answer(&mut BufReader::new(stream)) {
            Got::Answered { status: 200, request_id: Some(id), .. } => id,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(ask(Some("ci-run-42.step:7")), "ci-run-42.step:7");
    let made = [ask(None), ask(None), ask(Some("has\"quote")), ask(Some(&"x".repeat(65)))];
    for id in &made {
        assert!(id.len() == 33 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'), "{id}");
    }
    let distinct: std::collections::HashSet<_> = made.iter().collect();
    assert_eq!(distinct.len(), made.len(), "{made:?}");
    // The access log has each, with the route template and the status.
    std::thread::sleep(Duration::from_millis(200));
    let log = server.log();
    let line = log.lines().find(|l| l.contains("request_id=ci-run-42.step:7")).expect("logged");
    assert!(line.contains("route=/healthz") && line.contains("status=200"), "{line}");
    assert!(line.contains("latency_ms=") && line.contains("bytes="), "{line}");
    assert!(logged_request_ids(&log).is_superset(&made.iter().cloned().collect()), "{log}");
}
