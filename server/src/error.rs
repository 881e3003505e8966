//! One error type for every handler: each non-2xx answer is the JSON
//! envelope `{"error":{"code","message"}}`; internal details go to the log.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use pitfall_api::types::{ErrorBody, ErrorEnvelope};

/// An error answer.
#[derive(Debug)]
pub enum AppError {
    /// The request is wrong; the message says how (400).
    BadRequest { code: &'static str, message: String },
    /// Well-formed but not processable, e.g. an unknown manifest version (422).
    Unprocessable { code: &'static str, message: String },
    /// The body is larger than the configured bound (413).
    TooLarge { limit: usize },
    /// The body is too large, as an extractor reported it (413).
    TooLargeBody(String),
    /// No token, or one the registry does not know (401).
    Unauthorized(String),
    /// A token whose role or ownership does not allow this (403).
    Forbidden(String),
    /// No such rule, version or token (404).
    NotFound(String),
    /// The write conflicts with what is stored, e.g. a version that
    /// exists already or a state change that is not allowed (409).
    Conflict { code: &'static str, message: String },
    /// The publish pipeline refused the module at `step` (422).
    Refused { step: &'static str, message: String },
    /// The request took longer than the server's bound (503).
    Timeout,
    /// The client took longer than the body timeout to send its body (408).
    BodyTimeout,
    /// Over the rate limit; try again in this many seconds (429).
    RateLimited { retry_after_s: u64 },
    /// The store is unreachable: writes cannot be accepted now (503).
    Unavailable(String),
    /// The database's disk is full: the write was not made (507).
    StorageFull(String),
    /// A bug or an outage: logged in full, answered in general terms (500).
    Internal(anyhow::Error),
}

impl AppError {
    /// The status and the envelope's body. Internal details stay out.
    pub fn describe(&self) -> (StatusCode, ErrorBody) {
        let body = |code: &str, message: String| ErrorBody {
            code: code.to_owned(),
            message,
            step: None,
            retry_after_s: None,
        };
        match self {
            AppError::BadRequest { code, message } => {
                (StatusCode::BAD_REQUEST, body(code, message.clone()))
            }
            AppError::Unprocessable { code, message } => {
                (StatusCode::UNPROCESSABLE_ENTITY, body(code, message.clone()))
            }
            AppError::TooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                body("body_too_large", format!("the request body exceeds {limit} bytes")),
            ),
            AppError::TooLargeBody(message) => {
                (StatusCode::PAYLOAD_TOO_LARGE, body("body_too_large", message.clone()))
            }
            AppError::Unauthorized(message) => {
                (StatusCode::UNAUTHORIZED, body("unauthorized", message.clone()))
            }
            AppError::Forbidden(message) => {
                (StatusCode::FORBIDDEN, body("forbidden", message.clone()))
            }
            AppError::NotFound(message) => {
                (StatusCode::NOT_FOUND, body("not_found", message.clone()))
            }
            AppError::Conflict { code, message } => {
                (StatusCode::CONFLICT, body(code, message.clone()))
            }
            AppError::Refused { step, message } => (
                // A module over the size bound is a too-large body as well.
                if *step == "size" {
                    StatusCode::PAYLOAD_TOO_LARGE
                } else {
                    StatusCode::UNPROCESSABLE_ENTITY
                },
                ErrorBody {
                    code: "publish_refused".into(),
                    message: format!("{step}: {message}"),
                    step: Some((*step).to_owned()),
                    retry_after_s: None,
                },
            ),
            AppError::Timeout => (
                StatusCode::SERVICE_UNAVAILABLE,
                body("timeout", "the request took longer than the server allows; try again".into()),
            ),
            AppError::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                body(
                    "body_timeout",
                    "the request body took longer to arrive than the server allows".into(),
                ),
            ),
            AppError::RateLimited { retry_after_s } => (
                StatusCode::TOO_MANY_REQUESTS,
                ErrorBody {
                    code: "rate_limited".into(),
                    message: format!(
                        "too many requests from this token or address; try again in {retry_after_s} s"
                    ),
                    step: None,
                    retry_after_s: Some(*retry_after_s),
                },
            ),
            AppError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                body("unavailable", "the registry's store is unavailable; try again".into()),
            ),
            AppError::StorageFull(_) => (
                StatusCode::INSUFFICIENT_STORAGE,
                body(
                    "storage_full",
                    "the registry's storage is full; nothing was written. Try again later".into(),
                ),
            ),
            AppError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                body("internal", "internal error; see the server log".into()),
            ),
        }
    }
}

impl From<&AppError> for ErrorBody {
    fn from(e: &AppError) -> ErrorBody {
        e.describe().1
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match &self {
            AppError::Internal(e) => tracing::error!(error = format!("{e:#}"), "internal error"),
            AppError::Unavailable(e) => tracing::error!(error = %e, "store unavailable"),
            AppError::StorageFull(e) => tracing::error!(error = %e, "the database's disk is full"),
            _ => {}
        }
        let (status, error) = self.describe();
        let retry_after = error.retry_after_s;
        let mut response = (status, Json(ErrorEnvelope { error })).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

impl From<crate::publish::Refused> for AppError {
    fn from(r: crate::publish::Refused) -> AppError {
        AppError::Refused { step: r.step, message: r.message }
    }
}

impl From<crate::store::StoreError> for AppError {
    fn from(e: crate::store::StoreError) -> AppError {
        use crate::store::StoreError;
        match e {
            StoreError::NotFound(what) => AppError::NotFound(what),
            StoreError::NotOwner { .. } => AppError::Forbidden(e.to_string()),
            StoreError::Conflict(_) => {
                AppError::Conflict { code: "conflict", message: e.to_string() }
            }
            StoreError::InvalidTransition { .. } => {
                AppError::Conflict { code: "invalid_transition", message: e.to_string() }
            }
            StoreError::Invalid(message) => AppError::BadRequest { code: "invalid", message },
            StoreError::Corrupt(_) => AppError::Internal(e.into()),
            StoreError::Database(ref db) if is_disk_full(db) => {
                AppError::StorageFull(format!("{e:#}"))
            }
            other => AppError::Unavailable(format!("{other:#}")),
        }
    }
}

/// The envelope for routes that do not exist.
pub(crate) async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({ "error": { "code": "not_found", "message": "no such route" } })),
    )
        .into_response()
}

/// The envelope for a method a route does not take (axum's own answer has
/// an empty body).
pub(crate) async fn method_not_allowed() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(json!({ "error": { "code": "method_not_allowed", "message": "this route does not take that method" } })),
    )
        .into_response()
}

/// SQLite's SQLITE_FULL (13) and PostgreSQL's disk_full (53100): the write
/// was rolled back for want of space, which an operator must hear about as
/// such rather than as an outage.
fn is_disk_full(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            matches!(db.code().as_deref(), Some("13" | "53100"))
                || db.message().contains("disk is full")
        }
        _ => false,
    }
}
