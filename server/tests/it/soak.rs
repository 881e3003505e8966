//! A bounded soak on loopback: a real server with the bundled rules plus
//! rules that pass publish but misbehave at evaluation (about 10% of the
//! served set: they loop, trap, grow memory or recurse when a manifest
//! says `workload.max_num_seqs` is one of the magic numbers), loaded with
//! mixed checks, batches and publishes from several client threads.
//! Asserts: no 5xx, every other rule's findings unchanged by the hostile
//! ones, and memory flat (the last quarter's median RSS within a bound of
//! the first quarter's). Prints count, p50/p99 and the RSS samples.
//!
//! `PITFALL_SOAK_SECONDS` sets the length (default 20 s, the test suite's
//! short version); `cargo xtask soak --seconds 600` runs the long one.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::live::{RATE_LIMITS_OFF, Server, exchange};
use crate::processes::admin_token;

/// Hostile rules in the served set (33 bundled rules + 4: 10.8%).
const HOSTILE_RULES: usize = 4;
/// Check-sending client threads (plus one publisher).
const CHECK_THREADS: usize = 3;
/// Values of `workload.max_num_seqs` that set the hostile rules off: an
/// endless loop (fuel), a trap, a memory.grow bomb, unbounded recursion.
pub(crate) const MAGIC: [u32; 4] = [7777, 6666, 5555, 4444];
/// Memory is flat when the last quarter's median RSS is at most this
/// factor of the first quarter's, plus [`RSS_SLACK_KIB`] (allocator noise,
/// the result cache filling).
const RSS_FACTOR: f64 = 1.25;
const RSS_SLACK_KIB: u64 = 16 * 1024;

/// The hostile rule: a valid module with metadata and a passing case,
/// whose evaluation misbehaves on the magic manifests.
pub(crate) fn hostile_module(id: &str, version: &str) -> Vec<u8> {
    let meta = json!({
        "id": id, "version": version,
        "title": "Soak: a rule that misbehaves on purpose",
        "severity": "warning",
        "summary": "A rule of the soak test: it loops, traps, grows memory or recurses on some manifests.",
        "message": "max_num_seqs is the soak's marker value 1234",
        "applies_to": ["package:vllm"],
        "reads": ["workload.max_num_seqs"],
        "remedies": [{"summary": "Nothing to do.", "actions": [{"kind": "set_workload", "field": "max_num_seqs", "value": 1}]}],
        "references": [{"title": "Pitfall soak test", "url": "https://example.org/pitfall/soak"}],
        "author": "Pitfall tests"
    });
    let tests = json!([
        {"name": "a plain vLLM manifest", "expect": "clear",
         "manifest": {"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.2"}]}},
        {"name": "the marker value", "expect": "matched",
         "manifest": {"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.2"}], "workload": {"max_num_seqs": 1234}}},
        {"name": "the marker value, remedied", "expect": "fixed", "from": "the marker value"}
    ]);
    let wat_string = |v: &Value| v.to_string().replace('\\', "\\\\").replace('"', "\\\"");
    let wat = format!(
        r#"(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (import "pitfall" "field_num" (func $field_num (param i32 i32) (result f64)))
  (memory (export "memory") 1)
  (data (i32.const 16) "workload.max_num_seqs")
  (data (i32.const 48) "packages.vllm")
  (func $recurse (param i32) (result i32) (call $recurse (i32.add (local.get 0) (i32.const 1))))
  (func (export "pitfall_evaluate") (result i32)
    (local $n f64)
    ;; No vLLM: clear, as applies_to promises (the publish pipeline's
    ;; selector probe refuses a rule that matches without it).
    (if (i32.eqz (call $field_kind (i32.const 48) (i32.const 13))) (then (return (i32.const 0))))
    (if (i32.eqz (call $field_kind (i32.const 16) (i32.const 21))) (then (return (i32.const 0))))
    (local.set $n (call $field_num (i32.const 16) (i32.const 21)))
    (if (f64.eq (local.get $n) (f64.const 1234)) (then (return (i32.const 1))))
    (if (f64.eq (local.get $n) (f64.const 7777)) (then (loop $spin (br $spin))))
    (if (f64.eq (local.get $n) (f64.const 6666)) (then unreachable))
    (if (f64.eq (local.get $n) (f64.const 5555))
      (then (loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) unreachable))
    (if (f64.eq (local.get $n) (f64.const 4444)) (then (drop (call $recurse (i32.const 0)))))
    (i32.const 0))
  (@custom "pitfall.abi" "1")
  (@custom "pitfall.meta" "{meta}")
  (@custom "pitfall.tests" "{tests}"))"#,
        meta = wat_string(&meta),
        tests = wat_string(&tests)
    );
    wat::parse_str(&wat).expect("the hostile rule's WAT")
}

fn fixtures() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            (
                p.file_name().expect("name").to_string_lossy().into_owned(),
                serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("json"),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn finding_ids(answer: &Value) -> Vec<String> {
    let mut ids: Vec<String> = answer["findings"].as_array().map_or_else(Vec::new, |f| {
        f.iter().filter_map(|f| f["rule_id"].as_str().map(str::to_owned)).collect()
    });
    ids.sort();
    ids
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn median(values: &[u64]) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[derive(Default)]
struct Tally {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    statuses: BTreeMap<u16, u64>,
    problems: Vec<String>,
}

impl Tally {
    fn record(&mut self, kind: &'static str, status: u16, took: Duration) {
        self.latencies.entry(kind).or_default().push(took);
        *self.statuses.entry(status).or_default() += 1;
    }
}

#[test]
fn soak_mixed_checks_and_publishes_with_hostile_rules() {
    let seconds: u64 =
        std::env::var("PITFALL_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), None, "alice", "contributor");
    let mia = admin_token(dir.path(), None, "mia", "maintainer");
    let vars = [
        RATE_LIMITS_OFF[0],
        RATE_LIMITS_OFF[1],
        RATE_LIMITS_OFF[2],
        RATE_LIMITS_OFF[3],
        ("PITFALL_REFRESH_MS", "500"),
    ];
    let server = Server::start_with_vars(dir.path(), None, true, &vars);
    let fixtures = fixtures();
    // What each fixture's answer is without the hostile rules.
    let baseline: Vec<Vec<String>> = fixtures
        .iter()
        .map(|(name, m)| {
            let (status, answer) =
                server.call("POST", "/v1/check", None, &serde_json::to_vec(m).expect("json"));
            assert_eq!(status, 200, "{name}: {answer}");
            finding_ids(&answer)
        })
        .collect();
    let publish = |id: &str, version: &str| -> (u16, u16) {
        let (published, answer) =
            server.call("POST", "/v1/rules", Some(&alice), &hostile_module(id, version));
        if published != 201 {
            eprintln!("publish {id} {version}: {published} {answer}");
            return (published, 0);
        }
        let path = format!(
            "/v1/rules/{id}/versions/{}/approve",
            answer["version"].as_str().unwrap_or(version)
        );
        (published, server.call("POST", &path, Some(&mia), br#"{"reason": "soak"}"#).0)
    };
    for k in 0..HOSTILE_RULES {
        assert_eq!(
            publish(&format!("soak-hostile-{k}"), "1.0.0"),
            (201, 200),
            "the hostile rules pass publish"
        );
    }
    // Served by the next refresh.
    std::thread::sleep(Duration::from_secs(1));
    let (_, health) = server.call("GET", "/healthz", None, b"");
    let rules = health["rules"].as_u64().expect("rules");
    eprintln!(
        "soak: {seconds} s, {rules} rules served, {HOSTILE_RULES} hostile ({:.1}%)",
        100.0 * HOSTILE_RULES as f64 / rules as f64
    );

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let rss = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    std::thread::scope(|s| {
        for thread in 0..CHECK_THREADS {
            let (stop, tally, fixtures, baseline, addr) =
                (stop.clone(), tally.clone(), &fixtures, &baseline, server.addr);
            s.spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let which = (n as usize + thread) % fixtures.len();
                    let mut manifest = fixtures[which].1.clone();
                    let hostile = n.is_multiple_of(3);
                    if hostile {
                        manifest["workload"]["max_num_seqs"] = json!(MAGIC[(n as usize / 3) % MAGIC.len()]);
                    }
                    if n.is_multiple_of(2) {
                        // A cache miss: each distinct manifest is evaluated.
                        manifest["env"]["SOAK_N"] = json!(format!("{thread}-{n}"));
                    }
                    let batch = n.is_multiple_of(10);
                    let (kind, path, body) = if batch {
                        ("batch", "/v1/check/batch", json!({"manifests": vec![manifest.clone(); 8]}))
                    } else {
                        ("check", "/v1/check", manifest)
                    };
                    let begun = Instant::now();
                    let (status, bytes) = exchange(addr, "POST", path, &[], &serde_json::to_vec(&body).expect("json"));
                    let took = begun.elapsed();
                    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    let mut tally = tally.lock().unwrap_or_else(|p| p.into_inner());
                    tally.record(kind, status, took);
                    if status != 200 {
                        tally.problems.push(format!("{kind}: {status} {answer}"));
                        continue;
                    }
                    let answers = if batch { answer["results"].as_array().cloned().unwrap_or_default() } else { vec![answer] };
                    for answer in answers {
                        if finding_ids(&answer) != baseline[which] {
                            tally.problems.push(format!("{}: findings changed: {:?}", fixtures[which].0, finding_ids(&answer)));
                        }
                        let hostile_errors = answer["rule_errors"].as_array().map_or(0, |e| {
                            e.iter().filter(|e| e["rule_id"].as_str().is_some_and(|id| id.starts_with("soak-hostile-"))).count()
                        });
                        let vllm = fixtures[which].1["packages"].as_array().is_some_and(|p| p.iter().any(|p| p["name"] == "vllm"));
                        if hostile && vllm && hostile_errors != HOSTILE_RULES {
                            tally.problems.push(format!("{}: {hostile_errors} hostile rules reported as errors, expected {HOSTILE_RULES}", fixtures[which].0));
                        }
                    }
                }
            });
        }
        // The publisher: new versions of the hostile rules, each approved
        // (so the served set and the revision move under the checks).
        {
            let (stop, tally, publish) = (stop.clone(), tally.clone(), &publish);
            s.spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let id = format!("soak-hostile-{}", n as usize % HOSTILE_RULES);
                    let begun = Instant::now();
                    let (published, approved) = publish(&id, &format!("1.0.{n}"));
                    let took = begun.elapsed();
                    let mut tally = tally.lock().unwrap_or_else(|p| p.into_inner());
                    tally.record("publish+approve", published, took);
                    if (published, approved) != (201, 200) {
                        tally
                            .problems
                            .push(format!("publish {id}: {published}, approve {approved}"));
                    }
                    drop(tally);
                    std::thread::sleep(Duration::from_millis(500));
                }
            });
        }
        // RSS, once a second.
        {
            let (stop, rss, pid) = (stop.clone(), rss.clone(), server.pid());
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(kib) = rss_kib(pid) {
                        rss.lock().unwrap_or_else(|p| p.into_inner()).push(kib);
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = start.elapsed();
    let tally = tally.lock().unwrap_or_else(|p| p.into_inner());
    let rss = rss.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let total: u64 = tally.statuses.values().sum();
    let server_errors: u64 =
        tally.statuses.iter().filter(|(s, _)| **s >= 500).map(|(_, n)| n).sum();
    eprintln!(
        "soak: {total} requests in {elapsed:.1?} ({:.0}/s), statuses {:?}, 5xx: {server_errors}",
        total as f64 / elapsed.as_secs_f64(),
        tally.statuses
    );
    for (kind, latencies) in &tally.latencies {
        let mut sorted = latencies.clone();
        sorted.sort_unstable();
        eprintln!(
            "soak: {kind:<16} n={:<6} p50={:.2?} p99={:.2?} max={:.2?}",
            sorted.len(),
            percentile(&sorted, 0.5),
            percentile(&sorted, 0.99),
            sorted.last().copied().unwrap_or_default()
        );
    }
    let quarter = (rss.len() / 4).max(1);
    let (first, last) =
        (median(&rss[..quarter.min(rss.len())]), median(&rss[rss.len().saturating_sub(quarter)..]));
    let quarters: Vec<u64> = rss.chunks(quarter).take(4).map(median).collect();
    eprintln!(
        "soak: RSS first-quarter median {first} KiB, last-quarter median {last} KiB, max {} KiB, {} samples; quarter medians {quarters:?} KiB",
        rss.iter().max().unwrap_or(&0),
        rss.len()
    );
    // What the memory holds that is meant to grow until a bound.
    let (_, metrics) = exchange(server.addr, "GET", "/metrics", &[], b"");
    let metrics = String::from_utf8_lossy(&metrics);
    let gauge = |name: &str| metrics.lines().find(|l| l.starts_with(name)).unwrap_or("").to_owned();
    eprintln!(
        "soak: {} (bounded by PITFALL_RESULT_CACHE_ENTRIES), {}",
        gauge("pitfall_result_cache_entries"),
        gauge("pitfall_rules_served")
    );
    assert_eq!(server_errors, 0, "5xx answers in the soak");
    assert!(
        tally.problems.is_empty(),
        "{} problems, e.g. {:?}",
        tally.problems.len(),
        &tally.problems[..tally.problems.len().min(5)]
    );
    assert!(rss.len() >= 4, "too few RSS samples");
    let bound = (first as f64 * RSS_FACTOR) as u64 + RSS_SLACK_KIB;
    assert!(
        last <= bound,
        "memory grew: last-quarter median {last} KiB over the bound {bound} KiB (first quarter {first} KiB)"
    );
    assert!(!server.log().contains("internal error"), "{}", server.log());
}
