//! Answers to identical manifests, so a fleet of identical machines costs
//! one evaluation. Keyed by (canonical manifest digest, ruleset revision):
//! an entry only ever answers for the revision that computed it, so a
//! newer ruleset is never hidden behind an old answer.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use pitfall_sdk::model::report::CheckResponse;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The digest of a manifest in canonical form (object keys sorted, no
/// whitespace), so key order and formatting do not split the cache.
pub type ManifestDigest = [u8; 32];

/// A bounded cache of check answers.
#[derive(Debug)]
pub struct ResultCache {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// The revision every entry belongs to.
    revision: String,
    answers: HashMap<ManifestDigest, Arc<CheckResponse>>,
    /// Insertion order, for eviction: oldest first.
    order: VecDeque<ManifestDigest>,
}

impl ResultCache {
    /// A cache of at most `capacity` answers (0 disables it).
    pub fn new(capacity: usize) -> ResultCache {
        ResultCache { capacity, inner: Mutex::new(Entries::default()) }
    }

    /// The answer computed for this manifest under this revision, if kept.
    pub fn get(&self, digest: &ManifestDigest, revision: &str) -> Option<Arc<CheckResponse>> {
        let entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if entries.revision != revision {
            return None;
        }
        entries.answers.get(digest).cloned()
    }

    /// Keeps an answer computed under `revision`. An answer from a revision
    /// other than the newest seen is dropped; a newer one empties the cache.
    pub fn put(&self, digest: ManifestDigest, revision: &str, answer: Arc<CheckResponse>) {
        if self.capacity == 0 {
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
        }
        if entries.answers.insert(digest, answer).is_none() {
            entries.order.push_back(digest);
        }
        while entries.answers.len() > self.capacity {
            match entries.order.pop_front() {
                Some(oldest) => {
                    entries.answers.remove(&oldest);
                }
                None => break,
            }
        }
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).answers.len()
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

/// The canonical digest of a manifest value.
pub fn manifest_digest(value: &Value) -> ManifestDigest {
    let mut hasher = Sha256::new();
    write_canonical(value, &mut hasher);
    hasher.finalize().into()
}

fn write_canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.update(b"{");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                write_canonical(&Value::String(key.clone()), out);
                out.update(b":");
                write_canonical(&map[key], out);
            }
            out.update(b"}");
        }
        Value::Array(items) => {
            out.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                write_canonical(item, out);
            }
            out.update(b"]");
        }
        // Scalars have one serde_json rendering each.
        scalar => out.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_sdk::model::report::CheckStats;
    use serde_json::json;

    fn answer(revision: &str) -> Arc<CheckResponse> {
        Arc::new(CheckResponse {
            findings: vec![],
            undetermined: vec![],
            rule_errors: vec![],
            ruleset_revision: revision.into(),
            stats: CheckStats { rules_total: 0, rules_evaluated: 0, elapsed_us: 0 },
            enriched: vec![],
        })
    }

    #[test]
    fn key_order_and_whitespace_do_not_change_the_digest() {
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": {"y": [1, 2], "x": "s"}}"#).expect("json");
        let b: Value = serde_json::from_str(r#"{"b":{"x":"s","y":[1,2]},"a":1}"#).expect("json");
        assert_eq!(manifest_digest(&a), manifest_digest(&b));
        assert_ne!(manifest_digest(&a), manifest_digest(&json!({"a": 2, "b": {"y": [1, 2], "x": "s"}})));
        assert_ne!(manifest_digest(&json!({"a": [1, 2]})), manifest_digest(&json!({"a": [2, 1]})));
    }

    #[test]
    fn never_answers_for_another_revision() {
        let cache = ResultCache::new(4);
        let d = manifest_digest(&json!({"manifest_version": 1}));
        cache.put(d, "7", answer("7"));
        assert!(cache.get(&d, "7").is_some());
        assert!(cache.get(&d, "8").is_none(), "a newer revision must recompute");
        cache.put(d, "8", answer("8"));
        assert!(cache.get(&d, "7").is_none(), "the older revision's answers are gone");
        // A slow check that started before the swap finishes late: dropped.
        cache.put(d, "7", answer("7"));
        assert_eq!(cache.get(&d, "8").expect("kept").ruleset_revision, "8");
    }

    #[test]
    fn stays_within_capacity_oldest_first() {
        let cache = ResultCache::new(2);
        let digests: Vec<_> = (0..3).map(|i| manifest_digest(&json!({ "i": i }))).collect();
        for d in &digests {
            cache.put(*d, "1", answer("1"));
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&digests[0], "1").is_none());
        assert!(cache.get(&digests[2], "1").is_some());
    }
}
