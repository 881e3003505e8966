//! Real `pitfall-server` processes on loopback: the README's default run
//! on SQLite, and two replicas on one PostgreSQL database acting as one
//! registry. Every process is killed when its handle drops; every wait is
//! bounded.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::postgres;
use crate::live::{SERVER, Server};

pub(crate) fn admin_token(
    data_dir: &Path,
    database_url: Option<&str>,
    name: &str,
    role: &str,
) -> String {
    let mut command = Command::new(SERVER);
    command
        .arg("--data-dir")
        .arg(data_dir)
        .args(["admin", "create-token", "--name", name, "--role", role])
        .env_remove("DATABASE_URL");
    if let Some(url) = database_url {
        command.env("DATABASE_URL", url);
    }
    let output = command.output().expect("run admin create-token");
    assert!(
        output.status.success(),
        "admin create-token failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = String::from_utf8(output.stdout).expect("utf-8").trim().to_owned();
    assert!(!token.is_empty() && !token.contains('\n'), "stdout holds the token alone: {token:?}");
    token
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture")
}

fn finding_ids(answer: &Value) -> Vec<String> {
    answer["findings"].as_array().map_or_else(Vec::new, |f| {
        f.iter().filter_map(|f| f["rule_id"].as_str().map(str::to_owned)).collect()
    })
}

#[test]
fn the_default_run_serves_the_bundled_rules_from_sqlite_and_reseeds_idempotently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first_revision;
    {
        let server = Server::start(dir.path(), None, true);
        let (status, answer) =
            server.call("POST", "/v1/check", None, &fixture("g5g-gemma4-vllm0271.json"));
        assert_eq!(status, 200, "{answer}");
        let ids = finding_ids(&answer);
        for id in [
            "aarch64-official-image-needs-sm80",
            "vllm-bf16-needs-sm80",
            "gemma4-transformers-5-15-breaks-vllm",
        ] {
            assert!(ids.contains(&id.to_owned()), "{id} missing from {ids:?}");
        }
        assert_eq!(answer["stats"]["rules_total"], pitfall_bundled_rules::MODULES.len());
        first_revision = answer["ruleset_revision"].clone();
        assert!(
            dir.path().join("pitfall.db").exists(),
            "the default database is a SQLite file in the data dir"
        );
    }
    // A restart on the same data dir seeds nothing new.
    let server = Server::start(dir.path(), None, true);
    let (_, health) = server.call("GET", "/healthz", None, b"");
    assert_eq!(health["ruleset_revision"], first_revision);
    assert!(server.log().contains("inserted=0"), "{}", server.log());
}

#[test]
fn two_replicas_on_one_postgres_are_one_registry() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(postgres());
    let url = Some(db.url());
    let (dir_a, dir_b) =
        (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let maintainer = admin_token(dir_a.path(), url, "mia", "maintainer");
    let alice = admin_token(dir_a.path(), url, "alice", "contributor");

    // One bundle signing key for the registry, as configuration.
    let key_file = dir_a.path().join("shared-signing-key.pem");
    std::fs::write(
        &key_file,
        pitfall_api::BundleSigner::from_seed(&[11; 32]).to_pkcs8_pem().expect("pem"),
    )
    .expect("key");
    let signing = [("PITFALL_SIGNING_KEY_FILE", key_file.as_path())];

    // Both start at once on an empty registry (no seed: the rule is
    // published through the API instead).
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Server::start_with_env(dir_a.path(), url, false, &signing));
        let b = s.spawn(|| Server::start_with_env(dir_b.path(), url, false, &signing));
        (a.join().expect("a"), b.join().expect("b"))
    });
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    assert_eq!(finding_ids(&b.call("POST", "/v1/check", None, &g5g).1), Vec::<String>::new());

    let module = pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == "rule-vllm-bf16-needs-sm80")
        .expect("bundled")
        .wasm;
    let (status, version) = a.call("POST", "/v1/rules", Some(&alice), module);
    assert_eq!(status, 201, "{version}");
    let path = format!(
        "/v1/rules/vllm-bf16-needs-sm80/versions/{}/approve",
        version["version"].as_str().expect("version")
    );
    let (status, approved) = a.call("POST", &path, Some(&maintainer), b"");
    assert_eq!(status, 200, "{approved}");
    let approved_at = Instant::now();

    // B serves it within seconds, without being told.
    loop {
        let (status, answer) = b.call("POST", "/v1/check", None, &g5g);
        assert_eq!(status, 200);
        if finding_ids(&answer).contains(&"vllm-bf16-needs-sm80".to_owned()) {
            break;
        }
        assert!(
            approved_at.elapsed() < Duration::from_secs(5),
            "replica B did not pick up the approval within 5 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("replica B served the approved rule {:?} after the approval", approved_at.elapsed());
    // B may have loaded the set between the publish's and the approval's
    // revisions: it is then labelled older than its contents (registry.rs,
    // `refresh_locked`) until its next poll, which must come within 5 s.
    let (_, health_a) = a.call("GET", "/healthz", None, b"");
    loop {
        let (_, health_b) = b.call("GET", "/healthz", None, b"");
        if health_a["ruleset_revision"] == health_b["ruleset_revision"] {
            break;
        }
        assert!(
            approved_at.elapsed() < Duration::from_secs(5),
            "replica B still at revision {} after 5 s, A at {}",
            health_b["ruleset_revision"],
            health_a["ruleset_revision"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Both serve the same bundle, which verifies with the one key that
    // `admin bundle-key` prints.
    let output = Command::new(SERVER)
        .arg("--data-dir")
        .arg(dir_b.path())
        .arg("--signing-key-file")
        .arg(&key_file)
        .args(["admin", "bundle-key"])
        .output()
        .expect("admin bundle-key");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pinned: pitfall_api::PublicKey =
        String::from_utf8_lossy(&output.stdout).trim().parse().expect("a public key");
    let (status_a, bundle_a) = crate::live::exchange(a.addr, "GET", "/v1/bundle", &[], b"");
    let (status_b, bundle_b) = crate::live::exchange(b.addr, "GET", "/v1/bundle", &[], b"");
    assert_eq!((status_a, status_b), (200, 200));
    assert_eq!(bundle_a, bundle_b, "the replicas serve different bundles");
    let bundle =
        pitfall_api::Bundle::verify(&bundle_a, &pinned).expect("verifies with the pinned key");
    assert_eq!(
        bundle.index.rules.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        vec!["vllm-bf16-needs-sm80"]
    );

    // Tokens never reach a log line.
    for (name, server) in [("a", &a), ("b", &b)] {
        let log = server.log();
        for secret in [&maintainer, &alice] {
            assert!(!log.contains(secret.as_str()), "replica {name} logged a token");
        }
    }
    drop((a, b));
    drop(db);
}

#[test]
fn admin_create_token_needs_a_role_and_changes_one_only_with_set_role() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        Command::new(SERVER)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--seed-bundled", "false", "admin", "create-token"])
            .args(args)
            .env_remove("DATABASE_URL")
            .output()
            .expect("run admin create-token")
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    // No role: a usage error, nothing created.
    let out = run(&["--name", "carol"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--role"), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    // Created as a contributor; another token with the same role is fine.
    assert!(run(&["--name", "carol", "--role", "contributor"]).status.success());
    let again = run(&["--name", "carol", "--role", "contributor"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    // Asking for admin on an existing contributor is refused, not a promotion.
    let out = run(&["--name", "carol", "--role", "admin"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("exists with the role contributor") && err.contains("--set-role"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no token was printed");
    // Said out loud, it is done: the new token is an admin's.
    let token = admin_token_with(dir.path(), &["--name", "carol", "--role", "admin", "--set-role"]);
    let server = Server::start(dir.path(), None, false);
    let (status, answer) = server.call("GET", "/v1/whoami", Some(&token), b"");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["role"], "admin", "{answer}");
}

/// `admin secret-key` makes the data dir's key once, owner-only, and
/// prints its path, never the key; a malformed key file stops both it and
/// the server at start, naming the file, with exit code 2.
#[test]
fn the_watch_secret_key_is_made_once_and_a_malformed_one_stops_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        Command::new(SERVER)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--seed-bundled", "false", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("DATABASE_URL")
            .env_remove("PITFALL_SECRET_KEY_FILE")
            .output()
            .expect("run pitfall-server")
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let made = run(&["admin", "secret-key"]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let path = dir.path().join("watch-secret-key");
    assert_eq!(text(&made.stdout).trim(), path.display().to_string());
    let key = std::fs::read_to_string(&path).expect("the key file");
    assert!(!text(&made.stdout).contains(key.trim()), "the key is never printed");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "readable by its owner only");
    }
    assert!(run(&["admin", "secret-key"]).status.success());
    assert_eq!(std::fs::read_to_string(&path).expect("read"), key, "made once, then kept");

    let bad = dir.path().join("truncated-key");
    std::fs::write(&bad, &key[..20]).expect("write");
    let flag = ["--secret-key-file", bad.to_str().expect("utf-8")];
    for args in [&[&flag[..], &["admin", "secret-key"]].concat(), &flag[..]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("truncated-key") && err.contains("64 hex digits"), "{err}");
    }
    let missing = dir.path().join("no-such-key");
    let out = run(&["--secret-key-file", missing.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!missing.exists(), "a named key file is never made");
    assert!(text(&out.stderr).contains("no-such-key"), "{}", text(&out.stderr));
}

fn admin_token_with(data_dir: &Path, args: &[&str]) -> String {
    let output = Command::new(SERVER)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--seed-bundled", "false", "admin", "create-token"])
        .args(args)
        .env_remove("DATABASE_URL")
        .output()
        .expect("run admin create-token");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8").trim().to_owned()
}

#[test]
fn with_no_data_dir_the_server_uses_the_users_data_dir_and_says_so() {
    use std::io::{BufRead, BufReader};
    let home = tempfile::tempdir().expect("tempdir");
    let started_in = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(SERVER)
        .args(["--listen", "127.0.0.1:0", "--seed-bundled", "false"])
        .current_dir(started_in.path())
        .env("HOME", home.path())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .env_remove("XDG_DATA_HOME")
        .env_remove("INVOCATION_ID")
        .env_remove("STATE_DIRECTORY")
        .env_remove("PITFALL_DATA_DIR")
        .env_remove("DATABASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut log = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
            if line.contains("serving") {
                let _ = tx.send(log.clone());
            }
        }
        let _ = tx.send(log);
    });
    let log = rx.recv_timeout(crate::live::START_TIMEOUT).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    let expected = home.path().join(".local/share/pitfall");
    assert!(log.contains("serving"), "did not start:\n{log}");
    assert!(log.contains(&format!("data_dir={}", expected.display())), "{log}");
    assert!(log.contains("public_key=ed25519:"), "{log}");
    assert!(expected.join("pitfall.db").is_file(), "the database is in the user's data dir");
    assert!(expected.join("bundle-signing-key.pem").is_file(), "and so is the signing key");
    assert!(expected.join("watch-secret-key").is_file(), "and the watch secret key");
    assert_eq!(
        std::fs::read_dir(started_in.path()).expect("ls").count(),
        0,
        "nothing is written where it was started"
    );
}
