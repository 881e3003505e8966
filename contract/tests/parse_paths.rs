//! The fast manifest reader (`manifest_from_slice`, text straight into the
//! types) against the path through a JSON value (`manifest_from_value`):
//! whatever the fast one accepts must read as the same manifest, and what
//! it declines must still be decided (and named) by the other.

use std::path::PathBuf;

use pitfall_contract::{Manifest, manifest_from_slice, manifest_from_value, parse_manifest};

fn through_value(text: &[u8]) -> Result<Manifest, String> {
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    manifest_from_value(value).map_err(|e| e.message)
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            out.push((path.display().to_string(), std::fs::read(&path).expect("read")));
        }
    }
    assert!(out.len() >= 3, "the shared fixtures are beside the repo");
    out
}

#[test]
fn the_fast_reader_reads_every_fixture_as_the_value_path_does() {
    for (name, text) in fixtures() {
        let fast = manifest_from_slice(&text)
            .unwrap_or_else(|| panic!("{name}: the fast reader declined a valid manifest"));
        assert_eq!(Ok(fast), through_value(&text), "{name}");
    }
}

#[test]
fn what_the_fast_reader_declines_the_value_path_decides() {
    let cases: &[(&str, Option<&str>)] = &[
        // Valid, but a duplicated key: the value path keeps the last one.
        (
            r#"{"manifest_version": 1, "host": {"arch": "x86_64"}, "host": {"arch": "aarch64"}}"#,
            None,
        ),
        (r#"{"manifest_version": 2}"#, Some("manifest_version: 2 is not supported")),
        (r#"{"manifest_version": "1"}"#, Some("manifest_version")),
        (r#"{"host": {}}"#, Some("manifest_version: missing")),
        (r#"[1, 2]"#, Some("a manifest is a JSON object")),
        (
            r#"{"manifest_version": 1, "accelerators": [{"count": "two"}]}"#,
            Some("accelerators[0].count"),
        ),
        (r#"{"manifest_version": 1} trailing"#, Some("not valid JSON")),
    ];
    for (text, error) in cases {
        assert!(
            manifest_from_slice(text.as_bytes()).is_none(),
            "{text}: the fast reader should decline"
        );
        match (parse_manifest(text.as_bytes()), error) {
            (Ok(m), None) => {
                assert_eq!(m.host.and_then(|h| h.arch).as_deref(), Some("aarch64"), "{text}")
            }
            (Err(e), Some(want)) => assert!(e.message.contains(want), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, wanted an error containing {want:?}"),
        }
    }
}

#[test]
fn unknown_members_survive_the_fast_reader() {
    let text = br#"{"manifest_version": 1, "future": {"b": [1, 2.5, null], "a": "x"},
                   "packages": [{"name": "vllm", "version": "0.27.1", "channel": "nightly"}]}"#;
    let fast = manifest_from_slice(text).expect("accepted");
    assert_eq!(Ok(fast.clone()), through_value(text));
    assert_eq!(fast.extra["future"]["b"][1], serde_json::json!(2.5));
    assert_eq!(fast.packages[0].extra["channel"], "nightly");
}

#[test]
fn the_fast_reader_reads_each_member_into_its_field_at_every_level() {
    let text = br#"{"manifest_version": 1,
        "host": {"arch": "aarch64", "os": {"id": "ubuntu", "codename": "noble"}, "cloud": {"provider": "aws"}},
        "accelerators": [{"vendor": "nvidia", "compute_capability": 8.6, "count": 2}],
        "drivers": {"nvidia": 570.124, "cuda": "12.8", "rocm": null},
        "container": {"image": "vllm/vllm-openai:v0.27.1", "shm_size_mib": 64},
        "env": {"A": "1"}, "build": {"tools": {"ninja": null}},
        "workload": {"engine": "vllm", "head_dims": [256, 512], "disable_custom_all_reduce": true},
        "health_check": {"endpoint": "/health"}}"#;
    let fast = manifest_from_slice(text).expect("accepted");
    assert_eq!(Ok(fast.clone()), through_value(text));
    let gpu = &fast.accelerators[0];
    assert_eq!(
        (gpu.compute_capability.as_deref(), gpu.count),
        (Some("8.6"), Some(2)),
        "a number read as text"
    );
    let drivers = fast.drivers.as_ref().expect("drivers");
    assert_eq!(drivers.nvidia.as_deref(), Some("570.124"));
    assert_eq!(
        drivers.extra["rocm"],
        serde_json::Value::Null,
        "an unknown member is kept, null included"
    );
    let host = fast.host.as_ref().expect("host");
    assert_eq!(host.os.as_ref().map(|os| os.extra["codename"].clone()), Some("noble".into()));
    assert_eq!(fast.build.as_ref().map(|b| b.tools["ninja"].clone()), Some(None));
}

#[test]
fn a_repeated_or_missing_field_is_decided_and_named_by_the_value_path() {
    // A field repeated inside a package: declined, and the last one kept.
    let repeated = br#"{"manifest_version": 1, "packages": [{"name": "a", "name": "b"}]}"#;
    assert!(manifest_from_slice(repeated).is_none());
    assert_eq!(parse_manifest(repeated).map(|m| m.packages[0].name.clone()), Ok("b".to_owned()));
    // A repeated unknown member: the last one, on both paths.
    let unknown = br#"{"manifest_version": 1, "x": 1, "x": 2}"#;
    assert_eq!(manifest_from_slice(unknown).map(|m| m.extra["x"].clone()), Some(2.into()));
    for (text, want) in [
        (r#"{"manifest_version": 1, "packages": [{"version": "1"}]}"#, "missing field `name`"),
        (r#"{"manifest_version": 1, "host": {"memory_mib": "lots"}}"#, "host.memory_mib"),
        (r#"{"manifest_version": 1, "host": "x86_64"}"#, "expected struct Host"),
        (r#"{"manifest_version": 1, "drivers": {"cuda": [12]}}"#, "drivers.cuda"),
    ] {
        assert!(manifest_from_slice(text.as_bytes()).is_none(), "{text}");
        let err = parse_manifest(text.as_bytes()).err().map(|e| e.message).unwrap_or_default();
        assert!(err.contains(want), "{text}: {err}");
    }
}

#[test]
fn text_that_is_not_utf8_is_declined_and_named_by_the_value_path() {
    // The fast reader checks the whole text once, then reads it as `str`.
    for text in [
        &b"{\"manifest_version\": 1, \"host\": {\"arch\": \"x86\xff_64\"}}"[..],
        &b"{\"manifest_version\": 1, \"\xc3\": 1}"[..],
        &b"{\"manifest_version\": 1} \xe2\x82"[..],
    ] {
        assert!(manifest_from_slice(text).is_none(), "{text:?}");
        let err = parse_manifest(text).err().map(|e| e.message).unwrap_or_default();
        assert!(err.contains("not valid JSON"), "{text:?}: {err}");
    }
    // Escapes, and text beyond ASCII, read alike on both paths.
    let text = "{\"manifest_version\": 1, \"host\": {\"cpu_model\": \"Graviton\\u00e9 \u{1F680}\"}, \"env\": {\"\\u0041\": \"\\\"q\\\"\"}}";
    let fast = manifest_from_slice(text.as_bytes()).expect("accepted");
    assert_eq!(Ok(fast.clone()), through_value(text.as_bytes()));
    assert_eq!(fast.host.and_then(|h| h.cpu_model).as_deref(), Some("Graviton\u{e9} \u{1F680}"));
    assert_eq!(fast.env.get("A").map(String::as_str), Some("\"q\""));
}
