//! `GET /v1/bundle`: the served rules as one signed file, with an entity
//! tag, so `If-None-Match` answers 304 when nothing changed.

use axum::body::Body;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::AppError;
use crate::state::AppState;

/// The header naming the bundle's revision (also inside the signed index).
pub const REVISION_HEADER: &str = "x-pitfall-ruleset-revision";

/// `GET /v1/bundle`.
pub async fn bundle(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let built = state.bundles().current(state.registry()).await?;
    let etag = HeaderValue::from_str(&built.etag).map_err(|e| AppError::Internal(e.into()))?;
    let revision =
        HeaderValue::from_str(&built.ruleset_revision).map_err(|e| AppError::Internal(e.into()))?;
    // Caches may keep it, but must ask again each time (a 304 is cheap).
    let cache = HeaderValue::from_static("no-cache");
    if matches(headers.get_all(IF_NONE_MATCH).iter().filter_map(|v| v.to_str().ok()), &built.etag) {
        return Ok(
            (StatusCode::NOT_MODIFIED, [(ETAG, etag), (CACHE_CONTROL, cache)]).into_response()
        );
    }
    let media = HeaderValue::from_static(pitfall_api::bundle::MEDIA_TYPE);
    let headers = [(CONTENT_TYPE, media), (ETAG, etag), (CACHE_CONTROL, cache)];
    Ok((headers, [(REVISION_HEADER, revision)], Body::from(built.bytes.clone())).into_response())
}

/// Whether `If-None-Match` values name `etag` (a list, `*`, weak tags
/// compared weakly as RFC 9110 says for this header).
fn matches<'a>(values: impl Iterator<Item = &'a str>, etag: &str) -> bool {
    let bare = etag.trim_start_matches("W/");
    values
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == bare)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn if_none_match_lists_stars_and_weak_tags() {
        let etag = "\"7-abc\"";
        assert!(matches(["\"7-abc\""].into_iter(), etag));
        assert!(matches(["\"1-x\", W/\"7-abc\""].into_iter(), etag));
        assert!(matches(["*"].into_iter(), etag));
        assert!(!matches(["\"7-abd\""].into_iter(), etag));
        assert!(!matches(std::iter::empty(), etag));
    }
}
