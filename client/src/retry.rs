//! When to try a request again and how long to wait first.
//!
//! Retried: connection failures, timeouts, 5xx and 429, with exponential
//! backoff and jitter, honouring `Retry-After`. A request that changes
//! state (publish, approve, reject, yank) is retried only when it provably
//! did nothing: nothing accepted the connection, or the server answered 429
//! (refused before doing any work). After a timeout, a reset or a 5xx it
//! may have been done already, and a blind retry could do it twice.

use std::time::{Duration, SystemTime};

/// Whether a request may safely be sent twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotence {
    /// Reads and checks: sending twice is the same as once.
    Idempotent,
    /// Writes: retried only when the first try provably did nothing.
    NotIdempotent,
}

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first try (0: never retry).
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub base_delay: Duration,
    /// No backoff waits longer than this.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured: a server that asks for more is
    /// not retried (its answer is returned at once).
    pub max_retry_after: Duration,
}

/// Four retries from 250 ms: about 4 s of backoff before giving up on a
/// server that is restarting, well under a minute with `Retry-After`.
pub const DEFAULT_RETRY: RetryPolicy = RetryPolicy {
    max_retries: 4,
    base_delay: Duration::from_millis(250),
    max_delay: Duration::from_secs(8),
    max_retry_after: Duration::from_secs(60),
};

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        DEFAULT_RETRY
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> RetryPolicy {
        RetryPolicy { max_retries: 0, ..DEFAULT_RETRY }
    }

    /// The backoff before retry number `retry` (0-based): "equal jitter",
    /// a random point in the upper half of `base * 2^retry` (capped), so
    /// waits grow but clients that failed together do not retry together.
    pub fn backoff(&self, retry: u32) -> Duration {
        let cap = self
            .base_delay
            .saturating_mul(1u32.checked_shl(retry).unwrap_or(u32::MAX))
            .min(self.max_delay);
        let half = cap / 2;
        half + half.mul_f64(random_unit())
    }

    /// The wait before retry `retry`, given the server's `Retry-After`;
    /// `None` when the server asks for longer than this policy waits.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        match retry_after {
            Some(asked) if asked > self.max_retry_after => None,
            Some(asked) => Some(asked.max(self.backoff(retry))),
            None => Some(self.backoff(retry)),
        }
    }
}

/// Whether an answer with this status is worth another try.
pub(crate) fn retry_status(status: u16, idempotence: Idempotence) -> bool {
    match idempotence {
        Idempotence::Idempotent => status == 429 || (500..600).contains(&status),
        // A 429 is a refusal before any work; a 5xx may follow the work.
        Idempotence::NotIdempotent => status == 429,
    }
}

/// `Retry-After`: delay-seconds or an HTTP date.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A uniform number in [0, 1) from the OS (jitter needs no more than this;
/// if the OS has none, no jitter: the upper half's lower end).
fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.0;
    }
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_its_jitter_and_stops_at_the_cap() {
        let p = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            ..DEFAULT_RETRY
        };
        for _ in 0..50 {
            for (retry, cap) in
                [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1000), (30, 1000), (40, 1000)]
            {
                let d = p.backoff(retry);
                assert!(
                    d >= Duration::from_millis(cap / 2) && d <= Duration::from_millis(cap),
                    "retry {retry}: {d:?}"
                );
            }
        }
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_policys_bound() {
        let p = DEFAULT_RETRY;
        assert!(p.delay(0, Some(Duration::from_secs(3))).expect("waits") >= Duration::from_secs(3));
        assert_eq!(p.delay(0, Some(Duration::from_secs(3600))), None);
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn writes_retry_only_on_429() {
        assert!(retry_status(503, Idempotence::Idempotent));
        assert!(retry_status(429, Idempotence::Idempotent));
        assert!(!retry_status(404, Idempotence::Idempotent));
        assert!(retry_status(429, Idempotence::NotIdempotent));
        assert!(!retry_status(503, Idempotence::NotIdempotent));
        assert!(!retry_status(500, Idempotence::NotIdempotent));
    }
}
