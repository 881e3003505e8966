//! Load on a server while it is told to stop, and what each request got:
//! shared by the shutdown test (a process here) and the image test (a
//! container). A request is *cut* when its answer began and did not end,
//! or when the server logged an answer the client never received; a
//! request on a connection the server closed before reading anything from
//! it (refused, or an idle kept-alive one closed at shutdown) was *not
//! accepted*, which a client retries.

#![allow(dead_code, unreachable_pub)] // each test module uses a part of this

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What one request got.
#[derive(Debug, Clone)]
pub enum Got {
    /// A whole answer: its status, the `x-request-id` it carried, and
    /// whether the server said it closes the connection after it.
    Answered { status: u16, request_id: Option<String>, closed: bool },
    /// Nothing at all: refused, or closed before a byte of an answer.
    Nothing(String),
    /// Part of an answer.
    Partial(String),
}

/// One request of the load.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub id: String,
    pub got: Got,
    pub sent: Instant,
    pub ended: Instant,
}

/// Threads sending `POST /v1/check` over kept-alive connections, each
/// until it is refused a connection (the server stopped accepting).
pub struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Vec<Outcome>>>,
}

impl Load {
    pub fn start(addr: SocketAddr, threads: usize, body: &[u8], tag: &str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|t| {
                let (stop, body, tag) = (stop.clone(), body.to_vec(), format!("{tag}-{t}"));
                std::thread::spawn(move || client(addr, &body, &tag, &stop))
            })
            .collect();
        Load { stop, threads }
    }

    /// Waits up to `within` for every thread to be refused, then stops
    /// the rest; every outcome.
    pub fn finish(self, within: Duration) -> Vec<Outcome> {
        let deadline = Instant::now() + within;
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop.store(true, Ordering::Relaxed);
        self.threads.into_iter().flat_map(|t| t.join().expect("load thread")).collect()
    }
}

fn client(addr: SocketAddr, body: &[u8], tag: &str, stop: &AtomicBool) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut connection: Option<(TcpStream, BufReader<TcpStream>)> = None;
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let id = format!("{tag}-{n}");
        let sent = Instant::now();
        if connection.is_none() {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(stream) => {
                    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
                    let reader = BufReader::new(stream.try_clone().expect("clone"));
                    connection = Some((stream, reader));
                }
                Err(e) => {
                    let got = Got::Nothing(format!("connect: {e}"));
                    outcomes.push(Outcome { id, got, sent, ended: Instant::now() });
                    break;
                }
            }
        }
        let Some((stream, reader)) = connection.as_mut() else { break };
        let got = match stream.write_all(&check_request(addr, body, &id)) {
            Ok(()) => read_answer(reader),
            Err(e) => Got::Nothing(format!("write: {e}")),
        };
        if !matches!(got, Got::Answered { closed: false, .. }) {
            connection = None;
        }
        outcomes.push(Outcome { id, got, sent, ended: Instant::now() });
    }
    outcomes
}

/// `POST /v1/check` with `body` and an `x-request-id`.
pub fn check_request(addr: SocketAddr, body: &[u8], id: &str) -> Vec<u8> {
    let mut request = format!(
        "POST /v1/check HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         x-request-id: {id}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// Reads one answer (status line, headers, a content-length body).
pub fn read_answer(reader: &mut impl BufRead) -> Got {
    let mut read = 0usize;
    let mut line = String::new();
    let mut next_line = |line: &mut String, read: &mut usize| -> Result<(), String> {
        line.clear();
        match reader.read_line(line) {
            Ok(0) => Err("closed".to_owned()),
            Ok(n) => {
                *read += n;
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    };
    let incomplete = |read: usize, why: String| {
        if read == 0 {
            Got::Nothing(why)
        } else {
            Got::Partial(format!("after {read} bytes: {why}"))
        }
    };
    if let Err(why) = next_line(&mut line, &mut read) {
        return incomplete(read, why);
    }
    let Some(status) =
        line.strip_prefix("HTTP/1.1 ").and_then(|s| s.get(..3)).and_then(|s| s.parse().ok())
    else {
        return Got::Partial(format!("status line {line:?}"));
    };
    let (mut length, mut request_id, mut closed) = (None, None, false);
    loop {
        if let Err(why) = next_line(&mut line, &mut read) {
            return incomplete(read, why);
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "x-request-id" => request_id = Some(value.to_owned()),
                "connection" => closed = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
    }
    let Some(length) = length else {
        return Got::Partial("no content-length".to_owned());
    };
    let mut body = vec![0; length];
    if let Err(e) = reader.read_exact(&mut body) {
        return Got::Partial(format!("body: {e}"));
    }
    Got::Answered { status, request_id, closed }
}

/// A check whose body arrives in two halves, so it is in flight for as
/// long as the test holds the second half back.
pub struct SlowCheck {
    stream: TcpStream,
    rest: Vec<u8>,
}

impl SlowCheck {
    /// Connects and sends the head and half the body.
    pub fn start(addr: SocketAddr, body: &[u8], id: &str) -> SlowCheck {
        let request = check_request(addr, body, id);
        let split = request.len() - body.len() / 2;
        let mut stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        stream.write_all(&request[..split]).expect("first half");
        SlowCheck { stream, rest: request[split..].to_vec() }
    }

    /// Sends the rest and reads the answer.
    pub fn finish(mut self) -> Got {
        if let Err(e) = self.stream.write_all(&self.rest) {
            return Got::Nothing(format!("second half: {e}"));
        }
        read_answer(&mut BufReader::new(self.stream))
    }
}

/// The request ids of the access log's lines, text or JSON.
pub fn logged_request_ids(log: &str) -> HashSet<String> {
    log.lines()
        .filter(|line| line.contains("pitfall_server::access"))
        .filter_map(|line| {
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(line) {
                return json["span"]["request_id"].as_str().map(str::to_owned);
            }
            let rest = line.split("request_id=").nth(1)?;
            Some(rest.split(['}', ' ']).next()?.trim_matches('"').to_owned())
        })
        .collect()
}

/// What the load saw, once every request is accounted for.
#[derive(Debug)]
pub struct Tally {
    pub answered: usize,
    pub answered_after: usize,
    pub not_accepted: usize,
}

/// Asserts no request was cut: every answer whole, a 200 carrying its own
/// id; no partial answer; nothing the server logged as answered left
/// unreceived. `signalled` is when the stop was sent.
pub fn assert_nothing_cut(
    outcomes: &[Outcome],
    logged: &HashSet<String>,
    signalled: Instant,
) -> Tally {
    let mut tally = Tally { answered: 0, answered_after: 0, not_accepted: 0 };
    for outcome in outcomes {
        match &outcome.got {
            Got::Answered { status, request_id, .. } => {
                assert_eq!(*status, 200, "{outcome:?}");
                assert_eq!(request_id.as_deref(), Some(outcome.id.as_str()), "{outcome:?}");
                tally.answered += 1;
                if outcome.ended > signalled {
                    tally.answered_after += 1;
                }
            }
            Got::Nothing(_) => {
                assert!(
                    outcome.ended >= signalled,
                    "refused before the server was told to stop: {outcome:?}"
                );
                assert!(
                    !logged.contains(&outcome.id),
                    "the server answered {} but the client got nothing: {outcome:?}",
                    outcome.id
                );
                tally.not_accepted += 1;
            }
            Got::Partial(why) => panic!("request {} was cut: {why}", outcome.id),
        }
    }
    tally
}
