//! A bounded HTTP/1.1 load generator for loopback, and the bare JSON echo
//! endpoint the server's `/v1/check` is compared with.
//!
//! The client is deliberately minimal (keep-alive connections, one request
//! in flight on each, `Content-Length` bodies), so that its own cost is
//! small and the same for both endpoints. Every run is bounded by a
//! request count and a deadline and stops by itself; it only ever connects
//! to the address it is given, which the bench takes from a server it
//! started on 127.0.0.1.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stats::Summary;

/// The echo endpoint: parse the JSON body, serialise it back.
pub async fn echo(Json(body): Json<serde_json::Value>) -> Json<serde_json::Value> {
    Json(body)
}

/// How much load to send.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Requests in all (the run stops after them).
    pub requests: usize,
    /// Connections, each with one request in flight.
    pub concurrency: usize,
    /// The run stops at this deadline even if requests remain.
    pub deadline: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Answered 200.
    pub ok: usize,
    /// Answered otherwise, or failed.
    pub errors: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Latency of the 200 answers.
    pub latency: Summary,
}

impl LoadResult {
    /// Requests answered 200 per second.
    pub fn throughput(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }
}

/// Sends `load` to `POST path` on `addr`, the bodies taken in turn (each
/// body is sent once before any is sent again).
pub async fn run(
    addr: SocketAddr,
    path: &str,
    bodies: Arc<Vec<Vec<u8>>>,
    load: Load,
) -> anyhow::Result<LoadResult> {
    if !addr.ip().is_loopback() {
        bail!("load is only ever sent to loopback, not {addr}");
    }
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let deadline = start + load.deadline;
    let mut tasks = Vec::new();
    for _ in 0..load.concurrency.max(1) {
        let (next, bodies, path) = (next.clone(), bodies.clone(), path.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0usize;
            let mut conn: Option<TcpStream> = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= load.requests || Instant::now() >= deadline {
                    break;
                }
                let body = &bodies[i % bodies.len()];
                let sent = Instant::now();
                let stream = match conn.take() {
                    Some(s) => s,
                    None => match TcpStream::connect(addr).await {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            s
                        }
                        Err(_) => {
                            errors += 1;
                            continue;
                        }
                    },
                };
                match tokio::time::timeout_at(deadline.into(), request(stream, &path, body)).await {
                    Ok(Ok((200, stream))) => {
                        latencies.push(sent.elapsed());
                        conn = Some(stream);
                    }
                    Ok(Ok((_, stream))) => {
                        errors += 1;
                        conn = Some(stream);
                    }
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (l, e) = task.await.context("a load task failed")?;
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed();
    Ok(LoadResult { ok: latencies.len(), errors, elapsed, latency: Summary::of(&latencies) })
}

/// One request on a keep-alive connection: the status, and the connection.
async fn request(
    mut stream: TcpStream,
    path: &str,
    body: &[u8],
) -> anyhow::Result<(u16, TcpStream)> {
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed");
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > 64 << 10 {
            bail!("headers too long");
        }
    };
    let head = std::str::from_utf8(&buf[..header_end]).context("headers")?;
    let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).context("status line")?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok()).flatten()
        })
        .context("no content-length")?;
    let mut have = buf.len() - header_end;
    while have < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed mid-body");
        }
        have += n;
    }
    Ok((status, stream))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client against a real axum server on loopback: every request
    /// answered, bodies echoed, bounded by the count.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_client_drives_an_echo_server_and_stops_at_its_bound() {
        let router = axum::Router::new().route("/echo", axum::routing::post(echo));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move { axum::serve(listener, router).await });
        let bodies = Arc::new(vec![br#"{"a": 1}"#.to_vec(), br#"{"b": [1, 2]}"#.to_vec()]);
        let load = Load { requests: 200, concurrency: 4, deadline: Duration::from_secs(20) };
        let result = run(addr, "/echo", bodies.clone(), load).await.expect("runs");
        assert_eq!((result.ok, result.errors), (200, 0));
        assert!(result.throughput() > 0.0 && result.latency.p99 >= result.latency.p50);
        // A bad body is an error (400), counted, not a hang.
        let bad = Arc::new(vec![b"not json".to_vec()]);
        let result = run(addr, "/echo", bad, Load { requests: 5, ..load }).await.expect("runs");
        assert_eq!((result.ok, result.errors), (0, 5));
        server.abort();
        let far: SocketAddr = "192.0.2.1:80".parse().expect("addr");
        assert!(run(far, "/echo", bodies, load).await.is_err());
    }
}
