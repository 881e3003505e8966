//! The synthetic modules the benchmarks measure, above all the empty-module
//! floor: one text, included by the engine's benchmark and by pitfall-bench
//! (`bench/src/floor.rs`), so both measure the same floor.

/// A synthetic rule: `body` (WAT module fields) plus the custom sections
/// `Engine::load` requires, with metadata that never matches anything.
pub(crate) fn synthetic_module(id: &str, body: &str) -> Vec<u8> {
    let meta = serde_json::json!({
        "id": id, "version": "1.0.0", "title": format!("benchmark module {id}"), "severity": "info",
        "summary": "A synthetic module of the engine's benchmark; returns clear.",
        "message": "never matches",
        "remedies": [{"summary": "none", "actions": [{"kind": "unset_env", "name": "X"}]}],
        "references": [{"title": "engine/benches/engine.rs"}], "author": "benchmarks"
    })
    .to_string()
    .replace('\\', "\\\\")
    .replace('"', "\\\"");
    let text = format!(
        r#"(module {body}
          (@custom "pitfall.abi" "1") (@custom "pitfall.meta" "{meta}") (@custom "pitfall.tests" "[]"))"#
    );
    wat::parse_str(&text).unwrap_or_else(|e| panic!("{id}: {e}"))
}
