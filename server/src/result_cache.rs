//! Answers to identical manifests, so a fleet of identical machines costs
//! one evaluation. Keyed by (canonical manifest digest, ruleset revision):
//! an entry only ever answers for the revision that computed it, so a
//! newer ruleset is never hidden behind an old answer.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use pitfall_sdk::model::Manifest;
use sha2::{Digest, Sha256};

use crate::answer::SerializedAnswer;

/// The digest of a manifest as read into the contract's types, so key
/// order, formatting and anything else that reads as the same manifest do
/// not split the cache (and the answer depends on nothing else).
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

/// The digest of a manifest: SHA-256 of its canonical bytes
/// (`crate::canonical`: fields in declaration order, maps sorted, every
/// value tagged and every string length-prefixed, so two manifests never
/// share their bytes). SHA-256 rather than a fast hash: a client who could
/// make two manifests collide could have its answer served to someone
/// else. The bytes are written into a buffer of this thread's and hashed
/// in one piece: fed to the hasher token by token, the same bytes took
/// longer (`pitfall-bench`'s `digest_us`). `None` if the manifest would
/// not serialise (its types never refuse): then it is not cached.
pub fn manifest_digest(manifest: &Manifest) -> Option<ManifestDigest> {
    thread_local! {
        static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BYTES.with(|bytes| {
        let mut bytes = bytes.borrow_mut();
        bytes.clear();
        let encoded = crate::canonical::encode(manifest, &mut bytes);
        let digest = encoded.is_ok().then(|| Sha256::digest(&bytes[..]).into());
        // One outsized manifest does not keep its buffer for good.
        if bytes.capacity() > MAX_KEPT_BUFFER {
            *bytes = Vec::new();
        }
        digest
    })
}

/// The largest digest buffer a thread keeps between manifests.
const MAX_KEPT_BUFFER: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_sdk::model::parse_manifest;
    use pitfall_sdk::model::report::{CheckResponse, CheckStats};

    fn answer(revision: &str, findings: usize) -> Arc<SerializedAnswer> {
        let finding = serde_json::json!({
            "rule_id": "demo-rule", "rule_version": "1.0.0", "severity": "error", "title": "t",
            "message": "m".repeat(1000), "error_signatures": [], "evidence": [], "remedies": [], "references": []
        });
        Arc::new(SerializedAnswer::new(&CheckResponse {
            findings: vec![serde_json::from_value(finding).unwrap_or_else(|e| panic!("{e}")); findings],
            undetermined: vec![],
            rule_errors: vec![],
            ruleset_revision: revision.into(),
            stats: CheckStats { rules_total: 0, rules_evaluated: 0, elapsed_us: 0 },
            enriched: vec![],
        }))
    }

    fn digest(json: &str) -> ManifestDigest {
        manifest_digest(&parse_manifest(json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e}"))).expect("serialises")
    }

    #[test]
    fn key_order_and_whitespace_do_not_change_the_digest() {
        let a = r#"{"manifest_version": 1, "host": {"arch": "x86_64", "cpu_model": "EPYC"},
                    "future": {"y": [1, 2], "x": "s"}}"#;
        let b = r#"{"future":{"x":"s","y":[1,2]},"host":{"cpu_model":"EPYC","arch":"x86_64"},"manifest_version":1}"#;
        assert_eq!(digest(a), digest(b), "unknown members are sorted too");
        assert_ne!(digest(a), digest(r#"{"manifest_version": 1, "host": {"arch": "aarch64", "cpu_model": "EPYC"}}"#));
        assert_ne!(
            digest(r#"{"manifest_version": 1, "future": [1, 2]}"#),
            digest(r#"{"manifest_version": 1, "future": [2, 1]}"#)
        );
        assert_ne!(
            digest(r#"{"manifest_version": 1, "packages": [{"name": "a", "version": "1"}, {"name": "b", "version": "1"}]}"#),
            digest(r#"{"manifest_version": 1, "packages": [{"name": "a", "version": "1"}, {"name": "b", "version": "2"}]}"#)
        );
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
        let digests: Vec<_> = (0..3).map(|i| digest(&format!(r#"{{"manifest_version": 1, "i": {i}}}"#))).collect();
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
        let digests: Vec<_> = (0..5).map(|i| digest(&format!(r#"{{"manifest_version": 1, "i": {i}}}"#))).collect();
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
