//! The router: `fn app(state) -> Router`, so tests drive it with `oneshot`.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

use crate::api;
use crate::bundle::Bundles;
use crate::config::ServerLimits;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::rate_limit::RateLimiter;
use crate::registry::Registry;
use crate::result_cache::ResultCache;

/// What every handler shares (cheap to clone).
#[derive(Debug, Clone)]
pub struct AppState {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    registry: Arc<Registry>,
    limits: ServerLimits,
    cache: ResultCache,
    metrics: Metrics,
    bundles: Bundles,
    check_rate: RateLimiter,
    publish_rate: RateLimiter,
    /// Checks evaluating at once, at most one per core
    /// ([`crate::runtime`]); the rest wait their turn here, as futures. More
    /// at once gained no throughput and cost memory: each thread that
    /// evaluates keeps its own allocator heap (measured: 545 → 639 MiB at
    /// 16 connections).
    check_slots: tokio::sync::Semaphore,
}

impl AppState {
    /// State over a registry, with these bounds, signing bundles with a
    /// fresh key (in-process uses; a server signs with its configured key,
    /// see [`AppState::with_signer`]).
    pub fn new(registry: Arc<Registry>, limits: ServerLimits) -> AppState {
        let signer = crate::signing::generate()
            .unwrap_or_else(|_| pitfall_api::BundleSigner::from_seed(&[0; 32]));
        AppState::with_signer(registry, limits, signer)
    }

    /// State over a registry, with these bounds, signing bundles with `signer`.
    pub fn with_signer(
        registry: Arc<Registry>,
        limits: ServerLimits,
        signer: pitfall_api::BundleSigner,
    ) -> AppState {
        let cache = ResultCache::new(limits.result_cache_entries, limits.result_cache_bytes);
        let bundles = Bundles::new(signer);
        let check_rate = RateLimiter::new(limits.rate_check_per_ip, limits.rate_check_per_token);
        let publish_rate =
            RateLimiter::new(limits.rate_publish_per_ip, limits.rate_publish_per_token);
        AppState {
            inner: Arc::new(Shared {
                registry,
                limits,
                cache,
                metrics: Metrics::default(),
                bundles,
                check_rate,
                publish_rate,
                check_slots: tokio::sync::Semaphore::new(crate::runtime::evaluation_slots()),
            }),
        }
    }

    /// The registry (store, engine, served rules).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// The request bounds.
    pub fn limits(&self) -> &ServerLimits {
        &self.inner.limits
    }

    /// Waits for one of the evaluation slots (one per core; see
    /// [`crate::runtime`]).
    pub async fn check_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, AppError> {
        // Nothing closes the semaphore; if something ever did, say so.
        self.inner
            .check_slots
            .acquire()
            .await
            .map_err(|e| AppError::Internal(anyhow::anyhow!("evaluation slots: {e}")))
    }

    /// The check answer cache.
    pub fn cache(&self) -> &ResultCache {
        &self.inner.cache
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The signed bundles of the served rules.
    pub fn bundles(&self) -> &Bundles {
        &self.inner.bundles
    }
}

/// The HTTP API.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(api::ops::healthz))
        .route("/readyz", get(api::ops::readyz))
        .route("/metrics", get(api::ops::metrics))
        .route("/v1/openapi.json", get(api::ops::openapi))
        .route("/v1/limits", get(api::ops::limits))
        .route("/v1/bundle", get(api::bundle::bundle))
        .route("/v1/check", post(api::check::check))
        .route("/v1/check/batch", post(api::check::batch))
        .route("/v1/explain", post(api::explain::explain))
        .route("/v1/rules", get(api::rules::search).post(api::rules::publish))
        .route("/v1/catalogue", get(api::rules::catalogue))
        .route("/v1/rules/{id}", get(api::rules::rule))
        .route("/v1/rules/{id}/versions/{version}", get(api::rules::version))
        .route("/v1/rules/{id}/versions/{version}/module", get(api::rules::module))
        .route("/v1/rules/{id}/versions/{version}/approve", post(api::review::approve))
        .route("/v1/rules/{id}/versions/{version}/reject", post(api::review::reject))
        .route("/v1/rules/{id}/versions/{version}/yank", post(api::review::yank))
        .route("/v1/review", get(api::review::queue))
        .route("/v1/whoami", get(api::accounts::whoami))
        .route("/v1/accounts", post(api::accounts::create_account))
        .route("/v1/accounts/{name}/role", put(api::accounts::set_role))
        .route("/v1/tokens", get(api::accounts::list_tokens).post(api::accounts::issue_token))
        .route("/v1/tokens/{id}", axum::routing::delete(api::accounts::revoke_token))
        .route("/v1/audit", get(api::accounts::audit))
        .merge(crate::web::routes())
        .fallback(crate::web::fallback)
        .method_not_allowed_fallback(crate::error::method_not_allowed)
        // JSON extractors are bounded here; raw bodies by `read_body`.
        .layer(DefaultBodyLimit::max(state.limits().max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), bound_and_measure))
        .with_state(state)
}

/// Bounds every request and records it in the metrics: the rate limit of
/// its endpoint, then its body read whole within the body timeout (a
/// client that drips its body gets 408 and frees the worker; handlers then
/// read from memory), then the request timeout around the handler, which
/// answers 503 in the envelope (the work behind it is bounded by the
/// engine's own limits). The deadline is polled before the handler, so a
/// handler that finishes only after it (found ready at the same wake-up,
/// e.g. on a loaded machine) is answered 503 too: `tokio::time::timeout`
/// polls the handler first and would let it through.
async fn bound_and_measure(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let method = request.method().as_str().to_owned();
    let route =
        request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_owned();
    let response = match admit(&state, &method, &route, request).await {
        Ok(mut request) => {
            let deadline = RequestDeadline(Instant::now() + state.limits().request_timeout());
            // Handlers that evaluate on their own worker stop there too.
            request.extensions_mut().insert(deadline);
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(deadline.0.into()) => AppError::Timeout.into_response(),
                response = next.run(request) => response,
            }
        }
        Err(e) => e.into_response(),
    };
    state.metrics().record_request(&method, &route, response.status().as_u16(), start.elapsed());
    response
}

/// When a request's time is up: [`ServerLimits::request_timeout`] after its
/// body was read. The middleware answers 503 then at the latest, but only
/// where the handler waits; a check evaluates on the worker that serves its
/// request, without waiting (`crate::runtime`), so it is handed this
/// instant and stops there itself.
#[derive(Debug, Clone, Copy)]
pub struct RequestDeadline(pub Instant);

/// The rate limit and the bounded body read, before any handler runs.
async fn admit(
    state: &AppState,
    method: &str,
    route: &str,
    request: Request,
) -> Result<Request, AppError> {
    // The web pages' check form and matrix evaluate too, once they have a
    // query; their empty forms are free.
    let asks = request.uri().query().is_some_and(|q| !q.is_empty());
    let limiter = match (method, route) {
        ("POST", "/v1/check" | "/v1/check/batch" | "/v1/explain") => Some(&state.inner.check_rate),
        ("GET", "/check" | "/matrix") if asks => Some(&state.inner.check_rate),
        ("POST", "/explain") => Some(&state.inner.check_rate),
        ("POST", "/v1/rules") => Some(&state.inner.publish_rate),
        _ => None,
    };
    if let Some(limiter) = limiter {
        let ip = crate::listen::peer(&request).map(|p| p.ip());
        let bearer = crate::auth::bearer_token(request.headers());
        // Rounded up: a client that waits what it was told is admitted.
        limiter.admit(ip, bearer).map_err(|wait| AppError::RateLimited {
            retry_after_s: (wait.as_secs_f64().ceil() as u64).max(1),
        })?;
    }
    let (parts, body) = request.into_parts();
    let bytes = tokio::time::timeout(
        state.limits().body_timeout(),
        read_body(body, state.limits().max_body_bytes),
    )
    .await
    .map_err(|_| AppError::BodyTimeout)??;
    Ok(Request::from_parts(parts, Body::from(bytes)))
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
