//! The router: `fn app(state) -> Router`, so tests drive it with `oneshot`;
//! every route inside the access log (`access_log.rs`).

use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

use crate::admission::admit;
use crate::api;
use crate::error::AppError;
use crate::state::{AppState, RequestDeadline};

/// The HTTP API.
pub fn app(state: AppState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(api::ops::healthz))
        .route("/readyz", get(api::ops::readyz))
        .route("/metrics", get(api::ops::metrics))
        .route("/v1/openapi.json", get(api::ops::openapi))
        .route("/v1/limits", get(api::ops::limits))
        .route("/v1/bundle", get(api::bundle::bundle))
        .route("/v1/check", post(api::check::check))
        .route("/v1/check/batch", post(api::check::batch))
        .route("/v1/manifest/from-text", post(api::from_text::from_text))
        .route("/v1/fix", post(api::fix::fix))
        .route("/v1/explain", post(api::explain::explain))
        .route("/v1/schemas/{name}", get(api::schemas::schema))
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
        .route("/v1/revisions", get(api::revisions::list))
        .route("/v1/revisions/{revision}", get(api::revisions::detail))
        .route("/v1/watches", get(api::watches::list).post(api::watches::create))
        .route(
            "/v1/watches/{id}",
            get(api::watches::show).patch(api::watches::change).delete(api::watches::delete),
        )
        .route("/v1/watches/{id}/deliveries", get(api::watches::deliveries))
        .route("/v1/watches/{id}/test", post(api::watches::test))
        .merge(crate::web::routes())
        .fallback(crate::web::fallback)
        .method_not_allowed_fallback(crate::error::method_not_allowed)
        // JSON extractors are bounded here; raw bodies by `read_body`.
        .layer(DefaultBodyLimit::max(state.limits().max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), bound_and_measure));
    crate::access_log::around(routes).with_state(state)
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
