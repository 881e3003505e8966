//! Hostile requests against a real server process: every case of
//! `server/tests/hostile-requests/` (one JSON file each: the request, or a
//! generator of its body, and the answer expected), then the slow clients
//! (headers and a body dripped a byte at a time, connections opened and
//! left idle). Each must get a 4xx envelope or be cut off in bounded time:
//! never a 5xx, never a stuck worker. Afterwards a normal check still
//! answers at once.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::live::{Server, exchange};

/// The server's timeouts in these tests: short, so the slow clients are
/// cut off quickly; the bound asserted leaves room for a loaded machine.
const HEADER_TIMEOUT_MS: u64 = 1000;
const BODY_TIMEOUT_MS: u64 = 1000;
const MAX_CONNECTIONS: usize = 24;
/// How long past its timeout a slow client may still be connected.
const SLACK: Duration = Duration::from_secs(4);

fn hostile_server(dir: &Path) -> Server {
    let vars = [
        ("PITFALL_HEADER_TIMEOUT_MS", HEADER_TIMEOUT_MS.to_string()),
        ("PITFALL_BODY_TIMEOUT_MS", BODY_TIMEOUT_MS.to_string()),
        ("PITFALL_MAX_CONNECTIONS", MAX_CONNECTIONS.to_string()),
        // The cases are many requests from one address in a few seconds.
        ("PITFALL_RATE_CHECK_PER_IP", "0".to_owned()),
    ];
    Server::start_with_vars(dir, None, true, &vars)
}

/// A request built from a case file.
struct Case {
    name: String,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    status: u16,
    code: Option<String>,
    envelope: bool,
}

/// `prefix + repeat × count (joined by separator) + middle + close × count + suffix`.
fn generate(spec: &Value) -> String {
    let field = |name: &str| spec[name].as_str().unwrap_or("");
    let count = usize::try_from(spec["count"].as_u64().expect("generate.count")).expect("count");
    let (repeat, separator, close) = (field("repeat"), field("separator"), field("close"));
    let mut out =
        String::with_capacity(count * (repeat.len() + separator.len() + close.len()) + 64);
    out.push_str(field("prefix"));
    for i in 0..count {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(repeat);
    }
    out.push_str(field("middle"));
    for _ in 0..count {
        out.push_str(close);
    }
    out.push_str(field("suffix"));
    out
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn load_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile-requests");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("the hostile-requests folder")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let spec: Value =
                serde_json::from_slice(&std::fs::read(&path).expect("case")).expect("case JSON");
            let name = path.file_stem().expect("stem").to_string_lossy().into_owned();
            let body = if let Some(body) = spec.get("body") {
                serde_json::to_vec(body).expect("body")
            } else if let Some(text) = spec["body_text"].as_str() {
                text.as_bytes().to_vec()
            } else if let Some(text) = spec["body_hex"].as_str() {
                hex(text)
            } else if spec.get("generate").is_some() {
                generate(&spec["generate"]).into_bytes()
            } else {
                Vec::new()
            };
            let mut path = spec["path"].as_str().expect("path").to_owned();
            if spec.get("generate_query").is_some() {
                path.push_str(&generate(&spec["generate_query"]));
            }
            let mut headers: Vec<(String, String)> = spec["headers"]
                .as_object()
                .map(|h| {
                    h.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().expect("header value").to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(g) = spec.get("header_generate") {
                headers.push((g["name"].as_str().expect("name").to_owned(), generate(g)));
            }
            let expect = &spec["expect"];
            Case {
                name,
                method: spec["method"].as_str().expect("method").to_owned(),
                path,
                headers,
                body,
                status: u16::try_from(expect["status"].as_u64().expect("expect.status"))
                    .expect("status"),
                code: expect["code"].as_str().map(str::to_owned),
                envelope: expect["envelope"].as_bool().unwrap_or(true),
            }
        })
        .collect()
}

/// A request whose answer may never come (the server may close first):
/// the status, or `None` when the connection was closed without one.
fn raw_exchange(addr: SocketAddr, head: &str, body: &[u8]) -> (Option<u16>, Vec<u8>) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    // The server may answer (413, 431) and close before all is written.
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let status =
        text.strip_prefix("HTTP/1.1 ").and_then(|s| s.get(..3)).and_then(|s| s.parse().ok());
    let body = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or_else(Vec::new, |i| response[i + 4..].to_vec());
    (status, body)
}

fn normal_check_is_fast(server: &Server) {
    let manifest = br#"{"manifest_version": 1, "host": {"arch": "x86_64"}, "packages": [{"name": "vllm", "version": "0.27.1"}]}"#;
    let start = Instant::now();
    let (status, answer) = server.call("POST", "/v1/check", None, manifest);
    assert_eq!(status, 200, "{answer}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "a normal check took {:?} after the hostile ones",
        start.elapsed()
    );
}

#[test]
fn hostile_requests_get_4xx_envelopes_never_a_5xx() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = hostile_server(dir.path());
    let cases = load_cases();
    assert!(cases.len() >= 30, "the folder holds {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let extra: String = case.headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        let content_type = if case.headers.iter().any(|(k, _)| k == "content-type") {
            ""
        } else {
            "content-type: application/json\r\n"
        };
        let head = format!(
            "{} {} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n{content_type}{extra}content-length: {}\r\n\r\n",
            case.method,
            case.path,
            server.addr,
            case.body.len()
        );
        let start = Instant::now();
        let (status, body) = raw_exchange(server.addr, &head, &case.body);
        let took = start.elapsed();
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let code = answer["error"]["code"].as_str();
        eprintln!("{:<28} {status:?} {code:?} in {took:?}", case.name);
        let mut wrong = Vec::new();
        if status != Some(case.status) {
            wrong.push(format!("status {status:?}, expected {}", case.status));
        }
        if status.is_some_and(|s| s >= 500) {
            wrong.push("a server error".to_owned());
        }
        if case.envelope
            && case.status >= 400
            && (code.is_none() || answer["error"]["message"].as_str().is_none())
        {
            wrong.push(format!(
                "no error envelope: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ));
        }
        if let Some(expected) = &case.code
            && code != Some(expected.as_str())
        {
            wrong.push(format!("code {code:?}, expected {expected}"));
        }
        if took > Duration::from_secs(30) {
            wrong.push(format!("took {took:?}"));
        }
        if !wrong.is_empty() {
            failures.push(format!("{}: {}", case.name, wrong.join("; ")));
        }
    }
    normal_check_is_fast(&server);
    assert!(
        !server.log().contains("internal error"),
        "the server logged an internal error:\n{}",
        server.log()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Writes `bytes` a byte at a time, `gap` apart, until the server closes
/// the connection or `bytes` run out; then reads what it answered. The
/// time from the first byte to the close, and the status if any.
fn drip(addr: SocketAddr, prefix: &[u8], bytes: &[u8], gap: Duration) -> (Duration, Option<u16>) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let start = Instant::now();
    stream.write_all(prefix).expect("write the prefix");
    for byte in bytes {
        std::thread::sleep(gap);
        if stream.write_all(&[*byte]).is_err() {
            break;
        }
        // Stop dripping once the server has answered or closed.
        stream.set_nonblocking(true).expect("nonblocking");
        let mut peek = [0u8; 1];
        let closed = stream.peek(&mut peek).is_ok();
        stream.set_nonblocking(false).expect("blocking");
        if closed {
            break;
        }
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    (
        start.elapsed(),
        text.strip_prefix("HTTP/1.1 ").and_then(|s| s.get(..3)).and_then(|s| s.parse().ok()),
    )
}

#[test]
fn slow_and_idle_clients_are_cut_off_in_bounded_time_and_others_are_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = hostile_server(dir.path());
    let gap = Duration::from_millis(200);
    std::thread::scope(|s| {
        // Headers dripped a byte every 200 ms: 60 bytes would take 12 s.
        let slow_head =
            s.spawn(|| drip(server.addr, b"POST /v1/check HTTP/1.1\r\n", &[b'x'; 60], gap));
        // A body announced as 100 bytes and dripped: 20 s if let be.
        let head = format!(
            "POST /v1/check HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n",
            server.addr
        );
        let slow_body = s.spawn(move || drip(server.addr, head.as_bytes(), &[b' '; 100], gap));
        // Meanwhile other clients are answered as usual.
        std::thread::sleep(Duration::from_millis(300));
        normal_check_is_fast(&server);
        let (took, status) = slow_head.join().expect("slow head");
        eprintln!("slow headers: closed after {took:?}, status {status:?}");
        assert!(
            took < Duration::from_millis(HEADER_TIMEOUT_MS) + SLACK,
            "slow headers held the connection {took:?}"
        );
        assert!(status.is_none_or(|s| (400..500).contains(&s)), "slow headers answered {status:?}");
        let (took, status) = slow_body.join().expect("slow body");
        eprintln!("slow body: answered after {took:?}, status {status:?}");
        assert!(
            took < Duration::from_millis(BODY_TIMEOUT_MS) + SLACK,
            "a slow body held the connection {took:?}"
        );
        assert_eq!(status, Some(408), "a slow body is answered 408");
    });

    // Every connection slot taken by idle clients: one more is closed at
    // once; the idle ones are closed after the header timeout, and then
    // normal clients are served again.
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let (status, _) = raw_exchange(
        server.addr,
        &format!("GET /healthz HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", server.addr),
        b"",
    );
    assert_eq!(status, None, "a connection over the bound is closed without an answer");
    let start = Instant::now();
    for mut stream in idle {
        stream
            .set_read_timeout(Some(Duration::from_millis(HEADER_TIMEOUT_MS) + SLACK))
            .expect("timeout");
        let mut buf = [0u8; 256];
        let closed = stream.read(&mut buf).is_ok();
        assert!(closed, "an idle connection was still open after {:?}", start.elapsed());
    }
    eprintln!(
        "{MAX_CONNECTIONS} idle connections closed by the server within {:?}",
        start.elapsed()
    );
    std::thread::sleep(Duration::from_millis(100));
    normal_check_is_fast(&server);
    let (status, _) = exchange(server.addr, "GET", "/healthz", &[], b"");
    assert_eq!(status, 200);
}

#[test]
fn one_client_network_cannot_take_every_connection() {
    const PER_IP: usize = 4;
    let dir = tempfile::tempdir().expect("tempdir");
    let vars = [
        ("PITFALL_HEADER_TIMEOUT_MS", "30000".to_owned()),
        ("PITFALL_MAX_CONNECTIONS", MAX_CONNECTIONS.to_string()),
        ("PITFALL_MAX_CONNECTIONS_PER_IP", PER_IP.to_string()),
    ];
    let server = Server::start_with_vars(dir.path(), None, false, &vars);
    let health =
        format!("GET /healthz HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", server.addr);
    let mut idle: Vec<TcpStream> = (0..PER_IP)
        .map(|_| TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // Far below the global bound, one more from this address is closed.
    let (status, _) = raw_exchange(server.addr, &health, b"");
    assert_eq!(status, None, "a connection over the per-network bound is closed unanswered");
    // Another address is served (all of 127/8 is this host's).
    let other = std::net::SocketAddr::new([127, 0, 0, 2].into(), 0);
    let (status, _) = exchange_from(other, server.addr, &health);
    assert_eq!(status, Some(200), "another network is served");
    // A connection closed frees its place for the same address.
    drop(idle.pop());
    std::thread::sleep(Duration::from_millis(200));
    let (status, _) = raw_exchange(server.addr, &health, b"");
    assert_eq!(status, Some(200), "a freed place is taken again");
}

/// `raw_exchange` from a given local address.
fn exchange_from(local: SocketAddr, addr: SocketAddr, head: &str) -> (Option<u16>, Vec<u8>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.bind(local).expect("bind 127.0.0.2");
        socket.connect(addr).await.expect("connect")
    });
    let mut stream = stream.into_std().expect("std stream");
    stream.set_nonblocking(false).expect("blocking");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    stream.write_all(head.as_bytes()).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let status =
        text.strip_prefix("HTTP/1.1 ").and_then(|s| s.get(..3)).and_then(|s| s.parse().ok());
    (status, response)
}

/// Resident memory of a process, from `/proc/PID/status`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The request-latency series `/metrics` holds.
fn request_series(server: &Server) -> usize {
    let head =
        format!("GET /metrics HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", server.addr);
    let (status, body) = raw_exchange(server.addr, &head, b"");
    assert_eq!(status, Some(200));
    String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| l.starts_with("pitfall_http_request_duration_seconds_count"))
        .count()
}

/// Sends `count` requests, each with a method of its own, over a few
/// keep-alive connections; returns how many got an answer.
fn distinct_methods(addr: SocketAddr, first: usize, count: usize) -> usize {
    const PER_CONNECTION: usize = 500;
    let mut answered = 0;
    let mut sent = 0;
    while sent < count {
        let mut stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let batch = PER_CONNECTION.min(count - sent);
        let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
        for i in 0..batch {
            let head = format!(
                "XMETHOD{} /v1/check HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\n\r\n",
                first + sent + i
            );
            if stream.write_all(head.as_bytes()).is_err() {
                break;
            }
            if read_one_response(&mut reader).is_none() {
                break;
            }
            answered += 1;
        }
        sent += batch;
    }
    answered
}

/// Reads one HTTP/1.1 response (status line, headers, a content-length
/// body) from a keep-alive connection; its status.
fn read_one_response(reader: &mut impl std::io::BufRead) -> Option<u16> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let status =
        line.strip_prefix("HTTP/1.1 ").and_then(|s| s.get(..3)).and_then(|s| s.parse().ok());
    let mut length = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    status
}

/// Any token is a valid HTTP method, and the metrics once labelled
/// requests by the method as sent: each made-up method added a series for
/// good, so unauthenticated requests could grow the server's memory and
/// `/metrics` without bound. Labels are a fixed set now.
#[test]
fn ten_thousand_made_up_methods_add_no_metric_series_and_no_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vars = [("PITFALL_RATE_CHECK_PER_IP", "0".to_owned())];
    let server = Server::start_with_vars(dir.path(), None, true, &vars);
    // Warm-up: the allocator's and the tables' first growth is not the leak.
    assert_eq!(distinct_methods(server.addr, 0, 1_000), 1_000);
    let series_before = request_series(&server);
    let rss_before = rss_kib(server.pid());
    assert_eq!(distinct_methods(server.addr, 1_000, 10_000), 10_000);
    let series_after = request_series(&server);
    let rss_after = rss_kib(server.pid());
    eprintln!("series {series_before} -> {series_after}, RSS {rss_before} -> {rss_after} KiB");
    assert!(series_after <= series_before + 1, "series {series_before} -> {series_after}");
    // 10,000 series of 15 lines each cost tens of MiB; 8 MiB is noise.
    assert!(rss_after < rss_before + 8 * 1024, "RSS grew {rss_before} -> {rss_after} KiB");
    normal_check_is_fast(&server);
}
