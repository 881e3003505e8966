//! Checks run on the runtime's own workers, at most one per core at once,
//! and the runtime keeps one worker more (server/src/runtime.rs). Here a
//! check whose rules spin until their fuel runs out runs alone, and then
//! in every evaluation slot with one more queued behind them, and the
//! server must still answer its other endpoints while they run: a check
//! never holds up the rest of the server. The assertion is an order (each
//! other answer arrives before the first check's), not a duration.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::live::{RATE_LIMITS_OFF, Server, exchange};
use crate::processes::admin_token;
use crate::soak::{MAGIC, hostile_module};

/// Spinning rules published at a time: each burns its whole fuel on the
/// spin manifest, so one check takes that many fuel budgets back to back
/// (2.7-7 ms each on the machines seen so far). More batches are published
/// until a lone check lasts [`MIN_CHECK`]: one batch was 176 ms on a fast
/// machine, too short for the order below to mean anything.
const SPINNING_BATCH: usize = 64;
/// At most this many spinning rules: a machine where even these are
/// quicker than [`MIN_CHECK`] fails the test rather than publish forever.
const MAX_SPINNING_RULES: usize = 8 * SPINNING_BATCH;
/// Rounds of one spin check alone with a health check beside it.
const LONE_ROUNDS: usize = 5;
/// A lone spin check must take at least this long for the order to mean
/// anything: the other requests are sent a quarter of it after the checks.
const MIN_CHECK: Duration = Duration::from_millis(200);

fn spin_manifest(n: usize) -> Value {
    // MAGIC[0] makes the soak's hostile rule loop until its fuel is gone.
    // A distinct env per check: each one misses the result cache (and a
    // failure is never replayed from the memo).
    json!({"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.2"}],
           "workload": {"max_num_seqs": MAGIC[0]}, "env": {"SLOTS_N": n.to_string()}})
}

#[test]
fn checks_spinning_in_every_evaluation_slot_leave_the_server_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice = admin_token(dir.path(), None, "alice", "contributor");
    let mia = admin_token(dir.path(), None, "mia", "maintainer");
    let server = Server::start_with_vars(dir.path(), None, false, &RATE_LIMITS_OFF);
    // One spin check alone: every spinning rule fails on its fuel, and how
    // long that takes sets when the other requests go out below. Batches
    // of spinning rules are added until it is long enough. Each batch is a
    // new revision, so the same manifest misses the result cache each time.
    let mut rules = 0;
    let one_check = loop {
        publish_spinning(&server, &alice, &mia, rules..rules + SPINNING_BATCH);
        rules += SPINNING_BATCH;
        let alone = Instant::now();
        let (status, answer) = server.call(
            "POST",
            "/v1/check",
            None,
            &serde_json::to_vec(&spin_manifest(0)).expect("json"),
        );
        let one_check = alone.elapsed();
        assert_eq!(status, 200, "{answer}");
        let errors = answer["rule_errors"].as_array().map_or(0, Vec::len);
        assert_eq!(errors, rules, "every spinning rule fails alone: {answer}");
        if one_check >= MIN_CHECK {
            break one_check;
        }
        assert!(
            rules < MAX_SPINNING_RULES,
            "a spin check of {rules} rules took {one_check:?}: too short to hold the slots while the others are asked"
        );
    };

    // One check alone, on an idle server: the worker the I/O driver wakes
    // for it may have nothing else to run, and then wakes no other worker
    // (so nobody would poll the driver). Whether it does depends on how the
    // request's packets meet the wake-ups, so several rounds: without
    // `runtime::requeue`, one round in four failed.
    for round in 0..LONE_ROUNDS {
        answered_before_the_checks(&server, &[usize::MAX - round], &["/healthz"], one_check);
    }

    // Every slot taken, and one check waiting for a slot.
    let slots = std::thread::available_parallelism().map_or(2, |n| n.get());
    let checks: Vec<usize> = (1..=slots + 1).collect();
    answered_before_the_checks(&server, &checks, &["/healthz", "/metrics", "/"], one_check);
}

/// Publishes and approves the spinning rules numbered `range`, and waits
/// until the server serves all of them.
fn publish_spinning(server: &Server, alice: &str, mia: &str, range: std::ops::Range<usize>) {
    let total = range.end;
    for k in range {
        let id = format!("slots-spin-{k}");
        let (status, answer) =
            server.call("POST", "/v1/rules", Some(alice), &hostile_module(&id, "1.0.0"));
        assert_eq!(status, 201, "publish {id}: {answer}");
        let approve = format!("/v1/rules/{id}/versions/1.0.0/approve");
        assert_eq!(
            server.call("POST", &approve, Some(mia), br#"{"reason": "slots test"}"#).0,
            200,
            "approve {id}"
        );
    }
    let served = Instant::now();
    while server.call("GET", "/healthz", None, b"").1["rules"].as_u64() != Some(total as u64) {
        assert!(served.elapsed() < Duration::from_secs(30), "the spinning rules were never served");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends a spin check of each of `manifests` at once, then, a quarter of
/// `one_check` later, asks for each of `paths`: every answer is 200, and
/// each of the others arrives before the first check's.
fn answered_before_the_checks(
    server: &Server,
    manifests: &[usize],
    paths: &[&str],
    one_check: Duration,
) {
    std::thread::scope(|s| {
        let checks: Vec<_> = manifests
            .iter()
            .map(|&n| {
                let addr = server.addr;
                s.spawn(move || {
                    let (status, _) = exchange(
                        addr,
                        "POST",
                        "/v1/check",
                        &[],
                        &serde_json::to_vec(&spin_manifest(n)).expect("json"),
                    );
                    (status, Instant::now())
                })
            })
            .collect();
        std::thread::sleep(one_check / 4);
        let mut others = Vec::new();
        for &path in paths {
            let (status, _) = exchange(server.addr, "GET", path, &[], b"");
            others.push((path, status, Instant::now()));
        }
        let finished: Vec<(u16, Instant)> =
            checks.into_iter().map(|c| c.join().expect("check thread")).collect();
        assert!(finished.iter().all(|(status, _)| *status == 200), "the spin checks: {finished:?}");
        let first = finished.iter().map(|(_, at)| *at).min().expect("checks");
        for (path, status, at) in others {
            assert_eq!(status, 200, "GET {path}");
            assert!(
                at < first,
                "GET {path} was answered only after a spin check finished ({} at once): a check held up the server",
                manifests.len()
            );
        }
    });
}
