//! A loopback HTTP/1.1 server that plays a script: each connection gets the
//! next step (an answer, a close without answer, or a stall). It records
//! when each request arrived, and stops when the script ends.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to do with one connection.
#[derive(Debug, Clone)]
pub enum Step {
    /// Answer with this status, extra headers and body.
    Answer(u16, Vec<(&'static str, String)>, String),
    /// Read the request, then close without answering.
    Close,
    /// Read the request, then say nothing for this long.
    Stall(Duration),
}

/// An answer with a JSON body.
pub fn answer(status: u16, body: &str) -> Step {
    Step::Answer(status, Vec::new(), body.to_owned())
}

/// An error answer in the envelope, with a `Retry-After`.
pub fn busy(status: u16, retry_after: Option<&str>) -> Step {
    let headers = retry_after.map(|r| vec![("retry-after", r.to_owned())]).unwrap_or_default();
    Step::Answer(
        status,
        headers,
        format!(r#"{{"error":{{"code":"busy","message":"status {status}"}}}}"#),
    )
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub at: Instant,
}

/// The running script.
pub struct Scripted {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Scripted {
    pub fn start(script: Vec<Step>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let thread = std::thread::spawn(move || {
            for step in script {
                let Ok((mut stream, _)) = listener.accept() else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let Some((method, path)) = read_request(&mut stream) else { continue };
                record.lock().unwrap_or_else(|p| p.into_inner()).push(Seen {
                    method,
                    path,
                    at: Instant::now(),
                });
                match step {
                    Step::Answer(status, headers, body) => {
                        let extra: String =
                            headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
                        let head = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = stream
                            .write_all(head.as_bytes())
                            .and_then(|()| stream.write_all(body.as_bytes()));
                    }
                    Step::Close => {}
                    Step::Stall(time) => std::thread::sleep(time),
                }
            }
        });
        Scripted { url: format!("http://{addr}"), seen, thread: Some(thread) }
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits for the script's thread (it ends when the script does).
    pub fn finish(mut self) -> Vec<Seen> {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.seen()
    }
}

/// Reads one request's head and body; its method and path.
fn read_request(stream: &mut TcpStream) -> Option<(String, String)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .map(|(_, v)| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    while data.len() < end + length {
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buf[..n]);
    }
    let mut words = head.split_whitespace();
    Some((words.next()?.to_owned(), words.next()?.to_owned()))
}
