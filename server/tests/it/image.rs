//! The container image under podman (`cargo xtask test --image` builds
//! the images and runs these; a plain `cargo test` skips them, as they
//! need podman and the images): the server image runs as a non-root user
//! on its `/data` volume, reports healthy, checks the G5g fixture over
//! HTTP through a published port, and `podman stop` (SIGTERM) under load
//! cuts no request and exits 0.
//!
//! podman runs with the flags this machine kind needs (`--runtime runc
//! --cgroup-manager=cgroupfs`, explicit ulimits), as `xtask` runs it.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::drain::{Got, Load, SlowCheck, assert_nothing_cut, logged_request_ids};
use crate::live::exchange;

/// Where `cargo xtask test --image` says the server image is.
fn server_image() -> String {
    std::env::var("PITFALL_SERVER_IMAGE")
        .expect("PITFALL_SERVER_IMAGE names the image: run `cargo xtask test --image`")
}

fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(["--runtime", "runc", "--cgroup-manager=cgroupfs"])
        .args(args)
        .output()
        .expect("run podman")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A container removed when dropped.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", "--volumes", "--time", "0", &self.0]);
    }
}

impl Container {
    fn logs(&self) -> String {
        text(&podman(&["logs", &self.0]))
    }

    fn exec(&self, command: &[&str]) -> String {
        let mut args = vec!["exec", self.0.as_str()];
        args.extend_from_slice(command);
        let output = podman(&args);
        assert!(output.status.success(), "{command:?}: {}", text(&output));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn g5g() -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

/// Waits until `GET /readyz` answers 200 at `addr`.
fn wait_ready(addr: std::net::SocketAddr, container: &Container) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if pitfall_server::probe::ready(addr).is_ok() {
            return;
        }
        assert!(Instant::now() < deadline, "not ready in 180 s; its log:\n{}", container.logs());
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
#[ignore = "needs podman and the image: cargo xtask test --image"]
fn image_runs_unprivileged_checks_g5g_and_drains_on_sigterm() {
    let image = server_image();
    let name = format!("pitfall-image-test-{}", std::process::id());
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:8080");
    let started = podman(&[
        "run",
        "--detach",
        "--name",
        &name,
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=1024:1024",
        "--publish",
        &publish,
        "--env",
        "PITFALL_RATE_CHECK_PER_IP=0",
        "--env",
        "PITFALL_SHUTDOWN_TIMEOUT_MS=20000",
        &image,
    ]);
    assert!(started.status.success(), "{}", text(&started));
    let container = Container(name.clone());
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    wait_ready(addr, &container);

    // Not root; its state on the volume, which only it can read.
    assert_eq!(container.exec(&["id", "-u"]), "10001");
    assert_eq!(container.exec(&["stat", "-c", "%u %a", "/data"]), "10001 700");
    assert!(container.exec(&["ls", "/data"]).contains("pitfall.db"));
    // The image's HEALTHCHECK (`pitfall-server probe`) passes.
    let health = podman(&["healthcheck", "run", &name]);
    assert!(health.status.success(), "healthcheck: {}", text(&health));

    // The G5g machine over HTTP, with the bundled rules.
    let body = g5g();
    let (status, answer) = exchange(addr, "POST", "/v1/check", &[], &body);
    assert_eq!(status, 200);
    let answer: serde_json::Value = serde_json::from_slice(&answer).expect("json");
    let ids: Vec<&str> = answer["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule_id"].as_str())
        .collect();
    for id in [
        "aarch64-official-image-needs-sm80",
        "vllm-bf16-needs-sm80",
        "gemma4-transformers-5-15-breaks-vllm",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }

    // `podman stop` sends the image's STOPSIGNAL (SIGTERM) mid-load.
    let slow = SlowCheck::start(addr, &body, "image-slow-check");
    let load = Load::start(addr, 3, &body, "image-load");
    std::thread::sleep(Duration::from_millis(700));
    let signalled = Instant::now();
    let stopper = {
        let name = name.clone();
        std::thread::spawn(move || podman(&["stop", "--time", "40", &name]))
    };
    std::thread::sleep(Duration::from_millis(300));
    let got = slow.finish();
    assert!(
        matches!(&got, Got::Answered { status: 200, closed: true, request_id: Some(id) } if id == "image-slow-check"),
        "{got:?}\n{}",
        container.logs()
    );
    let outcomes = load.finish(Duration::from_secs(60));
    let stopped = stopper.join().expect("podman stop");
    assert!(stopped.status.success(), "{}", text(&stopped));
    let stop_took = signalled.elapsed();
    let exit = podman(&["inspect", "--format", "{{.State.ExitCode}}", &name]);
    let log = container.logs();
    assert_eq!(String::from_utf8_lossy(&exit.stdout).trim(), "0", "{log}");
    let tally = assert_nothing_cut(&outcomes, &logged_request_ids(&log), signalled);
    eprintln!("{tally:?}; podman stop took {stop_took:?}");
    assert!(tally.answered > 10, "{tally:?}");
    assert!(log.contains("drained"), "{log}");
    assert!(
        stop_took < Duration::from_secs(20),
        "SIGTERM took {stop_took:?}: not a drain but a kill"
    );
}

/// `compose.yaml`'s project, taken down (volumes too) when dropped.
struct Project {
    name: String,
    password: String,
}

impl Project {
    fn compose(&self, args: &[&str]) -> Output {
        Command::new("podman-compose")
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .env("POSTGRES_PASSWORD", &self.password)
            .args(["--podman-args=--runtime runc --cgroup-manager=cgroupfs", "-p", &self.name])
            .args(["-f", "compose.yaml"])
            .args(args)
            .output()
            .expect("run podman-compose")
    }

    fn logs(&self, service: &str) -> String {
        text(&podman(&["logs", &format!("{}_{service}_1", self.name)]))
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.compose(&["down", "-v", "-t", "0"]);
    }
}

#[test]
#[ignore = "needs podman, podman-compose and the images: cargo xtask test --image"]
fn compose_runs_two_replicas_on_postgres_with_one_signing_key() {
    let _ = server_image();
    let project = Project {
        name: format!("pitfall-compose-test-{}", std::process::id()),
        password: format!("pw{:x}", std::process::id() as u64 * 7919 + 17),
    };
    let up = project.compose(&["up", "-d"]);
    assert!(up.status.success(), "{}", text(&up));
    let replicas: Vec<std::net::SocketAddr> =
        ["127.0.0.1:8081", "127.0.0.1:8082"].iter().map(|a| a.parse().expect("addr")).collect();
    let deadline = Instant::now() + Duration::from_secs(240);
    for (addr, service) in replicas.iter().zip(["server-a", "server-b"]) {
        while pitfall_server::probe::ready(*addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "{service} not ready in 240 s:\n{}\npostgres:\n{}",
                project.logs(service),
                project.logs("postgres")
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    // keygen printed the one key's public half; both replicas sign with it.
    let pinned: pitfall_api::PublicKey = project
        .logs("keygen")
        .lines()
        .find(|l| l.starts_with("ed25519:"))
        .expect("keygen printed the public key")
        .trim()
        .parse()
        .expect("a public key");
    // secret-keygen made the one watch secret key the replicas read, and
    // printed where, not what.
    let made = project.logs("secret-keygen");
    assert!(made.contains("/data/watch-secret-key"), "{made}");
    let body = g5g();
    let mut bundles = Vec::new();
    for addr in &replicas {
        // Both seeded one registry: the bundled rules, one revision.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, answer) = exchange(*addr, "POST", "/v1/check", &[], &body);
            assert_eq!(status, 200);
            let answer: serde_json::Value = serde_json::from_slice(&answer).expect("json");
            let found = answer["findings"].as_array().is_some_and(|f| {
                f.iter().any(|f| f["rule_id"] == "gemma4-transformers-5-15-breaks-vllm")
            });
            if found {
                break;
            }
            assert!(Instant::now() < deadline, "{addr}: {answer}");
            std::thread::sleep(Duration::from_millis(500));
        }
        let (status, bundle) = exchange(*addr, "GET", "/v1/bundle", &[], b"");
        assert_eq!(status, 200);
        pitfall_api::Bundle::verify(&bundle, &pinned).expect("verifies with keygen's key");
        bundles.push(bundle);
    }
    let (_, health_a) = exchange(replicas[0], "GET", "/healthz", &[], b"");
    let (_, health_b) = exchange(replicas[1], "GET", "/healthz", &[], b"");
    let revision = |h: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(h).expect("json")["ruleset_revision"].clone()
    };
    assert_eq!(revision(&health_a), revision(&health_b), "one registry, one revision");
    // JSON logs, the access lines among them.
    let log = project.logs("server-a");
    assert!(
        log.lines().any(|l| l.starts_with('{') && l.contains("\"pitfall_server::access\"")),
        "{log}"
    );
}
