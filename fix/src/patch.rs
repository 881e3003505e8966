//! A plan as a JSON Merge Patch (RFC 7386) of the manifest: the object
//! that, merged into the manifest as sent, gives the patched one.

use serde_json::{Map, Value};

/// The merge patch that turns `before` into `after` (arrays are replaced
/// whole; a member `after` lacks is `null`).
pub fn merge_patch(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut patch = Map::new();
            for (k, av) in a {
                match b.get(k) {
                    Some(bv) if bv == av => {}
                    Some(bv) => {
                        patch.insert(k.clone(), merge_patch(bv, av));
                    }
                    None => {
                        patch.insert(k.clone(), av.clone());
                    }
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                patch.insert(k.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => after.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 7386's own merge, to prove the patch round-trips.
    fn apply(target: &Value, patch: &Value) -> Value {
        let Value::Object(p) = patch else { return patch.clone() };
        let mut out = match target {
            Value::Object(t) => t.clone(),
            _ => Map::new(),
        };
        for (k, v) in p {
            if v.is_null() {
                out.remove(k);
            } else {
                let merged = apply(out.get(k).unwrap_or(&Value::Null), v);
                out.insert(k.clone(), merged);
            }
        }
        Value::Object(out)
    }

    #[test]
    fn the_patch_merges_back_into_the_patched_manifest() {
        let before = json!({"a": 1, "env": {"X": "1", "Y": "2"}, "packages": [{"name": "vllm"}]});
        let after = json!({"a": 1, "env": {"X": "3"}, "packages": [{"name": "vllm"}, {"name": "t"}], "b": true});
        let patch = merge_patch(&before, &after);
        assert_eq!(
            patch,
            json!({"env": {"X": "3", "Y": null}, "packages": [{"name": "vllm"}, {"name": "t"}], "b": true})
        );
        assert_eq!(apply(&before, &patch), after);
    }
}
