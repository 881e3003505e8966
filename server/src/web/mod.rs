//! The web pages: server-rendered HTML over the same store and registry
//! calls the JSON API makes (the page handlers call the `api` handlers and
//! render their answers). Templates and assets live in `web/` and are
//! embedded in the binary; templates escape every value by default
//! (minijinja, auto-escape by the `.html` extension).
//!
//! Invariant: every page works without JavaScript (forms and links); the
//! one small script only improves (live search, copy buttons). Nothing is
//! loaded from outside the server.

mod check;
mod explain;
mod matrix;
mod review;
mod rules;
mod watches;

use std::sync::OnceLock;

use axum::Router;
use axum::extract::{Path, Request};
use axum::http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, COOKIE, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use minijinja::{Environment, Value, context};

use crate::auth::Caller;
use crate::error::AppError;
use crate::state::AppState;

/// The templates, embedded: (name, source).
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../../web/templates/base.html")),
    ("macros.html", include_str!("../../../web/templates/macros.html")),
    ("home.html", include_str!("../../../web/templates/home.html")),
    ("rules.html", include_str!("../../../web/templates/rules.html")),
    ("rule.html", include_str!("../../../web/templates/rule.html")),
    ("check.html", include_str!("../../../web/templates/check.html")),
    ("explain.html", include_str!("../../../web/templates/explain.html")),
    ("explain_results.html", include_str!("../../../web/templates/explain_results.html")),
    ("matrix.html", include_str!("../../../web/templates/matrix.html")),
    ("contribute.html", include_str!("../../../web/templates/contribute.html")),
    ("review.html", include_str!("../../../web/templates/review.html")),
    ("watches.html", include_str!("../../../web/templates/watches.html")),
    ("error.html", include_str!("../../../web/templates/error.html")),
];

const STYLE: &str = include_str!("../../../web/static/style.css");
const SCRIPT: &str = include_str!("../../../web/static/app.js");

/// The pages' routes (merged into the app's router).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/rules", get(rules::list))
        .route("/rules/{id}", get(rules::detail))
        .route("/explain", post(explain::explain))
        .route("/check", get(check::show).post(check::submit))
        .route("/matrix", get(matrix::show))
        .route("/contribute", get(contribute))
        .route("/review", get(review::queue))
        .route("/review/session", post(review::sign_in))
        .route("/review/signout", post(review::sign_out))
        .route("/review/{id}/{version}/{decision}", post(review::decide))
        .route("/watches", get(watches::list))
        .route("/watches/session", post(watches::sign_in))
        .route("/static/{file}", get(asset))
}

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_formatter(formatter);
        for (name, source) in TEMPLATES {
            // A template that does not parse fails the `templates_parse` test.
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "a bundled template does not parse");
            }
        }
        env
    })
}

/// minijinja's formatter, but HTML escaping leaves `/` alone (it needs no
/// escaping in text or quoted attributes, and links stay readable).
fn formatter(
    out: &mut minijinja::Output<'_>,
    state: &minijinja::State<'_, '_>,
    value: &Value,
) -> Result<(), minijinja::Error> {
    match (state.auto_escape(), value.as_str()) {
        (minijinja::AutoEscape::Html, Some(text)) if !value.is_safe() => {
            out.write_str(&escape_html(text)).map_err(|_| {
                minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "writing the page")
            })
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// Escapes `& < > " '` for HTML text and quoted attribute values.
pub(crate) fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// Renders `template` with `ctx` and the common values (title, nav).
pub(crate) fn render(
    template: &str,
    title: &str,
    nav: &str,
    ctx: Value,
) -> Result<Html<String>, PageError> {
    let ctx = context! { title => title, nav => nav, ..ctx };
    environment().get_template(template).and_then(|t| t.render(ctx)).map(Html).map_err(|e| {
        PageError::from(AppError::Internal(anyhow::anyhow!("rendering {template}: {e}")))
    })
}

/// An error answered as a page: the status of the API's error, a friendly
/// text; internal details only in the log.
#[derive(Debug)]
pub struct PageError {
    status: StatusCode,
    message: String,
}

impl PageError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError { status, message: message.into() }
    }
}

impl From<AppError> for PageError {
    fn from(e: AppError) -> PageError {
        match &e {
            AppError::Internal(inner) => {
                tracing::error!(error = format!("{inner:#}"), "internal error (page)")
            }
            AppError::Unavailable(inner) => {
                tracing::error!(error = %inner, "store unavailable (page)")
            }
            _ => {}
        }
        let (status, body) = e.describe();
        PageError { status, message: body.message }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let heading = match self.status {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::UNAUTHORIZED => "Sign-in needed",
            StatusCode::FORBIDDEN => "Not allowed",
            s if s.is_client_error() => "That request did not work",
            _ => "Something went wrong on our side",
        };
        let ctx = context! { status => self.status.as_u16(), heading => heading, message => self.message };
        let body = environment()
            .get_template("error.html")
            .and_then(|t| t.render(context! { title => heading, nav => "", ..ctx }))
            .unwrap_or_else(|_| format!("{} {heading}", self.status.as_u16()));
        with_page_headers((self.status, Html(body)).into_response())
    }
}

/// Headers every page carries: nothing may load from elsewhere, no
/// framing, no sniffing.
pub(crate) fn with_page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    response
}

/// A page answer: the HTML with the page headers.
pub(crate) fn page(html: Html<String>) -> Response {
    with_page_headers(html.into_response())
}

/// The caller of a page: the account of the review session cookie, if any
/// and valid; otherwise anonymous (a stale cookie is not an error on the
/// public pages).
pub(crate) async fn page_caller(state: &AppState, headers: &HeaderMap) -> Caller {
    match session_token(headers) {
        Some(id) => Caller(state.registry().store().session(&id).await.ok().flatten()),
        None => Caller(None),
    }
}

/// The name of the review session cookie.
pub(crate) const SESSION_COOKIE: &str = "pitfall_session";

/// The session cookie's value: a session id (`crate::store` keeps its hash).
pub(crate) fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A query string (`a=1&b=2`) for a serializable value; empty on failure.
pub(crate) fn query_string<T: serde::Serialize>(value: &T) -> String {
    serde_urlencoded::to_string(value).unwrap_or_default()
}

async fn home(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<Response, PageError> {
    let rules = state.registry().rules().rules().len();
    Ok(page(render(
        "home.html",
        "Known ML-infrastructure breakages",
        "home",
        context! { rules => rules },
    )?))
}

async fn contribute() -> Result<Response, PageError> {
    Ok(page(render("contribute.html", "Contribute a rule", "contribute", context! {})?))
}

async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "style.css" => (STYLE, "text/css; charset=utf-8"),
        "app.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => {
            return PageError::new(StatusCode::NOT_FOUND, format!("no asset {file}"))
                .into_response();
        }
    };
    let headers = [(CONTENT_TYPE, kind), (CACHE_CONTROL, "public, max-age=3600")];
    let mut response = (headers, body).into_response();
    response.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

/// Routes that do not exist: the JSON envelope for the API and for
/// clients that do not ask for HTML, a page for browsers.
pub(crate) async fn fallback(request: Request) -> Response {
    let wants_html = request
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    let api = request.uri().path().starts_with("/v1/") || request.uri().path() == "/v1";
    if api || !wants_html {
        return crate::error::not_found().await;
    }
    PageError::new(StatusCode::NOT_FOUND, format!("There is no page at {}.", request.uri().path()))
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse() {
        let mut env = Environment::new();
        for (name, source) in TEMPLATES {
            env.add_template(name, source).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        }
    }

    #[test]
    fn values_are_escaped_but_slashes_kept() {
        let mut env = Environment::new();
        env.set_formatter(formatter);
        env.add_template("t.html", "<a href=\"{{ u }}\">{{ t }}</a>").expect("template");
        let html = env
            .get_template("t.html")
            .and_then(|t| t.render(context! { u => "/a?b=1&c=\"", t => "<script>'" }))
            .expect("render");
        assert_eq!(html, "<a href=\"/a?b=1&amp;c=&quot;\">&lt;script&gt;&#x27;</a>");
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, HeaderValue::from_static("a=b; pitfall_session=pft_1; c=d"));
        assert_eq!(session_token(&headers).as_deref(), Some("pft_1"));
    }
}
