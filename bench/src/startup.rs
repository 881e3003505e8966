//! A real server process over a registry of 10,000 rules: its cold start
//! (from spawning the process to `/readyz` answering 200), its warm-up
//! (every rule compiled, or deserialised from the compiled-code cache), its
//! RSS, and the address the HTTP load is sent to.
//!
//! The child is this binary's `serve-child` subcommand: the server's own
//! start-up (`pitfall_server::server::open`: store, migrations, bundled
//! seed, deferred load, background warm-up) and the server's router, with a
//! bare JSON echo route merged in. Its configuration comes from the
//! server's own flags and environment variables; rate limits are turned
//! off through their environment variables, so the load measures the
//! server, not the limiter. It exits when its standard input closes.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use pitfall_engine::{Engine, Limits};
use pitfall_server::store::{NewVersion, Store};
use rayon::prelude::*;

use crate::corpus::RuleSpec;

/// Environment for the child: every rate limit off (0 means no limit).
pub const CHILD_ENV: &[(&str, &str)] = &[
    ("PITFALL_RATE_CHECK_PER_IP", "0"),
    ("PITFALL_RATE_CHECK_PER_TOKEN", "0"),
    ("PITFALL_RATE_PUBLISH_PER_IP", "0"),
    ("PITFALL_RATE_PUBLISH_PER_TOKEN", "0"),
];

/// Stores the corpus as approved versions in a fresh SQLite registry under
/// `dir`, as if each had been published and approved (their metadata and
/// cases read from the module, as the pipeline stores them).
pub async fn seed_registry(dir: &Path, specs: &[RuleSpec]) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let store = Store::connect(&format!("sqlite://{}", dir.join("pitfall.db").display())).await?;
    let specs = specs.to_vec();
    let versions = tokio::task::spawn_blocking(move || {
        let engine = Engine::new(Limits::default())?;
        specs
            .par_iter()
            .map(|spec| {
                let bytes = crate::corpus::module(spec);
                let rule = engine.load_deferred(bytes.clone().into())?;
                Ok(NewVersion {
                    meta: rule.meta().clone(),
                    tests: rule.info.tests.clone(),
                    sha256: rule.sha256.clone(),
                    module: bytes,
                    report: serde_json::json!({"seeded_by": "pitfall-bench"}),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })
    .await??;
    let n = store.seed(versions).await?;
    store.close().await;
    Ok(n)
}

/// A running child server.
#[derive(Debug)]
pub struct Server {
    child: Child,
    /// Where it listens (loopback).
    pub addr: SocketAddr,
    /// Spawn to `/readyz` answering 200.
    pub cold_start: Duration,
    /// Spawn to every rule served (`pitfall_rules_served` at the expected
    /// count): later than the cold start when the bundled seed lands after
    /// readiness (a registry that already held rules).
    pub all_served: Duration,
    /// Spawn to every rule linked.
    pub warm: Duration,
    /// Resident set after the warm-up, bytes.
    pub rss_bytes: u64,
    /// Peak resident set so far, bytes.
    pub peak_rss_bytes: u64,
    stdout: BufReader<ChildStdout>,
}

/// Starts the child over `data_dir`, without its compiled-code cache if
/// `cache` is false, and waits until it is ready, serves `rules` rules and
/// is warm.
pub fn start(exe: &Path, data_dir: &Path, cache: bool, rules: usize) -> anyhow::Result<Server> {
    if !cache {
        let compiled = data_dir.join("compiled");
        if compiled.exists() {
            std::fs::remove_dir_all(&compiled).with_context(|| compiled.display().to_string())?;
        }
    }
    let started = Instant::now();
    let child = Command::new(exe)
        .args(["serve-child", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .envs(CHILD_ENV.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    // Killed if it does not get ready and warm (the `Server` that would
    // end it is only made then).
    let mut child = Unready(Some(child));
    let mut stdout = BufReader::new(child.get().stdout.take().context("child stdout")?);
    let addr: SocketAddr = read_value(&mut stdout, "listening")?.parse().context("listening=")?;
    let cold_start = loop {
        if get_status(addr, "/readyz").ok() == Some(200) {
            break started.elapsed();
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("the server was not ready within 120 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let all_served = loop {
        let served = get_body(addr, "/metrics").ok().and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("pitfall_rules_served ")?.trim().parse::<f64>().ok())
        });
        if served.is_some_and(|n| n as usize >= rules) {
            break started.elapsed();
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("the server did not serve {rules} rules within 120 s (serves {served:?})");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    read_value(&mut stdout, "warm_ms")?;
    let warm = started.elapsed();
    let (rss_bytes, peak_rss_bytes) = rss(child.get().id())?;
    Ok(Server {
        child: child.0.take().context("the child")?,
        addr,
        cold_start,
        all_served,
        warm,
        rss_bytes,
        peak_rss_bytes,
        stdout,
    })
}

impl Server {
    /// The value of an unlabelled metric in the server's `/metrics`.
    pub fn metric(&self, name: &str) -> anyhow::Result<f64> {
        let text = get_body(self.addr, "/metrics")?;
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
            .with_context(|| format!("no metric {name}"))?;
        Ok(line.trim().parse()?)
    }

    /// Closes the child's stdin and waits for it to exit.
    pub fn stop(mut self) -> anyhow::Result<()> {
        drop(self.child.stdin.take());
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stdout, &mut rest);
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the server exited with {status}");
        }
        Ok(())
    }

    /// The child's process id (for a profiler to attach to).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's RSS now (bytes) and its peak.
    pub fn rss(&self) -> anyhow::Result<(u64, u64)> {
        rss(self.child.id())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only if `stop` was not called: end the child we started.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A child that is not yet a [`Server`]: killed if dropped as it is.
struct Unready(Option<Child>);

impl Unready {
    fn get(&mut self) -> &mut Child {
        self.0.as_mut().expect("taken only when the server is made")
    }
}

impl Drop for Unready {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads stdout lines until `key=value`; returns the value.
fn read_value(stdout: &mut BufReader<ChildStdout>, key: &str) -> anyhow::Result<String> {
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            bail!("the server exited before printing {key}=");
        }
        if let Some(v) = line.trim().strip_prefix(key).and_then(|r| r.strip_prefix('=')) {
            return Ok(v.to_owned());
        }
    }
}

/// The CPU time every thread of a process has run so far (the kernel's
/// scheduler statistics, nanoseconds): per-phase CPU per request is a
/// steadier figure than throughput on a machine whose speed drifts.
pub fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread may exit between the listing and the read.
        let Ok(text) = std::fs::read_to_string(task?.path().join("schedstat")) else { continue };
        total += text.split_whitespace().next().context("schedstat")?.parse::<u64>()?;
    }
    Ok(Duration::from_nanos(total))
}

/// VmRSS and VmHWM of a process, in bytes.
pub fn rss(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line =
            status.lines().find(|l| l.starts_with(name)).with_context(|| format!("no {name}"))?;
        let kib: u64 = line.split_whitespace().nth(1).context("value")?.parse()?;
        Ok(kib * 1024)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// A GET sent (blocking; loopback only, one request, `connection: close`),
/// its answer still to read.
fn send_get(addr: SocketAddr, path: &str) -> anyhow::Result<std::net::TcpStream> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")?;
    Ok(s)
}

/// A GET's body.
fn get_body(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    send_get(addr, path)?.take(16 << 20).read_to_string(&mut text)?;
    let (_, body) = text.split_once("\r\n\r\n").context("no body")?;
    Ok(body.to_owned())
}

/// A GET's status, read from the answer's first bytes only (the start-up
/// poll does not wait for the rest).
fn get_status(addr: SocketAddr, path: &str) -> anyhow::Result<u16> {
    use std::io::Read;
    let mut head = [0u8; 16];
    send_get(addr, path)?.read_exact(&mut head)?;
    let text = std::str::from_utf8(&head)?;
    Ok(text.split(' ').nth(1).context("status")?.parse()?)
}

/// The data dir of the bench's 10,000-rule registry.
pub fn registry_dir(out: &Path, rules: usize) -> PathBuf {
    out.join(format!("registry-{rules}"))
}

/// The child: the server's start-up and router plus the echo route. Prints
/// `listening=ADDR`, then `warm_ms=N` once every rule is linked.
pub async fn serve_child(config: pitfall_server::config::Config) -> anyhow::Result<()> {
    use pitfall_server::{AppState, app};
    use tokio::io::AsyncReadExt;
    let started = Instant::now();
    let registry = pitfall_server::server::open(&config).await?;
    let router = axum::Router::new()
        .route("/bench/echo", axum::routing::post(crate::http::echo))
        .merge(app(AppState::new(registry.clone(), config.limits.clone())));
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    println!("listening={}", listener.local_addr()?);
    let warm = Arc::clone(&registry);
    tokio::spawn(async move {
        while !warm.is_warm() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!("warm_ms={}", started.elapsed().as_millis());
    });
    let stdin_closed = async {
        let mut buf = [0u8; 64];
        let mut stdin = tokio::io::stdin();
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    axum::serve(listener, router).with_graceful_shutdown(stdin_closed).await?;
    Ok(())
}
