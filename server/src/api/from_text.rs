//! `POST /v1/manifest/from-text`: an environment paste and a serve command
//! in, the manifest they describe out, with what they did not say. The
//! parsers and the redaction are `pitfall_collect`'s, the same the CLI's
//! `pitfall scan --from-collect-env` uses; no paste is stored or logged.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use pitfall_collect::Scan;

use crate::admission::read_body;
use crate::api::types::{FromTextRequest, FromTextResponse, MissingFact};
use crate::error::AppError;
use crate::extract::json_object;
use crate::state::AppState;

/// `POST /v1/manifest/from-text`. Any text is an answer: what could not be
/// read (a paste of no known format, a serve command that does not parse)
/// is said in `notes`, and what is absent in `missing`.
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
    let (mut scan, problems) = build(&state, &request).await?;
    scan.notes.extend(problems.into_iter().map(|p| p.message));
    Ok(Json(response(scan)))
}

/// A text of the request that could not be read, and why.
#[derive(Debug)]
pub(crate) struct Problem {
    /// `env` or `serve_command`.
    pub(crate) field: &'static str,
    pub(crate) message: String,
}

/// The manifest the request's texts describe, from what could be read of
/// them, and the texts that could not be read. Reading a long paste and
/// log is CPU work: it waits for an evaluation slot, as a check does, so a
/// flood of pastes cannot hold every worker.
pub(crate) async fn build(
    state: &AppState,
    request: &FromTextRequest,
) -> Result<(Scan, Vec<Problem>), AppError> {
    let _slot = state.check_slot().await?;
    crate::runtime::requeue().await;
    Ok(read(request))
}

/// [`build`]'s reading, on this thread.
fn read(request: &FromTextRequest) -> (Scan, Vec<Problem>) {
    let mut problems = Vec::new();
    let serve =
        request.serve_command.as_deref().filter(|c| !c.trim().is_empty()).and_then(|command| {
            match pitfall_collect::serve_args::parse(command) {
                Ok(_) => Some(command),
                Err(e) => {
                    problems.push(Problem {
                        field: "serve_command",
                        message: format!("the serve command was not read: {e}"),
                    });
                    None
                }
            }
        });
    let log = request.log.as_deref();
    let scan = match pitfall_collect::from_texts(&request.env, serve, log) {
        Ok(scan) => scan,
        Err(e) => {
            problems
                .push(Problem { field: "env", message: format!("{e}; nothing of it was read") });
            // Without the paste, only the serve command is read, which parsed above.
            pitfall_collect::from_texts("", serve, log).unwrap_or_else(|_| empty_scan())
        }
    };
    let no_log = log.is_none_or(|l| l.trim().is_empty());
    if request.env.trim().is_empty() && serve.is_none() && no_log && problems.is_empty() {
        problems.push(Problem {
            field: "env",
            message: "nothing was given: paste an environment report (`env`), a serve command \
                      (`serve_command`), or both"
                .to_owned(),
        });
    }
    (scan, problems)
}

/// The scan of no text: an empty manifest.
fn empty_scan() -> Scan {
    Scan {
        manifest: pitfall_contract::Manifest {
            manifest_version: pitfall_contract::manifest::MANIFEST_VERSION,
            ..pitfall_contract::Manifest::default()
        },
        notes: Vec::new(),
        formats: Vec::new(),
    }
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
