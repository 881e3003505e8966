//! Rate limits on the expensive endpoints (checks and publishes): a token
//! bucket per bearer token and one per client IP, both of which a request
//! must pass. Per token, so one leaked or buggy CI token cannot take the
//! registry's CPU; per IP as well, because a check needs no token and a
//! made-up `Authorization` header would otherwise buy a fresh bucket.
//!
//! A bucket holds a minute's allowance and refills at a sixtieth of it a
//! second: bursts up to a minute's allowance, that rate sustained. An
//! allowance of 0 turns that limit off (benchmarks and soaks).

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
    per_ip: u32,
    per_token: u32,
    buckets: Mutex<HashMap<Key, Bucket>>,
}

impl RateLimiter {
    /// A limiter of `per_ip` requests a minute per client IP and
    /// `per_token` per bearer token (0: that limit off).
    pub fn new(per_ip: u32, per_token: u32) -> RateLimiter {
        RateLimiter { per_ip, per_token, buckets: Mutex::new(HashMap::new()) }
    }

    /// A key's allowance per minute (0: unlimited).
    fn allowance(&self, key: &Key) -> u32 {
        match key {
            Key::Ip(_) => self.per_ip,
            Key::Token(_) => self.per_token,
        }
    }

    /// Takes one request from the caller's buckets, or says how long until
    /// one is free. Nothing is taken from either bucket when one is empty.
    pub fn admit(&self, ip: Option<IpAddr>, bearer: Option<&str>) -> Result<(), Duration> {
        if self.per_ip == 0 && self.per_token == 0 {
            return Ok(());
        }
        let keys: Vec<Key> = ip
            .map(Key::Ip)
            .into_iter()
            .chain(bearer.map(|t| Key::Token(Sha256::digest(t.as_bytes()).into())))
            .filter(|k| self.allowance(k) > 0)
            .collect();
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_BUCKETS {
            buckets.retain(|k, b| {
                let capacity = f64::from(self.allowance(k));
                level(b, now, capacity) < capacity
            });
            if buckets.len() >= MAX_BUCKETS {
                // Every bucket is in use: forgetting some lets those clients
                // burst once more, which beats refusing everyone new.
                buckets.clear();
            }
        }
        let mut wait = Duration::ZERO;
        let mut levels = Vec::with_capacity(keys.len());
        for key in keys {
            let capacity = f64::from(self.allowance(&key));
            let current = buckets.get(&key).map_or(capacity, |b| level(b, now, capacity));
            if current < 1.0 {
                wait = wait.max(Duration::from_secs_f64((1.0 - current) / (capacity / 60.0)));
            }
            levels.push((key, current));
        }
        if wait > Duration::ZERO {
            return Err(wait);
        }
        for (key, current) in levels {
            buckets.insert(key, Bucket { level: current - 1.0, at: now });
        }
        Ok(())
    }
}

/// A bucket's level now: refilled at `capacity / 60` a second, up to `capacity`.
fn level(bucket: &Bucket, now: Instant, capacity: f64) -> f64 {
    (bucket.level + now.saturating_duration_since(bucket.at).as_secs_f64() * capacity / 60.0)
        .min(capacity)
}
