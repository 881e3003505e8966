//! Rate limits on the expensive endpoints (checks and publishes): a token
//! bucket per bearer token and one per client network, both of which a
//! request must pass. Per token, so one leaked or buggy CI token cannot
//! take the registry's CPU; per network as well, because a check needs no
//! token and a made-up `Authorization` header would otherwise buy a fresh
//! bucket.
//!
//! A client network is an IPv4 address, or an IPv6 /64: one host is
//! routinely handed a whole /64, so keying the full address would give it
//! 2^64 buckets to rotate through ([`client_net`]).
//!
//! A bucket holds a minute's allowance and refills at a sixtieth of it a
//! second: bursts up to a minute's allowance, that rate sustained. An
//! allowance of 0 turns that limit off (benchmarks and soaks). A request
//! may cost more than one unit: a batch is charged per manifest.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Buckets kept at most per limiter, so a flood of new clients cannot grow
/// memory unbounded. Beyond it, full buckets (clients idle for a minute,
/// whose fresh bucket would be the same) go first, then the least recently
/// seen 1/[`EVICT_FRACTION`]: the clients being limited right now are the
/// recent ones and keep their empty buckets.
const MAX_BUCKETS: usize = 100_000;
/// One eviction makes room for this share of [`MAX_BUCKETS`], so its
/// O(n) pass runs once per that many new clients, not per request.
const EVICT_FRACTION: usize = 8;

/// The network a client address is limited as: itself for IPv4 (and an
/// IPv4-mapped IPv6 address), its /64 for IPv6.
pub fn client_net(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !((1u128 << 64) - 1))),
        },
    }
}

/// Who a bucket belongs to. Tokens are keyed by their sha256, never the
/// secret itself, so the limiter's memory holds nothing worth stealing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Net(IpAddr),
    Token([u8; 32]),
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: f64,
    /// When `level` was measured.
    at: Instant,
    /// When its client last asked, admitted or not, on the limiter's own
    /// clock (a count of requests): what eviction orders by.
    seen: u64,
}

/// The buckets and the clock that orders their use.
#[derive(Debug, Default)]
struct Table {
    buckets: HashMap<Key, Bucket>,
    clock: u64,
}

/// One endpoint class's limiter (checks, or publishes).
#[derive(Debug)]
pub struct RateLimiter {
    per_ip: u32,
    per_token: u32,
    table: Mutex<Table>,
}

impl RateLimiter {
    /// A limiter of `per_ip` requests a minute per client network and
    /// `per_token` per bearer token (0: that limit off).
    pub fn new(per_ip: u32, per_token: u32) -> RateLimiter {
        RateLimiter { per_ip, per_token, table: Mutex::default() }
    }

    /// A key's allowance per minute (0: unlimited).
    fn allowance(&self, key: &Key) -> u32 {
        match key {
            Key::Net(_) => self.per_ip,
            Key::Token(_) => self.per_token,
        }
    }

    /// Takes `cost` units from the caller's buckets, or says how long until
    /// they are there. Nothing is taken from either bucket when one falls
    /// short. A cost above a bucket's allowance is charged as the whole
    /// allowance: such a request is admitted only on a full bucket.
    pub fn admit(
        &self,
        ip: Option<IpAddr>,
        bearer: Option<&str>,
        cost: u32,
    ) -> Result<(), Duration> {
        self.admit_at(ip, bearer, cost, Instant::now())
    }

    fn admit_at(
        &self,
        ip: Option<IpAddr>,
        bearer: Option<&str>,
        cost: u32,
        now: Instant,
    ) -> Result<(), Duration> {
        if (self.per_ip == 0 && self.per_token == 0) || cost == 0 {
            return Ok(());
        }
        let keys: Vec<Key> = ip
            .map(|ip| Key::Net(client_net(ip)))
            .into_iter()
            .chain(bearer.map(|t| Key::Token(Sha256::digest(t.as_bytes()).into())))
            .filter(|k| self.allowance(k) > 0)
            .collect();
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.clock += 1;
        let seen = table.clock;
        let buckets = &mut table.buckets;
        if keys.iter().any(|k| !buckets.contains_key(k)) && buckets.len() >= MAX_BUCKETS {
            self.evict(buckets, now);
        }
        let mut wait = Duration::ZERO;
        let mut levels = Vec::with_capacity(keys.len());
        for key in keys {
            let capacity = f64::from(self.allowance(&key));
            let charge = f64::from(cost).min(capacity);
            let current = buckets.get(&key).map_or(capacity, |b| level(b, now, capacity));
            if current < charge {
                wait = wait.max(Duration::from_secs_f64((charge - current) / (capacity / 60.0)));
            }
            levels.push((key, current, charge));
        }
        let admitted = wait == Duration::ZERO;
        for (key, current, charge) in levels {
            let level = if admitted { current - charge } else { current };
            buckets.insert(key, Bucket { level, at: now, seen });
        }
        if admitted { Ok(()) } else { Err(wait) }
    }

    /// Makes room: drops full buckets, then the least recently seen
    /// 1/[`EVICT_FRACTION`] of what is left if that was not enough.
    fn evict(&self, buckets: &mut HashMap<Key, Bucket>, now: Instant) {
        buckets.retain(|k, b| {
            let capacity = f64::from(self.allowance(k));
            level(b, now, capacity) < capacity
        });
        if buckets.len() < MAX_BUCKETS {
            return;
        }
        let mut seen: Vec<u64> = buckets.values().map(|b| b.seen).collect();
        let cut = (buckets.len() / EVICT_FRACTION).min(buckets.len() - 1);
        let (_, &mut newest_dropped, _) = seen.select_nth_unstable(cut);
        buckets.retain(|_, b| b.seen > newest_dropped);
    }
}

/// A bucket's level now: refilled at `capacity / 60` a second, up to `capacity`.
fn level(bucket: &Bucket, now: Instant, capacity: f64) -> f64 {
    (bucket.level + now.saturating_duration_since(bucket.at).as_secs_f64() * capacity / 60.0)
        .min(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(s: &str) -> Option<IpAddr> {
        Some(s.parse().expect("an address"))
    }

    #[test]
    fn ipv6_clients_share_a_bucket_per_64_and_ipv4_per_address() {
        let limiter = RateLimiter::new(3, 0);
        let now = Instant::now();
        // Three addresses of one /64: its allowance of three, then refused.
        for ip in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff:ffff:ffff:ffff"] {
            assert_eq!(limiter.admit_at(v6(ip), None, 1, now), Ok(()), "{ip}");
        }
        assert!(limiter.admit_at(v6("2001:db8:1:2:abcd::9"), None, 1, now).is_err());
        // The next /64 is another client.
        assert_eq!(limiter.admit_at(v6("2001:db8:1:3::1"), None, 1, now), Ok(()));
        // IPv4 addresses, and their mapped IPv6 form, are one client each.
        for _ in 0..3 {
            assert_eq!(limiter.admit_at(v6("192.0.2.7"), None, 1, now), Ok(()));
        }
        assert!(limiter.admit_at(v6("::ffff:192.0.2.7"), None, 1, now).is_err());
        assert_eq!(limiter.admit_at(v6("192.0.2.8"), None, 1, now), Ok(()));
    }

    #[test]
    fn a_limited_client_stays_limited_while_a_flood_of_new_ones_fills_the_table() {
        let limiter = RateLimiter::new(2, 0);
        let start = Instant::now();
        let hog = v6("198.51.100.1");
        assert_eq!(limiter.admit_at(hog, None, 1, start), Ok(()));
        assert_eq!(limiter.admit_at(hog, None, 1, start), Ok(()));
        // Twice the table's size of new clients, one request each; the
        // limited client keeps asking (and is refused) in between. No time
        // passes, so nothing refills.
        for i in 0..2 * MAX_BUCKETS as u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from_bits(0x0a00_0000 + i));
            assert_eq!(limiter.admit_at(Some(ip), None, 1, start), Ok(()));
            if i % 1000 == 0 {
                assert!(limiter.admit_at(hog, None, 1, start).is_err(), "after {i} new clients");
            }
            assert!(limiter.table.lock().expect("lock").buckets.len() <= MAX_BUCKETS);
        }
        assert!(limiter.admit_at(hog, None, 1, start).is_err());
    }

    #[test]
    fn a_batch_is_charged_per_manifest() {
        let limiter = RateLimiter::new(10, 0);
        let now = Instant::now();
        let ip = v6("192.0.2.1");
        assert_eq!(limiter.admit_at(ip, None, 6, now), Ok(()));
        // Four left: a batch of five waits for one more unit (6 s at 10/min).
        let wait = limiter.admit_at(ip, None, 5, now).expect_err("refused");
        assert_eq!(wait.as_secs_f64().round(), 6.0);
        assert_eq!(limiter.admit_at(ip, None, 4, now), Ok(()));
        assert!(limiter.admit_at(ip, None, 1, now).is_err());
        // A batch larger than the allowance takes a full bucket.
        let later = now + Duration::from_secs(60);
        assert_eq!(limiter.admit_at(ip, None, 50, later), Ok(()));
        assert!(limiter.admit_at(ip, None, 1, later).is_err());
    }
}
