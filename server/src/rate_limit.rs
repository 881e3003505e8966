//! Rate limits on the expensive endpoints (checks and publishes): a token
//! bucket per bearer token and one per client IP, both of which a request
//! must pass. Per token, so one leaked or buggy CI token cannot take the
//! registry's CPU; per IP as well, because a check needs no token and a
//! made-up `Authorization` header would otherwise buy a fresh bucket.
//!
//! A bucket holds `per_minute` requests and refills at `per_minute / 60`
//! a second: bursts up to a minute's allowance, that rate sustained.
//! `per_minute == 0` turns the limit off (benchmarks and soaks).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Buckets kept at most per limiter; beyond it, full ones (idle clients)
/// are dropped first, so a flood of new IPs cannot grow memory unbounded.
const MAX_BUCKETS: usize = 100_000;

/// Who a bucket belongs to. Tokens are keyed by their sha256, never the
/// secret itself, so the limiter's memory holds nothing worth stealing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Ip(IpAddr),
    Token([u8; 32]),
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: f64,
    at: Instant,
}

/// One endpoint class's limiter (checks, or publishes).
#[derive(Debug)]
pub struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<HashMap<Key, Bucket>>,
}

impl RateLimiter {
    /// A limiter of `per_minute` requests per token and per IP (0: off).
    pub fn new(per_minute: u32) -> RateLimiter {
        RateLimiter { per_minute, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one request from the caller's buckets, or says how long until
    /// one is free. Nothing is taken from either bucket when one is empty.
    pub fn admit(&self, ip: Option<IpAddr>, bearer: Option<&str>) -> Result<(), Duration> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let keys: Vec<Key> = ip
            .map(Key::Ip)
            .into_iter()
            .chain(bearer.map(|t| Key::Token(Sha256::digest(t.as_bytes()).into())))
            .collect();
        let now = Instant::now();
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_BUCKETS {
            buckets.retain(|_, b| level(b, now, per_second, capacity) < capacity);
            if buckets.len() >= MAX_BUCKETS {
                // Every bucket is in use: forgetting some lets those clients
                // burst once more, which beats refusing everyone new.
                buckets.clear();
            }
        }
        let mut wait = Duration::ZERO;
        for key in &keys {
            let current = buckets.get(key).map_or(capacity, |b| level(b, now, per_second, capacity));
            if current < 1.0 {
                wait = wait.max(Duration::from_secs_f64((1.0 - current) / per_second));
            }
        }
        if wait > Duration::ZERO {
            return Err(wait);
        }
        for key in keys {
            let current = buckets.get(&key).map_or(capacity, |b| level(b, now, per_second, capacity));
            buckets.insert(key, Bucket { level: current - 1.0, at: now });
        }
        Ok(())
    }
}

fn level(bucket: &Bucket, now: Instant, per_second: f64, capacity: f64) -> f64 {
    (bucket.level + now.saturating_duration_since(bucket.at).as_secs_f64() * per_second).min(capacity)
}
