//! Real `pitfall-server` processes on loopback, and the small HTTP/1.1
//! client the process and browser tests share. Every process is killed
//! when its handle drops; every wait is bounded.

#![allow(dead_code, unreachable_pub)] // each test module uses a part of this

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// The server binary cargo built for these tests.
pub const SERVER: &str = env!("CARGO_BIN_EXE_pitfall-server");
/// Every rate limit off (0), for tests that send many requests from one
/// address with one token (the same variables as `pitfall-bench`'s).
pub const RATE_LIMITS_OFF: [(&str, &str); 4] = [
    ("PITFALL_RATE_CHECK_PER_IP", "0"),
    ("PITFALL_RATE_CHECK_PER_TOKEN", "0"),
    ("PITFALL_RATE_PUBLISH_PER_IP", "0"),
    ("PITFALL_RATE_PUBLISH_PER_TOKEN", "0"),
];
/// A server starts in well under this (seeding included) on a quiet machine.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running server; killed on drop.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
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
    /// Starts one on `data_dir` (SQLite there unless `database_url`).
    pub fn start(data_dir: &Path, database_url: Option<&str>, seed: bool) -> Server {
        Server::start_with_env(data_dir, database_url, seed, &[])
    }

    /// [`Server::start`] with these environment variables set as well.
    pub fn start_with_env(
        data_dir: &Path,
        database_url: Option<&str>,
        seed: bool,
        env: &[(&str, &Path)],
    ) -> Server {
        let vars: Vec<(&str, &std::ffi::OsStr)> =
            env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        Server::start_with_vars(data_dir, database_url, seed, &vars)
    }

    /// [`Server::start`] with these environment variables set as well
    /// (after the defaults, so they may override `RUST_LOG` and the like).
    pub fn start_with_vars<V: AsRef<std::ffi::OsStr>>(
        data_dir: &Path,
        database_url: Option<&str>,
        seed: bool,
        env: &[(&str, V)],
    ) -> Server {
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
        command.envs(env.iter().map(|(k, v)| (*k, v.as_ref())));
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
                // `listen=ADDR` in text logs, `"listen":"ADDR"` in JSON ones.
                let addr = line
                    .split("listen=")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .or_else(|| line.split("\"listen\":\"").nth(1)?.split('"').next());
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
                panic!(
                    "the server did not start ({other:?}); its log:\n{}",
                    log.lock().unwrap_or_else(|p| p.into_inner())
                );
            }
        };
        Server { child, addr, log }
    }

    /// The process id (for kill -9 in the fault tests).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it at once (SIGKILL) and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
    }

    /// Waits up to `within` for the process to exit; its exit status, or
    /// `None` if it is still running then.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A JSON exchange, with a bearer token if given.
    pub fn call(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> (u16, Value) {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let (status, bytes) = exchange(self.addr, method, path, &headers, body);
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

/// One HTTP/1.1 exchange; the status and the body (de-chunked). Reads
/// exactly the announced content-length when there is one (chromedriver
/// keeps connections open), else to the end.
pub fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(120))).expect("timeout");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body).expect("write");
    // chromedriver may keep the connection open: read the head, then
    // exactly the body its content-length announces (or to the end).
    let mut response = Vec::new();
    let mut buf = [0u8; 16384];
    let split = loop {
        if let Some(split) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            break split;
        }
        let n = stream.read(&mut buf).expect("read");
        assert!(n > 0, "the connection closed before the head ended");
        response.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status");
    let length = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .map(|(_, v)| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok());
    let mut data = response[split + 4..].to_vec();
    match length {
        Some(length) => {
            while data.len() < length {
                let n = stream.read(&mut buf).expect("read");
                assert!(n > 0, "the connection closed before the body ended");
                data.extend_from_slice(&buf[..n]);
            }
            data.truncate(length);
        }
        None => {
            stream.read_to_end(&mut data).expect("read");
        }
    }
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut rest = &data[..];
        while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..end]).trim(), 16)
                .unwrap_or(0);
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[end + 2..end + 2 + size]);
            rest = &rest[end + 2 + size + 2..];
        }
        data = out;
    }
    (status, data)
}
