//! `/watches`: a signed-in account's watches, each with its last
//! evaluation and the deliveries that did not go through. Sign-in is the
//! review pages' session (`review.rs`): a token entered in a form starts a
//! server-side session whose random id is the cookie; any role may sign in
//! here. The list is the API's (`api::watches::list`): an account sees its
//! own watches, an admin everyone's.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use minijinja::{Value, context};

use super::review::{
    SignIn, check_origin, csrf_token, secure, see_other, session_cookie, session_sign_in_page,
    token_principal,
};
use super::{PageError, page, page_caller, render, session_token};
use crate::api;
use crate::error::AppError;
use crate::state::AppState;

/// Undelivered deliveries shown per watch, newest first.
const TROUBLED_SHOWN: i64 = 10;

/// `GET /watches`.
pub(crate) async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let caller = page_caller(&state, &headers).await;
    let (Some(token), Some(principal)) =
        (session_token(&headers).filter(|_| caller.0.is_some()), caller.0.clone())
    else {
        return sign_in_page(None, session_token(&headers).is_some(), StatusCode::OK);
    };
    let store = state.registry().store().clone();
    let watches = api::watches::list(State(state), caller).await?.0;
    let mut views = Vec::with_capacity(watches.len());
    for w in &watches {
        let labels = store.watch_findings(w.id).await.map_err(AppError::from)?;
        let findings: usize = labels.iter().map(|(_, f)| f.len()).sum();
        let labels_with_findings = labels.iter().filter(|(_, f)| !f.is_empty()).count();
        let troubled: Vec<Value> = if w.failing
            || w.failed_deliveries > 0
            || w.pending_deliveries > 0
        {
            store
                .watch_deliveries(w.id, TROUBLED_SHOWN)
                .await
                .map_err(AppError::from)?
                .into_iter()
                .filter(|d| d.state != "delivered")
                .map(|d| {
                    context! {
                        event_id => d.event_id,
                        state => d.state,
                        attempts => d.attempts,
                        last_status => d.last_status.map_or_else(|| "none".to_owned(), |s| s.to_string()),
                        last_error => d.last_error.unwrap_or_default(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        views.push(context! {
            id => w.id,
            name => w.name,
            account => w.account,
            manifests => w.manifests,
            findings => findings,
            labels_with_findings => labels_with_findings,
            evaluated_revision => w.evaluated_revision,
            evaluated_at => api::rules::rfc3339(w.evaluated_at),
            webhook_url => w.webhook_url,
            min_severity => w.min_severity,
            pending_deliveries => w.pending_deliveries,
            failed_deliveries => w.failed_deliveries,
            failing => w.failing,
            troubled => troubled,
        });
    }
    let ctx = context! {
        signed_in => true,
        account => principal.name,
        role => principal.role.as_str(),
        csrf => csrf_token(&token),
        watches => views,
    };
    Ok(page(render("watches.html", "Watches", "watches", ctx)?))
}

fn sign_in_page(
    error: Option<String>,
    stale: bool,
    status: StatusCode,
) -> Result<Response, PageError> {
    session_sign_in_page("watches.html", "Watches: sign in", "watches", error, stale, status)
}

/// `POST /watches/session`: a token in (any role), a session cookie out.
pub(crate) async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<SignIn>, FormRejection>,
) -> Result<Response, PageError> {
    check_origin(&headers)?;
    let Ok(Form(form)) = form else {
        return sign_in_page(Some("Enter a token.".into()), false, StatusCode::BAD_REQUEST);
    };
    let principal = token_principal(&state, &form.token).await?;
    let Some(principal) = principal else {
        return sign_in_page(
            Some("Unknown or revoked token.".into()),
            false,
            StatusCode::UNAUTHORIZED,
        );
    };
    let session =
        state.registry().store().create_session(&principal).await.map_err(AppError::from)?;
    let mut response = see_other("/watches");
    response.headers_mut().insert(SET_COOKIE, session_cookie(&session, secure(&state, &headers))?);
    Ok(response)
}
