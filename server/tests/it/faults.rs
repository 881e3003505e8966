//! Faults, with real processes: the server killed with SIGKILL while a
//! publish is in flight (SQLite and PostgreSQL), a private PostgreSQL
//! cluster stopped under load and started again, and a data dir that is
//! read-only or full (a small tmpfs; skipped with a message where mount is
//! not permitted). The shared PostgreSQL server is never stopped: the
//! outage test starts a cluster of its own on its own port.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::live::{SERVER, Server};
use crate::processes::admin_token;

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Bundled modules and their rule ids (`rule-<id>` crates).
fn modules() -> Vec<(String, &'static [u8])> {
    pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| (m.crate_name.strip_prefix("rule-").expect("rule- crate").to_owned(), m.wasm))
        .collect()
}

/// Sends a publish and reads whatever comes back, never panicking: the
/// server may die under it.
fn publish_in_background(
    addr: SocketAddr,
    token: &str,
    module: &'static [u8],
) -> std::thread::JoinHandle<Option<u16>> {
    let head = format!(
        "POST /v1/rules HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\nauthorization: Bearer {token}\r\ncontent-type: application/wasm\r\ncontent-length: {}\r\n\r\n",
        module.len()
    );
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
        stream.write_all(head.as_bytes()).ok()?;
        stream.write_all(module).ok()?;
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        String::from_utf8_lossy(&response)
            .strip_prefix("HTTP/1.1 ")
            .and_then(|s| s.get(..3))
            .and_then(|s| s.parse().ok())
    })
}

/// Every stored version of `id` is whole: its module downloads and hashes
/// to what it says, and to the module that was published. The count.
fn stored_versions(server: &Server, token: &str, id: &str, module: &[u8]) -> usize {
    // As the owner: pending versions are hidden from anonymous callers.
    let (status, rule) = server.call("GET", &format!("/v1/rules/{id}"), Some(token), b"");
    if status == 404 {
        return 0;
    }
    assert_eq!(status, 200, "{rule}");
    let versions = rule["versions"].as_array().expect("versions");
    for v in versions {
        let version = v["version"].as_str().expect("version");
        let auth = format!("Bearer {token}");
        let path = format!("/v1/rules/{id}/versions/{version}/module");
        let (status, bytes) =
            crate::live::exchange(server.addr, "GET", &path, &[("authorization", &auth)], b"");
        assert_eq!(
            status, 200,
            "{id} {version}: the version is listed but its module is not served"
        );
        assert_eq!(
            sha256_hex(&bytes),
            v["sha256"].as_str().expect("sha256"),
            "{id} {version}: the stored module is not what its record says"
        );
        assert_eq!(bytes, module, "{id} {version}: the stored module is not the one published");
    }
    versions.len()
}

fn kill_during_publish(database_url: Option<&str>) {
    let backend = if database_url.is_some() { "postgres" } else { "sqlite" };
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), database_url, "alice", "contributor");
    let modules = modules();
    let mut server = Server::start(dir.path(), database_url, false);
    let mut acknowledged: Vec<(String, &'static [u8])> = Vec::new();
    let (status, answer) = server.call("POST", "/v1/rules", Some(&alice), modules[0].1);
    assert_eq!(status, 201, "{answer}");
    acknowledged.push(modules[0].clone());
    // Kills at moments spread over the pipeline (reading, compiling,
    // running the cases) and the write itself.
    let delays_ms = [0u64, 5, 15, 30, 60, 100, 150, 250, 400];
    let (mut landed, mut lost_in_flight) = (0, 0);
    for (i, delay) in delays_ms.iter().enumerate() {
        let (id, module) = modules[i + 1].clone();
        let pending = publish_in_background(server.addr, &alice, module);
        std::thread::sleep(Duration::from_millis(*delay));
        server.kill();
        let answered = pending.join().expect("publisher");
        server = Server::start(dir.path(), database_url, false);
        // Nothing acknowledged is lost, and every stored version is whole.
        for (id, module) in &acknowledged {
            assert_eq!(
                stored_versions(&server, &alice, id, module),
                1,
                "{backend}: {id} was acknowledged, then lost"
            );
        }
        let stored = stored_versions(&server, &alice, &id, module);
        assert!(stored <= 1);
        if answered == Some(201) {
            assert_eq!(stored, 1, "{backend}: the publish of {id} was answered 201, then lost");
        }
        if stored == 1 {
            landed += 1;
        } else {
            lost_in_flight += 1;
            // Not stored: publishing again works, with no leftover in the way.
            let (status, answer) = server.call("POST", "/v1/rules", Some(&alice), module);
            assert_eq!(status, 201, "{backend}: republishing {id} after the kill: {answer}");
        }
        acknowledged.push((id, module));
    }
    eprintln!(
        "{backend}: {} kills during a publish: {landed} had stored it whole, {lost_in_flight} had stored nothing",
        delays_ms.len()
    );
    assert!(server.log().lines().all(|l| !l.contains("internal error")), "{}", server.log());
}

#[test]
fn kill_9_during_a_publish_leaves_no_partial_version_on_sqlite() {
    kill_during_publish(None);
}

#[test]
fn kill_9_during_a_publish_leaves_no_partial_version_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(crate::common::postgres());
    kill_during_publish(Some(db.url()));
    drop(db);
}

/// A PostgreSQL cluster of this test's own: initdb in a temporary
/// directory, its own port, its socket in that directory; stopped (fast)
/// on drop. Run as the `postgres` user when the test runs as root, since
/// initdb refuses root.
struct PrivatePostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl PrivatePostgres {
    /// None (with a message) when PostgreSQL's server binaries are not
    /// installed; `cargo xtask setup` installs them.
    fn start() -> Option<PrivatePostgres> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("initdb").exists() && b.join("pg_ctl").exists());
        let Some(bin) = bin else {
            eprintln!(
                "SKIPPED: no initdb/pg_ctl under /usr/lib/postgresql (apt-get install postgresql)"
            );
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("addr")
            .port();
        let pg = PrivatePostgres { bin, dir, port };
        if is_root() {
            let status = Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(pg.dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster dir to postgres");
        }
        let data = pg.data().display().to_string();
        pg.run(
            "initdb",
            &["-D", &data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        );
        pg.start_again();
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let output = if is_root() {
            Command::new("runuser").args(["-u", "postgres", "--"]).arg(&exe).args(args).output()
        } else {
            Command::new(&exe).args(args).output()
        }
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            output.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn start_again(&self) {
        let data = self.data().display().to_string();
        let log = self.dir.path().join("postgres.log").display().to_string();
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        self.run("pg_ctl", &["-D", &data, "-l", &log, "-o", &options, "-w", "-t", "60", "start"]);
    }

    fn stop(&self) {
        let data = self.data().display().to_string();
        self.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "-t", "60", "stop"]);
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data().display().to_string();
        let exe = self.bin.join("pg_ctl");
        let args = ["-D", data.as_str(), "-m", "immediate", "stop"];
        let _ = if is_root() {
            Command::new("runuser").args(["-u", "postgres", "--"]).arg(&exe).args(args).output()
        } else {
            Command::new(&exe).args(args).output()
        };
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("fixture JSON")
}

fn finding_ids(answer: &Value) -> Vec<String> {
    answer["findings"].as_array().map_or_else(Vec::new, |f| {
        f.iter().filter_map(|f| f["rule_id"].as_str().map(str::to_owned)).collect()
    })
}

/// Waits up to `within` for `/readyz` to answer `status`; how long it took.
fn await_ready(server: &Server, status: u16, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let (got, body) = server.call("GET", "/readyz", None, b"");
        if got == status {
            return start.elapsed();
        }
        assert!(start.elapsed() < within, "/readyz still {got} after {within:?}: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn postgres_stopped_under_load_checks_go_on_readyz_says_not_ready_and_service_recovers_by_itself() {
    let Some(pg) = PrivatePostgres::start() else { return };
    let url = pg.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), Some(&url), "alice", "contributor");
    let server = Server::start_with_vars(
        dir.path(),
        Some(&url),
        true,
        &[("PITFALL_RATE_CHECK_PER_IP", "0")],
    );
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let (status, answer) =
        server.call("POST", "/v1/check", None, &serde_json::to_vec(&g5g).expect("json"));
    assert_eq!(status, 200, "{answer}");
    let expected = finding_ids(&answer);
    assert!(!expected.is_empty());

    // Load: checks of distinct manifests (so each is evaluated, not a
    // cache hit), the G5g fixture's findings every time.
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let load = {
        let (stop, answered, failed, addr) =
            (stop.clone(), answered.clone(), failed.clone(), server.addr);
        let expected = expected.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let mut manifest = g5g.clone();
                manifest["env"]["PITFALL_LOAD_N"] = Value::from(i.to_string());
                let (status, body) = crate::live::exchange(
                    addr,
                    "POST",
                    "/v1/check",
                    &[],
                    &serde_json::to_vec(&manifest).expect("json"),
                );
                let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if status == 200 && finding_ids(&answer) == expected {
                    answered.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                    failures.push(format!("{status}: {answer}"));
                }
            }
            failures
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = answered.load(Ordering::Relaxed);
    pg.stop();
    let outage = Instant::now();
    let took = await_ready(&server, 503, Duration::from_secs(15));
    eprintln!("/readyz said not ready {took:?} after PostgreSQL stopped");
    let (status, body) = server.call("GET", "/readyz", None, b"");
    assert_eq!((status, body["status"].as_str()), (503, Some("not_ready")), "{body}");
    // A write cannot be taken: an envelope, in bounded time.
    let start = Instant::now();
    let module =
        modules().into_iter().find(|(id, _)| id == "vllm-bf16-needs-sm80").expect("module").1;
    // The rule is seeded; a publish of it by alice is refused one way or
    // another, but never with a 500 or a hang.
    let (status, answer) = server.call("POST", "/v1/rules", Some(&alice), module);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "a write during the outage took {:?}",
        start.elapsed()
    );
    assert_eq!((status, answer["error"]["code"].as_str()), (503, Some("unavailable")), "{answer}");
    std::thread::sleep(Duration::from_secs(2));
    let during = answered.load(Ordering::Relaxed);
    assert!(
        during > before + 5,
        "checks stalled during the outage: {before} before, {during} after {:?}",
        outage.elapsed()
    );

    pg.start_again();
    let took = await_ready(&server, 200, Duration::from_secs(30));
    eprintln!(
        "/readyz ready again {took:?} after PostgreSQL came back (outage {:?})",
        outage.elapsed()
    );
    // Writes work again: a token issued by alice (an audited write).
    let (status, answer) =
        server.call("POST", "/v1/tokens", Some(&alice), br#"{"label": "after the outage"}"#);
    assert_eq!(status, 201, "{answer}");
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let failures = load.join().expect("load");
    eprintln!(
        "{} checks answered with the expected findings, {} not",
        answered.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed)
    );
    assert!(failures.is_empty(), "{} checks failed, e.g. {:?}", failures.len(), failures.first());
}

/// A tmpfs of `size` at a fresh directory, unmounted on drop; None (with a
/// message) when mounting is not permitted here.
struct Tmpfs(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let holder = tempfile::tempdir().expect("tempdir");
        let path = holder.path().join("mnt");
        std::fs::create_dir(&path).expect("mount point");
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output();
        match output {
            Ok(o) if o.status.success() => Some(Tmpfs(path, holder)),
            other => {
                eprintln!("SKIPPED: mount -t tmpfs is not permitted here ({other:?})");
                None
            }
        }
    }

    fn remount_read_only(&self) {
        let status =
            Command::new("mount").args(["-o", "remount,ro"]).arg(&self.0).status().expect("mount");
        assert!(status.success(), "remount read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Runs the server on `data_dir` expecting it to refuse to start: its exit
/// code and stderr.
fn refused_start(data_dir: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(SERVER)
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .env("PITFALL_SEED_BUNDLED", "false")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            let _ = child.stderr.take().expect("stderr").read_to_string(&mut err);
            return (status.code(), err);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server started on a data dir it cannot write");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_read_only_data_dir_is_a_clear_error_at_start() {
    let Some(fs) = Tmpfs::mount("8m") else { return };
    fs.remount_read_only();
    let data = fs.0.join("data");
    let (code, stderr) = refused_start(&data);
    eprintln!("{stderr}");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("Read-only file system") && stderr.contains(&data.display().to_string()),
        "the error names the dir and the cause: {stderr}"
    );
}

#[test]
fn a_full_data_dir_answers_writes_with_an_envelope_and_loses_nothing_stored() {
    let Some(fs) = Tmpfs::mount("3m") else { return };
    let data = fs.0.join("data");
    let alice = admin_token(&data, None, "alice", "contributor");
    let server = Server::start(&data, None, false);
    let mut acknowledged = Vec::new();
    let mut refused = None;
    // Publish until the disk is full (each module is stored; 3 MiB holds
    // a few dozen KiB-sized modules plus SQLite's WAL).
    for (id, module) in modules() {
        let (status, answer) = server.call("POST", "/v1/rules", Some(&alice), module);
        match status {
            201 => acknowledged.push((id, module)),
            _ => {
                refused = Some((status, answer));
                break;
            }
        }
    }
    let Some((status, answer)) = refused else {
        panic!(
            "3 MiB held every bundled module ({}); the test needs a smaller disk",
            acknowledged.len()
        );
    };
    eprintln!("{} publishes stored, then {status}: {answer}", acknowledged.len());
    assert!(
        answer["error"]["code"].as_str().is_some(),
        "a full disk is answered in the envelope: {answer}"
    );
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (507, Some("storage_full")),
        "a full disk is said as such: {answer}"
    );
    for (id, module) in &acknowledged {
        assert_eq!(
            stored_versions(&server, &alice, id, module),
            1,
            "{id} was stored before the disk filled, then lost"
        );
    }
    let (status, _) = server.call("POST", "/v1/check", None, br#"{"manifest_version": 1}"#);
    assert_eq!(status, 200, "checks go on with a full disk");
}

#[test]
fn a_full_data_dir_is_a_clear_error_at_start() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    // Fill the disk to the last byte.
    let filler = fs.0.join("filler");
    let mut file = std::fs::File::create(&filler).expect("filler");
    let chunk = vec![0u8; 64 << 10];
    while file.write_all(&chunk).is_ok() {}
    while file.write_all(&[0]).is_ok() {}
    drop(file);
    let data = fs.0.join("data");
    let (code, stderr) = refused_start(&data);
    eprintln!("{stderr}");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&data.display().to_string())
            && (stderr.contains("No space left") || stderr.contains("disk is full")),
        "the error names the dir and the cause: {stderr}"
    );
}
