//! The access log: one line per answered request, target
//! `pitfall_server::access`, with the method, the matched route (never the
//! raw path, which can carry anything), the status, the latency, the body's
//! bytes and the request id. The id is the client's `x-request-id` when it
//! is a plain token of at most [`MAX_REQUEST_ID_BYTES`], else one made
//! here; either way it is returned in the answer's `x-request-id`, so a
//! client's report can be matched to the server's line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, Response};
use axum::middleware::{self, Next};
use tower::ServiceBuilder;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

/// The header that carries a request's id, both ways.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// Longest client-chosen request id kept: a UUID is 36 bytes, a W3C trace
/// id 32; anything longer only makes log lines long.
pub(crate) const MAX_REQUEST_ID_BYTES: usize = 64;

/// `router` with the access log and request ids around every route.
pub(crate) fn around<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    let header = axum::http::HeaderName::from_static(REQUEST_ID_HEADER);
    let trace = TraceLayer::new_for_http()
        .make_span_with(|request: &Request| {
            let route =
                request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str());
            let id = request
                .headers()
                .get(REQUEST_ID_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!(
                target: "pitfall_server::access",
                "request",
                method = %crate::metrics::method_label(request.method().as_str()),
                route = %route,
                request_id = %id,
            )
        })
        .on_request(())
        .on_body_chunk(())
        .on_eos(())
        // A 5xx is a line like any other, with its status: not a second one.
        .on_failure(())
        .on_response(|response: &Response<Body>, latency: Duration, _span: &tracing::Span| {
            let bytes = response.body().size_hint().exact();
            tracing::info!(
                target: "pitfall_server::access",
                status = response.status().as_u16(),
                latency_ms = latency.as_secs_f64() * 1000.0,
                bytes,
                "answered"
            );
        });
    router.layer(
        ServiceBuilder::new()
            .layer(middleware::from_fn(drop_unfit_request_id))
            .layer(SetRequestIdLayer::new(header.clone(), RequestIds::new()))
            .layer(PropagateRequestIdLayer::new(header))
            .layer(trace),
    )
}

/// Removes a client's `x-request-id` that is not a plain token of at most
/// [`MAX_REQUEST_ID_BYTES`], so one is made for the request instead.
async fn drop_unfit_request_id(mut request: Request, next: Next) -> axum::response::Response {
    let fit = request.headers().get_all(REQUEST_ID_HEADER).iter().count() == 1
        && request.headers().get(REQUEST_ID_HEADER).is_some_and(|v| is_fit(v.as_bytes()));
    if !fit {
        request.headers_mut().remove(REQUEST_ID_HEADER);
    }
    next.run(request).await
}

/// Letters, digits and `-_.:+/=`, 1 to [`MAX_REQUEST_ID_BYTES`] of them:
/// what UUIDs, trace ids and base64 ids are made of, and nothing that can
/// break a log line or a JSON string.
fn is_fit(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID_BYTES).contains(&id.len())
        && id.iter().all(|b| b.is_ascii_alphanumeric() || b"-_.:+/=".contains(b))
}

/// Request ids made here: a random 64-bit prefix per process (so the
/// replicas of one registry do not repeat each other's) and a counter.
#[derive(Debug, Clone)]
struct RequestIds {
    prefix: u64,
    next: Arc<AtomicU64>,
}

impl RequestIds {
    fn new() -> RequestIds {
        let prefix = getrandom::u64().unwrap_or_else(|_| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ u64::from(std::process::id())
        });
        RequestIds { prefix, next: Arc::new(AtomicU64::new(1)) }
    }
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _request: &axum::http::Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{:016x}-{n:016x}", self.prefix)).ok().map(RequestId::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_short_ids_are_kept() {
        for fit in
            ["a", "5351a18b-8e7f-4cd8-95c5-0a6f201b68c4", "trace:00f0/ab+c=", &"x".repeat(64)]
        {
            assert!(is_fit(fit.as_bytes()), "{fit}");
        }
        for unfit in ["", "has space", "quote\"d", "brace{", &"x".repeat(65), "é"] {
            assert!(!is_fit(unfit.as_bytes()), "{unfit}");
        }
    }

    #[test]
    fn made_ids_are_distinct_and_fit() {
        let mut ids = RequestIds::new();
        let request = axum::http::Request::new(());
        let a = ids.make_request_id(&request).expect("id");
        let b = ids.make_request_id(&request).expect("id");
        assert_ne!(a.header_value(), b.header_value());
        assert!(is_fit(a.header_value().as_bytes()));
    }
}
