//! Prometheus metrics, rendered in the text exposition format at
//! `GET /metrics`. A handful of counters and one latency histogram do not
//! justify a metrics framework; labels are bounded (route templates, status
//! codes, fixed outcome names), never user input.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the request latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 12] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5];

/// The server's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, String, u16), RouteStats>>,
    /// Manifests checked (a batch counts each manifest).
    pub checks: AtomicU64,
    /// Checks answered from the result cache.
    pub check_cache_hits: AtomicU64,
    /// Rule errors reported in answers (traps, timeouts, malformed output).
    pub rule_errors: AtomicU64,
    publishes: Mutex<BTreeMap<String, u64>>,
}

/// The methods the API answers, labelled as themselves; every other
/// method is `OTHER`.
const KNOWN_METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// A request method as a metrics label: one of [`KNOWN_METHODS`] or `OTHER`.
fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS.into_iter().find(|known| *known == method).unwrap_or("OTHER")
}

#[derive(Debug, Default)]
struct RouteStats {
    count: u64,
    sum_seconds: f64,
    /// Cumulative counts per bucket of `LATENCY_BUCKETS`.
    buckets: [u64; LATENCY_BUCKETS.len()],
}

impl Metrics {
    /// Records one answered request. `route` is the router's matched
    /// template (or `unmatched`), a fixed set; the method is bounded here,
    /// since any token is a valid HTTP method and one series per made-up
    /// method would let a client grow the table without end.
    pub fn record_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let key = (method_label(method), route.to_owned(), status);
        let stats = requests.entry(key).or_default();
        stats.count += 1;
        stats.sum_seconds += seconds;
        for (bucket, bound) in stats.buckets.iter_mut().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
    }

    /// Records the outcome of a publish (`pending`, or the refusing step).
    pub fn record_publish(&self, outcome: &str) {
        *self
            .publishes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(outcome.to_owned())
            .or_default() += 1;
    }

    /// The text exposition, with the gauges the caller knows.
    pub fn render(
        &self,
        gauges: &[(&str, &str, f64)],
        counted_elsewhere: &[(&str, &str, u64)],
    ) -> String {
        let mut out = String::new();
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        }
        let counters = [
            ("pitfall_checks_total", "Manifests checked.", &self.checks),
            (
                "pitfall_check_cache_hits_total",
                "Checks answered from the result cache.",
                &self.check_cache_hits,
            ),
            (
                "pitfall_rule_errors_total",
                "Rule errors reported in check answers.",
                &self.rule_errors,
            ),
        ];
        let counters =
            counters.iter().map(|(name, help, c)| (*name, *help, c.load(Ordering::Relaxed)));
        for (name, help, value) in counters.chain(counted_elsewhere.iter().copied()) {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        }
        out.push_str("# HELP pitfall_publishes_total Publish attempts by outcome.\n# TYPE pitfall_publishes_total counter\n");
        for (outcome, n) in self.publishes.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "pitfall_publishes_total{{outcome=\"{outcome}\"}} {n}");
        }
        out.push_str(
            "# HELP pitfall_http_request_duration_seconds HTTP requests by route and status.\n\
             # TYPE pitfall_http_request_duration_seconds histogram\n",
        );
        let requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        for ((method, route, status), stats) in requests.iter() {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            for (bound, count) in LATENCY_BUCKETS.iter().zip(stats.buckets) {
                let _ = writeln!(
                    out,
                    "pitfall_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "pitfall_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                stats.count
            );
            let _ = writeln!(
                out,
                "pitfall_http_request_duration_seconds_sum{{{labels}}} {}",
                stats.sum_seconds
            );
            let _ = writeln!(
                out,
                "pitfall_http_request_duration_seconds_count{{{labels}}} {}",
                stats.count
            );
        }
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
        assert!(rendered.contains(r#"method="OTHER",route="unmatched",status="405"} 10000"#));
    }

    #[test]
    fn known_methods_keep_their_names() {
        for method in KNOWN_METHODS {
            assert_eq!(method_label(method), method);
        }
        assert_eq!(method_label("get"), "OTHER", "methods are case-sensitive (RFC 9110 §9.1)");
    }
}
