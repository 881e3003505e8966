//! The API's wire types, separate from the server's domain types so the
//! storage can change without changing the contract. The server serialises
//! them and the client deserialises the same types; each derives a JSON
//! Schema for `/v1/openapi.json`.

use pitfall_contract::meta::{RuleMeta, TestCase};
use pitfall_contract::report::CheckResponse;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every non-2xx answer: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorEnvelope {
    /// What went wrong.
    pub error: ErrorBody,
}

/// The body of the error envelope.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// A stable, machine-readable code (`invalid_manifest`, `publish_refused`, ...).
    pub code: String,
    /// What is wrong, for people.
    pub message: String,
    /// For `publish_refused`: the pipeline step that refused the module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// For `rate_limited` (429): seconds until a request would be admitted,
    /// as in the `Retry-After` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
}

/// `POST /v1/check/batch` body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BatchRequest {
    /// Manifests (v1), answered in this order.
    pub manifests: Vec<Value>,
}

/// `POST /v1/check/batch` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BatchResponse {
    /// One entry per manifest, in the order sent.
    pub results: Vec<BatchItem>,
}

/// One manifest's answer in a batch: the full check answer, or the error
/// that manifest alone got.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum BatchItem {
    /// The check answer, as `POST /v1/check` gives it.
    Answer(Box<CheckResponse>),
    /// This manifest could not be checked.
    Error {
        /// Why.
        error: ErrorBody,
    },
}

/// `POST /v1/check` and `POST /v1/check/batch` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CheckQuery {
    /// Answer as the registry did at this ruleset revision (a recorded one,
    /// `GET /v1/revisions`), with the rules it served then, yanked ones
    /// included. An answer at a revision other than the one served says
    /// `"as_of": true`. Absent: the revision served now.
    pub revision: Option<u64>,
}

/// `GET /v1/revisions` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RevisionsQuery {
    /// Only revisions below this one (the previous page's `next_before`).
    pub before: Option<u64>,
    /// Page size (default 50, at most 200).
    pub limit: Option<u32>,
}

/// `GET /v1/revisions` answer: recorded revisions, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RevisionsResponse {
    /// The revision served now by this server.
    pub served_revision: String,
    /// This page.
    pub revisions: Vec<RevisionView>,
    /// Pass as `before` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before: Option<u64>,
}

/// One recorded ruleset revision and what it changed in the served rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RevisionView {
    /// The revision (`?revision=` takes it).
    pub revision: u64,
    /// When it was committed (RFC 3339).
    pub recorded_at: String,
    /// The served rules it changed against the revision before, by rule
    /// id. Empty for a write that changed nothing served (a publish that
    /// awaits review) and for the first recorded revision.
    pub changes: Vec<RevisionChangeView>,
}

/// A rule whose served version a revision changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RevisionChangeView {
    /// The rule.
    pub rule_id: String,
    /// `added` (served for the first time), `version_changed` (a higher
    /// version approved), `yanked` (the served version was yanked; `to` is
    /// an older approved version served instead, if any) or `removed`.
    #[schemars(extend("enum" = ["added", "version_changed", "yanked", "removed"]))]
    pub change: String,
    /// The version served before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The version served after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// `GET /v1/revisions/{revision}` answer: the rules a revision served.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RevisionDetail {
    /// The revision.
    pub revision: u64,
    /// When it was committed (RFC 3339).
    pub recorded_at: String,
    /// Every rule version it served, by rule id.
    pub rules: Vec<ServedRuleView>,
}

/// A rule version a revision served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServedRuleView {
    /// The rule.
    pub rule_id: String,
    /// The version served.
    pub version: String,
    /// The module's sha256 (hex); `GET /v1/rules/{id}/versions/{version}/module` has its bytes.
    pub sha256: String,
    /// Its state now: `approved`, or `yanked` since.
    pub state: String,
}

/// `GET /v1/rules` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SearchQuery {
    /// Free text over ids, titles, summaries and error signatures (at most
    /// 2048 characters).
    #[schemars(length(max = 2048))]
    pub q: Option<String>,
    /// Only rules that concern this package (`applies_to` package selector).
    /// A PEP 508 name: letters, digits, `.`, `-`, `_`, starting and ending
    /// with a letter or digit.
    #[schemars(regex(pattern = r"^\s*([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?\s*$"))]
    pub package: Option<String>,
    /// Only rules that concern this accelerator vendor, or a GPU model of
    /// the hardware table (`T4G` means its vendor).
    pub accelerator: Option<String>,
    /// Only rules of this severity: error, warning or info (empty: any).
    #[schemars(extend("enum" = ["", "error", "warning", "info"]))]
    pub severity: Option<String>,
    /// pending, approved, rejected or yanked (default: the served rules).
    /// pending and rejected need a maintainer's token.
    #[schemars(extend("enum" = ["", "pending", "approved", "rejected", "yanked"]))]
    pub state: Option<String>,
    /// Page size (default 50, at most 200).
    pub limit: Option<u32>,
    /// Results to skip.
    pub offset: Option<u32>,
}

/// `GET /v1/rules` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchResponse {
    /// Matching rules in all pages.
    pub total: u64,
    /// The page size used.
    pub limit: u32,
    /// Results skipped.
    pub offset: u32,
    /// This page.
    pub items: Vec<RuleSummary>,
}

/// A rule in a search result, described by one version.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RuleSummary {
    /// The rule's id.
    pub id: String,
    /// The version describing it.
    pub version: String,
    /// That version's state.
    pub state: String,
    /// Title.
    pub title: String,
    /// error, warning or info.
    pub severity: String,
    /// One paragraph.
    pub summary: String,
    /// The `applies_to` selectors.
    pub applies_to: Vec<String>,
    /// The error signature the query matched, or the first one.
    pub signature: Option<String>,
    /// Where its details are.
    pub url: String,
}

/// `GET /v1/rules/{id}` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RuleDetail {
    /// The rule's id.
    pub id: String,
    /// Accounts that may publish new versions.
    pub owners: Vec<String>,
    /// When it was first published (RFC 3339).
    pub created_at: String,
    /// The version checks serve, if any.
    pub served_version: Option<String>,
    /// Its versions the caller may see, newest first.
    pub versions: Vec<VersionDetail>,
}

/// One immutable version of a rule.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VersionDetail {
    /// The rule's id.
    pub rule_id: String,
    /// The version.
    pub version: String,
    /// pending, approved, rejected or yanked.
    pub state: String,
    /// The module's sha256 (hex).
    pub sha256: String,
    /// The metadata read from the module.
    pub meta: RuleMeta,
    /// The test cases embedded in the module.
    pub tests: Vec<TestCase>,
    /// What the publish pipeline measured (sizes, times, case results).
    pub report: Value,
    /// Who published it (absent for bundled rules).
    pub published_by: Option<String>,
    /// When it was published (RFC 3339).
    pub created_at: String,
    /// Who approved, rejected or yanked it.
    pub reviewed_by: Option<String>,
    /// Why.
    pub review_reason: Option<String>,
    /// Where the module's bytes are.
    pub module_url: String,
}

/// `POST .../reject` and `.../yank` body (optional for approve).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ReviewRequest {
    /// Why, for the author and the audit log.
    pub reason: Option<String>,
}

/// An account.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AccountView {
    /// Its name.
    pub name: String,
    /// contributor, maintainer or admin.
    pub role: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
}

/// What an account name is made of (the server checks the same).
pub const ACCOUNT_NAME_PATTERN: &str = r"^[A-Za-z0-9._-]{1,64}$";

/// `POST /v1/accounts` body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CreateAccountRequest {
    /// Its name: letters, digits, `-`, `_`, `.`; 1 to 64 characters.
    #[schemars(regex(pattern = ACCOUNT_NAME_PATTERN))]
    pub name: String,
    /// contributor (default), maintainer or admin.
    #[schemars(extend("enum" = ["contributor", "maintainer", "admin", null]))]
    pub role: Option<String>,
}

/// `PUT /v1/accounts/{name}/role` body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SetRoleRequest {
    /// contributor, maintainer or admin.
    #[schemars(extend("enum" = ["contributor", "maintainer", "admin"]))]
    pub role: String,
}

/// `POST /v1/tokens` body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IssueTokenRequest {
    /// What the token is for ("ci", "laptop"): 1 to 100 characters, not
    /// all blank.
    #[schemars(length(min = 1, max = 100), regex(pattern = r"\S"))]
    pub label: String,
    /// For admins: the account to issue it to (default: the caller's).
    #[schemars(regex(pattern = ACCOUNT_NAME_PATTERN))]
    pub account: Option<String>,
    /// What it may be used for, a subset of the calling token's scopes
    /// (default: all of them): `check`, `publish`, `review`, `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("items" = {"enum": ["check", "publish", "review", "admin"]}), length(min = 1))]
    pub scopes: Option<Vec<String>>,
    /// Days until it stops authenticating (default: never, or when the
    /// calling token expires, if it does: a token never outlives the one
    /// that issued it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3650))]
    pub expires_in_days: Option<u32>,
}

/// A token just issued: the only time its secret is shown.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
pub struct IssuedToken {
    /// The secret, for `Authorization: Bearer`. Shown once; stored hashed.
    pub token: String,
    /// The token's description.
    #[serde(flatten)]
    pub info: TokenView,
}

impl std::fmt::Debug for IssuedToken {
    // The secret never reaches a log line or a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("token", &crate::Redacted)
            .field("info", &self.info)
            .finish()
    }
}

/// A token, without its secret.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TokenView {
    /// Its id (for revocation).
    pub id: i64,
    /// Its account.
    pub account: String,
    /// What it is for.
    pub label: String,
    /// When it was issued (RFC 3339).
    pub created_at: String,
    /// When it was revoked, if it was.
    pub revoked_at: Option<String>,
    /// When it stops authenticating (RFC 3339), if it does.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// What it may be used for.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// One audit log entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AuditView {
    /// Its id (increasing).
    pub id: i64,
    /// When (RFC 3339).
    pub at: String,
    /// Who (absent for the system: seeding, the admin command).
    pub actor: Option<String>,
    /// What (publish, approve, reject, yank, issue_token, ...).
    pub action: String,
    /// On what.
    pub subject: String,
    /// Details.
    pub detail: Value,
}

/// `GET /healthz` and `GET /readyz` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// ok, or not_ready.
    pub status: String,
    /// The revision of the rule set served.
    pub ruleset_revision: String,
    /// Rules served.
    pub rules: usize,
    /// Whether the store answered the last time it was asked.
    pub store: bool,
}

/// `GET /v1/limits` answer: the bounds this server puts on one request, so
/// a client can split a fleet into batches it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LimitsView {
    /// Most manifests in one `POST /v1/check/batch`.
    pub max_batch: usize,
    /// Largest manifest accepted, in bytes.
    pub max_manifest_bytes: usize,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
}

/// `POST /v1/manifest/from-text` body: what a user has in hand.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FromTextRequest {
    /// An environment paste: the output of `python -m torch.utils.collect_env`,
    /// `vllm collect-env`, `python3 -m sglang.check_env`, TGI's `--env`,
    /// `nvidia-smi` or `nvidia-smi -q`, whole or cut short. May be empty
    /// when `serve_command` is given.
    #[serde(default)]
    pub env: String,
    /// The serve command, e.g. `vllm serve MODEL -tp 2`,
    /// `python3 -m sglang.launch_server --model-path MODEL`,
    /// `text-generation-launcher --model-id MODEL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_command: Option<String>,
    /// A log the failing stack printed (server output, a traceback), read
    /// only for what it states about the machine: vLLM's engine start-up
    /// line, a GPU it names, a package's version. The paste's facts win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// `POST /v1/manifest/from-text` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FromTextResponse {
    /// The manifest (v1) the texts describe, identifiers redacted; ready
    /// for `POST /v1/check`.
    pub manifest: pitfall_contract::Manifest,
    /// The kinds of paste recognised (`torch-collect-env`,
    /// `vllm-collect-env`, `sglang-check-env`, `tgi-env`, `nvidia-smi`,
    /// `nvidia-smi-q`, `summary`, `pip-list`, `prose`, `vllm-log`).
    pub formats: Vec<String>,
    /// Facts rules often need that the texts did not give.
    pub missing: Vec<MissingFact>,
    /// Remarks on the texts, e.g. where a paste was cut short.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A fact the texts did not give.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MissingFact {
    /// The manifest field, e.g. `drivers.nvidia`.
    pub path: String,
    /// What would give it.
    pub hint: String,
}

/// `POST /v1/explain` body (also accepted: the log itself as `text/plain`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExplainRequest {
    /// The pasted log: a traceback, a server log, `docker logs` output; at
    /// most 256 KiB. Bytes that are not UTF-8 are replaced.
    #[schemars(length(min = 1, max = 262144))]
    pub log: String,
    /// A manifest (v1) of the setup the log came from: each ranked rule is
    /// also evaluated on it. Kept as JSON here and read as `/v1/check`
    /// reads a manifest, so its errors name the field path; its schema is
    /// the manifest's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<pitfall_contract::Manifest>")]
    pub manifest: Option<Value>,
}

/// `POST /v1/explain` answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExplainResponse {
    /// The rules whose error signatures explain the log, best first; empty
    /// when no known breakage scores at least `threshold`.
    pub causes: Vec<ExplainedCause>,
    /// The score below which no cause is returned.
    pub threshold: f64,
    /// Lines in the log received.
    pub lines_total: usize,
    /// When no signature explains the log: the rules whose text ranks best
    /// against it (the same ranking as `GET /v1/rules?q=`), as leads, not
    /// causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<RuleSummary>,
    /// Whether a manifest came with the log (each cause then has `outcome`).
    pub manifest_checked: bool,
    /// The rule set that answered.
    pub ruleset_revision: String,
}

/// One rule that explains the log.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExplainedCause {
    /// The rule's id.
    pub rule_id: String,
    /// How well its signature explains the log, in [0, 1].
    pub score: f64,
    /// The signature that matched, as the rule writes it (`Your {gpu} GPU ...`).
    pub signature: String,
    /// The same with its holes filled by the log's own values.
    pub matched: String,
    /// The holes' kinds and the values the log gave them.
    pub holes: Vec<ExplainedHole>,
    /// The log's line numbers (1-based) the signature matched.
    pub lines: Vec<usize>,
    /// The matched line, without colours and log prefixes.
    pub line: String,
    /// True when the line describes the signature's message in other
    /// words (an issue's title, a message retold) rather than quoting it:
    /// `matched` is then the signature as written, its holes unfilled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub described: bool,
    /// With a manifest: `matched`, `undetermined`, `clear` or `error`, as
    /// the rule evaluated on it (a matched rule ranks above the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// With a manifest that the rule left undetermined: the fields it needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The finding with its remedies, as `POST /v1/check` gives it: the
    /// manifest's own when the rule matched it, else the rule's general
    /// one (its summary as the message, remedies as written).
    pub finding: pitfall_contract::report::Finding,
}

/// A signature's hole and the log's value for it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExplainedHole {
    /// `int`, `number`, `version`, `capability`, `gpu`, `path`, `hex`, `word` or `text`.
    pub kind: String,
    /// The log's text.
    pub value: String,
}
