//! The rule list (`/rules`) and a rule's page (`/rules/{id}`): the API's
//! search and detail handlers, rendered.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use minijinja::Value;
use minijinja::context;
use serde::{Deserialize, Serialize};

use super::{PageError, page, page_caller, query_string, render};
use crate::api;
use crate::api::types::{RuleSummary, SearchQuery, VersionDetail};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// Results per page.
pub(crate) const PAGE_SIZE: u32 = 20;

/// `/rules` query: the API's filters and a page number.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct ListQuery {
    #[serde(default, skip_serializing_if = "is_blank")]
    q: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    package: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    accelerator: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    severity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    page: Option<u32>,
}

pub(crate) fn is_blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

pub(crate) fn bad_query(rejection: QueryRejection) -> PageError {
    PageError::new(
        StatusCode::BAD_REQUEST,
        format!("The address's query is not understood: {}", rejection.body_text()),
    )
}

/// `GET /rules`.
pub(crate) async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, PageError> {
    let Query(query) = query.map_err(bad_query)?;
    let page_number = query.page.unwrap_or(1).max(1);
    let search = SearchQuery {
        q: query.q.clone(),
        package: query.package.clone(),
        accelerator: query.accelerator.clone(),
        severity: query.severity.clone(),
        state: None,
        limit: Some(PAGE_SIZE),
        offset: Some((page_number - 1).saturating_mul(PAGE_SIZE)),
    };
    let caller = page_caller(&state, &headers).await;
    let answer = api::rules::search(State(state), caller, ApiQuery(search)).await?.0;
    let words: Vec<String> =
        query.q.as_deref().unwrap_or("").split_whitespace().map(str::to_owned).collect();
    let items: Vec<Value> = answer.items.iter().map(|r| result_item(r, &words)).collect();
    let pages = answer.total.div_ceil(u64::from(PAGE_SIZE)).max(1);
    let link =
        |n: u32| format!("/rules?{}", query_string(&ListQuery { page: Some(n), ..query.clone() }));
    let prev = (page_number > 1).then(|| link(page_number - 1));
    let next = (u64::from(page_number) < pages).then(|| link(page_number + 1));
    let filtered = !(is_blank(&query.q)
        && is_blank(&query.package)
        && is_blank(&query.accelerator)
        && is_blank(&query.severity));
    let title = match query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        Some(q) => format!("Rules matching \u{201c}{q}\u{201d}"),
        None => "Browse the rules".to_owned(),
    };
    let ctx = context! {
        query => context! {
            q => query.q.as_deref().unwrap_or(""),
            package => query.package.as_deref().unwrap_or(""),
            accelerator => query.accelerator.as_deref().unwrap_or(""),
            severity => query.severity.as_deref().unwrap_or(""),
        },
        filtered => filtered,
        total => answer.total,
        page => page_number,
        pages => pages,
        first => answer.offset + 1,
        last => u64::from(answer.offset) + answer.items.len() as u64,
        prev => prev,
        next => next,
        items => items,
        severities => ["error", "warning", "info"],
    };
    Ok(page(render("rules.html", &title, "rules", ctx)?))
}

fn result_item(rule: &RuleSummary, words: &[String]) -> Value {
    let snippet = rule.signature.as_deref().map(|s| highlight(s, words));
    Value::from_serialize(serde_json::json!({
        "id": rule.id,
        "version": rule.version,
        "title": rule.title,
        "severity": rule.severity,
        "summary": shorten(&rule.summary, 240),
        "components": rule.applies_to.iter().map(|s| selector_label(s)).collect::<Vec<_>>(),
        "snippet": snippet,
    }))
}

/// At most `max` characters of `text`, cut at a word, with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}\u{2026}")
}

/// Splits `text` into segments, marking those that match a query word
/// (case-insensitive), so the template can wrap them in `<mark>` while
/// still escaping every segment.
pub(crate) fn highlight(text: &str, words: &[String]) -> Vec<(String, bool)> {
    let lower = text.to_ascii_lowercase();
    let mut hit = vec![false; text.len()];
    for word in words {
        let word = word.to_ascii_lowercase();
        if word.is_empty() {
            continue;
        }
        let mut from = 0;
        while let Some(at) = lower[from..].find(&word) {
            let start = from + at;
            hit[start..start + word.len()].iter_mut().for_each(|h| *h = true);
            from = start + word.len();
        }
    }
    let mut segments: Vec<(String, bool)> = Vec::new();
    for (i, c) in text.char_indices() {
        let marked = hit[i];
        match segments.last_mut() {
            Some((s, m)) if *m == marked => s.push(c),
            _ => segments.push((c.to_string(), marked)),
        }
    }
    segments
}

/// A selector (`package:vllm`) as a short label for the results.
fn selector_label(selector: &str) -> String {
    match selector.split_once(':') {
        Some(("capability", range)) => format!("sm {range}"),
        Some((_, value)) => value.to_owned(),
        None => selector.to_owned(),
    }
}

/// A selector in words, for the rule page's conditions.
fn selector_words(selector: &str) -> String {
    match selector.split_once(':') {
        Some(("package", p)) => match p.find(['<', '>', '=', '!', '~']) {
            Some(at) => format!("{} {} is installed", p[..at].trim(), p[at..].trim()),
            None => format!("the {p} package is installed"),
        },
        Some(("capability", range)) => format!("a GPU's compute capability is {range}"),
        Some(("accelerator", a)) => format!("the machine has an accelerator from {a}"),
        Some(("arch", a)) => format!("the CPU architecture is {a}"),
        Some(("engine", e)) => format!("the model is served with {e}"),
        Some((kind, value)) => format!("{kind} is {value}"),
        None if selector == "container" => "it runs in a container".to_owned(),
        None => selector.to_owned(),
    }
}

/// A remedy action in words.
pub(crate) fn action_words(action: &serde_json::Value) -> String {
    let s = |key: &str| {
        action
            .get(key)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_default()
    };
    match s("kind").as_str() {
        "upgrade_package" => format!("upgrade {} to {} or newer", s("package"), s("to")),
        "pin_package" => format!("install {} {} exactly", s("package"), s("version")),
        "remove_package" => format!("uninstall {}", s("package")),
        "set_env" => format!("set {}={}", s("name"), s("value")),
        "unset_env" => format!("unset {}", s("name")),
        "add_flag" => match action.get("value").and_then(serde_json::Value::as_str) {
            Some(v) => format!("add `{} {}` to {}", s("flag"), v, s("tool")),
            None => format!("add `{}` to {}", s("flag"), s("tool")),
        },
        kind => {
            let params: Vec<String> = action
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| *k != "kind")
                        .map(|(k, v)| {
                            format!(
                                "{k}={}",
                                v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{}: {}", kind.replace('_', " "), params.join(", "))
        }
    }
}

/// `GET /rules/{id}`.
pub(crate) async fn detail(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let caller = page_caller(&state, &headers).await;
    let detail = api::rules::rule(State(state), caller, ApiPath(id)).await?.0;
    // The version described: the one served, else the highest visible.
    let shown = detail
        .served_version
        .as_deref()
        .and_then(|v| detail.versions.iter().find(|d| d.version == v))
        .or_else(|| detail.versions.first())
        .ok_or_else(|| PageError::new(StatusCode::NOT_FOUND, format!("no rule {}", detail.id)))?;
    let meta = &shown.meta;
    let ctx = context! {
        rule => Value::from_serialize(meta),
        version => version_view(shown),
        served_version => detail.served_version,
        owners => detail.owners,
        created_at => detail.created_at,
        conditions => meta.applies_to.iter().map(|s| selector_words(s)).collect::<Vec<_>>(),
        remedies => meta.remedies.iter().map(|r| context! {
            summary => r.summary,
            actions => r.actions.iter().map(|a| action_words(&serde_json::to_value(a).unwrap_or_default())).collect::<Vec<_>>(),
        }).collect::<Vec<_>>(),
        cases => cases(shown),
        versions => detail.versions.iter().map(version_view).collect::<Vec<_>>(),
    };
    Ok(page(render("rule.html", &meta.title, "rules", ctx)?))
}

fn version_view(v: &VersionDetail) -> Value {
    Value::from_serialize(serde_json::json!({
        "version": v.version,
        "state": v.state,
        "published_by": v.published_by,
        "created_at": v.created_at,
        "reviewed_by": v.reviewed_by,
        "review_reason": v.review_reason,
        "module_url": v.module_url,
        "sha256": v.sha256,
    }))
}

/// The version's test cases as example manifests, each with a link that
/// checks it.
fn cases(v: &VersionDetail) -> Vec<Value> {
    v.tests
        .iter()
        .map(|case| {
            let manifest =
                case.manifest.as_ref().map(|m| serde_json::to_string_pretty(m).unwrap_or_default());
            let check_link = case.manifest.as_ref().map(|m| {
                format!(
                    "/check?{}",
                    query_string(&[("manifest", serde_json::to_string(m).unwrap_or_default())])
                )
            });
            let expect = serde_json::to_value(case.expect)
                .ok()
                .and_then(|e| e.as_str().map(str::to_owned))
                .unwrap_or_default();
            Value::from_serialize(serde_json::json!({
                "name": case.name,
                "expect": expect,
                "manifest": manifest,
                "check_link": check_link,
                "from": case.from,
                "remedy": case.remedy.unwrap_or(0) + 1,
                "missing": case.missing,
            }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlight_marks_every_occurrence_case_insensitively() {
        let segments = highlight("No kernel image is available; no KERNEL", &["kernel".into()]);
        let marked: Vec<&str> =
            segments.iter().filter(|(_, m)| *m).map(|(s, _)| s.as_str()).collect();
        assert_eq!(marked, ["kernel", "KERNEL"]);
        let joined: String = segments.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(joined, "No kernel image is available; no KERNEL");
    }
}
