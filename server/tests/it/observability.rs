//! `/metrics` on a real server after real checks: the per-check
//! histograms, the process's own metrics, and the content type.

use crate::live::{RATE_LIMITS_OFF, Server, exchange};

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} missing from\n{text}"))
        .trim()
        .parse()
        .expect("a number")
}

#[test]
fn checks_fill_the_check_histograms_and_the_process_reports_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with_vars(dir.path(), None, true, &RATE_LIMITS_OFF);
    let g5g = std::fs::read(format!(
        "{}/../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture");
    let mut renamed: serde_json::Value = serde_json::from_slice(&g5g).expect("json");
    renamed["host"]["hostname"] = serde_json::json!("another-g5g");
    // The first check runs its candidates in the sandbox; the same machine
    // under another name is new to the result cache and replays them all
    // from the memo; the first text again is a cache hit, not a check.
    for body in [g5g.clone(), renamed.to_string().into_bytes(), g5g] {
        assert_eq!(server.call("POST", "/v1/check", None, &body).0, 200);
    }
    let mut stream = std::net::TcpStream::connect(server.addr).expect("connect");
    let head = "GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    std::io::Write::write_all(&mut stream, head.as_bytes()).expect("write");
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).expect("read");
    let (head, _) = answer.split_once("\r\n\r\n").expect("a head");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    let (_, body) = exchange(server.addr, "GET", "/metrics", &[], b"");
    let body = String::from_utf8(body).expect("utf-8");
    assert_eq!(metric(&body, "pitfall_check_duration_seconds_count"), 2.0);
    assert_eq!(metric(&body, "pitfall_check_rules_evaluated_count"), 2.0);
    assert!(metric(&body, "pitfall_check_rules_evaluated_sum") >= 6.0, "{body}");
    assert_eq!(metric(&body, "pitfall_check_memo_hit_ratio_count"), 2.0);
    // The replayed check answered everything from the memo (ratio 1), the
    // first nothing (ratio 0).
    assert_eq!(metric(&body, "pitfall_check_memo_hit_ratio_sum"), 1.0, "{body}");
    assert_eq!(metric(&body, "pitfall_check_cache_hits_total"), 1.0);
    assert!(metric(&body, "process_resident_memory_bytes") > f64::from(1u32 << 20));
    assert!(metric(&body, "process_open_fds") >= 3.0);
    assert!(metric(&body, "process_max_fds") >= metric(&body, "process_open_fds"));
    assert!(metric(&body, "process_cpu_seconds_total") > 0.0);
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
}
