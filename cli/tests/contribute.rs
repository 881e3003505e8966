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
fn through_the_pipeline(
    dir: &Path,
    rule: &str,
    id: &str,
    version: &str,
    manifest: &Path,
    cases: usize,
) {
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
        "  validation  passed: ABI 1".to_owned(),
        "  compile     passed".to_owned(),
        format!("  tests       {cases} of {cases} cases passed"),
        "  state       pending".to_owned(),
    ] {
        assert!(stdout.contains(&line), "{line:?} not in:\n{stdout}");
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

/// The fenced block after `<!-- golden: NAME -->` in sdk/README.md: its
/// byte range and text.
fn readme_block(readme: &str, name: &str) -> (std::ops::Range<usize>, String) {
    let marker = format!("<!-- golden: {name} -->\n");
    let at = readme.find(&marker).unwrap_or_else(|| panic!("sdk/README.md has no {marker:?}"));
    let fence = at + marker.len();
    let body = fence + readme[fence..].find('\n').expect("a fence line") + 1;
    let end = body + readme[body..].find("```").expect("a closing fence");
    (body..end, readme[body..end].to_owned())
}

/// What differs between machines in the CLI's output, written as the
/// README writes it: the crate's folder, the target folder, a module's size.
struct Normalize {
    replacements: Vec<(String, String)>,
}

impl Normalize {
    fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (from, to) in &self.replacements {
            out = out.replace(from, to);
        }
        // `27728 bytes (limit` → `N bytes (limit`: sizes change with the toolchain.
        let mut words: Vec<String> = Vec::new();
        let mut lines = Vec::new();
        for line in out.lines() {
            words.clear();
            let parts: Vec<&str> = line.split(' ').collect();
            for (i, w) in parts.iter().enumerate() {
                let size =
                    parts.get(i + 1) == Some(&"bytes") && w.bytes().all(|b| b.is_ascii_digit());
                words.push(if size { "N".into() } else { (*w).to_owned() });
            }
            lines.push(words.join(" "));
        }
        lines.join("\n") + "\n"
    }
}

/// Checks the README's block `name` against the CLI's `actual` output
/// (normalised); `PITFALL_BLESS=1` writes the output into the README.
fn golden(name: &str, actual: &str, normalize: &Normalize) {
    let path = repo().join("sdk/README.md");
    let readme = std::fs::read_to_string(&path).expect("sdk/README.md");
    let (range, documented) = readme_block(&readme, name);
    let actual = normalize.apply(actual);
    if std::env::var_os("PITFALL_BLESS").is_some() {
        let mut blessed = readme.clone();
        blessed.replace_range(range, &actual);
        std::fs::write(&path, blessed).expect("sdk/README.md written");
        return;
    }
    assert_eq!(
        documented, actual,
        "sdk/README.md's `{name}` block differs from the CLI's output (PITFALL_BLESS=1 rewrites it)"
    );
}

/// Rewrites the crate's JSON file `name` with `edit`.
fn edit_json(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) {
    let path = dir.join(name);
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
    edit(&mut value);
    std::fs::write(&path, serde_json::to_vec_pretty(&value).expect("json")).expect("written");
}

/// The done-when of the contributor's path: `rule new` scaffolds a rule
/// that the lint refuses as it is; after the edits sdk/README.md
/// documents, it passes lint, test and build, and `check --rules` reports
/// its finding. On the way, every report the README shows is compared
/// with the real output.
#[test]
fn a_rust_rule_goes_from_an_empty_folder_to_a_finding_in_v1_check() {
    let home = tempfile::tempdir().expect("tempdir");
    let created = pitfall(
        home.path(),
        &[
            "rule",
            "new",
            "my-first-rule",
            "--from-report",
            "https://github.com/pytorch/pytorch/issues/107302",
            "--error",
            "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash.",
        ],
    );
    expect_code(&created, 0, "rule new");
    let dir = home.path().join("my-first-rule");
    for file in ["Cargo.toml", "src/lib.rs", "rule.json", "tests.json", ".cargo/config.toml"] {
        assert!(dir.join(file).is_file(), "{file} was not written");
    }
    // The report and the error text are the rule's reference and signature.
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("rule.json")).expect("read")).expect("JSON");
    assert_eq!(
        meta["references"],
        json!([{"title": "pytorch/pytorch issue 107302", "url": "https://github.com/pytorch/pytorch/issues/107302"}])
    );
    assert_eq!(
        meta["error_signatures"][0]["template"],
        "A module that was compiled using NumPy 1.x cannot be run in NumPy {version} as it may crash."
    );
    // A second `new` into the same folder refuses to overwrite it.
    expect_code(
        &pitfall(home.path(), &["rule", "new", "my-first-rule"]),
        2,
        "rule new over an existing crate",
    );
    let target =
        Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target/").join("rule-crates");
    let normalize = Normalize {
        replacements: vec![
            (target.display().to_string(), "/home/you/my-first-rule/target".into()),
            (dir.display().to_string(), "/home/you/my-first-rule".into()),
        ],
    };

    // Untouched, the lint refuses it, saying what to change.
    let untouched = pitfall(&dir, &["rule", "lint"]);
    expect_code(&untouched, 2, "rule lint of the untouched scaffold");
    golden("lint-untouched", &text(&untouched.stderr), &normalize);

    // The edits the README documents make it the contributor's.
    let readme = std::fs::read_to_string(repo().join("sdk/README.md")).expect("README");
    let edits: Value = serde_json::from_str(&readme_block(&readme, "scaffold-edits").1)
        .expect("the documented edits are JSON");
    edit_json(&dir, "rule.json", |meta| {
        for (key, value) in edits.as_object().expect("an object of rule.json fields") {
            meta[key] = value.clone();
        }
    });
    let linted = pitfall(&dir, &["rule", "lint"]);
    expect_code(&linted, 0, "rule lint after the edits");
    golden("lint-passed", &text(&linted.stdout), &normalize);

    let tested = pitfall(&dir, &["rule", "test"]);
    expect_code(&tested, 0, "rule test");
    let stdout = text(&tested.stdout);
    assert!(stdout.contains("native: 6 cases passed"), "{stdout}");
    // Every case is listed, the `<2` pin's fixed case among them.
    for name in ["torch 2.2.2 with numpy 2.0.0", "numpy pinned below 2", "torch upgraded to 2.3"] {
        assert!(stdout.contains(&format!("  ✓ {name}\n")), "{name}: {stdout}");
    }
    golden("test-passed", &stdout, &normalize);

    let built = pitfall(&dir, &["rule", "build"]);
    expect_code(&built, 0, "rule build");
    golden("build", &text(&built.stdout), &normalize);

    // A wrong expectation and a remedy that does not fix: each report as
    // the engine gives it (natively, cargo test shows the same report).
    let tests_json = std::fs::read(dir.join("tests.json")).expect("tests.json");
    let rule_json = std::fs::read(dir.join("rule.json")).expect("rule.json");
    edit_json(&dir, "tests.json", |cases| {
        for case in cases.as_array_mut().expect("cases") {
            if case["name"] == "numpy without a version" {
                case["expect"] = json!("clear");
            }
        }
    });
    edit_json(&dir, "rule.json", |meta| {
        meta["remedies"][0]["actions"][0]["version"] = json!("==2.1.0");
    });
    let rebuilt = pitfall(&dir, &["rule", "build"]);
    expect_code(&rebuilt, 0, "rule build with failing cases");
    let module = last_line(&rebuilt);
    let failed = pitfall(&dir, &["rule", "test", &module]);
    expect_code(&failed, 2, "rule test with failing cases");
    golden("test-failed", &text(&failed.stderr), &normalize);
    std::fs::write(dir.join("tests.json"), tests_json).expect("restored");
    std::fs::write(dir.join("rule.json"), rule_json).expect("restored");

    let manifest = write_manifest(
        home.path(),
        "torch-2.1-numpy-2.json",
        &json!({"manifest_version": 1, "packages": [{"name": "torch", "version": "2.1.0"}, {"name": "numpy", "version": "2.1.1"}]}),
    );
    through_the_pipeline(&dir, ".", "my-first-rule", "0.1.0", &manifest, 6);
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
    through_the_pipeline(home.path(), "rule.c", "example-c-vllm-cc-floor", "1.0.0", &manifest, 4);
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
    through_the_pipeline(
        home.path(),
        "rule.wat",
        "example-wat-vllm-cc-floor",
        "1.0.0",
        &manifest,
        4,
    );
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

/// `pitfall watch`: a fleet added from files (labelled by file name),
/// listed, shown, its (empty) delivery log, deleted; bad input exits 2
/// with the registry's or the CLI's reason, storing nothing.
#[test]
fn watch_add_list_show_deliveries_and_rm_against_a_registry() {
    let registry = registry();
    let home = tempfile::tempdir().expect("tempdir");
    let dir = home.path();
    let fixture = repo().join("../shared/fixtures/manifests/g5g-gemma4-vllm0271.json");
    std::fs::copy(&fixture, dir.join("gpu-01.json")).expect("copied");
    std::fs::write(dir.join("gpu-02.json"), r#"{"manifest_version": 1}"#).expect("written");
    std::fs::create_dir(dir.join("other")).expect("dir");
    std::fs::write(dir.join("other/gpu-02.json"), r#"{"manifest_version": 1}"#).expect("written");
    let vars = [
        ("PITFALL_SERVER", registry.url.as_str()),
        ("PITFALL_TOKEN", registry.contributor.as_str()),
    ];
    let watch = |args: &[&str]| pitfall_with(dir, &[&["watch"], args].concat(), &vars);

    let added = watch(&[
        "add",
        "fleet",
        "--webhook",
        "https://hooks.example.com/pitfall",
        "--batch",
        "gpu-01.json",
        "gpu-02.json",
    ]);
    expect_code(&added, 0, "watch add");
    let out = text(&added.stdout);
    assert!(out.contains("(fleet): 2 manifests"), "{out}");
    assert!(out.contains("secret (shown once"), "{out}");
    let id: String = out
        .strip_prefix("watch ")
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the id")
        .to_owned();

    let listed = watch(&["list"]);
    expect_code(&listed, 0, "watch list");
    assert!(
        text(&listed.stdout).contains("fleet") && text(&listed.stdout).contains("2 manifests"),
        "{}",
        text(&listed.stdout)
    );
    let shown = watch(&["show", &id]);
    expect_code(&shown, 0, "watch show");
    assert!(text(&shown.stdout).contains("gpu-02: no findings"), "{}", text(&shown.stdout));
    let log = watch(&["deliveries", &id]);
    expect_code(&log, 0, "watch deliveries");
    assert_eq!(text(&log.stdout).trim(), "no deliveries");

    let cases: &[(&[&str], &str)] = &[
        (
            &["add", "bad", "--webhook", "http://127.0.0.1:9/hook", "--manifest", "gpu-02.json"],
            "webhook_url: the URL must be https",
        ),
        (
            &[
                "add",
                "fleet",
                "--webhook",
                "https://hooks.example.com/p",
                "--manifest",
                "gpu-02.json",
            ],
            "exists already",
        ),
        (
            &[
                "add",
                "twice",
                "--webhook",
                "https://hooks.example.com/p",
                "--batch",
                "gpu-02.json",
                "other/gpu-02.json",
            ],
            "two files are labelled \"gpu-02\"",
        ),
        (
            &[
                "add",
                "none",
                "--webhook",
                "https://hooks.example.com/p",
                "--manifest",
                "missing.json",
            ],
            "reading missing.json",
        ),
        (&["show", "999999"], "no watch 999999"),
    ];
    for (args, message) in cases {
        let out = watch(args);
        expect_code(&out, 2, &args.join(" "));
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {message:?} not in {}",
            text(&out.stderr)
        );
    }

    let removed = watch(&["rm", &id]);
    expect_code(&removed, 0, "watch rm");
    assert!(text(&removed.stdout).contains(&format!("deleted watch {id} (fleet)")));
    expect_code(&watch(&["show", &id]), 2, "show after rm");
    assert_eq!(text(&watch(&["list"]).stdout).trim(), "no watches");
}
