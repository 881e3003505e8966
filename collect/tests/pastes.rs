//! Golden tests over real pastes (tests/pastes/README.md names each
//! one's issue): every format the collector reads, whole and cut short,
//! each with what it must recognise, and no identifier of the paste in the
//! manifest. `PITFALL_BLESS=1` rewrites the expected files.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn pastes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pastes")
}

/// What a folder's texts become, as the golden file holds it.
fn outcome(dir: &Path) -> Value {
    let paste = std::fs::read_to_string(dir.join("paste.txt")).expect("paste.txt");
    let serve = std::fs::read_to_string(dir.join("serve.txt")).ok();
    let scan = pitfall_collect::from_text(&paste, serve.as_deref())
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let missing: Vec<&str> =
        pitfall_collect::missing(&scan.manifest).iter().map(|m| m.path).collect();
    json!({
        "formats": scan.formats.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "missing": missing,
        "notes": scan.notes,
        "manifest": scan.manifest,
    })
}

/// Identifiers in a paste: `GPU-` UUIDs, PCI bus ids, and the user and
/// host of `user@host` prompts.
fn identifiers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || matches!(c, '|' | '(' | ')' | ',')) {
        let word = word.trim_matches(|c: char| c == ':' || c == '$' || c == '~');
        let bus_id = word.len() >= 12
            && word.matches(':').count() == 2
            && word.contains('.')
            && word.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        if word.starts_with("GPU-") || bus_id {
            found.push(word.to_owned());
        }
        if let Some((user, host)) = word.split_once('@')
            && !user.is_empty()
            && !host.is_empty()
            && !host.contains('.')
        {
            let host = host.split([':', '~']).next().unwrap_or_default();
            found.extend([user.to_owned(), host.to_owned()].into_iter().filter(|w| w != "root"));
        }
    }
    found
}

#[test]
fn every_real_paste_reads_as_its_golden_file_says() {
    let bless = std::env::var_os("PITFALL_BLESS").is_some();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(pastes())
        .expect("tests/pastes")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 8, "one paste per format at least: {dirs:?}");
    let mut mismatches = Vec::new();
    for dir in &dirs {
        let actual = outcome(dir);
        let golden = dir.join("expected.json");
        let text = format!("{}\n", serde_json::to_string_pretty(&actual).expect("json"));
        if bless {
            std::fs::write(&golden, &text).expect("written");
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != text {
            mismatches.push(format!("{}:\n{text}", dir.display()));
        }
    }
    assert!(
        mismatches.is_empty(),
        "pastes read differently (PITFALL_BLESS=1 to accept):\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn each_format_is_recognised_in_its_paste() {
    for (dir, format) in [
        ("torch-collect-env", "torch-collect-env"),
        ("vllm-collect-env", "vllm-collect-env"),
        ("sglang-check-env", "sglang-check-env"),
        ("sglang-check-env-cut-short", "sglang-check-env"),
        ("tgi-env", "tgi-env"),
        ("tgi-env", "nvidia-smi"),
        ("nvidia-smi", "nvidia-smi"),
        ("nvidia-smi-q", "nvidia-smi-q"),
        ("prose", "prose"),
        ("vllm-log", "vllm-log"),
    ] {
        let out = outcome(&pastes().join(dir));
        let formats = out["formats"].as_array().expect("formats");
        assert!(formats.iter().any(|f| f == format), "{dir}: {formats:?}");
    }
}

#[test]
fn the_facts_of_each_paste() {
    let sglang = outcome(&pastes().join("sglang-check-env"));
    let m = &sglang["manifest"];
    // check_env lists one device (`GPU 0`); the topology shows the machine's eight.
    assert_eq!(m["accelerators"][0]["count"], 1);
    assert_eq!(m["accelerators"][0]["compute_capability"], "8.0");
    assert_eq!(m["drivers"]["nvidia"], "535.54.03");
    assert_eq!(m["build"]["tools"]["nvcc"], "11.7.64");
    let names: Vec<&str> = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in ["torch", "sglang", "transformers", "python", "flashinfer"] {
        assert_eq!(
            names.contains(&name),
            name != "flashinfer",
            "{name}: {names:?} (flashinfer: Module Not Found)"
        );
    }

    let cut = outcome(&pastes().join("sglang-check-env-cut-short"));
    assert_eq!(cut["manifest"]["accelerators"][0]["count"], 8);
    assert!(cut["manifest"]["drivers"].get("nvidia").is_none(), "`550.` is half a version");
    assert!(cut["notes"][0].as_str().expect("note").contains("mid-line"), "{}", cut["notes"]);
    assert!(cut["missing"].as_array().expect("missing").iter().any(|p| p == "drivers.nvidia"));
    assert_eq!(cut["manifest"]["workload"]["engine"], "sglang");
    assert_eq!(cut["manifest"]["workload"]["tensor_parallel_size"], 2);

    let prose = outcome(&pastes().join("prose"));
    assert_eq!(prose["manifest"]["accelerators"][0]["model"], "V100");
    assert!(prose["manifest"].get("drivers").is_none(), "`my cuda is 12.0` says which CUDA?");

    let log = outcome(&pastes().join("vllm-log"));
    let w = &log["manifest"]["workload"];
    assert_eq!((w["engine"].as_str(), w["dtype"].as_str()), (Some("vllm"), Some("bfloat16")));
    assert_eq!(
        (w["max_model_len"].as_u64(), w["tensor_parallel_size"].as_u64()),
        (Some(32768), Some(1))
    );
    let vllm = log["manifest"]["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "vllm");
    assert_eq!(vllm.expect("vllm")["version"], "0.6.4");

    let smi = outcome(&pastes().join("nvidia-smi"));
    let gpus = smi["manifest"]["accelerators"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2, "an A100 and a P100: {gpus:?}");
    assert_eq!(smi["manifest"]["drivers"]["cuda_driver"], "12.2");
    assert_eq!(gpus[1]["memory_mib"], 16384);

    let tgi = outcome(&pastes().join("tgi-env-docker-run"));
    assert_eq!(tgi["manifest"]["host"]["arch"], "x86_64");
    assert_eq!(tgi["manifest"]["container"]["shm_size_mib"], 1024);
    assert_eq!(tgi["manifest"]["workload"]["engine"], "tgi");
    assert_eq!(tgi["manifest"]["workload"]["model"], "HuggingFaceH4/zephyr-7b-beta");
    assert_eq!(
        tgi["manifest"]["container"]["image"],
        "ghcr.io/huggingface/text-generation-inference:2.0.4"
    );

    let v100s = outcome(&pastes().join("tgi-env"));
    assert_eq!(v100s["manifest"]["accelerators"][0]["count"], 2);
    // nvidia-smi printed `Tesla V100S-PCI...`: the cut word goes, and what
    // is left (`Tesla V100S`) is the hardware table's one V100S variant.
    assert_eq!(v100s["manifest"]["accelerators"][0]["model"], "V100S 32GB");

    let torch = outcome(&pastes().join("torch-collect-env"));
    assert!(
        torch["manifest"]["host"].get("arch").is_none(),
        "`CentOS Linux 7 (Core)` names no machine"
    );
    assert_eq!(torch["manifest"]["drivers"]["cuda_runtime"], "10.2");

    let q = outcome(&pastes().join("nvidia-smi-q"));
    assert_eq!(
        q["manifest"]["accelerators"][0]["model"].as_str().map(|s| s.contains("2060")),
        Some(true)
    );
    assert_eq!(q["manifest"]["drivers"]["nvidia"], "525.78.01");
}

#[test]
fn a_cut_line_is_quoted_without_its_identifiers() {
    let scan = pitfall_collect::from_text(
        "(env) alice@gpu-box:~$ python3 -m sglang.check_env\nCUDA available: True\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-aaaa-bbbb-cccc-0123456789ab) on gpu-box:",
        None,
    )
    .expect("read");
    let notes = scan.notes.join("\n");
    assert!(notes.contains("mid-line"), "{notes}");
    for id in ["GPU-0a1b2c3d", "gpu-box", "alice"] {
        assert!(!notes.contains(id), "{id} quoted: {notes}");
    }
}

#[test]
fn no_identifier_of_a_paste_reaches_its_manifest() {
    let mut checked = 0;
    for entry in std::fs::read_dir(pastes()).expect("tests/pastes").flatten() {
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let paste = std::fs::read_to_string(dir.join("paste.txt")).expect("paste");
        let ids = identifiers(&paste);
        let out = outcome(&dir).to_string();
        for id in &ids {
            assert!(!out.contains(id.as_str()), "{}: {id} leaked:\n{out}", dir.display());
            checked += 1;
        }
    }
    assert!(checked >= 6, "the pastes hold UUIDs, bus ids and prompts to look for ({checked})");
}
