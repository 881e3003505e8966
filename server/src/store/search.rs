//! Searching rules: free text (e.g. a pasted error message) and filters on
//! selectors, severity and state, one row per rule, paginated.
//!
//! Free text is ranked by the database's own full-text search (migration
//! 0005): SQLite's FTS5 with `bm25`, PostgreSQL's `tsvector` with
//! `ts_rank`. Any word of the query counts, and the rules holding more of
//! its words, and rarer ones, come first: a pasted traceback full of paths
//! and numbers still finds the rules that share its telling words.

use pitfall_contract::meta::RuleMeta;
use pitfall_contract::selector::Selector;
use sqlx::Row;
use sqlx::any::AnyArguments;
use sqlx::query::Query;

use super::{
    Backend, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Page, Result, RuleQuery, RuleSummary, Store,
    StoreError, VersionState, json_column,
};

/// More words than this in `q` are ignored: a pasted error ranks well on
/// far fewer, and each word is a term of the full-text query.
const MAX_WORDS: usize = 32;
/// A word is cut to this many bytes: no word of an error text is this long.
const MAX_WORD_BYTES: usize = 64;

impl Store {
    /// Rules matching `query`, each described by its highest version in the
    /// state asked for (approved by default). With `q`, the rules holding
    /// any of its words (in the id, title, summary, message or error
    /// signatures, ignoring case), best ranked first; without, ordered by
    /// severity (error, warning, info) then id.
    pub async fn search(&self, query: &RuleQuery) -> Result<Page<RuleSummary>> {
        let state = query.state.unwrap_or(VersionState::Approved);
        let mut filter = Filter::default();
        filter.push("v.state = ", state.as_str().to_owned());
        let words = query.q.as_deref().map(search_words);
        if let Some(words) = &words {
            if words.is_empty() {
                // Nothing searchable in the text (punctuation alone): no rule holds it.
                let limit = query.limit.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE);
                let offset = query.offset.unwrap_or(0).max(0);
                return Ok(Page { total: 0, limit, offset, items: Vec::new() });
            }
            filter.push_text(self.backend, words);
        }
        if let Some(severity) = query.severity {
            filter.push("v.severity = ", severity.as_str().to_owned());
        }
        for (kind, value) in [
            ("package", &query.package),
            ("accelerator", &query.accelerator),
            ("arch", &query.arch),
            ("engine", &query.engine),
        ] {
            // An empty filter (`?package=`) filters nothing.
            if let Some(value) = value.as_deref().filter(|v| !v.trim().is_empty()) {
                filter.push_selector(kind, &normalise(kind, value)?);
            }
        }

        let limit = query.limit.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE);
        let offset = query.offset.unwrap_or(0).max(0);
        let count_sql = format!(
            "SELECT COUNT(*) AS total FROM versions v {} WHERE {}",
            filter.join, filter.sql
        );
        let total: i64 =
            filter.bind(sqlx::query(&count_sql)).fetch_one(&self.pool).await?.try_get("total")?;
        let n = filter.args.len();
        let rank = if filter.join.is_empty() { "" } else { "m.rank, " };
        let page_sql = format!(
            "SELECT v.rule_id, v.version, v.state, v.meta, v.created_at FROM versions v {} WHERE {} \
             ORDER BY {rank}v.severity_rank, v.rule_id LIMIT ${} OFFSET ${}",
            filter.join,
            filter.sql,
            n + 1,
            n + 2
        );
        let rows = filter
            .bind(sqlx::query(&page_sql))
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        let items = rows
            .iter()
            .map(|row| {
                let meta: RuleMeta = json_column(&row.try_get::<String, _>("meta")?, "metadata")?;
                Ok(RuleSummary {
                    id: row.try_get("rule_id")?,
                    version: row.try_get("version")?,
                    state: row.try_get::<String, _>("state")?.parse()?,
                    severity: meta.severity,
                    title: meta.title,
                    summary: meta.summary,
                    applies_to: meta.applies_to,
                    error_signatures: meta
                        .error_signatures
                        .into_iter()
                        .map(|s| s.template)
                        .collect(),
                    published_at: row.try_get("created_at")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page { total, limit, offset, items })
    }
}

/// A WHERE clause built with numbered placeholders (`$N`, which both
/// backends accept; `QueryBuilder<Any>` would write `?`, which PostgreSQL
/// does not).
#[derive(Debug)]
struct Filter {
    /// The full-text match, joined as `m` with its `rank` (lower is better).
    join: String,
    sql: String,
    args: Vec<String>,
}

impl Default for Filter {
    fn default() -> Filter {
        // One row per rule: the highest version in the state asked for.
        Filter { join: String::new(), sql: "v.is_latest_in_state = 1".to_owned(), args: Vec::new() }
    }
}

impl Filter {
    /// `AND <lhs>$N`, binding `value`.
    fn push(&mut self, lhs: &str, value: String) {
        self.args.push(value);
        self.sql += &format!(" AND {lhs}${}", self.args.len());
    }

    /// The version's document holds any of `words` (alphanumeric,
    /// lowercased), ranked: FTS5's `bm25` (lower is better) on SQLite,
    /// `ts_rank` negated on PostgreSQL, so both sort ascending.
    fn push_text(&mut self, backend: Backend, words: &[String]) {
        let (query, select) = match backend {
            Backend::Sqlite => (
                words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR "),
                "SELECT rule_id, version, bm25(version_search) AS rank FROM version_search \
                 WHERE version_search MATCH $N",
            ),
            Backend::Postgres => (
                words.join(" | "),
                "SELECT rule_id, version, -ts_rank(document, to_tsquery('simple', $N)) AS rank \
                 FROM version_search WHERE document @@ to_tsquery('simple', $N)",
            ),
        };
        self.args.push(query);
        let select = select.replace("$N", &format!("${}", self.args.len()));
        self.join = format!("JOIN ({select}) m ON m.rule_id = v.rule_id AND m.version = v.version");
    }

    /// The version has the selector `kind:value`.
    fn push_selector(&mut self, kind: &'static str, value: &str) {
        self.args.push(value.to_owned());
        self.sql += &format!(
            " AND EXISTS (SELECT 1 FROM version_selectors s WHERE s.rule_id = v.rule_id AND s.version = v.version \
             AND s.kind = '{kind}' AND s.value = ${})",
            self.args.len()
        );
    }

    fn bind<'q>(
        &'q self,
        mut query: Query<'q, sqlx::Any, AnyArguments<'q>>,
    ) -> Query<'q, sqlx::Any, AnyArguments<'q>> {
        for arg in &self.args {
            query = query.bind(arg.as_str());
        }
        query
    }
}

/// A filter value normalised as the engine normalises selectors
/// (`Vllm` → `vllm`, `arm64` → `aarch64`).
fn normalise(kind: &str, value: &str) -> Result<String> {
    match Selector::parse(&format!("{kind}:{value}")) {
        Ok(Selector::Package { name, .. }) => Ok(name),
        Ok(Selector::Capability(_)) => {
            Err(StoreError::Invalid(format!("{kind} is not a search filter")))
        }
        Ok(Selector::Accelerator(v) | Selector::Arch(v) | Selector::Engine(v)) => Ok(v),
        Ok(Selector::Container) => Ok(String::new()),
        Err(e) => Err(StoreError::Invalid(e.to_string())),
    }
}

/// The words of a search text as both backends' indexes split them:
/// alphanumeric runs, lowercased, each once, at least two characters.
fn search_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let word = truncate(word, MAX_WORD_BYTES).to_lowercase();
        if word.chars().count() >= 2 && !words.contains(&word) {
            words.push(word);
            if words.len() == MAX_WORDS {
                break;
            }
        }
    }
    words
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
