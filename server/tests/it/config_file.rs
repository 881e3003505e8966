//! The config file on the real binary: `config check` says valid or names
//! the problem with exit 2, and a server started with `--config` takes the
//! file's settings under the environment's and the flags'.

use std::process::Command;

use crate::live::{SERVER, Server};

fn check(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("server.toml");
    std::fs::write(&file, text).expect("write");
    let output = Command::new(SERVER)
        .args(["config", "check"])
        .arg(&file)
        .env_remove("PITFALL_MAX_BATCH")
        .output()
        .expect("run config check");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), said)
}

#[test]
fn config_check_says_valid_or_names_the_file_and_the_key_with_exit_2() {
    let (code, said) = check("listen = \"0.0.0.0:8080\"\nmax-batch = 64\nlog-format = \"json\"\n");
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("valid (3 settings)"), "{said}");
    for (text, expected) in [
        ("max-batch = -1\n", "max-batch"),
        ("max-bach = 64\n", "unknown setting `max-bach`"),
        ("listen = \"not an address\"\n", "listen"),
        ("[server]\nlisten = 1\n", "unknown setting `server`"),
        ("listen = { port = 80 }\n", "`listen` is not a string, an integer or a boolean"),
        ("listen = \"0.0.0.0:80\"\nlisten = \"x\"\n", "not TOML"),
    ] {
        let (code, said) = check(text);
        assert_eq!(code, Some(2), "{text}: {said}");
        assert!(said.contains("config file") && said.contains(expected), "{text}: {said}");
    }
}

#[test]
fn a_server_takes_the_files_settings_under_the_environments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("server.toml");
    std::fs::write(&file, "max-batch = 3\nmax-manifest-bytes = 70000\n").expect("write");
    let config = [
        ("PITFALL_CONFIG", file.display().to_string()),
        ("PITFALL_MAX_MANIFEST_BYTES", "90000".to_owned()),
    ];
    let server = Server::start_with_vars(dir.path(), None, false, &config);
    let (status, limits) = server.call("GET", "/v1/limits", None, b"");
    assert_eq!(status, 200);
    assert_eq!(limits["max_batch"], 3, "the file's value: {limits}");
    assert_eq!(limits["max_manifest_bytes"], 90000, "the environment wins: {limits}");
}
