//! `explain` of a 200-line log against 10,000 rules' signatures: the bench
//! corpus's form of synthetic signature (`SyntheticError: breakage N in
//! PKG`, one per rule, as `pitfall-bench`'s corpus writes them) and every
//! bundled rule's real templates. Run in release:
//! `cargo run --release -p pitfall-explain --example explain_bench`.
//! (`pitfall-bench --sections explain` measures the same next to a check
//! on the same rule set.)

use std::hint::black_box;
use std::time::Instant;

use pitfall_contract::meta::RuleMeta;
use pitfall_explain::Explainer;

/// Registry sizes: the cost must not grow with them.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const ROUNDS: usize = 2_000;

fn synthetic(n: usize) -> RuleMeta {
    let pkg = format!("pkg{:04}", n % 1_500);
    serde_json::from_value(serde_json::json!({
        "id": format!("synthetic-{n:05}"),
        "version": "1.0.0",
        "title": format!("{pkg} breakage {n} (synthetic)"),
        "severity": "error",
        "summary": format!("Releases of {pkg} fail (synthetic)."),
        "message": format!("{pkg} {{version}} is in the affected range."),
        "applies_to": [format!("package:{pkg}")],
        "error_signatures": [format!("SyntheticError: breakage {n} in {pkg}")],
        "remedies": [],
        "references": [],
        "author": "pitfall-bench",
    }))
    .expect("a synthetic rule")
}

fn main() {
    for size in SIZES {
        measure(size);
    }
}

fn measure(synthetic_rules: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut rules: Vec<RuleMeta> = (0..synthetic_rules).map(synthetic).collect();
    for entry in std::fs::read_dir(root.join("rules")).into_iter().flatten().flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path().join("rule.json")) {
            rules.push(serde_json::from_str(&text).expect("rule.json"));
        }
    }
    let start = Instant::now();
    let explainer = Explainer::new(rules.iter());
    let build_ms = start.elapsed().as_secs_f64() * 1e3;

    // A real vLLM failure padded with a server's start-up lines to 200.
    let real =
        std::fs::read_to_string(root.join("tests/reports/vllm-14817/error.txt")).expect("report");
    let mut lines: Vec<String> = (0..200 - real.lines().count() - 1)
        .map(|i| {
            format!(
                "(VllmWorker rank={} pid={}) INFO 03-14 20:19:{:02} [loader.py:{}] Loading safetensors checkpoint shard {} of 48: {:.2} GiB in {:.3} s",
                i % 4,
                17397 + i % 4,
                i % 60,
                100 + i,
                i + 1,
                0.5 + i as f64 * 0.01,
                1.0 + i as f64 * 0.003
            )
        })
        .collect();
    let n = synthetic_rules / 2;
    lines.push(format!("SyntheticError: breakage {n} in pkg{:04}", n % 1_500));
    lines.extend(real.lines().map(str::to_owned));
    let log = lines.join("\n");

    let first = explainer.explain(&log);
    let mut times: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            black_box(explainer.explain(black_box(&log)));
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let q = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    println!(
        "explain rules={} signatures={} log_lines={} causes={} top={} build_ms={:.1} p50_us={:.1} p99_us={:.1} max_us={:.1}",
        rules.len(),
        explainer.signatures(),
        log.lines().count(),
        first.causes.len(),
        first.causes.first().map_or("-", |c| c.rule_id.as_str()),
        build_ms,
        q(0.5),
        q(0.99),
        q(1.0)
    );
}
