//! `POST /v1/manifest/from-text`: an environment paste and a serve command
//! in, the manifest they describe out, with what they did not say. The
//! parsers and the redaction are `pitfall_collect`'s, the same the CLI's
//! `pitfall scan --from-collect-env` uses; no paste is stored or logged.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use pitfall_collect::{Error, Scan};

use crate::api::types::{FromTextRequest, FromTextResponse, MissingFact};
use crate::app::{AppState, read_body};
use crate::error::AppError;
use crate::extract::json_object;

/// `POST /v1/manifest/from-text`.
pub async fn from_text(
    State(state): State<AppState>,
    body: Body,
) -> Result<Json<FromTextResponse>, AppError> {
    let limit = state.limits().max_manifest_bytes.min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let request: FromTextRequest = json_object(&body).map_err(|e| AppError::BadRequest {
        code: "invalid_json",
        message: format!("the body must be {{\"env\": \"...\", \"serve_command\": \"...\"}}: {e}"),
    })?;
    let scan = build(&request)?;
    Ok(Json(response(scan)))
}

/// The manifest the request's texts describe, or why there is none.
pub(crate) fn build(request: &FromTextRequest) -> Result<Scan, AppError> {
    let serve = request.serve_command.as_deref().filter(|c| !c.trim().is_empty());
    if request.env.trim().is_empty() && serve.is_none() {
        return Err(AppError::BadRequest {
            code: "empty_text",
            message:
                "give an environment paste (`env`), a serve command (`serve_command`), or both"
                    .into(),
        });
    }
    pitfall_collect::from_text(&request.env, serve).map_err(|e| match e {
        Error::Source { .. } => {
            AppError::Unprocessable { code: "unrecognised_paste", message: e.to_string() }
        }
        Error::Command(_) => {
            AppError::Unprocessable { code: "invalid_serve_command", message: e.to_string() }
        }
    })
}

/// The wire answer of a scan.
pub(crate) fn response(scan: Scan) -> FromTextResponse {
    let missing = pitfall_collect::missing(&scan.manifest)
        .into_iter()
        .map(|m| MissingFact { path: m.path.to_owned(), hint: m.hint.to_owned() })
        .collect();
    FromTextResponse {
        formats: scan.formats.iter().map(|f| f.name().to_owned()).collect(),
        missing,
        notes: scan.notes,
        manifest: scan.manifest,
    }
}
