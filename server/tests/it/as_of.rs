//! Answers as of a past ruleset revision, on real `pitfall-server`
//! processes over SQLite and PostgreSQL: rules are published, approved,
//! replaced by a higher version and yanked through the API; after every
//! write the live answers (one manifest at a time and as a batch) are
//! recorded; then each revision is asked again with `?revision=N`, first
//! of the process that answered live (more revisions than it keeps built,
//! so some are rebuilt), then of a fresh process on the same database.
//! Every answer must equal the live one of its revision. `GET
//! /v1/revisions` must name each change, page after page; bad revision
//! values get the error envelope.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::postgres;
use crate::live::{RATE_LIMITS_OFF, Server};
use crate::processes::admin_token;

/// Rules of the bundle that the G5g manifest hits (see `processes.rs`).
const FIRST: &str = "vllm-bf16-needs-sm80";
const SECOND: &str = "aarch64-official-image-needs-sm80";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture")
}

fn manifests() -> Vec<Vec<u8>> {
    ["g5g-gemma4-vllm0271.json", "a6000-llama70b-single.json", "h100x8-llama70b-healthy.json"]
        .into_iter()
        .map(fixture)
        .collect()
}

/// The bundled module of rule `id`, and its version.
fn bundled(id: &str) -> (Vec<u8>, String) {
    pitfall_bundled_rules::MODULES
        .iter()
        .find_map(|m| {
            let info = pitfall_engine::inspect::inspect(m.wasm, &pitfall_engine::Limits::default())
                .ok()?;
            (info.meta.id == id).then(|| (m.wasm.to_vec(), info.meta.version))
        })
        .unwrap_or_else(|| panic!("no bundled rule {id}"))
}

/// `wasm` with the version in its `pitfall.meta` section replaced: the
/// same rule as a new version, as its author would build it.
fn with_version(wasm: &[u8], version: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    fn read_leb(bytes: &[u8], at: &mut usize) -> usize {
        let (mut n, mut shift) = (0usize, 0);
        loop {
            let byte = bytes[*at];
            *at += 1;
            n |= usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return n;
            }
        }
    }
    let mut out = wasm[..8].to_vec();
    let mut at = 8;
    let mut replaced = false;
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let size = read_leb(wasm, &mut at);
        let payload = &wasm[at..at + size];
        at += size;
        let mut name_at = 0;
        let name_len = if id == 0 { read_leb(payload, &mut name_at) } else { 0 };
        if id == 0 && &payload[name_at..name_at + name_len] == b"pitfall.meta" {
            let mut meta: Value =
                serde_json::from_slice(&payload[name_at + name_len..]).expect("meta JSON");
            meta["version"] = json!(version);
            let mut section = Vec::new();
            leb(name_len, &mut section);
            section.extend_from_slice(b"pitfall.meta");
            section.extend_from_slice(meta.to_string().as_bytes());
            out.push(0);
            leb(section.len(), &mut out);
            out.extend_from_slice(&section);
            replaced = true;
        } else {
            out.push(id);
            leb(size, &mut out);
            out.extend_from_slice(payload);
        }
    }
    assert!(replaced, "no pitfall.meta section");
    out
}

/// An answer without what differs between two askings of one question:
/// the time it took, and the `as_of` label (checked apart).
fn timeless(mut answer: Value) -> Value {
    if let Some(stats) = answer.get_mut("stats").and_then(Value::as_object_mut) {
        stats.remove("elapsed_us");
    }
    if let Some(answer) = answer.as_object_mut() {
        answer.remove("as_of");
    }
    answer
}

/// What one revision answered: each manifest alone, and all as a batch.
#[derive(Debug, Clone, PartialEq)]
struct Answers {
    single: Vec<Value>,
    batch: Vec<Value>,
}

/// Asks every manifest at `query` ("" for live, or `?revision=N`), alone
/// and as one batch; checks each answer names `revision` and carries
/// `as_of` as expected.
fn ask(server: &Server, query: &str, revision: &str, as_of: bool) -> Answers {
    let manifests = manifests();
    let mut single = Vec::new();
    for manifest in &manifests {
        let (status, answer) = server.call("POST", &format!("/v1/check{query}"), None, manifest);
        assert_eq!(status, 200, "{query}: {answer}");
        assert_eq!(answer["ruleset_revision"], revision, "{query}: {answer}");
        assert_eq!(answer.get("as_of").is_some(), as_of, "{query}: {answer}");
        single.push(timeless(answer));
    }
    let raw: Vec<Value> =
        manifests.iter().map(|m| serde_json::from_slice(m).expect("manifest JSON")).collect();
    let body = json!({ "manifests": raw }).to_string();
    let (status, answer) =
        server.call("POST", &format!("/v1/check/batch{query}"), None, body.as_bytes());
    assert_eq!(status, 200, "{query}: {answer}");
    let batch: Vec<Value> = answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|a| {
            assert_eq!(a["ruleset_revision"], revision, "{query}: {a}");
            assert_eq!(a.get("as_of").is_some(), as_of, "{query}: {a}");
            timeless(a.clone())
        })
        .collect();
    Answers { single, batch }
}

/// The `x-pitfall-ruleset-revision` header of a check's answer.
fn revision_header(server: &Server, query: &str) -> Option<String> {
    use std::io::{Read, Write};
    let body = fixture("g5g-gemma4-vllm0271.json");
    let mut stream = std::net::TcpStream::connect(server.addr).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("timeout");
    let head = format!(
        "POST /v1/check{query} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        server.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body)).expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read");
    let text = String::from_utf8_lossy(&response);
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("x-pitfall-ruleset-revision").then(|| value.trim().to_owned())
    })
}

/// The served revision, as `/healthz` says.
fn served(server: &Server) -> String {
    let (_, health) = server.call("GET", "/healthz", None, b"");
    health["ruleset_revision"].as_str().expect("revision").to_owned()
}

/// Every recorded revision, newest first, read `limit` at a time.
fn all_revisions(server: &Server, limit: u32) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path = format!("/v1/revisions?limit={limit}");
    loop {
        let (status, page) = server.call("GET", &path, None, b"");
        assert_eq!(status, 200, "{path}: {page}");
        let revisions = page["revisions"].as_array().expect("revisions");
        assert!(revisions.len() <= limit as usize, "{page}");
        out.extend(revisions.iter().cloned());
        match page["next_before"].as_u64() {
            Some(before) => path = format!("/v1/revisions?limit={limit}&before={before}"),
            None => return out,
        }
    }
}

/// Asserts two revisions' answers are equal, naming the first that
/// differs (the answers are long).
fn same(got: &Answers, live: &Answers, what: &str) {
    let manifests = live.single.len().max(1);
    let pairs = got.single.iter().zip(&live.single).map(|p| ("alone", p));
    let batch = got.batch.iter().zip(&live.batch).map(|p| ("in the batch", p));
    for (i, (how, (got, live))) in pairs.chain(batch).enumerate() {
        assert!(
            got == live,
            "{what}: manifest {} {how} answers otherwise than live: findings {} (live: {}), rules_total {} (live: {})",
            i % manifests,
            got["findings"].as_array().map_or(0, Vec::len),
            live["findings"].as_array().map_or(0, Vec::len),
            got["stats"]["rules_total"],
            live["stats"]["rules_total"],
        );
    }
    assert_eq!(
        (got.single.len(), got.batch.len()),
        (live.single.len(), live.batch.len()),
        "{what}"
    );
}

fn finding_versions(answers: &Answers) -> BTreeMap<String, String> {
    answers
        .single
        .iter()
        .flat_map(|a| a["findings"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            (
                f["rule_id"].as_str().unwrap_or("").to_owned(),
                f["rule_version"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn run(data_dir: &Path, database_url: Option<&str>) {
    let alice = admin_token(data_dir, database_url, "alice", "contributor");
    let mia = admin_token(data_dir, database_url, "mia", "maintainer");
    let server = Server::start_with_vars(data_dir, database_url, false, &RATE_LIMITS_OFF);
    let (first, first_version) = bundled(FIRST);
    let (second, second_version) = bundled(SECOND);
    let higher = {
        let v = semver::Version::parse(&first_version).expect("semver");
        semver::Version::new(v.major, v.minor, v.patch + 1).to_string()
    };
    let first_higher = with_version(&first, &higher);

    // Live answers by revision, and what each write should list.
    let mut live: Vec<(String, Answers)> = Vec::new();
    let mut expected_changes: BTreeMap<String, Value> = BTreeMap::new();
    let record = |live: &mut Vec<(String, Answers)>| {
        let revision = served(&server);
        let answers = ask(&server, "", &revision, false);
        live.push((revision.clone(), answers));
        revision
    };
    let start = record(&mut live);
    expected_changes.insert(start, json!([]));

    let review = |rule: &str, version: &str, action: &str| {
        format!("/v1/rules/{rule}/versions/{version}/{action}")
    };
    let steps: Vec<(String, &str, Vec<u8>, Value)> = vec![
        ("/v1/rules".into(), alice.as_str(), first.clone(), json!([])),
        (
            review(FIRST, &first_version, "approve"),
            mia.as_str(),
            b"{}".to_vec(),
            json!([{"rule_id": FIRST, "change": "added", "to": first_version}]),
        ),
        ("/v1/rules".into(), alice.as_str(), second.clone(), json!([])),
        (
            review(SECOND, &second_version, "approve"),
            mia.as_str(),
            b"{}".to_vec(),
            json!([{"rule_id": SECOND, "change": "added", "to": second_version}]),
        ),
        ("/v1/rules".into(), alice.as_str(), first_higher.clone(), json!([])),
        (
            review(FIRST, &higher, "approve"),
            mia.as_str(),
            b"{}".to_vec(),
            json!([{"rule_id": FIRST, "change": "version_changed", "from": first_version, "to": higher}]),
        ),
        // The higher version yanked: the lower one is served again.
        (
            review(FIRST, &higher, "yank"),
            alice.as_str(),
            br#"{"reason": "false positives"}"#.to_vec(),
            json!([{"rule_id": FIRST, "change": "yanked", "from": higher, "to": first_version}]),
        ),
        (
            review(SECOND, &second_version, "yank"),
            mia.as_str(),
            b"{}".to_vec(),
            json!([{"rule_id": SECOND, "change": "yanked", "from": second_version}]),
        ),
    ];
    for (path, token, body, changes) in steps {
        let (status, answer) = server.call("POST", &path, Some(token), &body);
        assert!((200..300).contains(&status), "{path}: {status} {answer}");
        let revision = record(&mut live);
        expected_changes.insert(revision, changes);
    }
    let revisions: Vec<&String> = live.iter().map(|(r, _)| r).collect();
    assert_eq!(revisions.len(), 9, "one revision per write: {revisions:?}");
    // The answers moved as the rules did: each served version is seen.
    let seen: Vec<BTreeMap<String, String>> =
        live.iter().map(|(_, a)| finding_versions(a)).collect();
    assert!(seen[0].is_empty(), "nothing served before the first approval: {:?}", seen[0]);
    assert_eq!(seen[2].get(FIRST), Some(&first_version));
    assert_eq!(seen[6].get(FIRST), Some(&higher));
    assert_eq!(seen[7].get(FIRST), Some(&first_version), "the yank brought back the lower version");
    assert!(seen[4].contains_key(SECOND) && !seen[8].contains_key(SECOND));

    let current = live.last().map(|(r, _)| r.clone()).expect("a revision");
    let check_all = |server: &Server, who: &str| {
        for (revision, expected) in &live {
            let as_of = *revision != current;
            let again = ask(server, &format!("?revision={revision}"), revision, as_of);
            same(&again, expected, &format!("{who}: revision {revision}"));
        }
    };
    check_all(&server, "the live process");
    // The header names the revision that answered, past or served.
    assert_eq!(revision_header(&server, "").as_ref(), Some(&current));
    assert_eq!(revision_header(&server, "?revision=2").as_deref(), Some("2"));
    // Asked again in reverse: the past sets kept are reused or rebuilt.
    for (revision, expected) in live.iter().rev() {
        let again = ask(&server, &format!("?revision={revision}"), revision, *revision != current);
        same(&again, expected, &format!("revision {revision}, asked again"));
    }

    // The history, newest first, whatever the page size.
    let listed = all_revisions(&server, 200);
    assert_eq!(listed, all_revisions(&server, 2), "pages of 2 list the same");
    let numbers: Vec<String> = listed.iter().map(|r| r["revision"].to_string()).collect();
    let mut expected_numbers: Vec<String> = expected_changes.keys().cloned().collect();
    expected_numbers.sort_by_key(|r| std::cmp::Reverse(r.parse::<u64>().unwrap_or(0)));
    assert_eq!(numbers, expected_numbers);
    for entry in &listed {
        let revision = entry["revision"].to_string();
        assert_eq!(entry["changes"], expected_changes[&revision], "revision {revision}: {entry}");
    }
    // What one revision served (the one after the higher version's
    // approval), with each version's state now.
    let (status, detail) =
        server.call("GET", &format!("/v1/revisions/{}", revisions[6]), None, b"");
    assert_eq!(status, 200, "{detail}");
    let rules: Vec<(&str, &str, &str)> = detail["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| {
            let text = |key: &str| r[key].as_str().unwrap_or("");
            (text("rule_id"), text("version"), text("state"))
        })
        .collect();
    // By rule id; both versions it served have been yanked since.
    assert_eq!(
        rules,
        [(SECOND, second_version.as_str(), "yanked"), (FIRST, higher.as_str(), "yanked")],
        "{detail}"
    );

    // Bad revisions: the envelope, nothing else.
    let future = current.parse::<u64>().expect("number") + 1;
    for (query, status, code) in [
        ("?revision=abc".to_owned(), 400, "invalid_query"),
        ("?revision=-1".to_owned(), 400, "invalid_query"),
        ("?revision=".to_owned(), 400, "invalid_query"),
        (format!("?revision={future}"), 404, "not_found"),
        ("?revision=18446744073709551615".to_owned(), 404, "not_found"),
        ("?revision=18446744073709551616".to_owned(), 400, "invalid_query"),
    ] {
        for (path, body) in [
            ("/v1/check", fixture("g5g-gemma4-vllm0271.json")),
            ("/v1/check/batch", br#"{"manifests": [{"manifest_version": 1}]}"#.to_vec()),
        ] {
            let (got, answer) = server.call("POST", &format!("{path}{query}"), None, &body);
            assert_eq!(
                (got, answer["error"]["code"].as_str()),
                (status, Some(code)),
                "{path}{query}: {answer}"
            );
        }
    }
    for (path, status) in [
        (format!("/v1/revisions/{future}"), 404),
        ("/v1/revisions/x".to_owned(), 400),
        ("/v1/revisions?limit=-1".to_owned(), 400),
        ("/v1/revisions?before=x".to_owned(), 400),
    ] {
        let (got, answer) = server.call("GET", &path, None, b"");
        assert_eq!(got, status, "{path}: {answer}");
        assert!(answer["error"]["code"].is_string(), "{path}: {answer}");
    }

    // A fresh process on the same database: the history is the store's.
    server.kill();
    let again = Server::start_with_vars(data_dir, database_url, false, &RATE_LIMITS_OFF);
    assert_eq!(served(&again), current);
    check_all(&again, "a restarted process");
}

#[test]
fn every_revision_answers_as_it_did_live_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    run(dir.path(), None);
}

#[test]
fn every_revision_answers_as_it_did_live_on_postgres() {
    let db = tokio::runtime::Runtime::new().expect("runtime").block_on(postgres());
    let dir = tempfile::tempdir().expect("tempdir");
    run(dir.path(), Some(db.url()));
}
