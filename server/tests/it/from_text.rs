//! `POST /v1/manifest/from-text` over HTTP against a real server process:
//! a real SGLang paste (cut short) with its serve command becomes a
//! manifest that `POST /v1/check` accepts, a prose paste with a vLLM log
//! gives the facts of both, what the paste lacked is named,
//! texts it cannot read are named in the answer's notes, bad bodies get
//! the error envelope, and no identifier of the paste
//! (GPU UUID, host and user name, IP address) is in the answer or the log.

use serde_json::{Value, json};

use crate::live::Server;

fn corpus(report: &str, file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/reports")
        .join(report)
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn post(server: &Server, body: &Value) -> (u16, Value) {
    server.call("POST", "/v1/manifest/from-text", None, body.to_string().as_bytes())
}

#[test]
fn a_real_paste_and_serve_command_become_a_checked_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, true);

    // sgl-project/sglang#4814: 8 × RTX 4090, cut at `CUDA Driver Version: 550.`.
    let paste = corpus("sglang-4814", "env.txt");
    let serve = corpus("sglang-4814", "serve.txt");
    let (status, answer) = post(&server, &json!({ "env": paste, "serve_command": serve }));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["formats"], json!(["sglang-check-env"]));
    let manifest = &answer["manifest"];
    assert_eq!(manifest["accelerators"][0]["count"], 8);
    assert_eq!(manifest["accelerators"][0]["compute_capability"], "8.9");
    assert_eq!(manifest["workload"]["engine"], "sglang");
    assert_eq!(manifest["workload"]["tensor_parallel_size"], 2);
    let missing: Vec<&str> = answer["missing"]
        .as_array()
        .expect("missing")
        .iter()
        .filter_map(|m| m["path"].as_str())
        .collect();
    assert!(missing.contains(&"drivers.nvidia"), "the driver was cut off: {missing:?}");
    assert!(missing.contains(&"packages.torch"), "{missing:?}");
    assert!(
        !missing.contains(&"accelerators") && !missing.contains(&"workload.model"),
        "{missing:?}"
    );
    assert!(answer["notes"][0].as_str().is_some_and(|n| n.contains("mid-line")), "{answer}");

    // The manifest is what `POST /v1/check` takes.
    let (status, checked) = server.call("POST", "/v1/check", None, manifest.to_string().as_bytes());
    assert_eq!(status, 200, "{checked}");
    assert!(checked["findings"].is_array(), "{checked}");

    // A serve command alone is a manifest of the workload.
    let (status, alone) =
        post(&server, &json!({ "serve_command": "vllm serve Qwen/Qwen1.5-32B-Chat -tp 6" }));
    assert_eq!(status, 200, "{alone}");
    assert_eq!(alone["manifest"]["workload"]["tensor_parallel_size"], 6);
    assert_eq!(alone["formats"], json!([]));

    // TGI issue 398's "environment" is a sentence; vLLM issue 11560's log
    // states the engine's release and workload.
    let prose = corpus("tgi-398", "env.txt");
    let log = corpus("vllm-11560", "env.txt");
    let (status, both) = post(&server, &json!({ "env": prose, "log": log }));
    assert_eq!(status, 200, "{both}");
    assert_eq!(both["formats"], json!(["prose", "vllm-log"]), "{both}");
    assert_eq!(both["manifest"]["accelerators"][0]["model"], "V100");
    assert_eq!(both["manifest"]["workload"]["max_model_len"], 32768);
    let vllm = both["manifest"]["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "vllm");
    assert_eq!(vllm.expect("vllm from the log")["version"], "0.6.4");
}

#[test]
fn texts_it_cannot_read_are_named_and_bad_bodies_get_the_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, false);
    // Any text gets an answer: what could not be read is said in the notes.
    let cases: [(&[u8], &str); 3] = [
        (br#"{"env": ""}"#, "nothing was given"),
        (
            br#"{"env": "Traceback (most recent call last):\n  File x\n"}"#,
            "no line of a known environment report",
        ),
        (
            br#"{"env": "", "serve_command": "vllm serve 'unclosed"}"#,
            "the serve command was not read",
        ),
    ];
    for (body, note) in cases {
        let (status, answer) = server.call("POST", "/v1/manifest/from-text", None, body);
        assert_eq!(status, 200, "{answer}");
        assert!(answer["notes"].to_string().contains(note), "{note}: {answer}");
        assert_eq!(answer["manifest"]["manifest_version"], 1);
        assert!(!answer["missing"].as_array().expect("missing").is_empty());
    }
    let bad: [(&[u8], u16, &str); 2] = [
        (b"not json", 400, "invalid_json"),
        (br#"{"env": "", "serve": "vllm serve m"}"#, 400, "invalid_json"),
    ];
    for (body, status, code) in bad {
        let (got, answer) = server.call("POST", "/v1/manifest/from-text", None, body);
        assert_eq!((got, answer["error"]["code"].as_str()), (status, Some(code)), "{answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let huge = json!({ "env": "x".repeat(300 << 10) }).to_string();
    let (got, answer) = server.call("POST", "/v1/manifest/from-text", None, huge.as_bytes());
    assert_eq!((got, answer["error"]["code"].as_str()), (413, Some("body_too_large")), "{answer}");
}

#[test]
fn no_identifier_of_a_paste_reaches_the_answer_or_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, false);
    let secrets = [
        "GPU-d0b2b12b-a223-ad5a-6661-e65ffde8f84b",
        "00000000:3F:00.0",
        "brando9",
        "skampere1",
        "10.20.30.40",
    ];
    let paste = format!(
        "(base) brando9@skampere1:~$ python3 -m sglang.check_env\n\
         Python: 3.11.11 (main, Dec 11 2024, 16:28:39) [GCC 11.2.0]\n\
         GPU 0: NVIDIA A100-SXM4-80GB (UUID: {})\n\
         GPU 0 Compute Capability: 8.0\n\
         CUDA Driver Version: 535.54.03\n\
         PyTorch: 2.5.1+cu124\n\
         sglang: 0.4.5\n\
         |   0  NVIDIA A100-SXM4-80GB          Off | {} Off |                    0 |\n\
         NCCL_SOCKET_IFNAME=eth0\n\
         NCCL_COMM_ID={}:29500\n\
         VLLM_HOST_IP={}\n",
        secrets[0], secrets[1], secrets[4], secrets[4]
    );
    let (status, answer) = post(
        &server,
        &json!({ "env": paste, "serve_command": "python3 -m sglang.launch_server --model-path /home/brando9/models/llama --host 10.20.30.40" }),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["manifest"]["drivers"]["nvidia"], "535.54.03");
    assert_eq!(answer["manifest"]["env"]["NCCL_SOCKET_IFNAME"], "eth0");
    let text = answer.to_string();
    let log = server.log();
    for secret in secrets {
        assert!(!text.contains(secret), "{secret} in the answer: {text}");
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
}
