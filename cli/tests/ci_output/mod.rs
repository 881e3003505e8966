//! Output for CI and shells: `check --format sarif` against the OASIS
//! SARIF 2.1.0 schema (vendored in `tests/schemas/`), the `--format json`
//! outputs of `check`, `scan`, `explain` and `fix` against the schemas a
//! real registry serves at `/v1/schemas/`, shell completions and the man
//! page.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::provision::registry;
use crate::{command, fixture, fixtures, pitfall, report};

const G5G: &str = "g5g-gemma4-vllm0271.json";

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The OASIS schema, draft 4, offline.
fn sarif_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/sarif-schema-2.1.0.json");
    let schema: Value =
        serde_json::from_slice(&std::fs::read(path).expect("vendored schema")).expect("JSON");
    jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what} does not validate:\n{}", errors.join("\n"));
}

#[test]
fn sarif_of_the_g5g_validates_and_has_a_result_per_finding() {
    let validator = sarif_validator();
    // Run from the fixtures' folder with a relative path, as a CI job
    // runs from its checkout: the artifact is that path.
    let out = command()
        .current_dir(fixtures())
        .args(["check", G5G, "--format", "sarif"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let log = stdout_json(&out);
    assert_valid(&validator, &log, "the G5g's SARIF log");
    // The schema is strict enough to refuse a level SARIF does not have.
    let mut wrong = log.clone();
    wrong["runs"][0]["results"][0]["level"] = "critical".into();
    assert!(!validator.is_valid(&wrong), "the SARIF schema accepts any level");

    let answer = stdout_json(&pitfall(&["check", &fixture(G5G), "--format", "json"]));
    let findings = answer["findings"].as_array().expect("findings");
    let run = &log["runs"][0];
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), findings.len(), "one result per finding");
    let text = std::fs::read_to_string(fixtures().join(G5G)).expect("fixture");
    for (result, finding) in results.iter().zip(findings) {
        assert_eq!(result["ruleId"], finding["rule_id"]);
        let level = match finding["severity"].as_str() {
            Some("error") => "error",
            Some("warning") => "warning",
            _ => "note",
        };
        assert_eq!(result["level"], level, "{result}");
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], G5G);
        // The line holds the first evidence field, when the client sent it
        // (a value the registry filled in is placed at its enclosing field).
        let line = location["region"]["startLine"].as_u64().expect("startLine") as usize;
        let held = text.lines().nth(line - 1).expect("a line of the file");
        let first = finding["evidence"].as_array().expect("evidence").first();
        if let Some(first) = first.filter(|e| e["source"] == "manifest") {
            let path = first["path"].as_str().expect("path");
            assert!(
                path.split('.').any(|s| held.contains(&format!("\"{s}\""))),
                "{path} is placed at line {line}: {held}"
            );
        }
        let rule =
            &run["tool"]["driver"]["rules"][result["ruleIndex"].as_u64().expect("index") as usize];
        assert_eq!(rule["id"], result["ruleId"]);
        assert!(
            rule["helpUri"].as_str().is_some_and(|u| u.starts_with("http")),
            "offline, a rule's help is its first source: {rule}"
        );
        assert!(!rule["fullDescription"]["text"].as_str().unwrap_or_default().is_empty());
    }
    assert!(
        results.iter().any(|r| r["locations"][0]["physicalLocation"]["region"]["startLine"] != 1)
    );
    assert_eq!(run["artifacts"][0]["location"]["uri"], G5G);
    let undetermined = run["properties"]["undetermined"].as_array().expect("undetermined");
    assert_eq!(
        undetermined.len(),
        answer["undetermined"].as_array().expect("undetermined").len(),
        "undetermined rules are listed, not results"
    );
}

#[test]
fn sarif_online_links_the_registry_rule_pages_and_a_batch_reports_unreadable_files() {
    let validator = sarif_validator();
    let registry = registry();
    let out = pitfall(&["check", &fixture(G5G), "--server", &registry.url, "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let log = stdout_json(&out);
    assert_valid(&validator, &log, "the online SARIF log");
    for rule in log["runs"][0]["tool"]["driver"]["rules"].as_array().expect("rules") {
        assert_eq!(
            rule["helpUri"],
            format!("{}/rules/{}", registry.url, rule["id"].as_str().expect("id")),
        );
    }

    let missing = fixtures().join("no-such-manifest.json").display().to_string();
    let healthy = fixture("h100x8-llama70b-healthy.json");
    let out =
        pitfall(&["check", "--batch", &fixture(G5G), &missing, &healthy, "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(2), "a file could not be read");
    let log = stdout_json(&out);
    assert_valid(&validator, &log, "the batch's SARIF log");
    let run = &log["runs"][0];
    assert_eq!(run["artifacts"].as_array().expect("artifacts").len(), 3);
    assert_eq!(run["invocations"][0]["executionSuccessful"], false);
    let notes = run["invocations"][0]["toolExecutionNotifications"].as_array().expect("notes");
    assert!(
        notes
            .iter()
            .any(|n| n["message"]["text"].as_str().is_some_and(|t| t.contains("no-such-manifest"))),
        "{notes:?}"
    );
    let indices: Vec<u64> = run["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["index"]
                .as_u64()
                .expect("index")
        })
        .collect();
    assert!(indices.contains(&0), "the G5g's findings: {indices:?}");
    assert!(!indices.contains(&1), "the unreadable file has no results: {indices:?}");
}

#[test]
fn sarif_of_bad_input_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, br#"{"manifest_version": 1, "accelerators": 3}"#).expect("write");
    let out = pitfall(&["check", &bad.display().to_string(), "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("accelerators"));
    let out = pitfall(&["check", &fixture(G5G), "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `GET url` over HTTP/1.1 on loopback: status, content type, body.
fn get(url: &str) -> (u16, String, Vec<u8>) {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) =
        rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4;
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status");
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("content-type:").map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    let mut body = answer[split..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, content_type, body)
}

fn dechunk(mut chunked: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let end = chunked.windows(2).position(|w| w == b"\r\n").expect("chunk size");
        let size =
            usize::from_str_radix(std::str::from_utf8(&chunked[..end]).expect("hex").trim(), 16)
                .expect("size");
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&chunked[end + 2..end + 2 + size]);
        chunked = &chunked[end + 4 + size..];
    }
}

/// The schema the registry serves for `name`, compiled.
fn served_schema(name: &str) -> jsonschema::Validator {
    let (status, content_type, body) = get(&format!("{}/v1/schemas/{name}", registry().url));
    assert_eq!(status, 200, "{name}: {}", String::from_utf8_lossy(&body));
    assert_eq!(content_type, "application/schema+json", "{name}");
    let schema: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(schema["$id"], format!("/v1/schemas/{name}"), "{name}");
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name} compiles: {e}"))
}

#[test]
fn json_outputs_validate_against_the_served_schemas() {
    let (status, _, body) = get(&format!("{}/v1/schemas/openapi.json", registry().url));
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    let error: Value = serde_json::from_slice(&body).expect("the error envelope");
    assert_eq!(error["error"]["code"], "not_found");

    let check = served_schema("check.json");
    let one = pitfall(&["check", &fixture(G5G), "--format", "json"]);
    assert_valid(&check, &stdout_json(&one), "check");
    let online =
        pitfall(&["check", &fixture(G5G), "--server", &registry().url, "--format", "json"]);
    assert_valid(&check, &stdout_json(&online), "check --server");
    let missing = fixtures().join("no-such-manifest.json").display().to_string();
    let batch = pitfall(&[
        "check",
        "--batch",
        &fixture(G5G),
        &fixture("a6000-llama70b-single.json"),
        &missing,
        "--format",
        "json",
    ]);
    let batch = stdout_json(&batch);
    assert_eq!(batch["results"].as_array().expect("results").len(), 3);
    assert_valid(&check, &batch, "check --batch");

    let scan = served_schema("scan.json");
    for dir in crate::machine_dirs() {
        let out = pitfall(&["scan", "--from-dir", &dir.display().to_string(), "--format", "json"]);
        assert_valid(&scan, &stdout_json(&out), &format!("scan of {}", dir.display()));
    }

    let explain = served_schema("explain.json");
    let plain = stdout_json(&pitfall(&["explain", &report("vllm-14817"), "--format", "json"]));
    assert!(!plain["causes"].as_array().expect("causes").is_empty());
    assert_valid(&explain, &plain, "explain");
    let with_setup = pitfall(&[
        "explain",
        &report("vllm-14817"),
        "--manifest",
        &fixture(G5G),
        "--format",
        "json",
    ]);
    assert_valid(&explain, &stdout_json(&with_setup), "explain --manifest");

    let fix = served_schema("fix.json");
    for name in [G5G, "a6000-llama70b-single.json", "h100x8-llama70b-healthy.json"] {
        let out = pitfall(&["fix", &fixture(name), "--format", "json"]);
        assert_valid(&fix, &stdout_json(&out), &format!("fix of {name}"));
    }

    // A schema refuses what it should: the check answer is not a fix answer.
    assert!(!fix.is_valid(&stdout_json(&one)));
}

#[test]
fn completions_name_every_subcommand_in_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = pitfall(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        let script = String::from_utf8(out.stdout).expect("UTF-8");
        for sub in
            ["scan", "check", "fix", "explain", "bundle", "rule", "catalogue", "completions", "man"]
        {
            assert!(script.contains(sub), "{shell}'s script lacks {sub}");
        }
        assert!(script.contains("sarif"), "{shell}'s script completes --format's values");
    }
    let out = pitfall(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is bad input");
    // bash reads the script back without a syntax error.
    let script = pitfall(&["completions", "bash"]).stdout;
    let status = Command::new("bash")
        .args(["-n", "/dev/stdin"])
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().expect("stdin").write_all(&script)?;
            child.wait()
        })
        .expect("bash");
    assert!(status.success(), "bash -n refuses the completion script");
}

#[test]
fn the_man_page_renders_with_every_command() {
    let out = pitfall(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut nroff = Command::new("nroff")
        .args(["-man", "-Tascii"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("nroff (groff-base; `cargo xtask setup` installs it)");
    nroff.stdin.take().expect("stdin").write_all(&out.stdout).expect("roff in");
    let rendered = nroff.wait_with_output().expect("nroff runs");
    assert!(rendered.status.success());
    let page = plain(&String::from_utf8_lossy(&rendered.stdout));
    for part in ["NAME", "SYNOPSIS", "SUBCOMMANDS", "pitfall-check(1)", "pitfall-completions(1)"] {
        assert!(page.contains(part), "the page lacks {part}:\n{page}");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let out = pitfall(&["man", "--dir", &dir.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for page in ["pitfall.1", "pitfall-check.1", "pitfall-fix.1", "pitfall-bundle-pull.1"] {
        let roff = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(roff.starts_with(".ie") || roff.contains(".TH"), "{page} is roff");
    }
}

/// A terminal page as text: overstrikes (`N\x08N`) and SGR sequences
/// (`\x1b[1m`) removed.
fn plain(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut chars = page.chars();
    while let Some(c) = chars.next() {
        match c {
            '\x08' => {
                out.pop();
            }
            '\x1b' => {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}
