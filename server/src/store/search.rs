//! Searching rules: free text (e.g. a pasted error message) and filters on
//! selectors, severity and state, one row per rule, paginated.

use pitfall_contract::meta::RuleMeta;
use pitfall_contract::selector::Selector;
use sqlx::Row;
use sqlx::any::AnyArguments;
use sqlx::query::Query;

use super::{
    DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Page, Result, RuleQuery, RuleSummary, Store, StoreError,
    VersionState, json_column,
};

/// More words than this in `q` are ignored: each is a LIKE over the
/// search text, and a pasted error needs far fewer to be unique.
const MAX_WORDS: usize = 32;
/// A word is cut to this many bytes: SQLite refuses LIKE patterns over
/// 50,000 bytes (an error that would read as an outage), and no word of an
/// error text is this long.
const MAX_WORD_BYTES: usize = 256;

impl Store {
    /// Rules matching `query`, each described by its highest version in the
    /// state asked for (approved by default), ordered by severity (error,
    /// warning, info) then id. Every word of `q` must occur in the rule's
    /// title, summary, error signatures or id, ignoring case.
    pub async fn search(&self, query: &RuleQuery) -> Result<Page<RuleSummary>> {
        let state = query.state.unwrap_or(VersionState::Approved);
        let mut filter = Filter::default();
        filter.push("v.state = ", state.as_str().to_owned());
        for word in query.q.iter().flat_map(|q| q.split_whitespace()).take(MAX_WORDS) {
            filter.push_like(&truncate(word, MAX_WORD_BYTES).to_lowercase());
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
        let count_sql = format!("SELECT COUNT(*) AS total FROM versions v WHERE {}", filter.sql);
        let total: i64 =
            filter.bind(sqlx::query(&count_sql)).fetch_one(&self.pool).await?.try_get("total")?;
        let n = filter.args.len();
        let page_sql = format!(
            "SELECT v.rule_id, v.version, v.state, v.meta, v.created_at FROM versions v WHERE {} \
             ORDER BY v.severity_rank, v.rule_id LIMIT ${} OFFSET ${}",
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
    sql: String,
    args: Vec<String>,
}

impl Default for Filter {
    fn default() -> Filter {
        // One row per rule: the highest version in the state asked for.
        Filter { sql: "v.is_latest_in_state = 1".to_owned(), args: Vec::new() }
    }
}

impl Filter {
    /// `AND <lhs>$N`, binding `value`.
    fn push(&mut self, lhs: &str, value: String) {
        self.args.push(value);
        self.sql += &format!(" AND {lhs}${}", self.args.len());
    }

    /// The search text contains `word` (already lowercased), with `%`, `_`
    /// and `\` in it matched literally.
    fn push_like(&mut self, word: &str) {
        let mut pattern = String::with_capacity(word.len() + 2);
        pattern.push('%');
        for c in word.chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
        self.args.push(pattern);
        self.sql += &format!(" AND v.search_text LIKE ${} ESCAPE '\\'", self.args.len());
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

/// `text` cut to at most `max` bytes, on a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
