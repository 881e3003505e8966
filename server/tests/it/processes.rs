//! Real `pitfall-server` processes on loopback: the README's default run
//! on SQLite, and two replicas on one PostgreSQL database acting as one
//! registry. Every process is killed when its handle drops; every wait is
//! bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::postgres;

const SERVER: &str = env!("CARGO_BIN_EXE_pitfall-server");
/// A server starts in well under this (seeding included) on a quiet machine.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running server; killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// Everything it logged so far.
    log: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(data_dir: &Path, database_url: Option<&str>, seed: bool) -> Server {
        let mut command = Command::new(SERVER);
        command
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("PITFALL_REFRESH_MS", "200")
            .env("PITFALL_SEED_BUNDLED", seed.to_string())
            .env("RUST_LOG", "info")
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(url) = database_url {
            command.env("DATABASE_URL", url);
        }
        let mut child = command.spawn().expect("spawn pitfall-server");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let addr = line.split("listen=").nth(1).and_then(|rest| rest.split_whitespace().next());
                if let Some(addr) = addr.filter(|_| line.contains("serving")) {
                    let _ = tx.send(addr.parse::<SocketAddr>());
                }
                let mut log = sink.lock().unwrap_or_else(|p| p.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(addr)) => addr,
            other => {
                let _ = child.kill();
                panic!("the server did not start ({other:?}); its log:\n{}", log.lock().unwrap_or_else(|p| p.into_inner()));
            }
        };
        Server { child, addr, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn call(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> (u16, Value) {
        let (status, bytes) = http(self.addr, method, path, token, body);
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

/// One HTTP/1.1 exchange with `Connection: close`, bounded by timeouts.
fn http(addr: SocketAddr, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\n{auth}content-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body).expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read");
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").expect("a head");
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status");
    let mut body = response[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
    out
}

fn admin_token(data_dir: &Path, database_url: Option<&str>, name: &str, role: &str) -> String {
    let mut command = Command::new(SERVER);
    command.arg("--data-dir").arg(data_dir).args(["admin", "create-token", "--name", name, "--role", role]).env_remove("DATABASE_URL");
    if let Some(url) = database_url {
        command.env("DATABASE_URL", url);
    }
    let output = command.output().expect("run admin create-token");
    assert!(output.status.success(), "admin create-token failed: {}", String::from_utf8_lossy(&output.stderr));
    let token = String::from_utf8(output.stdout).expect("utf-8").trim().to_owned();
    assert!(!token.is_empty() && !token.contains('\n'), "stdout holds the token alone: {token:?}");
    token
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR"))).expect("fixture")
}

fn finding_ids(answer: &Value) -> Vec<String> {
    answer["findings"].as_array().map_or_else(Vec::new, |f| f.iter().filter_map(|f| f["rule_id"].as_str().map(str::to_owned)).collect())
}

#[test]
fn the_default_run_serves_the_bundled_rules_from_sqlite_and_reseeds_idempotently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first_revision;
    {
        let server = Server::start(dir.path(), None, true);
        let (status, answer) = server.call("POST", "/v1/check", None, &fixture("g5g-gemma4-vllm0271.json"));
        assert_eq!(status, 200, "{answer}");
        let ids = finding_ids(&answer);
        for id in ["aarch64-official-image-needs-sm80", "vllm-bf16-needs-sm80", "vllm-heterogeneous-head-dim"] {
            assert!(ids.contains(&id.to_owned()), "{id} missing from {ids:?}");
        }
        assert_eq!(answer["stats"]["rules_total"], pitfall_bundled_rules::MODULES.len());
        first_revision = answer["ruleset_revision"].clone();
        assert!(dir.path().join("pitfall.db").exists(), "the default database is a SQLite file in the data dir");
    }
    // A restart on the same data dir seeds nothing new.
    let server = Server::start(dir.path(), None, true);
    let (_, health) = server.call("GET", "/healthz", None, b"");
    assert_eq!(health["ruleset_revision"], first_revision);
    assert!(server.log().contains("inserted=0"), "{}", server.log());
}

#[test]
fn two_replicas_on_one_postgres_are_one_registry() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    let url = Some(db.url());
    let (dir_a, dir_b) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let maintainer = admin_token(dir_a.path(), url, "mia", "maintainer");
    let alice = admin_token(dir_a.path(), url, "alice", "contributor");

    // Both start at once on an empty registry (no seed: the rule is
    // published through the API instead).
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Server::start(dir_a.path(), url, false));
        let b = s.spawn(|| Server::start(dir_b.path(), url, false));
        (a.join().expect("a"), b.join().expect("b"))
    });
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    assert_eq!(finding_ids(&b.call("POST", "/v1/check", None, &g5g).1), Vec::<String>::new());

    let module = pitfall_bundled_rules::MODULES.iter().find(|m| m.crate_name == "rule-vllm-bf16-needs-sm80").expect("bundled").wasm;
    let (status, version) = a.call("POST", "/v1/rules", Some(&alice), module);
    assert_eq!(status, 201, "{version}");
    let path = format!("/v1/rules/vllm-bf16-needs-sm80/versions/{}/approve", version["version"].as_str().expect("version"));
    let (status, approved) = a.call("POST", &path, Some(&maintainer), b"");
    assert_eq!(status, 200, "{approved}");
    let approved_at = Instant::now();

    // B serves it within seconds, without being told.
    loop {
        let (status, answer) = b.call("POST", "/v1/check", None, &g5g);
        assert_eq!(status, 200);
        if finding_ids(&answer).contains(&"vllm-bf16-needs-sm80".to_owned()) {
            break;
        }
        assert!(approved_at.elapsed() < Duration::from_secs(5), "replica B did not pick up the approval within 5 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("replica B served the approved rule {:?} after the approval", approved_at.elapsed());
    let (_, health_a) = a.call("GET", "/healthz", None, b"");
    let (_, health_b) = b.call("GET", "/healthz", None, b"");
    assert_eq!(health_a["ruleset_revision"], health_b["ruleset_revision"]);

    // Tokens never reach a log line.
    for (name, server) in [("a", &a), ("b", &b)] {
        let log = server.log();
        for secret in [&maintainer, &alice] {
            assert!(!log.contains(secret.as_str()), "replica {name} logged a token");
        }
    }
    drop((a, b));
    drop(db);
}
