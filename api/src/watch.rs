//! Watches' wire types: `POST /v1/watches` and the answers about watches
//! and their deliveries.

use pitfall_contract::report::Finding;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A watch's name: no control character, not blank.
pub const WATCH_TEXT_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";

/// A webhook URL as the schema states it: `https` to a DNS name (the
/// server refuses names that resolve to private addresses when it calls
/// them, and with `--watch-allow-private-urls` takes `http` and
/// addresses too).
pub const WEBHOOK_URL_PATTERN: &str = r"^https://([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~%/+=-]*)?(\?[A-Za-z0-9._~%&=+/-]*)?$";

/// The manifests of a watch, by label (a host name, a pool: any text,
/// kept as given), each a manifest v1.
pub type LabelledManifests = std::collections::BTreeMap<String, Value>;

/// `POST /v1/watches` body.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWatchRequest {
    /// Unique among the account's watches: 1 to 100 characters.
    #[schemars(length(min = 1, max = 100), regex(pattern = WATCH_TEXT_PATTERN))]
    pub name: String,
    /// Where notifications are POSTed: `https` to a public address.
    #[schemars(length(max = 2048), regex(pattern = WEBHOOK_URL_PATTERN))]
    pub webhook_url: String,
    /// The HMAC-SHA256 key of the `Pitfall-Signature` header, 16 to 256
    /// characters; left out, the server makes one and shows it once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 16, max = 256))]
    pub secret: Option<String>,
    /// The least severity notified (default `warning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["info", "warning", "error", null]))]
    pub min_severity: Option<String>,
    /// One manifest or a fleet, by label: up to the server's bound
    /// (10,000 by default).
    #[schemars(with = "std::collections::BTreeMap<String, pitfall_contract::Manifest>")]
    #[schemars(extend("minProperties" = 1, "maxProperties" = 10000))]
    pub manifests: LabelledManifests,
}

impl std::fmt::Debug for CreateWatchRequest {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateWatchRequest")
            .field("name", &self.name)
            .field("webhook_url", &self.webhook_url)
            .field("secret", &crate::redacted(&self.secret))
            .field("min_severity", &self.min_severity)
            .finish_non_exhaustive()
    }
}

/// `PATCH /v1/watches/{id}` body: what to replace (the manifests whole).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeWatchRequest {
    /// A new webhook URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048), regex(pattern = WEBHOOK_URL_PATTERN))]
    pub webhook_url: Option<String>,
    /// A new least severity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["info", "warning", "error", null]))]
    pub min_severity: Option<String>,
    /// New manifests by label, replacing all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<std::collections::BTreeMap<String, pitfall_contract::Manifest>>")]
    #[schemars(extend("minProperties" = 1, "maxProperties" = 10000))]
    pub manifests: Option<LabelledManifests>,
}

/// A watch.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WatchView {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The account it belongs to.
    pub account: String,
    /// Where notifications go.
    pub webhook_url: String,
    /// The least severity notified.
    pub min_severity: String,
    /// Manifests stored.
    pub manifests: i64,
    /// The ruleset revision its findings are current at.
    pub evaluated_revision: i64,
    /// When it was last evaluated (Unix milliseconds).
    pub evaluated_at: i64,
    /// A delivery was given up after its retry window, and none succeeded since.
    pub failing: bool,
    /// Deliveries waiting or being retried.
    pub pending_deliveries: i64,
    /// Deliveries given up.
    pub failed_deliveries: i64,
    /// When it was created (Unix milliseconds).
    pub created_at: i64,
    /// When it last changed (Unix milliseconds).
    pub updated_at: i64,
}

/// A watch with each label's findings at its last evaluation.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
pub struct WatchDetail {
    /// The watch.
    #[serde(flatten)]
    pub watch: WatchView,
    /// Each label's findings.
    pub labels: Vec<WatchLabel>,
    /// The signing secret: only in the answer that created it, when the
    /// server made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl std::fmt::Debug for WatchDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchDetail")
            .field("watch", &self.watch)
            .field("labels", &self.labels)
            .field("secret", &crate::redacted(&self.secret))
            .finish()
    }
}

/// One label of a watch and its findings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WatchLabel {
    /// The label.
    pub label: String,
    /// Its findings at the last evaluation.
    pub findings: Vec<WatchFinding>,
}

/// A finding as a watch keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WatchFinding {
    /// The rule.
    pub rule_id: String,
    /// Its version when it matched.
    pub rule_version: String,
    /// `info`, `warning` or `error`.
    pub severity: String,
    /// The rule's title.
    pub title: String,
}

/// One label's changes in a notification.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LabelChanges {
    /// The label.
    pub label: String,
    /// Findings that appeared, in full.
    pub new: Vec<Finding>,
    /// Findings that went away.
    pub gone: Vec<WatchFinding>,
}

/// The body POSTed to a webhook, signed in `Pitfall-Signature`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WatchEvent {
    /// The idempotency id, also in `Pitfall-Event-Id`: the same on every try.
    pub event_id: String,
    /// `findings` or `ping`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The watch.
    pub watch: EventWatch,
    /// The revision the watch was evaluated at before (findings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_before: Option<i64>,
    /// The revision it was evaluated at now (findings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_after: Option<i64>,
    /// When the event was decided (Unix milliseconds).
    pub created_at: i64,
    /// What changed, per label (findings only).
    #[serde(default)]
    pub changes: Vec<LabelChanges>,
    /// Labels whose changes did not fit the body's bound (1 MiB).
    #[serde(default)]
    pub labels_left_out: u64,
}

/// The watch an event is about.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EventWatch {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
}

/// A delivery and its tries.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryView {
    /// The idempotency id.
    pub event_id: String,
    /// `findings` or `ping`.
    pub kind: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// Tries so far.
    pub attempts: i64,
    /// When it was enqueued (Unix milliseconds).
    pub created_at: i64,
    /// When the next try is due (pending only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<i64>,
    /// The last answer's status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<i64>,
    /// The last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When it was delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<i64>,
    /// Every try, oldest first.
    pub tries: Vec<TryView>,
}

/// One try of a delivery.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TryView {
    /// When (Unix milliseconds).
    pub at: i64,
    /// The answer's status code, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// What failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it took.
    pub elapsed_ms: i64,
}

/// `POST /v1/watches/{id}/test`: the ping enqueued.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PingQueued {
    /// Its idempotency id.
    pub event_id: String,
}
