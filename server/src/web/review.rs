//! `/review`: the queue of pending versions for maintainers, and approve /
//! reject forms. Sign-in is a token entered in a form; it starts a
//! server-side session (`crate::store`'s sessions: 12 h idle, 7 days in
//! all, ended by sign-out or by revoking the token) whose random id is the
//! cookie, `HttpOnly; SameSite=Strict`, and `Secure` when the request came
//! over https or the server's public URL is https. The token itself never
//! goes into a cookie. Every POST is checked twice against cross-site
//! requests: its `Origin` (when sent) must be this host, and it must carry
//! the session's CSRF token (derived from the session id, which scripts
//! cannot read). The decisions go through the API's review handlers.

use axum::Form;
use axum::body::Body;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header::{HOST, LOCATION, ORIGIN, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use minijinja::{Value, context};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{PageError, SESSION_COOKIE, page, page_caller, render, session_token};
use crate::api;
use crate::api::types::VersionDetail;
use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::ApiPath;
use crate::state::AppState;
use crate::store::Principal;
use crate::store::Role;

/// How long the browser keeps the cookie (seconds): the session's
/// absolute bound; the server ends it sooner when idle.
const COOKIE_SECONDS: i64 = crate::store::SESSION_MAX_MS / 1000;

/// The CSRF token of a session: not guessable without the session id.
pub(super) fn csrf_token(session: &str) -> String {
    let digest = Sha256::digest(format!("pitfall-csrf\0{session}").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Refuses a POST whose `Origin` is another site.
pub(super) fn check_origin(headers: &HeaderMap) -> Result<(), PageError> {
    let Some(origin) = headers.get(ORIGIN).and_then(|o| o.to_str().ok()) else {
        return Ok(()); // Not sent by every client; the CSRF token still holds.
    };
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let origin_host = origin.split_once("://").map_or("", |(_, rest)| rest);
    if !host.is_empty() && origin_host == host {
        Ok(())
    } else {
        Err(PageError::new(StatusCode::FORBIDDEN, "This form was sent from another site."))
    }
}

/// The `?done=` notice after a decision.
#[derive(Debug, Deserialize)]
pub(crate) struct Notice {
    done: Option<String>,
    rule: Option<String>,
    version: Option<String>,
}

/// `GET /review`.
pub(crate) async fn queue(
    State(state): State<AppState>,
    headers: HeaderMap,
    notice: Result<Query<Notice>, QueryRejection>,
) -> Result<Response, PageError> {
    let Query(notice) = notice.map_err(super::rules::bad_query)?;
    let caller = page_caller(&state, &headers).await;
    let Some(token) = session_token(&headers).filter(|_| caller.0.is_some()) else {
        return sign_in_page(None, session_token(&headers).is_some(), StatusCode::OK);
    };
    let principal =
        caller.0.clone().ok_or_else(|| PageError::new(StatusCode::UNAUTHORIZED, "sign in"))?;
    if !caller.has(Role::Maintainer) {
        return Err(PageError::new(
            StatusCode::FORBIDDEN,
            format!(
                "Review needs the maintainer role; {} is a {}.",
                principal.name,
                principal.role.as_str()
            ),
        ));
    }
    let pending = api::review::queue(State(state), caller).await?.0;
    let done = match (notice.done.as_deref(), notice.rule, notice.version) {
        (Some(d @ ("approved" | "rejected")), Some(rule), Some(version)) => {
            Some(format!("{rule} {version} {d}."))
        }
        _ => None,
    };
    let ctx = context! {
        signed_in => true,
        account => principal.name,
        role => principal.role.as_str(),
        csrf => csrf_token(&token),
        pending => pending.iter().map(pending_view).collect::<Vec<_>>(),
        done => done,
    };
    Ok(page(render("review.html", "Review queue", "review", ctx)?))
}

fn sign_in_page(
    error: Option<String>,
    stale: bool,
    status: StatusCode,
) -> Result<Response, PageError> {
    session_sign_in_page("review.html", "Review: sign in", "review", error, stale, status)
}

/// A signed-in page's sign-in form (`template` rendered signed out), with
/// `error` and `status`; a `stale` cookie is cleared.
pub(super) fn session_sign_in_page(
    template: &str,
    title: &str,
    nav: &str,
    error: Option<String>,
    stale: bool,
    status: StatusCode,
) -> Result<Response, PageError> {
    let ctx = context! { signed_in => false, error => error, stale => stale };
    let mut response = page(render(template, title, nav, ctx)?);
    *response.status_mut() = status;
    if stale {
        // A cookie that no longer authenticates: drop it.
        response.headers_mut().insert(SET_COOKIE, clear_cookie());
    }
    Ok(response)
}

/// A pending version with what the publish pipeline measured.
fn pending_view(v: &VersionDetail) -> Value {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Report {
        module_bytes: u64,
        abi_version: u32,
        load_us: u64,
        tests_us: u64,
        tests: Vec<Case>,
    }
    #[derive(Deserialize, Default, serde::Serialize)]
    #[serde(default)]
    struct Case {
        name: String,
        passed: bool,
        expected: String,
        actual: String,
    }
    let report: Report = serde_json::from_value(v.report.clone()).unwrap_or_default();
    let passed = report.tests.iter().filter(|c| c.passed).count();
    context! {
        rule_id => v.rule_id,
        version => v.version,
        meta => Value::from_serialize(&v.meta),
        published_by => v.published_by,
        created_at => v.created_at,
        sha256 => v.sha256,
        module_bytes => report.module_bytes,
        abi_version => report.abi_version,
        load_ms => format!("{:.1}", report.load_us as f64 / 1000.0),
        tests_ms => format!("{:.1}", report.tests_us as f64 / 1000.0),
        tests => Value::from_serialize(&report.tests),
        passed => passed,
        total => report.tests.len(),
        action => format!("/review/{}/{}", v.rule_id, v.version),
    }
}

/// The sign-in form.
#[derive(Debug, Deserialize)]
pub(crate) struct SignIn {
    pub(super) token: String,
}

/// Whether the cookie must be `Secure`: the request came over https (a
/// proxy in front says so in `X-Forwarded-Proto`), or the server's public
/// URL is https.
pub(super) fn secure(state: &AppState, headers: &HeaderMap) -> bool {
    let forwarded_https =
        headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).is_some_and(|v| {
            v.split(',').next().is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
        });
    let public_https = state
        .limits()
        .public_url
        .as_deref()
        .is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://"));
    forwarded_https || public_https
}

pub(super) fn session_cookie(id: &str, secure: bool) -> Result<HeaderValue, PageError> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_SECONDS}{secure}"
    ))
    .map_err(|_| {
        PageError::new(StatusCode::INTERNAL_SERVER_ERROR, "A session id that is no cookie.")
    })
}

pub(super) fn clear_cookie() -> HeaderValue {
    HeaderValue::from_static("pitfall_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

pub(super) fn see_other(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

/// The account a pasted token signs in as, if any. Tokens are `pft_` and
/// hex digits: nothing else goes near the store or a cookie.
pub(super) async fn token_principal(
    state: &AppState,
    token: &str,
) -> Result<Option<Principal>, PageError> {
    let token = token.trim();
    let shaped = !token.is_empty()
        && token.len() <= 200
        && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !shaped {
        return Ok(None);
    }
    Ok(state.registry().store().authenticate(token).await.map_err(AppError::from)?)
}

/// `POST /review/session`: a token in, a session cookie out.
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
    if !Caller(Some(principal.clone())).has(Role::Maintainer) {
        return sign_in_page(
            Some(format!(
                "Review needs the maintainer role; {} is a {}.",
                principal.name,
                principal.role.as_str()
            )),
            false,
            StatusCode::FORBIDDEN,
        );
    }
    let session =
        state.registry().store().create_session(&principal).await.map_err(AppError::from)?;
    let mut response = see_other("/review");
    response.headers_mut().insert(SET_COOKIE, session_cookie(&session, secure(&state, &headers))?);
    Ok(response)
}

/// A form that changes something: its CSRF token, and for decisions a reason.
#[derive(Debug, Deserialize)]
pub(crate) struct Decision {
    csrf: String,
    #[serde(default)]
    reason: String,
}

/// The session of a POST, after the cross-site checks.
fn posted_session(headers: &HeaderMap, csrf: &str) -> Result<String, PageError> {
    check_origin(headers)?;
    let token = session_token(headers).ok_or_else(|| {
        PageError::new(StatusCode::UNAUTHORIZED, "Sign in on the review page first.")
    })?;
    if csrf != csrf_token(&token) {
        return Err(PageError::new(
            StatusCode::FORBIDDEN,
            "This form is stale or was sent from another site; reload the review page.",
        ));
    }
    Ok(token)
}

/// `POST /review/signout`: ends the session on the server, not only the
/// cookie in this browser.
pub(crate) async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Decision>, FormRejection>,
) -> Result<Response, PageError> {
    let Ok(Form(form)) = form else {
        return Err(PageError::new(StatusCode::BAD_REQUEST, "The form is incomplete."));
    };
    let session = posted_session(&headers, &form.csrf)?;
    state.registry().store().end_session(&session).await.map_err(AppError::from)?;
    let mut response = see_other("/review");
    response.headers_mut().insert(SET_COOKIE, clear_cookie());
    Ok(response)
}

/// `POST /review/{id}/{version}/{approve|reject}`.
pub(crate) async fn decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, version, decision)): Path<(String, String, String)>,
    form: Result<Form<Decision>, FormRejection>,
) -> Result<Response, PageError> {
    let Ok(Form(form)) = form else {
        return Err(PageError::new(StatusCode::BAD_REQUEST, "The form is incomplete."));
    };
    posted_session(&headers, &form.csrf)?;
    let caller = page_caller(&state, &headers).await;
    if caller.0.is_none() {
        return Err(PageError::new(
            StatusCode::UNAUTHORIZED,
            "The session has ended; sign in again.",
        ));
    }
    let reason = form.reason.trim();
    let body = Body::from(
        serde_json::json!({ "reason": (!reason.is_empty()).then_some(reason) }).to_string(),
    );
    let path = ApiPath((id.clone(), version.clone()));
    let done = match decision.as_str() {
        "approve" => {
            let _approved = api::review::approve(State(state), caller, path, body).await?;
            "approved"
        }
        "reject" => {
            let _rejected = api::review::reject(State(state), caller, path, body).await?;
            "rejected"
        }
        _ => return Err(PageError::new(StatusCode::NOT_FOUND, "A decision is approve or reject.")),
    };
    let query = super::query_string(&[
        ("done", done),
        ("rule", id.as_str()),
        ("version", version.as_str()),
    ]);
    Ok(see_other(&format!("/review?{query}")))
}
