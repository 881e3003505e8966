//! Admission of a request before any handler runs: its endpoint's rate
//! limit and its body read whole within the size and time bounds; and the
//! bounded body read handlers use themselves.

use axum::body::{Body, Bytes};
use axum::extract::Request;

use crate::error::AppError;
use crate::rate_limit::RateLimiter;
use crate::state::AppState;

/// The rate limit and the bounded body read, before any handler runs.
pub(crate) async fn admit(
    state: &AppState,
    method: &str,
    route: &str,
    request: Request,
) -> Result<Request, AppError> {
    // The web pages' check form and matrix evaluate too, once they have a
    // query; their empty forms are free.
    let asks = request.uri().query().is_some_and(|q| !q.is_empty());
    // A batch is charged by its handler, once it has counted the
    // manifests (`charge_batch`).
    let limiter = match (method, route) {
        (
            "POST",
            "/v1/check"
            | "/v1/fix"
            | "/v1/explain"
            | "/v1/manifest/from-text"
            | "/check"
            | "/explain",
        ) => Some(state.check_rate()),
        ("GET", "/check" | "/matrix") if asks => Some(state.check_rate()),
        ("POST", "/v1/rules") => Some(state.publish_rate()),
        _ => None,
    };
    if let Some(limiter) = limiter {
        charge(limiter, &request, 1)?;
    }
    let (parts, body) = request.into_parts();
    // A watch holds a fleet of manifests: its writes have their own bound.
    let limit = match (method, route) {
        ("POST", "/v1/watches") | ("PATCH", "/v1/watches/{id}") => {
            state.limits().watch.max_watch_body_bytes
        }
        _ => state.limits().max_body_bytes,
    };
    let bytes = tokio::time::timeout(state.limits().body_timeout(), read_body(body, limit))
        .await
        .map_err(|_| AppError::BodyTimeout)??;
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// Takes `cost` units from the request's rate-limit buckets (its peer's
/// network and its bearer token), or answers 429.
fn charge(limiter: &RateLimiter, request: &Request, cost: u32) -> Result<(), AppError> {
    let ip = crate::listen::peer(request).map(|p| p.ip());
    let bearer = crate::auth::bearer_token(request.headers());
    // Rounded up: a client that waits what it was told is admitted.
    limiter.admit(ip, bearer, cost).map_err(|wait| AppError::RateLimited {
        retry_after_s: (wait.as_secs_f64().ceil() as u64).max(1),
    })
}

/// Charges a batch of `manifests` to the check limit, at least one unit
/// (an empty or unreadable batch still cost a request), so a batch costs
/// what its manifests would cost one by one. All or nothing: a refused
/// batch takes nothing from the buckets.
pub(crate) fn charge_batch(
    state: &AppState,
    request: &Request,
    manifests: usize,
) -> Result<(), AppError> {
    let cost = u32::try_from(manifests.max(1)).unwrap_or(u32::MAX);
    charge(state.check_rate(), request, cost)
}

/// Reads at most `limit` bytes of body, or answers 413 in the envelope.
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<Bytes, AppError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        // A body that is too large and one whose sender stalled or broke
        // off are different failures; only the first is the client's size.
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            AppError::TooLarge { limit }
        } else {
            AppError::BadRequest {
                code: "unreadable_body",
                message: format!("the request body could not be read: {e}"),
            }
        }
    })
}
