//! Provisioning: `pitfall bundle pull` from a real registry server (in this
//! test process, on a loopback port, every bundled rule seeded), offline
//! checks with the pulled bundle against the same server's online answers,
//! tampered and foreign-signed bundles, and fleets with `--batch`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use pitfall_client::api::BundleSigner;
use serde_json::Value;

use crate::{command, fixture};

/// A registry shared by these tests; it lives as long as the process.
pub(crate) struct Registry {
    pub(crate) url: String,
    key: String,
    _runtime: tokio::runtime::Runtime,
    _running: pitfall_server::server::Running,
}

pub(crate) fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        // A fixed data dir under target/tmp: its compiled-module cache and
        // key survive runs, its database does not.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-provision-registry");
        std::fs::create_dir_all(&dir).expect("data dir");
        for entry in std::fs::read_dir(&dir).expect("data dir").flatten() {
            if entry.file_name().to_string_lossy().starts_with("pitfall.db") {
                std::fs::remove_file(entry.path()).expect("old database removed");
            }
        }
        let data_dir = dir.display().to_string();
        let database = format!("sqlite://{}", dir.join("pitfall.db").display());
        let config = pitfall_server::Config::from_args([
            "pitfall-server",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &data_dir,
            "--database-url",
            &database,
            "--seed-bundled",
            "true",
        ])
        .expect("config");
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let running =
            runtime.block_on(pitfall_server::server::start(config)).expect("the registry starts");
        Registry {
            url: format!("http://{}", running.addr),
            key: running.public_key.to_string(),
            _runtime: runtime,
            _running: running,
        }
    })
}

/// A user's home for one test: where the pulled bundle goes, and the key.
struct Home {
    dir: tempfile::TempDir,
    key: String,
}

impl Home {
    fn new(key: &str) -> Home {
        Home { dir: tempfile::tempdir().expect("tempdir"), key: key.to_owned() }
    }

    fn bundle(&self) -> PathBuf {
        self.dir.path().join("data/bundle.pfb")
    }

    fn run(&self, args: &[&str]) -> Output {
        command()
            .env("PITFALL_BUNDLE", self.bundle())
            .env("PITFALL_BUNDLE_KEY", &self.key)
            .args(args)
            .output()
            .expect("runs")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr)))
}

/// An answer without its timing, which is all that may differ between runs.
fn timeless(mut answer: Value) -> Value {
    if let Some(stats) = answer.get_mut("stats").and_then(Value::as_object_mut) {
        stats.remove("elapsed_us");
    }
    answer
}

fn pulled(home: &Home) -> Output {
    let out = home.run(&["bundle", "pull", "--server", &registry().url]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    out
}

#[test]
fn an_offline_check_with_the_pulled_bundle_finds_what_the_server_finds_for_g5g() {
    let registry = registry();
    let home = Home::new(&registry.key);
    let first = pulled(&home);
    assert!(text(&first.stdout).contains("pulled revision"), "{}", text(&first.stdout));
    // Unchanged: a conditional fetch, answered 304.
    let again = pulled(&home);
    assert!(text(&again.stdout).starts_with("unchanged: revision"), "{}", text(&again.stdout));

    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let online = home.run(&["check", &g5g, "--server", &registry.url, "--format", "json"]);
    let offline = home.run(&["check", &g5g, "--format", "json"]);
    assert_eq!(
        (online.status.code(), offline.status.code()),
        (Some(1), Some(1)),
        "{}",
        text(&offline.stderr)
    );
    let (online, offline) = (timeless(json(&online)), timeless(json(&offline)));
    assert_eq!(offline["stats"]["rules_total"], pitfall_bundled_rules::MODULES.len());
    assert_eq!(offline, online, "the pulled bundle and the server disagree");
    assert_ne!(
        offline["ruleset_revision"],
        pitfall_bundled_rules::REVISION,
        "the bundle's revision, not the binary's"
    );

    let show = home.run(&["bundle", "show"]);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    assert_eq!(text(&show.stdout).lines().count(), 1 + pitfall_bundled_rules::MODULES.len());
}

/// A home that pulled the registry's bundle, and the bundle's bytes.
fn home_with_a_pulled_bundle() -> (Home, Vec<u8>) {
    let home = Home::new(&registry().key);
    pulled(&home);
    let good = std::fs::read(home.bundle()).expect("pulled bundle");
    (home, good)
}

/// `bytes` with one bit flipped at `at`.
fn flipped(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at] ^= 0x01;
    out
}

#[test]
fn a_tampered_or_foreign_bundle_is_refused() {
    let (home, good) = home_with_a_pulled_bundle();
    let index_len = u32::from_le_bytes(good[12..16].try_into().expect("4 bytes")) as usize;
    let cases = [
        ("a module", flipped(&good, good.len() - 1), "does not match its signed sha256"),
        ("the signed index", flipped(&good, 16 + index_len / 2), "signature does not verify"),
        ("the signature", flipped(&good, 16 + index_len + 10), "signature does not verify"),
    ];
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    for (what, bytes, says) in &cases {
        let path = home.dir.path().join("tampered.pfb");
        std::fs::write(&path, bytes).expect("written");
        let out = home.run(&["check", &g5g, "--rules", &path.display().to_string()]);
        assert_eq!(out.status.code(), Some(2), "a flipped byte in {what} was accepted");
        assert!(text(&out.stderr).contains(says), "{what}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{what}: findings from a tampered bundle");
    }
    // The pulled bundle itself, altered on disk, stops plain checks too.
    std::fs::write(home.bundle(), &cases[0].1).expect("written");
    let out = home.run(&["check", &g5g]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("the pulled bundle"), "{}", text(&out.stderr));

    // Signed by the server, but another key is pinned.
    std::fs::write(home.bundle(), &good).expect("restored");
    let other = Home::new(&BundleSigner::from_seed(&[7; 32]).public_key().to_string());
    let foreign = home.dir.path().join("foreign.pfb");
    std::fs::write(&foreign, &good).expect("written");
    let out = other.run(&["check", &g5g, "--rules", &foreign.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not by the pinned key"), "{}", text(&out.stderr));
}

/// Serves `body` as the bundle to one request, on a loopback port.
fn serve_once(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else { return };
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
            head.push(byte[0]);
        }
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/vnd.pitfall.bundle\r\netag: \"x\"\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).and_then(|()| stream.write_all(&body));
    });
    url
}

#[test]
fn a_bad_bundle_from_a_server_keeps_the_previous_one() {
    let registry = registry();
    let (home, good) = home_with_a_pulled_bundle();

    let out =
        home.run(&["bundle", "pull", "--server", &serve_once(flipped(&good, good.len() / 2))]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("refused the bundle") && err.contains("keeping the previous bundle (revision"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(home.bundle()).expect("still there"),
        good,
        "the previous bundle was replaced"
    );

    // The real server, but the client pins another key: refused, kept.
    let out = home.run(&[
        "bundle",
        "pull",
        "--server",
        &registry.url,
        "--key",
        &BundleSigner::from_seed(&[8; 32]).public_key().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not by the pinned key"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(home.bundle()).expect("still there"), good);

    // And offline checks go on with it.
    let out = home.run(&["check", &fixture("g5g-gemma4-vllm0271.json"), "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[test]
fn pulling_needs_a_pinned_key_and_a_server() {
    let home = Home::new("");
    let out = command()
        .env("PITFALL_BUNDLE", home.bundle())
        .args(["bundle", "pull", "--server", &registry().url])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no bundle public key is pinned"), "{}", text(&out.stderr));
    let out = home.run(&["bundle", "pull", "--key", &registry().key]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no server"), "{}", text(&out.stderr));
    let out = home.run(&["bundle", "pull", "--server", &registry().url, "--key", "ed25519:nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a public key"), "{}", text(&out.stderr));
    assert!(!home.bundle().exists());
}

#[test]
fn fleets_are_checked_online_and_offline_alike_with_fail_on_quiet_and_progress() {
    let registry = registry();
    let home = Home::new(&registry.key);
    let dir = home.dir.path();
    let invalid = dir.join("invalid.json");
    std::fs::write(&invalid, r#"{"manifest_version": 1, "accelerators": 3}"#).expect("written");
    let fleet = [
        fixture("g5g-gemma4-vllm0271.json"),
        fixture("h100x8-llama70b-healthy.json"),
        fixture("a6000-llama70b-single.json"),
    ];
    let fleet: Vec<&str> = fleet.iter().map(String::as_str).collect();
    let mut args = vec!["check", "--format", "json", "--batch"];
    args.extend(&fleet);

    let offline = home.run(&args);
    let mut online_args = args.clone();
    online_args.extend(["--server", &registry.url]);
    let online = home.run(&online_args);
    assert_eq!(
        (offline.status.code(), online.status.code()),
        (Some(1), Some(1)),
        "{}",
        text(&online.stderr)
    );
    let answers = |out: &Output| -> Vec<Value> {
        json(out)["results"].as_array().expect("results").iter().cloned().map(timeless).collect()
    };
    let (offline, online) = (answers(&offline), answers(&online));
    assert_eq!(offline.len(), 3);
    for ((off, on), name) in offline.iter().zip(&online).zip(&fleet) {
        assert_eq!(off["manifest"], *name);
        // Offline here is the binary's own rules (nothing pulled): the same
        // findings, another revision label.
        assert_eq!(off["findings"], on["findings"], "{name}");
    }

    // One unreadable manifest: its own error, the rest still answered, exit 2.
    let invalid = invalid.display().to_string();
    let mut with_invalid = online_args.clone();
    with_invalid.insert(4, &invalid);
    let out = home.run(&with_invalid);
    assert_eq!(out.status.code(), Some(2));
    let results = json(&out)["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["error"]["code"], "invalid_manifest");
    assert!(results[0]["error"]["message"].as_str().expect("message").contains("accelerators"));
    assert!(results[1]["findings"].is_array());

    // --fail-on: the healthy stack passes at error and at warning; g5g's
    // warning-only rule fails only at warning.
    let healthy = fixture("h100x8-llama70b-healthy.json");
    for fail_on in ["error", "warning"] {
        assert_eq!(
            home.run(&["check", &healthy, "--fail-on", fail_on, "-q"]).status.code(),
            Some(0),
            "{fail_on}"
        );
    }
    let warning_rule = pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == "rule-container-shm-ipc-limits")
        .expect("bundled");
    let wasm = dir.join("warning.wasm");
    std::fs::write(&wasm, warning_rule.wasm).expect("written");
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let at = |fail_on: &str| {
        home.run(&[
            "check",
            &g5g,
            "--rules",
            &wasm.display().to_string(),
            "--fail-on",
            fail_on,
            "--quiet",
        ])
    };
    let (at_error, at_warning) = (at("error"), at("warning"));
    assert_eq!(
        (at_error.status.code(), at_warning.status.code()),
        (Some(0), Some(1)),
        "{}",
        text(&at_warning.stderr)
    );
    assert!(at_error.stdout.is_empty() && at_warning.stdout.is_empty(), "--quiet prints nothing");

    // Text, quiet and progress for a batch.
    let mut text_args = vec!["check", "--server", &registry.url, "--progress", "--batch"];
    text_args.extend(&fleet);
    let out = home.run(&text_args);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("3 manifests: 2 fail at --fail-on error, 0 could not be checked"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("checked 3/3 manifests"), "{}", text(&out.stderr));
    text_args.push("--quiet");
    let out = home.run(&text_args);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

/// A bundle of no rules at `revision`, signed by `signer` at `issued`
/// (seconds from now, negative for the past) and valid for `days`.
fn empty_bundle(signer: &BundleSigner, revision: &str, issued: i64, days: u64) -> Vec<u8> {
    let now = std::time::SystemTime::now();
    let offset = std::time::Duration::from_secs(issued.unsigned_abs());
    let at = if issued < 0 { now - offset } else { now + offset };
    signer.sign(revision, &[], at, std::time::Duration::from_secs(days * 24 * 3600)).bytes
}

fn pull_from(home: &Home, body: Vec<u8>, extra: &[&str]) -> Output {
    let url = serve_once(body);
    let mut args = vec!["bundle", "pull", "--server", &url];
    args.extend_from_slice(extra);
    home.run(&args)
}

#[test]
fn an_older_bundle_is_refused_unless_the_downgrade_is_asked_for() {
    let signer = BundleSigner::from_seed(&[21; 32]);
    let home = Home::new(&signer.public_key().to_string());
    let five = empty_bundle(&signer, "5", 0, 7);
    let out = pull_from(&home, five.clone(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("current until"), "{}", text(&out.stdout));

    // A lower revision (yanked rules brought back), or the same revision
    // signed earlier: refused, the held bundle kept.
    for (older, why) in [
        (empty_bundle(&signer, "3", 0, 7), "revision 3 is older than the held revision 5"),
        (empty_bundle(&signer, "5", -3600, 7), "revision 5 signed before the held copy"),
    ] {
        let out = pull_from(&home, older, &[]);
        assert_eq!(out.status.code(), Some(2), "{why}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains(why) && err.contains("--allow-downgrade"), "{err}");
        assert_eq!(std::fs::read(home.bundle()).expect("kept"), five, "{why}");
    }

    // Asked for: taken.
    let three = empty_bundle(&signer, "3", 0, 7);
    let out = pull_from(&home, three.clone(), &["--allow-downgrade"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(home.bundle()).expect("pulled"), three);
    // A newer revision needs nothing.
    let out = pull_from(&home, empty_bundle(&signer, "4", 0, 7), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn an_expired_bundle_is_refused_from_a_server_and_flagged_when_held() {
    let signer = BundleSigner::from_seed(&[22; 32]);
    let home = Home::new(&signer.public_key().to_string());
    // Signed ten days ago for a week: a stale copy, however validly signed.
    let stale = empty_bundle(&signer, "9", -10 * 24 * 3600, 7);
    let out = pull_from(&home, stale.clone(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expired at"), "{}", text(&out.stderr));
    assert!(!home.bundle().exists());

    // Held (pulled long ago): checks go on with a warning...
    std::fs::create_dir_all(home.bundle().parent().expect("dir")).expect("dir");
    std::fs::write(home.bundle(), &stale).expect("written");
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let out = home.run(&["check", &g5g, "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("warning") && err.contains("expired at"), "{err}");
    // ...or stop with --require-fresh.
    let out = home.run(&["check", &g5g, "--quiet", "--require-fresh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--require-fresh refuses it"), "{}", text(&out.stderr));
    // A current bundle passes either way.
    std::fs::write(home.bundle(), empty_bundle(&signer, "9", 0, 7)).expect("written");
    let out = home.run(&["check", &g5g, "--quiet", "--require-fresh"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("warning"), "{}", text(&out.stderr));
}

#[test]
fn two_pinned_keys_accept_either_during_a_rotation() {
    let (old, new) = (BundleSigner::from_seed(&[23; 32]), BundleSigner::from_seed(&[24; 32]));
    let home = Home::new(&format!("{},{}", old.public_key(), new.public_key()));
    let out = pull_from(&home, empty_bundle(&old, "1", 0, 7), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = pull_from(&home, empty_bundle(&new, "2", 0, 7), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let third = BundleSigner::from_seed(&[25; 32]);
    let out = pull_from(&home, empty_bundle(&third, "3", 0, 7), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not by the pinned key"), "{}", text(&out.stderr));
    // Three keys is a mistake, not a rotation.
    let many =
        Home::new(&format!("{},{},{}", old.public_key(), new.public_key(), third.public_key()));
    let out = many.run(&["bundle", "show", &home.bundle().display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("at most two"), "{}", text(&out.stderr));
}

/// `check --revision N` asks the registry how it answered at revision N:
/// the served revision answers as a plain check does; revision 0, before
/// the seed, served nothing and says so (`as_of`); offline, or at a
/// revision never recorded, it is exit 2 with a message.
#[test]
fn a_check_at_a_past_revision_answers_as_the_registry_did_then() {
    let registry = registry();
    let home = Home::new(&registry.key);
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let h100 = fixture("h100x8-llama70b-healthy.json");
    let online = |extra: &[&str]| {
        let mut args = vec!["check", g5g.as_str(), "--server", registry.url.as_str()];
        args.extend_from_slice(extra);
        home.run(&args)
    };
    let now = online(&["--format", "json"]);
    assert_eq!(now.status.code(), Some(1), "{}", text(&now.stderr));
    let now = timeless(json(&now));
    let revision = now["ruleset_revision"].as_str().expect("revision").to_owned();
    assert_ne!(revision, "0", "the seed is a revision");

    let same = online(&["--format", "json", "--revision", &revision]);
    assert_eq!(same.status.code(), Some(1), "{}", text(&same.stderr));
    assert_eq!(timeless(json(&same)), now, "the served revision asked by number");

    let before = online(&["--format", "json", "--revision", "0"]);
    assert_eq!(before.status.code(), Some(0), "no rule was served: {}", text(&before.stderr));
    let before = json(&before);
    assert_eq!(
        (&before["ruleset_revision"], &before["as_of"]),
        (&Value::from("0"), &Value::from(true))
    );
    assert_eq!(before["findings"], Value::Array(vec![]));
    let said = online(&["--revision", "0"]);
    assert!(text(&said.stdout).contains("rule set 0 (a past revision)"), "{}", text(&said.stdout));

    let fleet = home.run(&[
        "check",
        "--batch",
        &g5g,
        &h100,
        "--server",
        &registry.url,
        "--revision",
        "0",
        "--format",
        "json",
    ]);
    assert_eq!(fleet.status.code(), Some(0), "{}", text(&fleet.stderr));
    let results = json(&fleet)["results"].as_array().cloned().expect("results");
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|r| r["as_of"] == true && r["ruleset_revision"] == "0"),
        "{results:?}"
    );

    for (args, says) in [
        (vec!["check", g5g.as_str(), "--revision", "0"], "offline rules have no history"),
        (
            vec!["check", g5g.as_str(), "--revision", "0", "--rules", g5g.as_str()],
            "cannot be used with",
        ),
        (
            vec!["check", g5g.as_str(), "--server", registry.url.as_str(), "--revision", "999999"],
            "not recorded",
        ),
        (
            vec!["check", g5g.as_str(), "--server", registry.url.as_str(), "--revision", "x"],
            "invalid value",
        ),
    ] {
        let out = home.run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains(says), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
    }
}
