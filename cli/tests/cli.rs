//! `pitfall` as users run it: exit codes, output shapes, and the findings
//! for the shared fixture manifests (golden files in tests/golden; rerun
//! with `PITFALL_BLESS=1` to rewrite them after an intended change, then
//! review the diff).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod ci_output;
mod provision;

/// `pitfall` without the user's settings: no config file, no pulled
/// bundle, no server from the environment (so plain `check` uses the rules
/// built into the binary).
fn command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pitfall"));
    let nowhere = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-pitfall-setting");
    command.env("PITFALL_CONFIG", &nowhere).env("PITFALL_BUNDLE", &nowhere);
    for var in ["PITFALL_SERVER", "PITFALL_BUNDLE_KEY", "PITFALL_TOKEN"] {
        command.env_remove(var);
    }
    command
}

fn pitfall(args: &[&str]) -> Output {
    command().args(args).output().expect("pitfall runs")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests")
}

fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

fn check_json(path: &str) -> (i32, Value) {
    let out = pitfall(&["check", path, "--format", "json"]);
    let code = out.status.code().expect("exit code");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, json)
}

fn ids(answer: &Value, severity: &str) -> Vec<String> {
    answer["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| f["rule_id"].as_str().expect("rule_id").to_owned())
        .collect()
}

/// The lines a golden file holds: exit code, then findings by severity.
fn summary(code: i32, answer: &Value) -> String {
    let mut out = format!("exit: {code}\n");
    for severity in ["error", "warning", "info"] {
        for id in ids(answer, severity) {
            out.push_str(&format!("{severity}: {id}\n"));
        }
    }
    for u in answer["undetermined"].as_array().expect("undetermined") {
        out.push_str(&format!("undetermined: {}\n", u["rule_id"].as_str().expect("id")));
    }
    out
}

#[test]
fn fixture_manifests_match_their_golden_findings() {
    let bless = std::env::var_os("PITFALL_BLESS").is_some();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut names: Vec<_> = std::fs::read_dir(fixtures())
        .expect("fixtures beside the repo")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 3);
    let mut mismatches = String::new();
    for name in names {
        let (code, answer) = check_json(&fixture(&name));
        assert!(
            answer["rule_errors"].as_array().expect("rule_errors").is_empty(),
            "{name}: {answer}"
        );
        let actual = summary(code, &answer);
        compare_golden(
            &golden_dir.join(name.replace(".json", ".txt")),
            &actual,
            bless,
            &name,
            &mut mismatches,
        );
    }
    assert!(mismatches.is_empty(), "findings changed (PITFALL_BLESS=1 to accept):\n{mismatches}");
}

/// The field reports' three errors: no sm_75 kernels (PyPI's aarch64
/// torch 2.12.0 is built for 8.0 and up, from the release table), bf16
/// below 8.0, and Gemma 4 failing on vLLM 0.27.1 (its official image
/// ships transformers 5.15.0, which vLLM before 0.28.0 cannot read Gemma
/// 4's per-layer head sizes with). The release table adds what the
/// fixture's stack implies besides: that torch is a CUDA 13.0 build,
/// which driver 570 cannot run, and vLLM 0.27.1's wheel requires
/// torch==2.13.0. The image's own contents were not read, so the rule
/// about the official arm64 image speaks as a warning.
#[test]
fn g5g_field_report_setup_fails_with_the_three_known_errors() {
    let (code, answer) = check_json(&fixture("g5g-gemma4-vllm0271.json"));
    assert_eq!(code, 1);
    let errors = ids(&answer, "error");
    for id in [
        "vllm-bf16-needs-sm80",
        "gemma4-transformers-5-15-breaks-vllm",
        "cuda-driver-too-old",
        "torch-wheel-arch-list-lacks-gpu",
        "vllm-torch-abi-mismatch",
    ] {
        assert!(errors.contains(&id.to_owned()), "missing {id} in {errors:?}");
    }
    let warnings = ids(&answer, "warning");
    assert!(
        warnings.contains(&"aarch64-official-image-needs-sm80".to_owned()),
        "the arm64 image warning is missing from {warnings:?}"
    );
    for f in
        answer["findings"].as_array().expect("findings").iter().filter(|f| f["severity"] == "error")
    {
        assert!(
            !f["remedies"].as_array().expect("remedies").is_empty(),
            "{}: no remedies",
            f["rule_id"]
        );
        assert!(
            !f["references"].as_array().expect("references").is_empty(),
            "{}: no references",
            f["rule_id"]
        );
        assert!(
            !f["error_signatures"].as_array().expect("sigs").is_empty(),
            "{}: no error text",
            f["rule_id"]
        );
    }
}

#[test]
fn healthy_h100_stack_exits_zero() {
    let (code, answer) = check_json(&fixture("h100x8-llama70b-healthy.json"));
    assert_eq!(code, 0, "{answer}");
    assert!(ids(&answer, "error").is_empty());
}

#[test]
fn a6000_weights_do_not_fit_and_the_registry_says_what_it_assumed() {
    let (code, answer) = check_json(&fixture("a6000-llama70b-single.json"));
    assert_eq!(code, 1);
    assert!(ids(&answer, "error").contains(&"weights-exceed-vram".to_owned()));
    let enriched = answer["enriched"].as_array().expect("enriched values listed");
    let cc = enriched
        .iter()
        .find(|e| e["path"] == "accelerators.0.compute_capability")
        .expect("cc enriched");
    assert_eq!(cc["value"], "8.6");
    assert_eq!(cc["source"], "enriched");
}

#[test]
fn text_output_groups_by_severity_with_remedies() {
    let out = pitfall(&["check", &fixture("g5g-gemma4-vllm0271.json")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let first_warning = text.find("\nWARNING").expect("warnings shown");
    let last_error = text.rfind("\nERROR").expect("errors shown");
    assert!(last_error < first_warning, "errors come before warnings");
    assert!(text.contains("Fix 1:") && text.contains("-> vllm: add --dtype half"), "{text}");
    assert!(text.contains("What you would see:"));
}

#[test]
fn invalid_manifests_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "wrong-type.json",
            r#"{"manifest_version":1,"accelerators":[{"count":"two"}]}"#,
            "accelerators[0].count",
        ),
        ("version.json", r#"{"manifest_version":2}"#, "manifest_version"),
        ("no-version.json", r#"{"host":{}}"#, "manifest_version"),
        ("not-json.json", "{nope", "not valid JSON"),
        ("array.json", "[]", "JSON object"),
    ];
    for (name, body, mentions) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).expect("written");
        let out = pitfall(&["check", &path.display().to_string()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(mentions), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout on failure");
    }
    let out = pitfall(&["check", "/no/such/manifest.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rules_from_a_file_or_a_folder_and_bad_modules_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bf16 = pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == "rule-vllm-bf16-needs-sm80")
        .expect("bf16 rule bundled");
    let file = dir.path().join("bf16.wasm");
    std::fs::write(&file, bf16.wasm).expect("written");
    let out = pitfall(&[
        "check",
        &fixture("g5g-gemma4-vllm0271.json"),
        "--rules",
        &file.display().to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(ids(&answer, "error"), vec!["vllm-bf16-needs-sm80".to_owned()]);
    assert_eq!(answer["stats"]["rules_total"], 1);

    let out = pitfall(&[
        "check",
        &fixture("g5g-gemma4-vllm0271.json"),
        "--rules",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));

    std::fs::write(dir.path().join("broken.wasm"), b"\0asm\x01\0\0\0garbage").expect("written");
    let out = pitfall(&[
        "check",
        &fixture("g5g-gemma4-vllm0271.json"),
        "--rules",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.wasm"));
}

#[test]
fn manifest_from_standard_input() {
    use std::io::Write;
    let mut child = command()
        .args(["check", "-", "--format", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&std::fs::read(fixture("h100x8-llama70b-healthy.json")).expect("manifest"))
        .expect("written");
    let out = child.wait_with_output().expect("finishes");
    assert_eq!(out.status.code(), Some(0));
}

// ---------------------------------------------------------------- pitfall scan

fn machines() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/machines")
}

/// Every capture folder of ../shared/fixtures/machines, sorted.
fn machine_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(machines())
        .expect("machine captures beside the repo")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 2, "{dirs:?}");
    dirs
}

fn scan_json(args: &[&str]) -> Value {
    let mut all = vec!["scan"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = pitfall(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn scan_dir(dir: &Path) -> Value {
    scan_json(&["--from-dir", &dir.display().to_string()])
}

/// Runs pitfall with `args` and `input` on standard input.
fn pitfall_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    child.stdin.take().expect("stdin").write_all(input).expect("written");
    child.wait_with_output().expect("finishes")
}

#[test]
fn scan_of_each_machine_capture_matches_its_golden_manifest() {
    let bless = std::env::var_os("PITFALL_BLESS").is_some();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut mismatches = String::new();
    for dir in machine_dirs() {
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let out = pitfall(&["scan", "--from-dir", &dir.display().to_string(), "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        // What the scan prints is a valid manifest v1.
        pitfall_contract::parse_manifest(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}"));
        let actual = String::from_utf8(out.stdout).expect("utf-8");
        compare_golden(
            &golden_dir.join(format!("scan-{name}.json")),
            &actual,
            bless,
            &name,
            &mut mismatches,
        );
    }
    assert!(
        mismatches.is_empty(),
        "scan manifests changed (PITFALL_BLESS=1 to accept):\n{mismatches}"
    );
}

#[test]
fn scan_of_the_h200_capture_reads_the_facts_the_tools_printed() {
    let m = scan_dir(&machines().join("h200-x86_64"));
    let gpus = m["accelerators"].as_array().expect("accelerators");
    assert_eq!(gpus.len(), 1);
    let gpu = &gpus[0];
    assert_eq!(gpu["vendor"], "nvidia");
    assert_eq!(gpu["model"], "H200 SXM", "its memory names the variant");
    assert_eq!(gpu["count"], 1);
    assert_eq!(gpu["compute_capability"], "9.0");
    assert_eq!(gpu["memory_mib"], 143_771);
    assert_eq!(gpu["interconnect"], "pcie");
    assert_eq!(m["drivers"]["nvidia"], "580.159.04");
    // nvidia-smi's "CUDA Version" is the newest CUDA the driver supports.
    assert_eq!(m["drivers"]["cuda_driver"], "13.0");
    assert!(m["drivers"].get("cuda").is_none(), "the ambiguous field is not written: {m}");
    assert_eq!(m["host"]["arch"], "x86_64");
    assert_eq!(m["host"]["cpu_model"], "Intel(R) Xeon(R) Processor");
    assert_eq!(m["host"]["os"]["id"], "ubuntu");
    assert_eq!(m["host"]["os"]["version"], "24.04");
    assert_eq!(m["host"]["kernel"], "6.18.44-fc-v657-gpu");
    assert_eq!(m["build"]["tools"]["nvcc"], "13.0.88");
    let package = |name: &str| {
        m["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    // pip lists torch 2.11.0; torch.__version__ (collect_env) adds the CUDA tag.
    assert_eq!(package("torch")["version"], "2.11.0+cu130");
    assert_eq!(package("torch")["ecosystem"], "pypi");
    assert_eq!(package("python")["version"], "3.12.3");
    // Every pip entry is there, with its exact version.
    let pip: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(machines().join("h200-x86_64/pip-list.json")).expect("pip list"),
    )
    .expect("pip json");
    for entry in &pip {
        let listed = package(entry["name"].as_str().expect("name"));
        assert_eq!(listed["ecosystem"], "pypi", "{entry}");
        if entry["name"] != "torch" {
            assert_eq!(listed["version"], entry["version"], "{entry}");
        }
    }
}

#[test]
fn scan_of_the_two_h200_capture_finds_them_joined_by_nvlink() {
    let m = scan_dir(&machines().join("h200x2-nvlink"));
    let gpus = m["accelerators"].as_array().expect("accelerators");
    assert_eq!(gpus.len(), 1, "two identical GPUs are one entry: {gpus:?}");
    assert_eq!(gpus[0]["count"], 2);
    assert_eq!(gpus[0]["interconnect"], "nvlink");
    assert_eq!(gpus[0]["compute_capability"], "9.0");
    assert_eq!(gpus[0]["memory_mib"], 143_771);
}

#[test]
fn scan_falls_back_to_the_csv_query_without_the_xml() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["nvidia-smi-query.csv", "nvidia-smi-topo.txt"] {
        std::fs::copy(machines().join("h200x2-nvlink").join(name), dir.path().join(name))
            .expect("copied");
    }
    let m = scan_dir(dir.path());
    let gpu = &m["accelerators"][0];
    assert_eq!((gpu["model"].as_str(), gpu["count"].as_u64()), (Some("H200 SXM"), Some(2)));
    assert_eq!(gpu["compute_capability"], "9.0");
    assert_eq!(gpu["memory_mib"], 143_771);
    assert_eq!(gpu["interconnect"], "nvlink");
    assert_eq!(m["drivers"]["nvidia"], "580.159.04");
    assert!(m["drivers"].get("cuda").is_none(), "the CSV has no CUDA version: {m}");
}

#[test]
fn scan_of_a_collect_env_paste() {
    let file = machines().join("h200-x86_64/collect_env.txt");
    let m = scan_json(&["--from-collect-env", &file.display().to_string()]);
    pitfall_contract::manifest_from_value(m.clone()).expect("valid manifest");
    // collect_env gives no memory size: which H200 is not known.
    assert_eq!(m["accelerators"][0]["model"], "H200");
    assert_eq!(m["accelerators"][0]["count"], 1);
    assert_eq!(m["drivers"]["nvidia"], "580.159.04");
    assert_eq!(m["host"]["os"]["version"], "24.04");
    assert_eq!(m["host"]["arch"], "x86_64");
    assert_eq!(m["build"]["tools"]["nvcc"], "13.0.88");
    let torch = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "torch")
        .expect("torch");
    assert_eq!(torch["version"], "2.11.0+cu130");
}

#[test]
fn scan_joins_a_cut_sglang_paste_and_its_launch_command_and_names_what_is_missing() {
    // sgl-project/sglang#4814, as posted (cut at `CUDA Driver Version: 550.`).
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reports/sglang-4814");
    let paste = report.join("env.txt").display().to_string();
    let serve = std::fs::read_to_string(report.join("serve.txt")).expect("serve.txt");
    let m = scan_json(&["--from-collect-env", &paste, "--from-serve-args", &serve]);
    assert_eq!(m["accelerators"][0]["count"], 8);
    assert_eq!(m["accelerators"][0]["compute_capability"], "8.9");
    assert_eq!(m["workload"]["engine"], "sglang");
    assert_eq!(m["workload"]["tensor_parallel_size"], 2);
    assert!(m.get("drivers").is_none(), "half a driver version is none: {m}");

    let out = pitfall(&["scan", "--from-collect-env", &paste, "--from-vllm-args", &serve]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("Read:       python3 -m sglang.check_env"), "{text}");
    assert!(text.contains("mid-line"), "the cut is named: {text}");
    assert!(text.contains("missing drivers.nvidia"), "{text}");
    assert!(!text.contains("missing workload.model"), "{text}");
}

#[test]
fn scan_workload_from_a_vllm_command_line_and_flags() {
    let dir = machines().join("h200x2-nvlink").display().to_string();
    let m = scan_json(&[
        "--from-dir",
        &dir,
        "--from-vllm-args",
        "HF_TOKEN=hf_secret VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve google/gemma-4-E2B-it --dtype bfloat16 -tp 2 --max-model-len=8192 --served-model-name 'gemma small'",
        "--max-model-len",
        "4096",
        "--gpu-memory-utilization",
        "0.9",
    ]);
    let w = &m["workload"];
    assert_eq!(w["engine"], "vllm");
    assert_eq!(w["model"], "google/gemma-4-E2B-it");
    assert_eq!(w["dtype"], "bfloat16");
    assert_eq!(w["tensor_parallel_size"], 2);
    assert_eq!(w["max_model_len"], 4096, "a flag overrides the command line");
    assert_eq!(w["gpu_memory_utilization"], 0.9);
    assert_eq!(m["env"]["VLLM_ATTENTION_BACKEND"], "FLASH_ATTN");
    let text = m.to_string();
    assert!(!text.contains("HF_TOKEN") && !text.contains("hf_secret"), "{text}");
}

/// Identifiers present in a capture folder's files: GPU UUIDs, serial
/// numbers, PDIs, PCI bus ids, board part numbers, and the host name of
/// `uname -a`.
fn identifiers_in(dir: &Path) -> (Vec<String>, Option<String>) {
    let mut found = Vec::new();
    let mut hostname = None;
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("text");
        // `GPU-` UUIDs anywhere (XML, nvlink listing).
        for (at, _) in text.match_indices("GPU-") {
            let uuid: String = text[at..]
                .chars()
                .take_while(|c| {
                    c.is_ascii_hexdigit() || *c == '-' || *c == 'G' || *c == 'P' || *c == 'U'
                })
                .collect();
            if uuid.len() > 12 {
                found.push(uuid);
            }
        }
        // XML elements that identify a device.
        for tag in [
            "serial",
            "uuid",
            "pdi",
            "pci_bus_id",
            "board_part_number",
            "gpu_fabric_guid",
            "chassis_serial_number",
        ] {
            let open = format!("<{tag}>");
            for (at, _) in text.match_indices(&open) {
                let rest = &text[at + open.len()..];
                let value = rest[..rest.find('<').expect("closing tag")].trim();
                if value != "N/A" && !value.is_empty() {
                    found.push(value.to_owned());
                }
            }
        }
        for (at, _) in text.match_indices("<gpu id=\"") {
            let rest = &text[at + 9..];
            found.push(rest[..rest.find('"').expect("quote")].to_owned());
        }
        // Bus ids in the CSV and the table (`00000000:00:06.0`).
        for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == '|') {
            if word.len() == 16
                && word.as_bytes()[8] == b':'
                && word.ends_with(|c: char| c.is_ascii_digit())
            {
                found.push(word.to_owned());
            }
        }
        // `uname -a`: `Linux <hostname> <release> #...`.
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.len() > 3 && words[0] == "Linux" && words.iter().any(|w| w.starts_with('#')) {
                hostname = Some(words[1].to_owned());
            }
        }
    }
    found.sort();
    found.dedup();
    (found, hostname)
}

/// Whether `word` occurs in `text` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
        boundary(before) && boundary(after)
    })
}

#[test]
fn scan_output_holds_no_identifier_from_the_real_captures() {
    for dir in machine_dirs() {
        let (identifiers, hostname) = identifiers_in(&dir);
        assert!(
            identifiers.iter().any(|i| i.starts_with("GPU-")),
            "{dir:?}: the test found no UUID to look for"
        );
        assert!(identifiers.len() >= 4, "{dir:?}: {identifiers:?}");
        let d = dir.display().to_string();
        let json = pitfall(&["scan", "--from-dir", &d, "--format", "json"]);
        let text = pitfall(&["scan", "--from-dir", &d]);
        let mut outputs = vec![
            String::from_utf8(json.stdout).expect("utf-8"),
            String::from_utf8(text.stdout).expect("utf-8"),
        ];
        if dir.join("collect_env.txt").exists() {
            let paste = dir.join("collect_env.txt").display().to_string();
            outputs.push(
                String::from_utf8(
                    pitfall(&["scan", "--from-collect-env", &paste, "--format", "json"]).stdout,
                )
                .expect("utf-8"),
            );
        }
        for out in &outputs {
            assert!(out.len() > 100, "{dir:?}: {out}");
            for id in &identifiers {
                assert!(!out.contains(id.as_str()), "{dir:?}: {id} leaked:\n{out}");
            }
            if let Some(host) = &hostname {
                assert!(!has_word(out, host), "{dir:?}: host name {host:?} leaked:\n{out}");
            }
        }
    }
}

#[test]
fn scan_json_pipes_into_check() {
    for dir in machine_dirs() {
        let d = dir.display().to_string();
        let scan = pitfall(&[
            "scan",
            "--from-dir",
            &d,
            "--format",
            "json",
            "--model",
            "google/gemma-4-E2B-it",
            "--engine",
            "vllm",
        ]);
        assert_eq!(scan.status.code(), Some(0));
        let out = pitfall_with_stdin(&["check", "-", "--format", "json"], &scan.stdout);
        let code = out.status.code().expect("exit code");
        assert!(code == 0 || code == 1, "{d}: {code} {}", String::from_utf8_lossy(&out.stderr));
        let answer: Value = serde_json::from_slice(&out.stdout).expect("check answer");
        assert!(answer["rule_errors"].as_array().expect("rule_errors").is_empty(), "{answer}");
        assert!(answer["stats"]["rules_evaluated"].as_u64().expect("evaluated") > 0, "{answer}");
    }
}

#[test]
fn scan_writes_to_a_file_and_summarises_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("manifest.json");
    let d = machines().join("h200x2-nvlink").display().to_string();
    let out =
        pitfall(&["scan", "--from-dir", &d, "--format", "json", "-o", &file.display().to_string()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let (code, _) = check_json(&file.display().to_string());
    assert!(code == 0 || code == 1);
    let text = String::from_utf8(pitfall(&["scan", "--from-dir", &d]).stdout).expect("utf-8");
    assert!(
        text.contains("2 × nvidia H200 SXM (compute capability 9.0, 143771 MiB, nvlink)"),
        "{text}"
    );
}

#[test]
fn scan_bad_input_exits_2_naming_the_file_and_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| dir.path().join(name).display().to_string();
    let expect_2 = |args: &[&str], mentions: &[&str]| {
        let out = pitfall(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout on failure");
        for m in mentions {
            assert!(err.contains(m), "{args:?}: {m:?} not in {err}");
        }
    };
    expect_2(&["scan", "--from-dir", "/no/such/folder"], &["/no/such/folder"]);
    expect_2(
        &["scan", "--from-dir", &dir.path().display().to_string()],
        &["none of the capture files"],
    );

    let cases = [
        ("nvidia-smi-q.xml", "<nvidia_smi_log><gpu>", "not well-formed XML"),
        ("nvidia-smi-q.xml", "<html></html>", "not <nvidia_smi_log>"),
        ("nvidia-smi-query.csv", "index, memory.total\n0, 1 MiB\n", "no `name` column"),
        ("nvidia-smi-topo.txt", "NVIDIA-SMI has failed", "GPU0"),
        ("cpuinfo.txt", "hello", "/proc/cpuinfo"),
        ("os.txt", "hello", "os-release"),
        ("pip-list.json", "Package Version\n", "pip"),
        ("collect_env.txt", "Traceback (most recent call last):\n", "collect_env"),
    ];
    for (name, body, mentions) in cases {
        let case = tempfile::tempdir().expect("tempdir");
        std::fs::write(case.path().join(name), body).expect("written");
        let file = case.path().join(name).display().to_string();
        expect_2(&["scan", "--from-dir", &case.path().display().to_string()], &[&file, mentions]);
    }

    std::fs::write(path("paste.txt"), "just some text\n").expect("written");
    expect_2(&["scan", "--from-collect-env", &path("paste.txt")], &["paste.txt", "collect_env"]);
    expect_2(&["scan", "--from-collect-env", &path("missing.txt")], &["missing.txt"]);
    let d = machines().join("h200-x86_64").display().to_string();
    expect_2(
        &["scan", "--from-dir", &d, "--from-vllm-args", "vllm serve 'unclosed"],
        &["--from-vllm-args", "quote"],
    );
    expect_2(
        &["scan", "--from-dir", &d, "--from-vllm-args", "vllm serve m -tp two"],
        &["--tp", "two"],
    );
}

/// Writes `actual` to `golden` when blessing; otherwise notes a difference
/// from what `golden` holds.
fn compare_golden(
    golden: &std::path::Path,
    actual: &str,
    bless: bool,
    name: &str,
    mismatches: &mut String,
) {
    if bless {
        std::fs::write(golden, actual).expect("golden written");
        return;
    }
    let expected = std::fs::read_to_string(golden).unwrap_or_default();
    if expected != actual {
        mismatches.push_str(&format!("{name}:\n--- expected\n{expected}--- actual\n{actual}\n"));
    }
}

/// A reader that goes away (`pitfall check ... | head -1`) ends the command
/// the way it ends any Unix tool, with SIGPIPE's status and no panic. The
/// pipe is closed before the command writes anything, so its first write
/// fails whatever the timing.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let g5g = fixture("g5g-gemma4-vllm0271.json");
    let mut child = command()
        .args(["check", "--format", "json", "--batch"])
        .args(std::iter::repeat_n(g5g.as_str(), 10))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pitfall starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("pitfall ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

/// The catalogue lists every bundled rule once, sorted, each with the
/// component it is about, the date it was checked and its sources.
#[test]
fn catalogue_lists_every_bundled_rule_with_its_component_date_and_sources() {
    let out = pitfall(&["catalogue", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let catalogue: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rules = catalogue["rules"].as_array().expect("rules");
    let crates = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules"))
        .expect("rules/")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().join("rule.json").is_file()))
        .count();
    assert_eq!(rules.len(), crates, "one entry per rule crate");
    let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(ids, sorted, "sorted by id, each once");
    for r in rules {
        assert!(r["component"].is_string(), "{r}");
        assert!(r["checked"].as_str().is_some_and(|d| d.len() == 10), "{r}");
        assert!(!r["sources"].as_array().expect("sources").is_empty(), "{r}");
    }
    let text = pitfall(&["catalogue"]);
    let text = String::from_utf8(text.stdout).expect("utf-8");
    assert!(text.starts_with(&format!("{} rules (rule set ", rules.len())), "{text}");
    assert!(text.contains("vllm-torch-abi-mismatch"), "{text}");
}

/// `pitfall fix`: exit 0 with a plan (the serve line printed, the
/// constraints written, the patch a JSON object), 1 when only other
/// hardware clears the errors, 2 on bad input.
#[test]
fn fix_prints_the_plan_and_exits_by_what_it_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let constraints = dir.path().join("constraints.txt");
    let out = pitfall(&[
        "fix",
        &fixture("g5g-gemma4-vllm0271.json"),
        "--write-constraints",
        &constraints.display().to_string(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("a plan clears every error"), "{text}");
    assert!(text.contains("vllm serve google/gemma-4-E2B-it --dtype half"), "{text}");
    let written = std::fs::read_to_string(&constraints).expect("constraints written");
    assert!(written.lines().any(|l| l.starts_with("vllm==")), "{written}");

    let patch = pitfall(&["fix", &fixture("g5g-gemma4-vllm0271.json"), "--format", "patch"]);
    let patch: Value = serde_json::from_slice(&patch.stdout).expect("the patch is JSON");
    assert_eq!(patch["container"]["ipc"], "host", "{patch}");

    let a6000 = pitfall(&["fix", &fixture("a6000-llama70b-single.json")]);
    let text = String::from_utf8_lossy(&a6000.stdout);
    assert_eq!(a6000.status.code(), Some(1), "{text}");
    assert!(text.contains("Or, on other hardware"), "{text}");

    let bad = pitfall_with_stdin(&["fix", "-"], br#"{"manifest_version": 2}"#);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("manifest_version"));
}

/// A real report's excerpt (`tests/reports/NAME/error.txt`).
fn report(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/reports")
        .join(name)
        .join("error.txt")
        .display()
        .to_string()
}

#[test]
fn explain_names_the_cause_of_a_real_log_and_exits_1() {
    let out = pitfall(&["explain", &report("vllm-14817"), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    let first = &answer["causes"][0];
    assert_eq!(first["rule_id"], "vllm-bf16-needs-sm80", "{answer}");
    assert!(first["matched"].as_str().expect("matched").contains("Your Tesla T4 GPU"));
    assert_eq!(first["lines"], serde_json::json!([6]));
    assert!(first["finding"]["remedies"].as_array().is_some_and(|r| !r.is_empty()));

    // The text form, from standard input.
    let log = std::fs::read(report("vllm-14817")).expect("report");
    let out = pitfall_with_stdin(&["explain", "-"], &log);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1. vLLM refuses bfloat16"), "{text}");
    assert!(text.contains("line 6: ValueError: Bfloat16"), "{text}");
    assert!(text.contains("fix 1:"), "{text}");
}

#[test]
fn explain_with_a_manifest_says_whether_the_setup_has_it() {
    let out = pitfall(&[
        "explain",
        &report("vllm-14817"),
        "--manifest",
        &fixture("g5g-gemma4-vllm0271.json"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["manifest_checked"], true);
    let first = &answer["causes"][0];
    assert!(first["outcome"].is_string(), "{answer}");
}

#[test]
fn explain_exits_0_on_an_unrelated_log_and_2_on_bad_input() {
    let out = pitfall(&["explain", &report("cdial-gpt-103")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("No known breakage matches this log"));
    let out = pitfall_with_stdin(&["explain", "-"], b"  \n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the log is empty"));
    let out = pitfall(&["explain", "/no/such/log.txt"]);
    assert_eq!(out.status.code(), Some(2));
    let out = pitfall(&["explain", &report("vllm-14817"), "--manifest", &report("vllm-14817")]);
    assert_eq!(out.status.code(), Some(2), "a log is not a manifest");
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid manifest"));
}
