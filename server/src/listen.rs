//! The HTTP/1.1 accept loop. `axum::serve` has no header timeout and no
//! connection bound, so a client that opens sockets and sends nothing, or
//! drips its headers a byte a minute, would hold a task and a file
//! descriptor for ever. Here every connection gets hyper's header-read
//! timeout, the number of open connections is bounded, in all and per
//! client network (an IPv4 address or an IPv6 /64, as the rate limits key
//! them), so one client cannot take every slot (one over a bound is closed
//! at once, so the ones already served are not starved), and the peer
//! address is put in the request's extensions for per-IP rate limits.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// hyper's read buffer, and so the largest request head: real heads are
/// under 8 KiB; hyper's default (~400 KiB) lets one request pin that much
/// per connection. A larger head is answered 431.
const MAX_HEAD_BYTES: usize = 64 << 10;

/// How the accept loop bounds its clients.
#[derive(Debug, Clone, Copy)]
pub struct ListenLimits {
    /// From a connection's first byte (or the end of the previous answer on
    /// a kept-alive one) to the end of the request head.
    pub header_read_timeout: Duration,
    /// Open connections at most.
    pub max_connections: usize,
    /// Open connections at most from one client network.
    pub max_connections_per_ip: usize,
}

/// Open connections per client network.
#[derive(Debug, Default)]
struct PerNet(Mutex<HashMap<IpAddr, usize>>);

/// One open connection of a network; counted off when dropped.
#[derive(Debug)]
struct NetSlot {
    nets: Arc<PerNet>,
    net: IpAddr,
}

impl PerNet {
    fn take(self: &Arc<Self>, peer: IpAddr, max: usize) -> Option<NetSlot> {
        let net = crate::rate_limit::client_net(peer);
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(net).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(NetSlot { nets: self.clone(), net })
    }
}

impl Drop for NetSlot {
    fn drop(&mut self) {
        let mut open = self.nets.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.net) {
            *count -= 1;
            if *count == 0 {
                // Only networks with an open connection are kept.
                open.remove(&self.net);
            }
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then drains:
/// the listener is closed (connections the kernel had already completed
/// are taken and served first, so none is reset unanswered), every
/// connection finishes the request it is on and is closed after its
/// answer (an idle kept-alive one at once), and the server waits up to
/// `drain` for them. Whatever is still open then is cut; the log says how
/// many.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ListenLimits,
    shutdown: impl std::future::Future<Output = ()> + Send,
    drain: Duration,
) -> std::io::Result<()> {
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let accept = Accept {
        slots: Arc::new(Semaphore::new(max)),
        per_net: Arc::new(PerNet::default()),
        max_per_net: limits.max_connections_per_ip.max(1),
        max_connections: limits.max_connections,
        http: {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .max_buf_size(MAX_HEAD_BYTES);
            http
        },
        router,
        stop: tokio::sync::watch::channel(false).0,
    };
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and friends: back off rather than spin; the
                    // loop itself must not end over one failed accept.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        accept.connection(stream, peer);
    }
    let open = max - accept.slots.available_permits();
    tracing::info!(
        open_connections = open,
        drain_ms = drain.as_millis(),
        "shutting down: draining"
    );
    accept.stop.send_replace(true);
    // Clients whose handshake the kernel completed are in the listen
    // queue and count as accepted: serve them (without keep-alive) rather
    // than reset them when the listener closes.
    let listener = listener.into_std()?;
    let mut late = 0usize;
    while let Ok((stream, peer)) = listener.accept() {
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        if let Ok(stream) = tokio::net::TcpStream::from_std(stream) {
            accept.connection(stream, peer);
            late += 1;
        }
    }
    drop(listener);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let started = std::time::Instant::now();
    let drained = tokio::time::timeout(drain, accept.slots.acquire_many(all)).await.is_ok();
    let cut = if drained { 0 } else { max - accept.slots.available_permits() };
    if drained {
        tracing::info!(late, drained_ms = started.elapsed().as_millis(), "drained");
    } else {
        tracing::warn!(late, cut, "drain bound reached: closing the connections still open");
    }
    Ok(())
}

/// What the accept loop hands each connection.
struct Accept {
    slots: Arc<Semaphore>,
    per_net: Arc<PerNet>,
    max_per_net: usize,
    max_connections: usize,
    http: hyper::server::conn::http1::Builder,
    router: Router,
    /// Set once the server shuts down: each connection then finishes the
    /// request it is on and closes.
    stop: tokio::sync::watch::Sender<bool>,
}

impl Accept {
    /// Serves one connection on its own task, if the bounds allow it.
    fn connection(&self, stream: tokio::net::TcpStream, peer: SocketAddr) {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = self.max_connections, "connection refused: too many open connections");
            drop(stream);
            return;
        };
        let Some(net_slot) = self.per_net.take(peer.ip(), self.max_per_net) else {
            tracing::warn!(%peer, max = self.max_per_net, "connection refused: too many open connections from its network");
            drop(stream);
            return;
        };
        let _ = stream.set_nodelay(true);
        let router = self.router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request.map(axum::body::Body::new))
        });
        let connection = self.http.serve_connection(TokioIo::new(stream), service);
        let mut stop = self.stop.subscribe();
        tokio::spawn(async move {
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => Some(ended),
                _ = stop.wait_for(|stopping| *stopping) => None,
            };
            let ended = match ended {
                Some(ended) => ended,
                None => {
                    // hyper closes an idle connection now, and a busy one
                    // after the answer it is writing (with `connection: close`).
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            // A timed-out head or a client that went away ends here; it is
            // the client's failure, worth a debug line at most.
            if let Err(e) = ended {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(net_slot);
            drop(slot);
        });
    }
}

/// The peer address the accept loop recorded, if the request came through it.
pub fn peer(request: &axum::extract::Request) -> Option<SocketAddr> {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}
