//! `/explain`: the home page's pasted traceback, explained. The user's own
//! text is shown back with the matched lines marked, then each cause with
//! its fix. The explanation is the API's (`api::explain::explain_log`), so
//! the page and `POST /v1/explain` cannot disagree.

use std::collections::BTreeSet;

use axum::extract::rejection::FormRejection;
use axum::extract::{Extension, Form, State};
use axum::http::StatusCode;
use axum::response::Response;
use minijinja::{Value, context};
use pitfall_api::types::ExplainResponse;
use serde::Deserialize;

use super::rules::action_words;
use super::{PageError, page, query_string, render};
use crate::api::explain::{MAX_LOG_BYTES, explain_log};
use crate::state::{AppState, RequestDeadline};

/// Lines shown around each matched line of the user's text.
const CONTEXT_LINES: usize = 3;
/// The most lines of the user's text shown back (the page stays small).
const MAX_SHOWN_LINES: usize = 400;
/// The most of the log the "check my setup too" link carries: its last
/// bytes, where the error is (a link's address must stay well under the
/// server's 64 KiB request head).
pub(crate) const MAX_CARRIED_LOG_BYTES: usize = 16 << 10;

/// The home page's form.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ExplainForm {
    #[serde(default)]
    log: String,
}

/// `POST /explain`.
pub(crate) async fn explain(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    form: Result<Form<ExplainForm>, FormRejection>,
) -> Result<Response, PageError> {
    let Form(form) = form.map_err(|e| {
        PageError::new(
            StatusCode::BAD_REQUEST,
            format!("The form is not understood: {}", e.body_text()),
        )
    })?;
    let log = form.log;
    if log.trim().is_empty() {
        return Err(PageError::new(
            StatusCode::BAD_REQUEST,
            "Paste the error or the traceback into the box, then press Explain.",
        ));
    }
    if log.len() > MAX_LOG_BYTES {
        return Err(PageError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The log is {} bytes; paste at most {MAX_LOG_BYTES} (its last lines hold the error).",
                log.len()
            ),
        ));
    }
    let answer = explain_log(&state, &log, None, deadline).await.map_err(PageError::from)?;
    let ctx = explanation_view(&log, &answer);
    let title = if answer.causes.is_empty() {
        "No known breakage matches"
    } else {
        "What explains this error"
    };
    Ok(page(render("explain.html", title, "home", ctx)?))
}

/// The explanation as the templates show it: the user's text with matched
/// lines marked, each cause with its fix, and the link that carries the
/// log to the check form.
pub(crate) fn explanation_view(log: &str, answer: &ExplainResponse) -> Value {
    let matched: BTreeSet<usize> =
        answer.causes.iter().flat_map(|c| c.lines.iter().copied()).collect();
    let lines: Vec<&str> = log.lines().collect();
    let shown = shown_lines(lines.len(), &matched);
    let mut excerpt: Vec<Value> = Vec::new();
    let mut previous = 0;
    for n in shown {
        if previous != 0 && n > previous + 1 {
            excerpt.push(context! { gap => true });
        }
        excerpt.push(context! {
            n => n,
            text => lines.get(n - 1).copied().unwrap_or_default(),
            marked => matched.contains(&n),
        });
        previous = n;
    }
    let causes: Vec<Value> = answer
        .causes
        .iter()
        .map(|c| {
            let f = &c.finding;
            context! {
                rule_id => c.rule_id,
                title => f.title,
                severity => f.severity.as_str(),
                score => format!("{:.0}%", c.score * 100.0),
                matched => c.matched,
                described => c.described,
                lines => c.lines,
                first_line => c.lines.first().copied().unwrap_or(0),
                message => f.message,
                outcome => c.outcome,
                missing => c.missing,
                remedies => f.remedies.iter().map(|r| context! {
                    summary => r.summary,
                    actions => r.actions.iter().map(|a| action_words(&serde_json::to_value(a).unwrap_or_default())).collect::<Vec<_>>(),
                }).collect::<Vec<_>>(),
                references => Value::from_serialize(&f.references),
            }
        })
        .collect();
    let carried = tail(log, MAX_CARRIED_LOG_BYTES);
    context! {
        causes => causes,
        excerpt => excerpt,
        lines_total => answer.lines_total,
        threshold => format!("{:.0}%", answer.threshold * 100.0),
        related => Value::from_serialize(&answer.related),
        carried_log => carried,
        check_link => format!("/check?{}", query_string(&[("log", carried)])),
        manifest_checked => answer.manifest_checked,
    }
}

/// The line numbers shown: each matched line with its neighbours, or,
/// with none matched, the last lines (where an error usually is).
fn shown_lines(total: usize, matched: &BTreeSet<usize>) -> Vec<usize> {
    let mut shown = BTreeSet::new();
    if matched.is_empty() {
        shown.extend(total.saturating_sub(20) + 1..=total);
    }
    for &n in matched {
        shown.extend(n.saturating_sub(CONTEXT_LINES).max(1)..=(n + CONTEXT_LINES).min(total));
    }
    shown.into_iter().take(MAX_SHOWN_LINES).collect()
}

/// The last `max` bytes of `text`, from a line start when one is near.
pub(crate) fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let rest = &text[start..];
    rest.find('\n').map_or(rest, |i| &rest[i + 1..])
}
