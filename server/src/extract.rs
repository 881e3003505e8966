//! axum's extractors with their rejections turned into the error envelope,
//! so a malformed body, query or path gets `{"error":{...}}` like every
//! other failure, never axum's plain-text answer.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use serde::Deserialize;
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
        let bytes =
            Bytes::from_request(request, state).await.map_err(|rejection| {
                match rejection.status() {
                    StatusCode::PAYLOAD_TOO_LARGE => AppError::TooLargeBody(rejection.body_text()),
                    _ => AppError::BadRequest {
                        code: "unreadable_body",
                        message: rejection.body_text(),
                    },
                }
            })?;
        json_object(&bytes).map(ApiJson).map_err(|e| AppError::BadRequest {
            code: "invalid_json",
            message: format!("the body is not the JSON expected: {e}"),
        })
    }
}

/// A request body that the contract says is a JSON object, read into its
/// type. serde's derived structs also accept a JSON array of the fields in
/// order (`[[]]` read as `{"manifests": []}`), which no operation's schema
/// allows; so the text must be an object before serde sees it.
pub fn json_object<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    let first = bytes.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if let Some(other) = first.filter(|b| **b != b'{') {
        let found = if *other == b'[' { "an array" } else { "another value" };
        return Err(format!("expected a JSON object, found {found}"));
    }
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::json_object;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Reason {
        reason: Option<String>,
    }

    #[test]
    fn only_an_object_reads_as_a_struct() {
        assert_eq!(
            json_object::<Reason>(b" \n\t{\"reason\": \"ok\"}"),
            Ok(Reason { reason: Some("ok".into()) })
        );
        // serde's derive alone would read these as the struct's fields.
        assert_eq!(
            json_object::<Reason>(b"[\"ok\"]"),
            Err("expected a JSON object, found an array".into())
        );
        assert_eq!(
            json_object::<Reason>(b"  [null]"),
            Err("expected a JSON object, found an array".into())
        );
        assert!(
            serde_json::from_slice::<Reason>(b"[\"ok\"]").is_ok(),
            "the derive's sequence form this guards against"
        );
        assert_eq!(
            json_object::<Reason>(b"\"ok\""),
            Err("expected a JSON object, found another value".into())
        );
        assert!(
            json_object::<Reason>(b"").is_err_and(|e| e.contains("EOF")),
            "an empty body is serde's error, as before"
        );
    }
}
