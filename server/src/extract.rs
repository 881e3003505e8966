//! axum's extractors with their rejections turned into the error envelope,
//! so a malformed body, query or path gets `{"error":{...}}` like every
//! other failure, never axum's plain-text answer.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::AppError;

/// A JSON body (bounded by the router's body limit). Unlike `axum::Json`
/// it does not insist on a `Content-Type`: `curl -d '{...}'` sends a form
/// type, and the body is JSON or an error either way.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(request: Request, state: &S) -> Result<ApiJson<T>, AppError> {
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => AppError::TooLargeBody(rejection.body_text()),
            _ => AppError::BadRequest { code: "unreadable_body", message: rejection.body_text() },
        })?;
        serde_json::from_slice(&bytes)
            .map(ApiJson)
            .map_err(|e| AppError::BadRequest { code: "invalid_json", message: format!("the body is not the JSON expected: {e}") })
    }
}

/// A query string.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub struct ApiQuery<T>(pub T);

/// Path parameters.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct ApiPath<T>(pub T);

impl From<QueryRejection> for AppError {
    fn from(rejection: QueryRejection) -> AppError {
        AppError::BadRequest { code: "invalid_query", message: rejection.body_text() }
    }
}

impl From<PathRejection> for AppError {
    fn from(rejection: PathRejection) -> AppError {
        AppError::BadRequest { code: "invalid_path", message: rejection.body_text() }
    }
}
