//! The store's domain types: what goes in and what comes out. They are not
//! the API's wire types (serialization happens at the edges); they derive
//! `Serialize` only where the stored form is itself JSON.

use std::fmt;
use std::str::FromStr;

use pitfall_contract::meta::{RuleMeta, Severity, TestCase};
use serde::{Deserialize, Serialize};

use super::StoreError;

/// A point in time: Unix milliseconds, as stored (portable across both
/// backends and sortable).
pub type UnixMillis = i64;

/// An account's role. Each includes the rights of the ones before it:
/// contributors publish, maintainers review, admins manage accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Publishes rules and owns what they published.
    Contributor,
    /// Reviews: approves, rejects and yanks versions.
    Maintainer,
    /// Manages accounts and tokens.
    Admin,
}

/// What a token may be used for. A token's rights are its account's
/// role's, narrowed to its scopes: a `check` token (a CI job's) can do
/// nothing but identify its checks for their rate limit, whatever the
/// account's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Checks only.
    Check,
    /// Publish and yank one's own rules.
    Publish,
    /// Approve, reject and yank (a maintainer's review).
    Review,
    /// Manage accounts, roles, others' tokens; read the audit log.
    Admin,
}

impl Scope {
    /// Every scope, in order.
    pub const ALL: [Scope; 4] = [Scope::Check, Scope::Publish, Scope::Review, Scope::Admin];

    /// The scope a role's own powers need: publishing for a contributor,
    /// review for a maintainer, administration for an admin.
    pub fn of_role(role: Role) -> Scope {
        match role {
            Role::Contributor => Scope::Publish,
            Role::Maintainer => Scope::Review,
            Role::Admin => Scope::Admin,
        }
    }
}

/// A set of scopes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scopes(u8);

impl Scopes {
    /// Every scope: what a token issued without scopes carries.
    pub const ALL: Scopes = Scopes(0b1111);

    fn bit(scope: Scope) -> u8 {
        1 << (scope as u8)
    }

    /// These scopes.
    pub fn of(scopes: impl IntoIterator<Item = Scope>) -> Scopes {
        Scopes(scopes.into_iter().fold(0, |bits, s| bits | Scopes::bit(s)))
    }

    /// Whether `scope` is in the set.
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & Scopes::bit(scope) != 0
    }

    /// Whether every scope of `self` is in `other`.
    pub fn is_subset(self, other: Scopes) -> bool {
        self.0 & !other.0 == 0
    }

    /// The scopes, in order.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// `check,publish,...` as stored; `None` for every scope.
    pub fn stored(self) -> Option<String> {
        (self != Scopes::ALL).then(|| self.iter().map(Scope::as_str).collect::<Vec<_>>().join(","))
    }

    /// From the stored column (`None`: every scope).
    pub fn from_stored(text: Option<&str>) -> Result<Scopes, StoreError> {
        let Some(text) = text else { return Ok(Scopes::ALL) };
        let scopes = text
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::parse::<Scope>)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scopes::of(scopes))
    }
}

impl std::fmt::Debug for Scopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// What a new token carries beyond its account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenGrant {
    /// When it stops authenticating; `None`: never.
    pub expires_at: Option<UnixMillis>,
    /// What it may be used for.
    pub scopes: Scopes,
}

impl Default for TokenGrant {
    fn default() -> TokenGrant {
        TokenGrant { expires_at: None, scopes: Scopes::ALL }
    }
}

/// A version's place in review. Allowed transitions (anything else is
/// [`StoreError::InvalidTransition`]):
///
/// | from | to |
/// |---|---|
/// | pending | approved, rejected, yanked (withdrawn before review) |
/// | approved | yanked |
///
/// Rejected and yanked are final: a fix is published as a new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VersionState {
    /// Published, waiting for review; never served.
    Pending,
    /// Reviewed and served (the highest approved version of each rule).
    Approved,
    /// Refused in review; never served.
    Rejected,
    /// Withdrawn; kept, never served or listed by default.
    Yanked,
}

impl VersionState {
    /// Whether the review may move a version from `self` to `to`.
    pub fn can_become(self, to: VersionState) -> bool {
        use VersionState::*;
        matches!((self, to), (Pending, Approved | Rejected | Yanked) | (Approved, Yanked))
    }
}

/// Implements `as_str`, `Display` and `FromStr` over the stored spelling.
macro_rules! spelled {
    ($ty:ident, $what:literal, $($variant:ident => $text:literal),+ $(,)?) => {
        impl $ty {
            /// The stored (and wire) spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = StoreError;
            fn from_str(s: &str) -> Result<Self, StoreError> {
                match s {
                    $($text => Ok($ty::$variant),)+
                    _ => Err(StoreError::Invalid(format!(concat!("unknown ", $what, " {:?}"), s))),
                }
            }
        }
    };
}

spelled!(Role, "role", Contributor => "contributor", Maintainer => "maintainer", Admin => "admin");
spelled!(Scope, "scope", Check => "check", Publish => "publish", Review => "review", Admin => "admin");
spelled!(VersionState, "state", Pending => "pending", Approved => "approved", Rejected => "rejected", Yanked => "yanked");

/// An account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Its id.
    pub id: i64,
    /// Its unique name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// When it was created.
    pub created_at: UnixMillis,
}

/// An authenticated caller: the account behind a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The account's id.
    pub account_id: i64,
    /// The account's name.
    pub name: String,
    /// The account's role.
    pub role: Role,
    /// The token used.
    pub token_id: i64,
    /// What that token may be used for.
    pub scopes: Scopes,
    /// When that token expires, if it does.
    pub expires_at: Option<UnixMillis>,
}

/// Who performs a write, for ownership and the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// The process itself: seeding, the admin CLI. Bypasses ownership.
    System,
    /// An authenticated account.
    Account(Principal),
}

impl Actor {
    /// The acting account's id, `None` for the system.
    pub fn account_id(&self) -> Option<i64> {
        match self {
            Actor::System => None,
            Actor::Account(p) => Some(p.account_id),
        }
    }

    /// The token used, `None` for the system.
    pub fn token_id(&self) -> Option<i64> {
        match self {
            Actor::System => None,
            Actor::Account(p) => Some(p.token_id),
        }
    }
}

/// An API token, without its secret (which is never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Its id.
    pub id: i64,
    /// The account it acts for.
    pub account_id: i64,
    /// That account's name.
    pub account_name: String,
    /// What the holder calls it (`ci`, `laptop`).
    pub label: String,
    /// When it was issued.
    pub created_at: UnixMillis,
    /// When it was revoked; a revoked token authenticates no one.
    pub revoked_at: Option<UnixMillis>,
    /// When it last authenticated a request (updated at most once a minute).
    pub last_used_at: Option<UnixMillis>,
    /// When it stops authenticating, if it does.
    pub expires_at: Option<UnixMillis>,
    /// What it may be used for.
    pub scopes: Scopes,
}

/// An account named in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRef {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
}

/// A version to store: a module that passed the publish pipeline.
#[derive(Debug, Clone)]
pub struct NewVersion {
    /// The module's metadata; `meta.id` and `meta.version` key the version.
    pub meta: RuleMeta,
    /// The module's embedded test cases.
    pub tests: Vec<TestCase>,
    /// The module's bytes.
    pub module: Vec<u8>,
    /// The sha256 of `module`, lowercase hex (checked by the store).
    pub sha256: String,
    /// The pipeline's report (validation, compile, tests, cost); opaque here.
    pub report: serde_json::Value,
}

/// A stored version with everything known about it.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionRecord {
    /// The rule.
    pub rule_id: String,
    /// The version (semver).
    pub version: String,
    /// The module's sha256 (hex).
    pub sha256: String,
    /// The module's size in bytes.
    pub size: i64,
    /// Where it is in review.
    pub state: VersionState,
    /// The metadata it was published with.
    pub meta: RuleMeta,
    /// Its test cases.
    pub tests: Vec<TestCase>,
    /// The publish pipeline's report.
    pub report: serde_json::Value,
    /// Who published it; `None` for the bundled seed.
    pub published_by: Option<AccountRef>,
    /// When it was published.
    pub created_at: UnixMillis,
    /// Who last changed its state; `None` before review or for the system.
    pub reviewed_by: Option<AccountRef>,
    /// The reviewer's reason for the last state change.
    pub review_reason: Option<String>,
    /// When its state last changed (its creation if never).
    pub state_changed_at: UnixMillis,
}

/// A module the check path serves: the highest approved version of a rule.
#[derive(Debug, Clone)]
pub struct ServedVersion {
    /// The rule.
    pub rule_id: String,
    /// The version.
    pub version: String,
    /// The module's sha256 (hex).
    pub sha256: String,
    /// The module's bytes.
    pub module: Vec<u8>,
}

/// One version a revision served, with its state now.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedEntry {
    /// The rule.
    pub rule_id: String,
    /// The version served.
    pub version: String,
    /// The module's sha256 (hex).
    pub sha256: String,
    /// The version's state now: approved, or yanked since.
    pub state: VersionState,
}

/// A recorded ruleset revision and what it changed in the served set.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionRecord {
    /// The revision.
    pub revision: i64,
    /// When the write that made it was committed.
    pub recorded_at: UnixMillis,
    /// What it changed against the revision before, by rule id; empty for
    /// a write that served nothing new (a publish awaiting review) and for
    /// the first recorded revision.
    pub changes: Vec<RevisionChange>,
}

/// A rule whose served version a revision changed.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionChange {
    /// The rule.
    pub rule_id: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// The version served before (none: the rule was not served).
    pub from: Option<String>,
    /// The version served after (none: the rule is no longer served).
    pub to: Option<String>,
}

/// How a revision changed a rule's served version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A rule served for the first time.
    Added,
    /// Another version of the rule served (a higher one approved).
    VersionChanged,
    /// The served version was yanked (`to` is the version served instead,
    /// if an older approved one is left).
    Yanked,
    /// The served version stopped being served for another reason.
    Removed,
}

spelled!(ChangeKind, "change",
    Added => "added",
    VersionChanged => "version_changed",
    Yanked => "yanked",
    Removed => "removed",
);

/// A rule with its owners and every version, highest first.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleDetail {
    /// The rule's id.
    pub id: String,
    /// Its owners, in the order they were added (the first publisher first).
    pub owners: Vec<AccountRef>,
    /// When it was first published.
    pub created_at: UnixMillis,
    /// Every version in every state, highest (semver) first.
    pub versions: Vec<VersionRecord>,
}

/// Default number of search results per page.
pub const DEFAULT_PAGE_SIZE: i64 = 50;
/// Largest page: bounds the work and the answer of one request.
pub const MAX_PAGE_SIZE: i64 = 200;

/// A search over rules. Every field narrows the result; the default lists
/// every rule that has an approved version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleQuery {
    /// Free text, e.g. a pasted error message: rules holding any of its
    /// words (case-insensitive) in the id, title, summary, message or error
    /// signatures, best ranked first.
    pub q: Option<String>,
    /// A package the rule's selectors name (`package:NAME`).
    pub package: Option<String>,
    /// An accelerator vendor the rule's selectors name.
    pub accelerator: Option<String>,
    /// A CPU architecture the rule's selectors name (normalised: `arm64` is `aarch64`).
    pub arch: Option<String>,
    /// A serving engine the rule's selectors name.
    pub engine: Option<String>,
    /// Only rules of this severity.
    pub severity: Option<Severity>,
    /// Describe each rule by its highest version in this state (default:
    /// approved); rules with no version in that state are left out.
    pub state: Option<VersionState>,
    /// Page size; defaults to [`DEFAULT_PAGE_SIZE`], capped at [`MAX_PAGE_SIZE`].
    pub limit: Option<i64>,
    /// Results to skip.
    pub offset: Option<i64>,
}

/// One page of results.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// How many results match in all.
    pub total: i64,
    /// The page size applied.
    pub limit: i64,
    /// The offset applied.
    pub offset: i64,
    /// This page, ordered by severity (error, warning, info) then id.
    pub items: Vec<T>,
}

/// A rule as listed: described by one of its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSummary {
    /// The rule's id.
    pub id: String,
    /// The version describing it.
    pub version: String,
    /// That version's state.
    pub state: VersionState,
    /// Its severity.
    pub severity: Severity,
    /// Its title.
    pub title: String,
    /// Its summary.
    pub summary: String,
    /// Its `applies_to` selectors.
    pub applies_to: Vec<String>,
    /// The error texts it recognises.
    pub error_signatures: Vec<String>,
    /// When that version was published.
    pub published_at: UnixMillis,
}

/// One audit log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Its id (increasing).
    pub id: i64,
    /// When.
    pub at: UnixMillis,
    /// Who: the account, `None` for the system.
    pub actor: Option<AccountRef>,
    /// With which token, `None` for the system.
    pub actor_token_id: Option<i64>,
    /// What: one of the `audit::*` action names, e.g. `version.publish`.
    pub action: String,
    /// The rule concerned, if any.
    pub rule_id: Option<String>,
    /// The version concerned, if any.
    pub version: Option<String>,
    /// The token concerned, if any.
    pub token_id: Option<i64>,
    /// The account concerned, if any.
    pub account_id: Option<i64>,
    /// Details (e.g. `{"from":"pending","to":"approved","reason":".."}`).
    pub detail: serde_json::Value,
}

/// The action names of the audit log.
pub mod audit {
    /// An account was created.
    pub const ACCOUNT_CREATE: &str = "account.create";
    /// An account's role changed.
    pub const ACCOUNT_SET_ROLE: &str = "account.set_role";
    /// A token was issued.
    pub const TOKEN_ISSUE: &str = "token.issue";
    /// A token was revoked.
    pub const TOKEN_REVOKE: &str = "token.revoke";
    /// A version was stored (published, or seeded by the system).
    pub const VERSION_PUBLISH: &str = "version.publish";
    /// A version's state changed (detail: from, to, reason).
    pub const VERSION_STATE: &str = "version.state";
}
