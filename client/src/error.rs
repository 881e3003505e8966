//! What a call can fail with: the request never got an answer
//! ([`Error::Transport`]), the server answered with its error envelope
//! ([`Error::Api`], carrying `code`, `message` and, for a refused publish,
//! `step`), or the answer was not what API v1 says ([`Error::Decode`]).

use pitfall_api::types::ErrorBody;

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The base URL is not an `http://` or `https://` URL.
    #[error("{url:?} is not a server URL: {reason}")]
    InvalidUrl {
        /// What was given.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No answer: the connection, TLS, a timeout or the body read failed,
    /// after `attempts` tries.
    #[error("{method} {url}: {kind}: {message} (after {attempts} attempt(s))")]
    Transport {
        /// The request's method.
        method: &'static str,
        /// The request's URL.
        url: String,
        /// Which part failed.
        kind: TransportKind,
        /// What the HTTP stack said.
        message: String,
        /// Tries made, retries included.
        attempts: u32,
    },
    /// The server answered with an error status and its envelope.
    #[error("{method} {url}: {status} {}: {}", body.code, body.message)]
    Api {
        /// The request's method.
        method: &'static str,
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The envelope's body: `code`, `message`, `step`, `retry_after_s`
        /// (boxed: it would make every `Result` of the client that large).
        body: Box<ErrorBody>,
        /// Tries made, retries included.
        attempts: u32,
    },
    /// A success status whose body is not the documented shape.
    #[error("{method} {url}: the answer is not what API v1 says ({status}): {message}")]
    Decode {
        /// The request's method.
        method: &'static str,
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What did not parse.
        message: String,
    },
    /// The request could not be built (a value that does not serialise).
    #[error("the request could not be built: {0}")]
    Request(String),
}

/// Where a request without an answer failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// The host name did not resolve, or nothing accepted the connection:
    /// the request was certainly not sent.
    Connect,
    /// A timeout (connect or total).
    Timeout,
    /// TLS failed.
    Tls,
    /// The answer was larger than this client reads.
    TooLarge,
    /// Anything else on the way (reset connection, broken HTTP).
    Io,
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TransportKind::Connect => "cannot connect",
            TransportKind::Timeout => "timed out",
            TransportKind::Tls => "TLS failed",
            TransportKind::TooLarge => "answer too large",
            TransportKind::Io => "connection failed",
        })
    }
}

impl Error {
    /// The HTTP status of an error answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } | Error::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The envelope's `code` (`invalid_manifest`, `publish_refused`, ...).
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { body, .. } => Some(&body.code),
            _ => None,
        }
    }

    /// For a refused publish: the pipeline step that refused the module.
    pub fn step(&self) -> Option<&str> {
        match self {
            Error::Api { body, .. } => body.step.as_deref(),
            _ => None,
        }
    }

    /// The envelope's `message`, or this error's text.
    pub fn message(&self) -> String {
        match self {
            Error::Api { body, .. } => body.message.clone(),
            other => other.to_string(),
        }
    }
}
