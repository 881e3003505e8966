//! Answers to identical manifests, so a fleet of identical machines costs
//! one evaluation. Keyed by (digest of the manifest's text, ruleset
//! revision): an entry only ever answers for the revision that computed
//! it, so a newer ruleset is never hidden behind an old answer.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::answer::SerializedAnswer;

/// The digest of a manifest's text as the client sent it
/// ([`text_digest`]).
pub type ManifestDigest = [u8; 32];

/// A bounded cache of check answers: at most so many, and at most so many
/// bytes of answer text (answers of many findings are tens of KiB).
#[derive(Debug)]
pub struct ResultCache {
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// The revision every entry belongs to.
    revision: String,
    answers: HashMap<ManifestDigest, Arc<SerializedAnswer>>,
    /// Insertion order, for eviction: oldest first.
    order: VecDeque<ManifestDigest>,
    /// The kept answers' weights, summed.
    bytes: usize,
}

impl ResultCache {
    /// A cache of at most `capacity` answers and `max_bytes` bytes of them
    /// (either 0 disables it).
    pub fn new(capacity: usize, max_bytes: usize) -> ResultCache {
        ResultCache { capacity, max_bytes, inner: Mutex::new(Entries::default()) }
    }

    /// The answer computed for this manifest under this revision, if kept.
    pub fn get(&self, digest: &ManifestDigest, revision: &str) -> Option<Arc<SerializedAnswer>> {
        let entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if entries.revision != revision {
            return None;
        }
        entries.answers.get(digest).cloned()
    }

    /// Keeps an answer computed under `revision`. An answer from a revision
    /// other than the newest seen is dropped; a newer one empties the cache.
    /// An answer heavier than the whole budget is not kept.
    pub fn put(&self, digest: ManifestDigest, revision: &str, answer: Arc<SerializedAnswer>) {
        let weight = answer.weight();
        if self.capacity == 0 || weight > self.max_bytes {
            return;
        }
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if entries.revision != revision {
            if revision_is_older(revision, &entries.revision) {
                return;
            }
            entries.revision = revision.to_owned();
            entries.answers.clear();
            entries.order.clear();
            entries.bytes = 0;
        }
        match entries.answers.insert(digest, answer) {
            Some(replaced) => entries.bytes -= replaced.weight(),
            None => entries.order.push_back(digest),
        }
        entries.bytes += weight;
        while entries.answers.len() > self.capacity || entries.bytes > self.max_bytes {
            let Some(oldest) = entries.order.pop_front() else { break };
            if let Some(evicted) = entries.answers.remove(&oldest) {
                entries.bytes -= evicted.weight();
            }
        }
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).answers.len()
    }

    /// The kept answers' weight in bytes.
    pub fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }

    /// Whether no answer is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Revisions are decimal counters from the store; compare them as numbers
/// (anything else, e.g. a test's label, counts as newer so it is kept).
fn revision_is_older(candidate: &str, current: &str) -> bool {
    match (candidate.parse::<u64>(), current.parse::<u64>()) {
        (Ok(a), Ok(b)) => a < b,
        _ => false,
    }
}

/// The digest of a manifest's text, the cache's key: BLAKE3 of the bytes
/// as received. A cryptographic hash, not a fast one: a client who could
/// make two texts collide could have its answer served to someone else.
///
/// The text, not the manifest as read, so that a text the cache answers is
/// never read at all (a repeated check cost 62 us of the server's CPU with
/// the read and a digest of the typed manifest, 29 us without). What that
/// gives up: two texts that read as the same manifest
/// (keys in another order, other whitespace) are two entries, each
/// evaluated once. A fleet's machines are described by one tool, which
/// writes equal manifests as equal text.
pub fn text_digest(text: &[u8]) -> ManifestDigest {
    blake3::hash(text).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_contract::report::{CheckResponse, CheckStats};

    fn answer(revision: &str, findings: usize) -> Arc<SerializedAnswer> {
        let finding = serde_json::json!({
            "rule_id": "demo-rule", "rule_version": "1.0.0", "severity": "error", "title": "t",
            "message": "m".repeat(1000), "error_signatures": [], "evidence": [], "remedies": [], "references": []
        });
        Arc::new(SerializedAnswer::new(&CheckResponse {
            findings: vec![
                serde_json::from_value(finding).unwrap_or_else(|e| panic!("{e}"));
                findings
            ],
            undetermined: vec![],
            rule_errors: vec![],
            ruleset_revision: revision.into(),
            stats: CheckStats { rules_total: 0, rules_evaluated: 0, elapsed_us: 0 },
            enriched: vec![],
            unresolved: vec![],
            as_of: false,
        }))
    }

    fn digest(json: &str) -> ManifestDigest {
        text_digest(json.as_bytes())
    }

    #[test]
    fn the_digest_is_the_texts_every_byte_counts() {
        let a = r#"{"manifest_version": 1, "packages": [{"name": "a", "version": "1"}]}"#;
        assert_eq!(digest(a), digest(a), "the same text, the same key");
        // BLAKE3's own test vector: the key is BLAKE3, unkeyed.
        assert_eq!(
            digest("").iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        for other in [
            r#"{"manifest_version": 1, "packages": [{"name": "a", "version": "2"}]}"#,
            r#"{"manifest_version":1,"packages":[{"name":"a","version":"1"}]}"#,
            r#"{"packages": [{"name": "a", "version": "1"}], "manifest_version": 1}"#,
        ] {
            assert_ne!(digest(a), digest(other), "{other}");
        }
    }

    #[test]
    fn never_answers_for_another_revision() {
        let cache = ResultCache::new(4, 1 << 20);
        let d = digest(r#"{"manifest_version": 1}"#);
        cache.put(d, "7", answer("7", 0));
        assert!(cache.get(&d, "7").is_some());
        assert!(cache.get(&d, "8").is_none(), "a newer revision must recompute");
        cache.put(d, "8", answer("8", 0));
        assert!(cache.get(&d, "7").is_none(), "the older revision's answers are gone");
        // A slow check that started before the swap finishes late: dropped.
        cache.put(d, "7", answer("7", 0));
        assert!(cache.get(&d, "8").expect("kept").json(0).contains(r#""ruleset_revision":"8""#));
    }

    #[test]
    fn stays_within_capacity_oldest_first() {
        let cache = ResultCache::new(2, 1 << 20);
        let digests: Vec<_> =
            (0..3).map(|i| digest(&format!(r#"{{"manifest_version": 1, "i": {i}}}"#))).collect();
        for d in &digests {
            cache.put(*d, "1", answer("1", 0));
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&digests[0], "1").is_none());
        assert!(cache.get(&digests[2], "1").is_some());
    }

    #[test]
    fn stays_within_its_bytes_oldest_first() {
        let one = answer("1", 20).weight();
        assert!(one > 20_000, "twenty findings of a KiB each: {one}");
        let cache = ResultCache::new(1000, 3 * one + one / 2);
        let digests: Vec<_> =
            (0..5).map(|i| digest(&format!(r#"{{"manifest_version": 1, "i": {i}}}"#))).collect();
        for d in &digests {
            cache.put(*d, "1", answer("1", 20));
        }
        assert_eq!(cache.len(), 3, "three answers fit the budget");
        assert!(cache.bytes() <= 3 * one + one / 2);
        assert!(cache.get(&digests[1], "1").is_none() && cache.get(&digests[4], "1").is_some());
        // Replacing an answer counts its weight once.
        cache.put(digests[4], "1", answer("1", 20));
        assert_eq!((cache.len(), cache.bytes()), (3, 3 * one));
        // One answer over the whole budget is not kept, and evicts nothing.
        let small = ResultCache::new(1000, one / 2);
        small.put(digests[0], "1", answer("1", 20));
        assert!(small.is_empty());
    }
}
