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

/// Serves `router` on `listener` until `shutdown` completes, then waits up
/// to `drain` for the connections in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ListenLimits,
    shutdown: impl std::future::Future<Output = ()> + Send,
    drain: Duration,
) -> std::io::Result<()> {
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let slots = Arc::new(Semaphore::new(max));
    let per_net = Arc::new(PerNet::default());
    let max_per_net = limits.max_connections_per_ip.max(1);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = limits.max_connections, "connection refused: too many open connections");
            drop(stream);
            continue;
        };
        let Some(net_slot) = per_net.take(peer.ip(), max_per_net) else {
            tracing::warn!(%peer, max = max_per_net, "connection refused: too many open connections from its network");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request.map(axum::body::Body::new))
        });
        let connection = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            // A timed-out head or a client that went away ends here; it is
            // the client's failure, worth a debug line at most.
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(net_slot);
            drop(slot);
        });
    }
    // Stop accepting; let what is in flight finish, within `drain`.
    drop(listener);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(drain, slots.acquire_many(all)).await;
    Ok(())
}

/// The peer address the accept loop recorded, if the request came through it.
pub fn peer(request: &axum::extract::Request) -> Option<SocketAddr> {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}
