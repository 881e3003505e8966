//! Prometheus metrics at `GET /metrics`, kept with `prometheus-client` and
//! rendered in its text format. Every label comes from a fixed set: route
//! templates (or `unmatched`), status codes, the standard methods (or
//! `OTHER`), publish outcomes named in the code; never a client's text, so
//! no request can add a series (`hostile_requests.rs` sends 10,000 made-up
//! methods and counts them).
//!
//! Besides requests: per check, its latency, the rules it evaluated and the
//! share of them the memo answered (histograms); and the process's CPU
//! time, resident memory and open file descriptors, read from `/proc` at
//! each scrape (`process.rs`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

mod process;

/// Upper bounds of the request latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 12] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5];
/// Rules evaluated by one check: a few on a small registry, thousands on a
/// large one whose selectors are broad.
const RULES_BUCKETS: [f64; 10] = [0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, 10000.0];
/// The share of a check's evaluations answered from the memo.
const RATIO_BUCKETS: [f64; 6] = [0.0, 0.25, 0.5, 0.75, 0.9, 1.0];

/// The methods the API answers, labelled as themselves; every other
/// method is `OTHER`.
const KNOWN_METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// A request method as a metrics label: one of [`KNOWN_METHODS`] or `OTHER`.
pub(crate) fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS.into_iter().find(|known| *known == method).unwrap_or("OTHER")
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The server's metrics (cheap to update from any thread).
#[derive(Debug)]
pub struct Metrics {
    requests: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// Manifests checked (a batch counts each manifest).
    pub checks: Counter,
    /// Checks answered from the result cache.
    pub check_cache_hits: Counter,
    /// Rule errors reported in answers (traps, timeouts, malformed output).
    pub rule_errors: Counter,
    publishes: Family<OutcomeLabels, Counter>,
    check_seconds: Histogram,
    rules_evaluated: Histogram,
    memo_hit_ratio: Histogram,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            requests: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            checks: Counter::default(),
            check_cache_hits: Counter::default(),
            rule_errors: Counter::default(),
            publishes: Family::default(),
            check_seconds: Histogram::new(LATENCY_BUCKETS),
            rules_evaluated: Histogram::new(RULES_BUCKETS),
            memo_hit_ratio: Histogram::new(RATIO_BUCKETS),
        }
    }
}

impl Metrics {
    /// Records one answered request. `route` is the router's matched
    /// template (or `unmatched`), a fixed set; the method is bounded here,
    /// since any token is a valid HTTP method and one series per made-up
    /// method would let a client grow the table without end.
    pub fn record_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let labels =
            RequestLabels { method: method_label(method), route: route.to_owned(), status };
        self.requests.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    /// Records one evaluated check (not one answered from the result
    /// cache): its time, the rules it evaluated, and its memo hits and
    /// misses when the memo is on.
    pub fn record_check(
        &self,
        elapsed: Duration,
        rules_evaluated: u32,
        replays: Option<(u64, u64)>,
    ) {
        self.check_seconds.observe(elapsed.as_secs_f64());
        self.rules_evaluated.observe(f64::from(rules_evaluated));
        if let Some((hits, misses)) = replays.filter(|(h, m)| h + m > 0) {
            self.memo_hit_ratio.observe(hits as f64 / (hits + misses) as f64);
        }
    }

    /// Records the outcome of a publish (`pending`, or the refusing step).
    pub fn record_publish(&self, outcome: &str) {
        self.publishes.get_or_create(&OutcomeLabels { outcome: outcome.to_owned() }).inc();
    }

    /// The text exposition, with the gauges and counters the caller knows
    /// (the served rules, the caches, the engine's totals) and the
    /// process's own.
    pub fn render(
        &self,
        gauges: &[(&str, &str, f64)],
        counted_elsewhere: &[(&str, &str, u64)],
    ) -> String {
        let mut registry = Registry::default();
        for (name, help, value) in gauges {
            registry.register(*name, help.trim_end_matches('.'), ConstGauge::new(*value));
        }
        for (name, help, value) in counted_elsewhere {
            // prometheus-client appends `_total` to a counter's name.
            let name = name.strip_suffix("_total").unwrap_or(*name);
            registry.register(name, help.trim_end_matches('.'), ConstCounter::new(*value));
        }
        registry.register("pitfall_checks", "Manifests checked", self.checks.clone());
        registry.register(
            "pitfall_check_cache_hits",
            "Checks answered from the result cache",
            self.check_cache_hits.clone(),
        );
        registry.register(
            "pitfall_rule_errors",
            "Rule errors reported in check answers",
            self.rule_errors.clone(),
        );
        registry.register(
            "pitfall_publishes",
            "Publish attempts by outcome",
            self.publishes.clone(),
        );
        registry.register(
            "pitfall_http_request_duration_seconds",
            "HTTP requests by method, route and status",
            self.requests.clone(),
        );
        registry.register(
            "pitfall_check_duration_seconds",
            "Time to evaluate one manifest (checks not answered from the result cache)",
            self.check_seconds.clone(),
        );
        registry.register(
            "pitfall_check_rules_evaluated",
            "Rules evaluated by one check (the candidates whose selectors held)",
            self.rules_evaluated.clone(),
        );
        registry.register(
            "pitfall_check_memo_hit_ratio",
            "Share of one check's evaluations answered from the memo",
            self.memo_hit_ratio.clone(),
        );
        process::register(&mut registry);
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(rendered: &str) -> usize {
        rendered
            .lines()
            .filter(|l| l.starts_with("pitfall_http_request_duration_seconds_count"))
            .count()
    }

    #[test]
    fn made_up_methods_share_one_series() {
        let metrics = Metrics::default();
        for i in 0..10_000 {
            metrics.record_request(&format!("M{i}"), "unmatched", 405, Duration::from_micros(5));
        }
        metrics.record_request("GET", "/healthz", 200, Duration::from_micros(5));
        let rendered = metrics.render(&[], &[]);
        assert_eq!(series(&rendered), 2, "{rendered}");
        assert!(
            rendered.contains(r#"method="OTHER",route="unmatched",status="405"} 10000"#),
            "{rendered}"
        );
    }

    #[test]
    fn known_methods_keep_their_names() {
        for method in KNOWN_METHODS {
            assert_eq!(method_label(method), method);
        }
        assert_eq!(method_label("get"), "OTHER", "methods are case-sensitive (RFC 9110 §9.1)");
    }

    #[test]
    fn checks_fill_their_histograms() {
        let metrics = Metrics::default();
        metrics.record_check(Duration::from_millis(2), 12, Some((9, 3)));
        metrics.record_check(Duration::from_millis(3), 0, None);
        let rendered = metrics
            .render(&[("pitfall_rules_served", "Rules.", 5.0)], &[("pitfall_x_total", "X.", 7)]);
        for needle in [
            "pitfall_check_duration_seconds_count 2",
            "pitfall_check_rules_evaluated_bucket{le=\"20.0\"} 2",
            "pitfall_check_rules_evaluated_bucket{le=\"10.0\"} 1",
            "pitfall_check_memo_hit_ratio_count 1",
            "pitfall_check_memo_hit_ratio_bucket{le=\"0.75\"} 1",
            "pitfall_check_memo_hit_ratio_bucket{le=\"0.5\"} 0",
            "pitfall_rules_served 5",
            "pitfall_x_total 7",
            "process_open_fds ",
            "process_resident_memory_bytes ",
            "process_cpu_seconds_total ",
        ] {
            assert!(rendered.contains(needle), "{needle} missing from\n{rendered}");
        }
    }
}
