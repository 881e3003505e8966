//! One request on the wire, tried again by the retry policy: the only place
//! that talks to the HTTP stack (ureq).

use std::io::ErrorKind;
use std::time::{Duration, SystemTime};

use ureq::http;

use crate::error::{Error, TransportKind};
use crate::retry::{Idempotence, RetryPolicy, parse_retry_after, retry_status};

/// A request to send.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) method: &'static str,
    pub(crate) url: String,
    pub(crate) body: Option<(&'static str, &'a [u8])>,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) idempotence: Idempotence,
    /// The largest answer body read.
    pub(crate) max_answer_bytes: u64,
}

/// An answer with any status.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) etag: Option<String>,
    pub(crate) body: Vec<u8>,
    /// Tries it took.
    pub(crate) attempts: u32,
}

/// A try that got no answer: what failed, and whether the request was
/// certainly not sent (so even a write may be retried).
struct Failure {
    kind: TransportKind,
    message: String,
    not_sent: bool,
}

/// Sends `call`, retrying as `policy` allows; the last answer or failure.
pub(crate) fn send(
    agent: &ureq::Agent,
    policy: &RetryPolicy,
    call: &Call<'_>,
) -> Result<Answer, Error> {
    let mut retry = 0u32;
    loop {
        let attempts = retry + 1;
        let (wait, outcome) = match once(agent, call) {
            Ok((mut answer, retry_after)) => {
                answer.attempts = attempts;
                let wait = if retry_status(answer.status, call.idempotence) {
                    policy.delay(retry, retry_after)
                } else {
                    None
                };
                (wait, Ok(answer))
            }
            Err(failure) => {
                // A TLS failure or an oversized answer would only repeat.
                let deterministic =
                    matches!(failure.kind, TransportKind::Tls | TransportKind::TooLarge);
                let may_retry = !deterministic
                    && (failure.not_sent || call.idempotence == Idempotence::Idempotent);
                let wait = if may_retry { policy.delay(retry, None) } else { None };
                let error = Error::Transport {
                    method: call.method,
                    url: call.url.clone(),
                    kind: failure.kind,
                    message: failure.message,
                    attempts,
                };
                (wait, Err(error))
            }
        };
        match wait {
            Some(wait) if retry < policy.max_retries => {
                std::thread::sleep(wait);
                retry += 1;
            }
            _ => return outcome,
        }
    }
}

fn once(agent: &ureq::Agent, call: &Call<'_>) -> Result<(Answer, Option<Duration>), Failure> {
    let mut builder = http::Request::builder().method(call.method).uri(&call.url);
    for (name, value) in &call.headers {
        builder = builder.header(*name, value);
    }
    let result = match call.body {
        Some((content_type, bytes)) => builder
            .header("content-type", content_type)
            .body(bytes)
            .map_err(|e| Failure {
                kind: TransportKind::Io,
                message: e.to_string(),
                not_sent: true,
            })
            .and_then(|request| agent.run(request).map_err(failure)),
        None => builder
            .body(())
            .map_err(|e| Failure {
                kind: TransportKind::Io,
                message: e.to_string(),
                not_sent: true,
            })
            .and_then(|request| agent.run(request).map_err(failure)),
    };
    let mut response = result?;
    let status = response.status().as_u16();
    let header =
        |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let etag = header("etag");
    let retry_after = header("retry-after").and_then(|v| parse_retry_after(&v, SystemTime::now()));
    let body = response
        .body_mut()
        .with_config()
        .limit(call.max_answer_bytes)
        .read_to_vec()
        .map_err(failure)?;
    Ok((Answer { status, etag, body, attempts: 1 }, retry_after))
}

/// Sorts ureq's errors into the kinds callers act on.
fn failure(e: ureq::Error) -> Failure {
    let message = e.to_string();
    let (kind, not_sent) = match &e {
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => (TransportKind::Connect, true),
        ureq::Error::Io(io)
            if matches!(io.kind(), ErrorKind::ConnectionRefused | ErrorKind::AddrNotAvailable) =>
        {
            (TransportKind::Connect, true)
        }
        ureq::Error::Timeout(t) => {
            // A connect or resolve timeout means nothing was sent.
            let before = matches!(t, ureq::Timeout::Resolve | ureq::Timeout::Connect);
            (TransportKind::Timeout, before)
        }
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_) => {
            (TransportKind::Tls, true)
        }
        ureq::Error::BodyExceedsLimit(_) => (TransportKind::TooLarge, false),
        _ => (TransportKind::Io, false),
    };
    Failure { kind, message, not_sent }
}
