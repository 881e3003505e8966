//! The signed bundle of the served rule set (`GET /v1/bundle`): built from
//! exactly the rules checks run against, labelled with their revision,
//! signed with an issue time and an expiry, and kept until the revision
//! moves or half its validity has passed (then signed again, so a client
//! that fetches always gets at least half a validity period).
//!
//! The issue time is the start of the half-validity window the signing
//! falls in, not the signing's second: replicas that sign the same
//! revision within one window sign the same bytes (Ed25519 signatures are
//! deterministic), so behind a load balancer the bundle and its entity
//! tag are one.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use pitfall_api::BundleSigner;
use pitfall_api::key::PublicKey;

use crate::error::AppError;
use crate::registry::Registry;

/// A built bundle, ready to answer with.
#[derive(Debug, Clone)]
pub struct Built {
    /// The file.
    pub bytes: Bytes,
    /// Its entity tag.
    pub etag: String,
    /// The revision it holds.
    pub ruleset_revision: String,
    /// When it was signed.
    issued_at: SystemTime,
}

/// Builds and keeps the bundle of the current revision.
#[derive(Debug)]
pub struct Bundles {
    signer: Arc<BundleSigner>,
    validity: Duration,
    current: Mutex<Option<Arc<Built>>>,
    /// One build at a time: concurrent requests for a new revision wait
    /// for the first one's build rather than each building it.
    building: tokio::sync::Mutex<()>,
}

impl Bundles {
    /// Bundles signed by `signer`, each valid for `validity` from its signing.
    pub fn new(signer: BundleSigner, validity: Duration) -> Bundles {
        Bundles {
            signer: Arc::new(signer),
            validity,
            current: Mutex::new(None),
            building: tokio::sync::Mutex::new(()),
        }
    }

    /// The key clients pin.
    pub fn public_key(&self) -> PublicKey {
        self.signer.public_key()
    }

    fn cached(&self, revision: &str) -> Option<Arc<Built>> {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let fresh_enough = |b: &Built| {
            SystemTime::now().duration_since(b.issued_at).unwrap_or(Duration::ZERO)
                < self.validity / 2
        };
        current.as_ref().filter(|b| b.ruleset_revision == revision && fresh_enough(b)).cloned()
    }

    /// The bundle of the rule set served now.
    pub async fn current(&self, registry: &Registry) -> Result<Arc<Built>, AppError> {
        let rules = registry.rules();
        if let Some(built) = self.cached(rules.revision()) {
            return Ok(built);
        }
        let _one_build = self.building.lock().await;
        if let Some(built) = self.cached(rules.revision()) {
            return Ok(built);
        }
        // The served set's own modules, by the versions it holds (immutable
        // by sha256, so reading them after a newer approval still gives
        // exactly these rules).
        let mut modules = Vec::with_capacity(rules.rules().len());
        for rule in rules.rules() {
            let bytes = registry
                .store()
                .module(rule.id(), &rule.meta().version)
                .await?
                .ok_or_else(|| {
                    AppError::Internal(anyhow::anyhow!("served rule {} has no module", rule.id()))
                })?;
            modules.push(bytes);
        }
        let signer = self.signer.clone();
        let revision = rules.revision().to_owned();
        let (issued_at, validity) = (issue_time(SystemTime::now(), self.validity), self.validity);
        let signed = tokio::task::spawn_blocking(move || {
            let pairs: Vec<_> =
                rules.rules().iter().zip(&modules).map(|(r, m)| (r.meta(), m.as_slice())).collect();
            signer.sign(&revision, &pairs, issued_at, validity)
        })
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("bundle task failed: {e}")))?;
        tracing::info!(revision = %signed.ruleset_revision, rules = signed.rules, bytes = signed.bytes.len(), "bundle built");
        let built = Arc::new(Built {
            bytes: Bytes::from(signed.bytes),
            etag: signed.etag,
            ruleset_revision: signed.ruleset_revision,
            issued_at,
        });
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(built.clone());
        Ok(built)
    }
}

/// The issue time of a bundle signed at `now`: the start, in whole seconds
/// since the epoch, of the half-validity window `now` falls in. The bundle
/// is signed again when that window ends, so a client still gets at least
/// half a validity period.
fn issue_time(now: SystemTime, validity: Duration) -> SystemTime {
    let window = (validity / 2).as_secs().max(1);
    let seconds = now.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
    UNIX_EPOCH + Duration::from_secs(seconds - seconds % window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signings_in_one_half_validity_window_share_their_issue_time() {
        let validity = Duration::from_secs(2 * 3600);
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        // One-hour windows: two replicas a minute apart sign alike...
        assert_eq!(issue_time(at(7_260), validity), at(7_200));
        assert_eq!(issue_time(at(7_320), validity), at(7_200));
        // ...and the next window starts anew.
        assert_eq!(issue_time(at(10_800), validity), at(10_800));
        // Never later than the signing, never more than half a validity
        // before it.
        for s in [0, 1, 3_599, 3_600, 1_796_687_390] {
            let issued = issue_time(at(s), validity);
            let age = at(s).duration_since(issued).expect("issued before the signing");
            assert!(age < validity / 2);
        }
        // A validity under two seconds still gets one-second windows.
        assert_eq!(issue_time(at(5), Duration::from_secs(1)), at(5));
    }
}
