//! The typed API: one method per operation of API v1 that a client needs.

use std::sync::OnceLock;
use std::time::Duration;

use pitfall_api::fix::{FixRequest, FixResponse};
use pitfall_api::types::{
    AccountView, BatchItem, BatchResponse, ErrorBody, ErrorEnvelope, ExplainRequest,
    ExplainResponse, Health, LimitsView, ReviewRequest, RuleDetail, SearchQuery, SearchResponse,
    VersionDetail,
};
use pitfall_contract::Manifest;
use pitfall_contract::report::CheckResponse;
use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::retry::{Idempotence, RetryPolicy};
use crate::transport::{Answer, Call, send};

/// Connecting takes well under this on any network a registry is on.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One try of one request, body included: above the server's own 30 s
/// bound, so a slow batch gets the server's answer rather than ours.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest JSON answer read (a search page or a batch of 256 answers
/// is a few MiB).
pub const DEFAULT_MAX_JSON_BYTES: u64 = 64 << 20;
/// The largest module or bundle read (a bundle holds every approved module).
pub const DEFAULT_MAX_BINARY_BYTES: u64 = 1 << 30;
/// The server's own defaults, for servers that do not publish their limits.
const FALLBACK_LIMITS: LimitsView =
    LimitsView { max_batch: 256, max_manifest_bytes: 256 << 10, max_body_bytes: 2 << 20 };

/// A client of one registry server. Cheap to clone; safe to share between
/// threads (connections are pooled). Its `Debug` shows whether it holds a
/// token, never the token.
#[derive(Clone)]
pub struct Client {
    base: String,
    agent: ureq::Agent,
    token: Option<String>,
    retry: RetryPolicy,
    limits: std::sync::Arc<OnceLock<LimitsView>>,
    /// The ruleset revision checks are asked at (none: the served one).
    revision: Option<u64>,
}

/// Builds a [`Client`].
#[derive(Clone)]
pub struct ClientBuilder {
    base: String,
    token: Option<String>,
    connect_timeout: Duration,
    timeout: Duration,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("token", &pitfall_api::redacted(&self.token))
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base", &self.base)
            .field("token", &pitfall_api::redacted(&self.token))
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl ClientBuilder {
    /// The bearer token for writes and for what needs an account.
    pub fn token(mut self, token: impl Into<String>) -> ClientBuilder {
        self.token = Some(token.into());
        self
    }

    /// How long to wait for a connection.
    pub fn connect_timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.connect_timeout = timeout;
        self
    }

    /// How long one try of one request may take, start to end.
    pub fn timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.timeout = timeout;
        self
    }

    /// When to retry.
    pub fn retry(mut self, retry: RetryPolicy) -> ClientBuilder {
        self.retry = retry;
        self
    }

    /// The client; fails when the base URL is not `http(s)://host...`.
    pub fn build(self) -> Result<Client, Error> {
        let base = normalise_base(&self.base)?;
        let config = ureq::Agent::config_builder()
            // Error statuses are answers: the envelope is read, not lost.
            .http_status_as_error(false)
            .timeout_connect(Some(self.connect_timeout))
            .timeout_global(Some(self.timeout))
            // A redirect would re-send a publish elsewhere: refuse them.
            .max_redirects(0)
            .user_agent(concat!("pitfall-client/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Client {
            base,
            agent: ureq::Agent::new_with_config(config),
            token: self.token,
            retry: self.retry,
            limits: Default::default(),
            revision: None,
        })
    }
}

fn normalise_base(url: &str) -> Result<String, Error> {
    let invalid = |reason| Error::InvalidUrl { url: url.to_owned(), reason };
    let trimmed = url.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| invalid("it must start with http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(invalid("it names no host"));
    }
    if rest.contains(['?', '#', ' ']) {
        return Err(invalid("a base URL has no query, fragment or spaces"));
    }
    Ok(trimmed.to_owned())
}

/// The answer to a conditional bundle fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleFetch {
    /// The server's bundle still has the entity tag sent (304).
    NotModified {
        /// That tag.
        etag: String,
    },
    /// A bundle (not yet verified: see `pitfall_api::Bundle::verify`).
    Fetched {
        /// Its bytes.
        bytes: Vec<u8>,
        /// Its entity tag, for the next conditional fetch.
        etag: Option<String>,
    },
}

/// How far a long batch has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Manifests answered so far.
    pub done: usize,
    /// Manifests in all.
    pub total: usize,
}

const JSON: &str = "application/json";
const WASM: &str = "application/wasm";

impl Client {
    /// A client of the server at `base_url` with default timeouts and retries.
    pub fn new(base_url: &str) -> Result<Client, Error> {
        Client::builder(base_url).build()
    }

    /// A builder for a client of the server at `base_url`.
    pub fn builder(base_url: &str) -> ClientBuilder {
        ClientBuilder {
            base: base_url.to_owned(),
            token: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }

    /// The server's base URL (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Whether this client would send its token unencrypted to another
    /// machine: it has one, and the server is `http://` on a host that is
    /// not this one (anyone on the path could read and reuse the token).
    pub fn sends_token_in_the_clear(&self) -> bool {
        self.token.is_some() && plain_http_to_another_host(&self.base)
    }

    fn call<'a>(
        &self,
        method: &'static str,
        path: &str,
        body: Option<(&'static str, &'a [u8])>,
        idempotence: Idempotence,
    ) -> Call<'a> {
        let mut headers = vec![("accept", JSON.to_owned())];
        if let Some(token) = &self.token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        Call {
            method,
            url: format!("{}{path}", self.base),
            body,
            headers,
            idempotence,
            max_answer_bytes: DEFAULT_MAX_JSON_BYTES,
        }
    }

    /// Sends a call; an error status becomes [`Error::Api`].
    fn exchange(&self, call: &Call<'_>) -> Result<Answer, Error> {
        let answer = send(&self.agent, &self.retry, call)?;
        if (200..300).contains(&answer.status) || answer.status == 304 {
            return Ok(answer);
        }
        let body = serde_json::from_slice::<ErrorEnvelope>(&answer.body)
            .map(|e| e.error)
            .unwrap_or_else(|_| {
                // Not the envelope (a proxy's page): keep a readable start of it.
                let text = String::from_utf8_lossy(&answer.body);
                let text: String = text.chars().take(200).collect();
                ErrorBody {
                    code: format!("http_{}", answer.status),
                    message: text.trim().to_owned(),
                    step: None,
                    retry_after_s: None,
                }
            });
        Err(Error::Api {
            method: call.method,
            url: call.url.clone(),
            status: answer.status,
            body: Box::new(body),
            attempts: answer.attempts,
        })
    }

    fn json<T: DeserializeOwned>(&self, call: &Call<'_>) -> Result<T, Error> {
        let answer = self.exchange(call)?;
        serde_json::from_slice(&answer.body).map_err(|e| Error::Decode {
            method: call.method,
            url: call.url.clone(),
            status: answer.status,
            message: e.to_string(),
        })
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        self.json(&self.call("GET", path, None, Idempotence::Idempotent))
    }

    /// `GET /healthz`: the server is up; its ruleset revision.
    pub fn health(&self) -> Result<Health, Error> {
        self.get("/healthz")
    }

    /// `GET /v1/limits`: the bounds on one request (asked once per client;
    /// a server without the endpoint is assumed to have the defaults).
    pub fn limits(&self) -> Result<LimitsView, Error> {
        if let Some(limits) = self.limits.get() {
            return Ok(*limits);
        }
        let limits = match self.get::<LimitsView>("/v1/limits") {
            Ok(limits) => limits,
            Err(e) if e.status() == Some(404) => FALLBACK_LIMITS,
            Err(e) => return Err(e),
        };
        Ok(*self.limits.get_or_init(|| limits))
    }

    /// `POST /v1/check`: one manifest.
    pub fn check(&self, manifest: &Manifest) -> Result<CheckResponse, Error> {
        let body = serde_json::to_vec(manifest).map_err(|e| Error::Request(e.to_string()))?;
        self.check_json(&body)
    }

    /// `POST /v1/check` with a manifest's JSON text as it is (the server
    /// parses and validates it).
    pub fn check_json(&self, manifest_json: &[u8]) -> Result<CheckResponse, Error> {
        self.json(&self.call(
            "POST",
            &self.check_path("/v1/check"),
            Some((JSON, manifest_json)),
            Idempotence::Idempotent,
        ))
    }

    /// This client with its checks (one, batch, all) asked as of a
    /// ruleset revision: the answers the registry gave at that revision,
    /// labelled `as_of` when it is not the one served. `None`: the served
    /// revision.
    pub fn at_revision(&self, revision: Option<u64>) -> Client {
        Client { revision, ..self.clone() }
    }

    /// A check operation's path, with the revision asked, if any.
    fn check_path(&self, path: &str) -> String {
        match self.revision {
            Some(revision) => format!("{path}?revision={revision}"),
            None => path.to_owned(),
        }
    }

    /// `POST /v1/check/batch`: these manifests in one request (at most the
    /// server's `max_batch`; see [`Client::check_all`] for any number).
    pub fn check_batch(&self, manifests: &[Manifest]) -> Result<Vec<BatchItem>, Error> {
        let texts = manifests
            .iter()
            .map(|m| serde_json::to_string(m).map_err(|e| Error::Request(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        self.batch_texts(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn batch_texts(&self, texts: &[&str]) -> Result<Vec<BatchItem>, Error> {
        let body = batch_body(texts);
        let call = self.call(
            "POST",
            &self.check_path("/v1/check/batch"),
            Some((JSON, body.as_bytes())),
            Idempotence::Idempotent,
        );
        let answer: BatchResponse = self.json(&call)?;
        if answer.results.len() != texts.len() {
            return Err(Error::Decode {
                method: call.method,
                url: call.url,
                status: 200,
                message: format!("{} results for {} manifests", answer.results.len(), texts.len()),
            });
        }
        Ok(answer.results)
    }

    /// Checks any number of manifests through `POST /v1/check/batch`, in
    /// requests that fit the server's limits (count and body size), in
    /// order. A manifest too large for the server gets its own error entry
    /// without being sent. `progress` is told after each request.
    pub fn check_all(
        &self,
        manifests: &[Manifest],
        mut progress: impl FnMut(Progress),
    ) -> Result<Vec<BatchItem>, Error> {
        let limits = self.limits()?;
        let texts = manifests
            .iter()
            .map(|m| serde_json::to_string(m).map_err(|e| Error::Request(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut results: Vec<BatchItem> = Vec::with_capacity(texts.len());
        let total = texts.len();
        for chunk in chunks(&texts, &limits) {
            match chunk {
                Chunk::Send(range) => {
                    let slice: Vec<&str> = texts[range].iter().map(String::as_str).collect();
                    results.extend(self.batch_texts(&slice)?);
                }
                Chunk::TooLarge(index) => results.push(BatchItem::Error {
                    error: ErrorBody {
                        code: "body_too_large".into(),
                        message: format!(
                            "the manifest is {} bytes; this server takes at most {}",
                            texts[index].len(),
                            limits.max_manifest_bytes.min(limits.max_body_bytes)
                        ),
                        step: None,
                        retry_after_s: None,
                    },
                }),
            }
            progress(Progress { done: results.len(), total });
        }
        Ok(results)
    }

    /// `POST /v1/explain`: the rules whose error signatures explain a log,
    /// best first; with `request.manifest`, each also evaluated on it.
    pub fn explain(&self, request: &ExplainRequest) -> Result<ExplainResponse, Error> {
        let body = serde_json::to_vec(request).map_err(|e| Error::Request(e.to_string()))?;
        // Reads only: a retry cannot do anything twice.
        self.json(&self.call("POST", "/v1/explain", Some((JSON, &body)), Idempotence::Idempotent))
    }

    /// `POST /v1/fix`: the nearest configuration that passes, for one
    /// manifest (v1).
    pub fn fix(&self, manifest: &FixRequest) -> Result<FixResponse, Error> {
        let body = serde_json::to_vec(manifest).map_err(|e| Error::Request(e.to_string()))?;
        self.fix_json(&body)
    }

    /// `POST /v1/fix` with a manifest's JSON text as it is (the server
    /// parses and validates it).
    pub fn fix_json(&self, manifest_json: &[u8]) -> Result<FixResponse, Error> {
        self.json(&self.call(
            "POST",
            "/v1/fix",
            Some((JSON, manifest_json)),
            Idempotence::Idempotent,
        ))
    }

    /// `GET /v1/rules`: search by text and filters.
    pub fn search(&self, query: &SearchQuery) -> Result<SearchResponse, Error> {
        let query =
            serde_urlencoded::to_string(query).map_err(|e| Error::Request(e.to_string()))?;
        self.get(&format!("/v1/rules?{query}"))
    }

    /// `GET /v1/rules/{id}`: a rule and the versions the caller may see.
    pub fn rule(&self, id: &str) -> Result<RuleDetail, Error> {
        self.get(&format!("/v1/rules/{}", segment(id)))
    }

    /// `GET /v1/rules/{id}/versions/{version}`.
    pub fn version(&self, id: &str, version: &str) -> Result<VersionDetail, Error> {
        self.get(&format!("/v1/rules/{}/versions/{}", segment(id), segment(version)))
    }

    /// `GET /v1/rules/{id}/versions/{version}/module`: the wasm bytes.
    pub fn module(&self, id: &str, version: &str) -> Result<Vec<u8>, Error> {
        let path = format!("/v1/rules/{}/versions/{}/module", segment(id), segment(version));
        let mut call = self.call("GET", &path, None, Idempotence::Idempotent);
        call.max_answer_bytes = DEFAULT_MAX_BINARY_BYTES;
        Ok(self.exchange(&call)?.body)
    }

    /// `POST /v1/rules`: publish a module (needs a token). The answer is the
    /// stored pending version with the pipeline's report; a refusal is
    /// [`Error::Api`] with code `publish_refused` and its `step`. Never
    /// retried after the server may have stored it.
    pub fn publish(&self, wasm: &[u8]) -> Result<VersionDetail, Error> {
        self.json(&self.call("POST", "/v1/rules", Some((WASM, wasm)), Idempotence::NotIdempotent))
    }

    fn review(
        &self,
        id: &str,
        version: &str,
        action: &str,
        reason: Option<&str>,
    ) -> Result<VersionDetail, Error> {
        let body = serde_json::to_vec(&ReviewRequest { reason: reason.map(str::to_owned) })
            .map_err(|e| Error::Request(e.to_string()))?;
        let path = format!("/v1/rules/{}/versions/{}/{action}", segment(id), segment(version));
        self.json(&self.call("POST", &path, Some((JSON, &body)), Idempotence::NotIdempotent))
    }

    /// `POST .../approve` (maintainer): checks serve the version.
    pub fn approve(
        &self,
        id: &str,
        version: &str,
        reason: Option<&str>,
    ) -> Result<VersionDetail, Error> {
        self.review(id, version, "approve", reason)
    }

    /// `POST .../reject` (maintainer).
    pub fn reject(
        &self,
        id: &str,
        version: &str,
        reason: Option<&str>,
    ) -> Result<VersionDetail, Error> {
        self.review(id, version, "reject", reason)
    }

    /// `POST .../yank` (an owner or a maintainer).
    pub fn yank(
        &self,
        id: &str,
        version: &str,
        reason: Option<&str>,
    ) -> Result<VersionDetail, Error> {
        self.review(id, version, "yank", reason)
    }

    /// `GET /v1/review` (maintainer): pending versions, oldest first.
    pub fn review_queue(&self) -> Result<Vec<VersionDetail>, Error> {
        self.get("/v1/review")
    }

    /// `GET /v1/whoami`: the token's account.
    pub fn whoami(&self) -> Result<AccountView, Error> {
        self.get("/v1/whoami")
    }

    /// `POST /v1/watches`: watch a manifest or a fleet. Never retried after
    /// the server may have stored it.
    pub fn create_watch(
        &self,
        request: &pitfall_api::watch::CreateWatchRequest,
    ) -> Result<pitfall_api::watch::WatchDetail, Error> {
        let body = serde_json::to_vec(request).map_err(|e| Error::Request(e.to_string()))?;
        self.json(&self.call(
            "POST",
            "/v1/watches",
            Some((JSON, &body)),
            Idempotence::NotIdempotent,
        ))
    }

    /// `GET /v1/watches`: the caller's watches (an admin's: everyone's).
    pub fn watches(&self) -> Result<Vec<pitfall_api::watch::WatchView>, Error> {
        self.get("/v1/watches")
    }

    /// `GET /v1/watches/{id}`: a watch with each label's findings.
    pub fn watch(&self, id: i64) -> Result<pitfall_api::watch::WatchDetail, Error> {
        self.get(&format!("/v1/watches/{id}"))
    }

    /// `DELETE /v1/watches/{id}`.
    pub fn delete_watch(&self, id: i64) -> Result<pitfall_api::watch::WatchView, Error> {
        let path = format!("/v1/watches/{id}");
        self.json(&self.call("DELETE", &path, None, Idempotence::NotIdempotent))
    }

    /// `GET /v1/watches/{id}/deliveries`: newest first, with every try.
    pub fn watch_deliveries(
        &self,
        id: i64,
        limit: u32,
    ) -> Result<Vec<pitfall_api::watch::DeliveryView>, Error> {
        self.get(&format!("/v1/watches/{id}/deliveries?limit={limit}"))
    }

    /// `POST /v1/watches/{id}/test`: enqueue a signed ping.
    pub fn test_watch(&self, id: i64) -> Result<pitfall_api::watch::PingQueued, Error> {
        let path = format!("/v1/watches/{id}/test");
        self.json(&self.call("POST", &path, None, Idempotence::NotIdempotent))
    }

    /// `GET /v1/bundle`: the signed bundle of the served rules; with
    /// `if_none_match` (the entity tag of the bundle held), a 304 costs
    /// nothing when it is unchanged.
    pub fn bundle(&self, if_none_match: Option<&str>) -> Result<BundleFetch, Error> {
        let mut call = self.call("GET", "/v1/bundle", None, Idempotence::Idempotent);
        call.headers[0].1 = pitfall_api::bundle::MEDIA_TYPE.to_owned();
        if let Some(etag) = if_none_match {
            call.headers.push(("if-none-match", etag.to_owned()));
        }
        call.max_answer_bytes = DEFAULT_MAX_BINARY_BYTES;
        let answer = self.exchange(&call)?;
        if answer.status == 304 {
            let etag = answer.etag.or_else(|| if_none_match.map(str::to_owned)).unwrap_or_default();
            return Ok(BundleFetch::NotModified { etag });
        }
        Ok(BundleFetch::Fetched { bytes: answer.body, etag: answer.etag })
    }
}

/// Whether `base` is `http://` to a host other than this machine's
/// loopback (`localhost`, 127.0.0.0/8, `::1`).
fn plain_http_to_another_host(base: &str) -> bool {
    let Some(rest) = base.strip_prefix("http://") else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    !loopback
}

/// `{"manifests": [...]}` from manifests' JSON texts.
fn batch_body(texts: &[&str]) -> String {
    let mut body = String::with_capacity(texts.iter().map(|t| t.len() + 1).sum::<usize>() + 16);
    body.push_str("{\"manifests\":[");
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(text);
    }
    body.push_str("]}");
    body
}

/// A part of a long batch.
#[derive(Debug, PartialEq, Eq)]
enum Chunk {
    /// These manifests, in one request.
    Send(std::ops::Range<usize>),
    /// This manifest alone is over the server's bounds.
    TooLarge(usize),
}

/// Splits manifests' texts into requests of at most `max_batch` manifests
/// whose bodies fit `max_body_bytes`.
fn chunks(texts: &[String], limits: &LimitsView) -> Vec<Chunk> {
    const ENVELOPE: usize = 16; // `{"manifests":[` + `]}`
    let max_batch = limits.max_batch.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = ENVELOPE;
    for (i, text) in texts.iter().enumerate() {
        let size = text.len() + 1;
        if text.len() > limits.max_manifest_bytes || ENVELOPE + size > limits.max_body_bytes {
            if start < i {
                out.push(Chunk::Send(start..i));
            }
            out.push(Chunk::TooLarge(i));
            start = i + 1;
            bytes = ENVELOPE;
            continue;
        }
        if i - start == max_batch || bytes + size > limits.max_body_bytes {
            out.push(Chunk::Send(start..i));
            start = i;
            bytes = ENVELOPE;
        }
        bytes += size;
    }
    if start < texts.len() {
        out.push(Chunk::Send(start..texts.len()));
    }
    out
}

/// A path segment, percent-encoded (ids and versions are plain, but a
/// caller's typo must not become another path).
fn segment(text: &str) -> String {
    if text.bytes().all(|b| b == b'.') {
        // `.` and `..` would be resolved away by the URL's path.
        return "%2E".repeat(text.len());
    }
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "pft_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd";

    #[test]
    fn debug_output_never_holds_the_token() {
        let builder = Client::builder("https://reg.example").token(SECRET);
        let client = builder.clone().build().expect("client");
        for text in [format!("{builder:?}"), format!("{client:?}"), format!("{client:#?}")] {
            assert!(!text.contains(SECRET) && !text.contains("0123456789abcdef"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
        let issued = pitfall_api::types::IssuedToken {
            token: SECRET.to_owned(),
            info: pitfall_api::types::TokenView {
                id: 1,
                account: "alice".into(),
                label: "ci".into(),
                created_at: "2026-12-06T00:00:00Z".into(),
                revoked_at: None,
                expires_at: None,
                scopes: vec!["check".into()],
            },
        };
        assert!(!format!("{issued:?}").contains(SECRET), "{issued:?}");
    }

    #[test]
    fn a_token_over_plain_http_to_another_host_is_flagged() {
        let with_token = |url: &str| Client::builder(url).token(SECRET).build().expect("client");
        for (url, clear) in [
            ("http://reg.example", true),
            ("http://10.0.0.5:8080/pitfall", true),
            ("http://[2001:db8::1]:8080", true),
            ("http://localhost:8080", false),
            ("http://127.0.0.1:8080", false),
            ("http://127.1.2.3", false),
            ("http://[::1]:8080", false),
            ("https://reg.example", false),
        ] {
            assert_eq!(with_token(url).sends_token_in_the_clear(), clear, "{url}");
        }
        assert!(!Client::new("http://reg.example").expect("client").sends_token_in_the_clear());
    }

    #[test]
    fn base_urls_are_checked_and_normalised() {
        assert_eq!(normalise_base("http://127.0.0.1:8080/").expect("ok"), "http://127.0.0.1:8080");
        assert_eq!(
            normalise_base(" https://reg.example/pitfall/ ").expect("ok"),
            "https://reg.example/pitfall"
        );
        for bad in ["", "127.0.0.1:8080", "ftp://x", "http://", "http:///v1", "http://x/?q=1"] {
            assert!(normalise_base(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn long_batches_split_by_count_and_by_body_size() {
        let limits = LimitsView { max_batch: 3, max_manifest_bytes: 50, max_body_bytes: 80 };
        let texts: Vec<String> =
            [10, 10, 10, 10, 60, 30, 30, 10].iter().map(|n| "x".repeat(*n)).collect();
        assert_eq!(
            chunks(&texts, &limits),
            vec![
                Chunk::Send(0..3),
                Chunk::Send(3..4),
                Chunk::TooLarge(4),
                Chunk::Send(5..7),
                Chunk::Send(7..8)
            ]
        );
        assert_eq!(chunks(&[], &limits), vec![]);
    }

    #[test]
    fn batch_bodies_hold_the_texts_in_order() {
        let body = batch_body(&["{\"a\":1}", "{\"b\":2}"]);
        let value: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(value, serde_json::json!({"manifests": [{"a": 1}, {"b": 2}]}));
    }

    #[test]
    fn path_segments_cannot_escape() {
        assert_eq!(segment("vllm-bf16-needs-sm80"), "vllm-bf16-needs-sm80");
        assert_eq!(segment("../x y"), "..%2Fx%20y");
        assert_eq!(segment(".."), "%2E%2E");
    }
}
