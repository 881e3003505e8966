//! schemathesis (pinned, from PyPI) against a real server's
//! `/v1/openapi.json`, with every check: no server error, every answer
//! conforms to the schema, schema-valid requests are accepted and invalid
//! ones refused. Bounded examples, so the run takes a minute or two.
//!
//! schemathesis lives in a virtualenv under `target/schemathesis`, which
//! `cargo xtask setup` creates (and this test does on first run, when
//! python3 and PyPI are reachable).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::live::{RATE_LIMITS_OFF, Server};

/// The schemathesis release these checks were written against.
const SCHEMATHESIS_VERSION: &str = "4.32.5";

fn venv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/schemathesis")
}

/// The `schemathesis` executable, installed into the venv if missing.
fn schemathesis() -> PathBuf {
    let venv = venv();
    let exe = venv.join("bin/schemathesis");
    let version_ok = Command::new(&exe)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(SCHEMATHESIS_VERSION));
    if !version_ok {
        let status = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(&venv)
            .status()
            .expect("python3 -m venv (install python3 and python3-venv)");
        assert!(status.success(), "python3 -m venv {} failed", venv.display());
        let status = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", &format!("schemathesis=={SCHEMATHESIS_VERSION}")])
            .status()
            .expect("pip");
        assert!(
            status.success(),
            "pip install schemathesis=={SCHEMATHESIS_VERSION} failed (is PyPI reachable?)"
        );
    }
    exe
}

#[test]
fn schemathesis_finds_no_server_error_and_no_schema_violation() {
    let exe = schemathesis();
    let dir = tempfile::tempdir().expect("tempdir");
    let token = crate::processes::admin_token(dir.path(), None, "root", "admin");
    let server = Server::start_with_vars(dir.path(), None, true, &RATE_LIMITS_OFF);
    let url = format!("http://{}/v1/openapi.json", server.addr);
    let report = dir.path().join("schemathesis");
    let output = Command::new(&exe)
        .current_dir(dir.path())
        .args([
            "run",
            &url,
            "--checks",
            "all",
            "--max-examples",
            "50",
            "--workers",
            "1",
            "--seed",
            "1",
        ])
        // Publishing needs a real module, which the schema cannot describe
        // (the hostile-module corpus and the publish tests cover it).
        .args(["--exclude-operation-id", "post_v1_rules"])
        .args(["--max-time", "100"])
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .env("NO_COLOR", "1")
        .env("HOME", &report)
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: String = stdout
        .lines()
        .rev()
        .take(30)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    eprintln!("{summary}");
    assert!(
        output.status.success(),
        "schemathesis failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !server.log().contains("internal error"),
        "the server logged an internal error:\n{}",
        server.log()
    );
}
