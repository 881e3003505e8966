//! The contributor's flow, end to end, as a contributor runs it: from an
//! empty folder through `pitfall rule new → lint → test → build`, `pitfall
//! check --rules`, `rule publish` to a real registry (in this process, on a
//! loopback port, SQLite in a temp dir, no bundled rules), `rule approve`
//! with a maintainer's token, and the rule's finding in `/v1/check`. The C
//! and WAT examples of sdk/examples go through the same pipeline, and a
//! rule with broken metadata is refused by `rule lint`, `rule build` and
//! the registry with the same messages.
//!
//! Needs the wasm toolchain and clang (`cargo xtask setup` installs them).
//! The rule crates share one target dir under target/ (`rule-crates`), so
//! the SDK is compiled for wasm once, not once per run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

/// A registry shared by these tests; it lives as long as the process.
struct Registry {
    url: String,
    contributor: String,
    maintainer: String,
    _data: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
    _running: pitfall_server::server::Running,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let data = tempfile::tempdir().expect("data dir");
        let data_dir = data.path().display().to_string();
        // Only what these tests publish is served: a finding is theirs.
        let config = pitfall_server::Config::from_args([
            "pitfall-server",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &data_dir,
            "--seed-bundled",
            "false",
        ])
        .expect("config");
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let token = |name: &str, role| {
            runtime
                .block_on(pitfall_server::server::create_token(
                    &config,
                    name,
                    role,
                    "contribute test",
                    false,
                    pitfall_server::store::TokenGrant::default(),
                ))
                .expect("token")
        };
        let contributor = token("alice", pitfall_server::store::Role::Contributor);
        let maintainer = token("mona", pitfall_server::store::Role::Maintainer);
        let running =
            runtime.block_on(pitfall_server::server::start(config)).expect("the registry starts");
        Registry {
            url: format!("http://{}", running.addr),
            contributor,
            maintainer,
            _data: data,
            _runtime: runtime,
            _running: running,
        }
    })
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repo").to_path_buf()
}

/// `pitfall` in `dir`, without the user's settings, with the rule
/// crates' shared target dir.
fn pitfall(dir: &Path, args: &[&str]) -> Output {
    pitfall_with(dir, args, &[])
}

/// [`pitfall`] with these environment variables set.
fn pitfall_with(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let target =
        Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target/").join("rule-crates");
    let nowhere = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-pitfall-setting");
    let mut command = Command::new(env!("CARGO_BIN_EXE_pitfall"));
    command
        .current_dir(dir)
        .env("PITFALL_CONFIG", &nowhere)
        .env("PITFALL_BUNDLE", &nowhere)
        .env("CARGO_TARGET_DIR", target);
    for var in ["PITFALL_SERVER", "PITFALL_BUNDLE_KEY", "PITFALL_TOKEN", "PITFALL_SDK"] {
        command.env_remove(var);
    }
    command.envs(vars.iter().copied()).args(args).output().expect("pitfall runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the exit code, showing everything the command printed.
fn expect_code(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn last_line(out: &Output) -> String {
    text(&out.stdout).lines().last().unwrap_or_default().to_owned()
}

/// The rule ids of an answer's findings.
fn finding_ids(answer: &Value) -> Vec<String> {
    answer["findings"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["rule_id"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// `pitfall check` offline with `rules` or online with the registry;
/// the answer as JSON.
fn check(dir: &Path, manifest: &Path, with: &[&str]) -> (i32, Value) {
    let manifest = manifest.display().to_string();
    let mut args = vec!["check", manifest.as_str(), "--format", "json"];
    args.extend_from_slice(with);
    let out = pitfall(dir, &args);
    let answer = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr)));
    (out.status.code().unwrap_or(-1), answer)
}

fn write_manifest(dir: &Path, name: &str, manifest: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(manifest).expect("json"))
        .expect("manifest written");
    path
}

/// build → check --rules → publish → (not served while pending) →
/// approve → served: the finding appears in /v1/check. `rule` is the
/// path argument (`.` for a crate).
fn through_the_pipeline(dir: &Path, rule: &str, id: &str, version: &str, manifest: &Path) {
    let registry = registry();
    let built = pitfall(dir, &["rule", "build", rule]);
    expect_code(&built, 0, "rule build");
    let module = PathBuf::from(last_line(&built));
    assert!(
        module.is_file() && module.extension().is_some_and(|e| e == "wasm"),
        "last line: {module:?}"
    );
    assert!(text(&built.stdout).contains("ABI 1"), "{}", text(&built.stdout));

    let module_text = module.display().to_string();
    let (code, answer) = check(dir, manifest, &["--rules", &module_text]);
    assert_eq!((code, finding_ids(&answer)), (1, vec![id.to_owned()]), "offline check: {answer}");

    let published = pitfall(
        dir,
        &["rule", "publish", rule, "--server", &registry.url, "--token", &registry.contributor],
    );
    expect_code(&published, 0, "rule publish");
    // A token on the command line works, with a word about where it shows.
    assert!(
        text(&published.stderr).contains("warning: --token is visible to other users"),
        "{}",
        text(&published.stderr)
    );
    let stdout = text(&published.stdout);
    for line in [
        "  validation  passed: ABI 1",
        "  compile     passed",
        "  tests       4 of 4 cases passed",
        "  state       pending",
    ] {
        assert!(stdout.contains(line), "{line:?} not in:\n{stdout}");
    }
    assert_eq!(last_line(&published), format!("url: {}/rules/{id}", registry.url));

    let online = ["--server", registry.url.as_str()];
    let (_, pending) = check(dir, manifest, &online);
    assert!(
        !finding_ids(&pending).contains(&id.to_owned()),
        "a pending rule is not served: {pending}"
    );

    let approved = pitfall(
        dir,
        &[
            "rule",
            "approve",
            id,
            version,
            "--server",
            &registry.url,
            "--token",
            &registry.maintainer,
        ],
    );
    expect_code(&approved, 0, "rule approve");
    assert!(text(&approved.stdout).contains("approved"), "{}", text(&approved.stdout));

    let (code, served) = check(dir, manifest, &online);
    assert_eq!(code, 1, "{served}");
    assert!(finding_ids(&served).contains(&id.to_owned()), "the approved rule's finding: {served}");
    // The URL publish printed is the rule's public page now.
    let page = http_get(&registry.url, &format!("/rules/{id}"));
    assert!(page.lines().next().is_some_and(|l| l.contains(" 200 ")), "GET /rules/{id}: {page}");
    assert!(page.contains(id), "the page names the rule");
}

/// A bounded HTTP/1.0 GET on loopback: the status line, headers and body.
fn http_get(base: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: text/html\r\n\r\n")
        .expect("request");
    let mut answer = Vec::new();
    stream.take(1 << 20).read_to_end(&mut answer).expect("answer");
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_rust_rule_goes_from_an_empty_folder_to_a_finding_in_v1_check() {
    let home = tempfile::tempdir().expect("tempdir");
    let created = pitfall(home.path(), &["rule", "new", "my-first-rule"]);
    expect_code(&created, 0, "rule new");
    let dir = home.path().join("my-first-rule");
    for file in ["Cargo.toml", "src/lib.rs", "rule.json", "tests.json", ".cargo/config.toml"] {
        assert!(dir.join(file).is_file(), "{file} was not written");
    }
    // A second `new` into the same folder refuses to overwrite it.
    expect_code(
        &pitfall(home.path(), &["rule", "new", "my-first-rule"]),
        2,
        "rule new over an existing crate",
    );

    expect_code(&pitfall(&dir, &["rule", "lint"]), 0, "rule lint");
    let tested = pitfall(&dir, &["rule", "test"]);
    expect_code(&tested, 0, "rule test");
    let stdout = text(&tested.stdout);
    assert!(stdout.contains("native: every case passed"), "{stdout}");
    assert!(stdout.contains("wasm: 4 of 4 cases passed in the engine"), "{stdout}");

    let manifest = write_manifest(
        home.path(),
        "torch-2.1-numpy-2.json",
        &json!({"manifest_version": 1, "packages": [{"name": "torch", "version": "2.1.0"}, {"name": "numpy", "version": "2.1.1"}]}),
    );
    through_the_pipeline(&dir, ".", "my-first-rule", "0.1.0", &manifest);
}

/// A P100 running vLLM: what both examples (compute capability floor 7.0) match.
fn p100(dir: &Path) -> PathBuf {
    write_manifest(
        dir,
        "p100-vllm.json",
        &json!({"manifest_version": 1, "accelerators": [{"vendor": "nvidia", "model": "Tesla P100", "compute_capability": "6.0"}],
                "packages": [{"name": "vllm", "version": "0.27.1"}]}),
    )
}

#[test]
fn the_c_rule_passes_the_same_pipeline() {
    let home = tempfile::tempdir().expect("tempdir");
    let examples = repo().join("sdk/examples/c-vllm-cc-floor");
    for file in ["rule.c", "rule.json", "tests.json"] {
        std::fs::copy(examples.join(file), home.path().join(file)).expect("example copied");
    }
    expect_code(&pitfall(home.path(), &["rule", "lint", "rule.c"]), 0, "rule lint rule.c");
    let tested = pitfall(home.path(), &["rule", "test", "rule.c"]);
    expect_code(&tested, 0, "rule test rule.c");
    assert!(
        text(&tested.stdout).contains("wasm: 4 of 4 cases passed in the engine"),
        "{}",
        text(&tested.stdout)
    );
    let manifest = p100(home.path());
    through_the_pipeline(home.path(), "rule.c", "example-c-vllm-cc-floor", "1.0.0", &manifest);
}

#[test]
fn the_wat_rule_passes_the_same_pipeline() {
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::copy(repo().join("sdk/examples/wat-vllm-cc-floor.wat"), home.path().join("rule.wat"))
        .expect("copied");
    expect_code(&pitfall(home.path(), &["rule", "lint", "rule.wat"]), 0, "rule lint rule.wat");
    let tested = pitfall(home.path(), &["rule", "test", "rule.wat"]);
    expect_code(&tested, 0, "rule test rule.wat");
    assert!(
        text(&tested.stdout).contains("wasm: 4 of 4 cases passed in the engine"),
        "{}",
        text(&tested.stdout)
    );
    let manifest = p100(home.path());
    through_the_pipeline(home.path(), "rule.wat", "example-wat-vllm-cc-floor", "1.0.0", &manifest);
}

/// The WAT example with its metadata and cases replaced.
fn wat_with(meta: &Value, tests: &Value) -> String {
    let example = std::fs::read_to_string(repo().join("sdk/examples/wat-vllm-cc-floor.wat"))
        .expect("example");
    let wat_string = |v: &Value| v.to_string().replace('\\', "\\\\").replace('"', "\\\"");
    example
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("(@custom \"pitfall.meta\"") {
                format!("  (@custom \"pitfall.meta\" \"{}\")", wat_string(meta))
            } else if line.trim_start().starts_with("(@custom \"pitfall.tests\"") {
                format!("  (@custom \"pitfall.tests\" \"{}\")", wat_string(tests))
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_failing_case_shows_its_manifest_the_expected_and_the_actual_outcome() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo().join("sdk/examples/c-vllm-cc-floor");
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("rule.json")).expect("rule.json"))
            .expect("json");
    let mut tests: Value =
        serde_json::from_slice(&std::fs::read(dir.join("tests.json")).expect("tests.json"))
            .expect("json");
    // The unknown GPU's case now claims clear: the rule (rightly) cannot tell.
    let unknown = tests
        .as_array_mut()
        .and_then(|t| t.iter_mut().find(|c| c["name"] == "unknown GPU"))
        .expect("the case");
    unknown["expect"] = json!("clear");
    std::fs::write(home.path().join("wrong.wat"), wat_with(&meta, &tests)).expect("written");
    let out = pitfall(home.path(), &["rule", "test", "wrong.wat"]);
    expect_code(&out, 2, "rule test with a wrong case");
    let stderr = text(&out.stderr);
    let parts = [
        "case \"unknown GPU\"",
        "expected: clear",
        "actual:   undetermined, missing accelerators.0.compute_capability",
        "manifest: {",
        "Mystery 9000",
        "wasm: 1 of 4 cases failed in the engine",
    ];
    for part in parts {
        assert!(stderr.contains(part), "{part:?} not in:\n{stderr}");
    }
}

#[test]
fn broken_metadata_is_refused_by_lint_build_and_the_registry_with_the_same_messages() {
    let registry = registry();
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo().join("sdk/examples/c-vllm-cc-floor");
    let mut meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("rule.json")).expect("rule.json"))
            .expect("json");
    meta["id"] = json!("broken-metadata");
    meta["title"] = json!("vLLM");
    meta["error_signatures"] = json!([]);
    meta["remedies"][0]["actions"] = json!([]);
    meta["references"] = json!([{"title": "a blog", "url": "http://example.org/post"}]);
    let tests: Value =
        serde_json::from_slice(&std::fs::read(dir.join("tests.json")).expect("tests.json"))
            .expect("json");
    let without_fixed: Vec<Value> = tests
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["expect"] != "fixed")
        .cloned()
        .collect();
    let wat = wat_with(&meta, &Value::Array(without_fixed));
    std::fs::write(home.path().join("broken.wat"), &wat).expect("written");
    std::fs::write(home.path().join("broken.wasm"), wat::parse_str(&wat).expect("assembles"))
        .expect("written");

    // `rule lint`: one line per issue, `FILE: [CODE] MESSAGE`.
    let linted = pitfall(home.path(), &["rule", "lint", "broken.wasm"]);
    expect_code(&linted, 2, "rule lint");
    let issues: Vec<(String, String)> = text(&linted.stderr)
        .lines()
        .filter_map(|l| l.split_once(": [").and_then(|(_, rest)| rest.split_once("] ")))
        .map(|(code, message)| (code.to_owned(), message.to_owned()))
        .collect();
    let codes: Vec<&str> = issues.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        codes,
        [
            "title-length",
            "severity-needs-signature",
            "remedy-without-action",
            "reference-url",
            "case-missing"
        ],
        "{}",
        text(&linted.stderr)
    );
    assert!(issues[4].1.contains("`fixed`"), "{issues:?}");
    let messages: Vec<&str> = issues.iter().map(|(_, m)| m.as_str()).collect();

    // `rule build` refuses with the same lines, and builds nothing.
    let built = pitfall(home.path(), &["rule", "build", "broken.wat"]);
    expect_code(&built, 2, "rule build");
    for message in &messages {
        assert!(
            text(&built.stderr).contains(message),
            "{message:?} not in:\n{}",
            text(&built.stderr)
        );
    }
    assert!(!home.path().join("target/broken.wasm").exists(), "a refused rule is not built");

    // The registry runs the same lint and answers the same messages.
    let published = pitfall_with(
        home.path(),
        &["rule", "publish", "broken.wasm", "--server", &registry.url],
        &[("PITFALL_TOKEN", &registry.contributor)],
    );
    expect_code(&published, 2, "rule publish");
    let expected =
        format!("refused by {} (step metadata): metadata: {}", registry.url, messages.join("; "));
    assert_eq!(text(&published.stderr).trim_end(), expected);
}

#[test]
fn bad_input_exits_2_with_a_message_naming_the_problem() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = home.path();
    std::fs::write(dir.join("notes.txt"), "not a rule").expect("written");
    std::fs::write(dir.join("garbage.wasm"), "not wasm").expect("written");
    let cases: &[(&[&str], &str)] = &[
        (&["rule", "new", "Not_An_Id"], "\"Not_An_Id\" is not a rule id"),
        (&["rule", "new", "fine-id", "--sdk", "/no/such/sdk"], "the SDK folder /no/such/sdk"),
        (&["rule", "lint", "no-such-folder"], "no-such-folder: no such file or folder"),
        (&["rule", "lint", "."], "not a rule crate (no Cargo.toml)"),
        (
            &["rule", "build", "notes.txt"],
            "expected a rule crate folder, or a .c, .wat or .wasm file",
        ),
        (&["rule", "lint", "garbage.wasm"], "validation:"),
        (
            &["rule", "publish", "garbage.wasm", "--server", "http://127.0.0.1:9"],
            "no token: set PITFALL_TOKEN",
        ),
    ];
    for (args, message) in cases {
        let out = pitfall(dir, args);
        expect_code(&out, 2, &args.join(" "));
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {message:?} not in {}",
            text(&out.stderr)
        );
    }
    assert!(!dir.join("fine-id").exists(), "nothing is written without an SDK");
}
