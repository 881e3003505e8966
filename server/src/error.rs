//! One error type for every handler: each non-2xx answer is the JSON
//! envelope `{"error":{"code","message"}}`; internal details go to the log.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answer.
#[derive(Debug)]
pub enum AppError {
    /// The request is wrong; the message says how (400).
    BadRequest { code: &'static str, message: String },
    /// Well-formed but not processable, e.g. an unknown manifest version (422).
    Unprocessable { code: &'static str, message: String },
    /// The body is larger than the configured bound (413).
    TooLarge { limit: usize },
    /// A bug or an outage: logged in full, answered in general terms (500).
    Internal(anyhow::Error),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            AppError::BadRequest { code, message } => (StatusCode::BAD_REQUEST, code, message),
            AppError::Unprocessable { code, message } => (StatusCode::UNPROCESSABLE_ENTITY, code, message),
            AppError::TooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the request body exceeds {limit} bytes"),
            ),
            AppError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "internal error");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error; see the server log".to_owned())
            }
        };
        (status, Json(json!({ "error": { "code": code, "message": message } }))).into_response()
    }
}

/// The envelope for routes that do not exist.
pub(crate) async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": { "code": "not_found", "message": "no such route" } })))
        .into_response()
}
