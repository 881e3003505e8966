//! `pitfall-server probe`: is the server at an address ready? One
//! `GET /readyz` over plain HTTP/1.1, bounded in time, so a container's
//! health check needs no HTTP client in the image.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// How long the probe waits to connect, and then for the answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// `Ok` when `GET /readyz` at `listen` answers 200; an unspecified listen
/// address (`0.0.0.0`, `::`) is asked on loopback.
pub fn ready(listen: SocketAddr) -> Result<(), String> {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let addr = SocketAddr::new(ip, listen.port());
    let mut stream = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT)
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    let request = format!("GET /readyz HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("asking {addr}: {e}"))?;
    // The status line is all the probe needs; the answer is small.
    let mut head = [0u8; 64];
    let mut read = 0;
    while read < 12 {
        match stream.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) => return Err(format!("reading {addr}'s answer: {e}")),
        }
    }
    let line = String::from_utf8_lossy(&head[..read]);
    match line.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        Some(status) => Err(format!("{addr} answered /readyz with {status}")),
        None => Err(format!("{addr} sent no HTTP answer")),
    }
}
