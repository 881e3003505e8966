//! Delivery from the outbox: signing, one try, and when to try again.
//!
//! A receiver verifies `Pitfall-Signature: t=<unix seconds>,v1=<hex>`,
//! where the hex is HMAC-SHA256 under the watch's secret of
//! `"<t>.<body>"`, and refuses a `t` far from its clock (a replayed
//! request). `Pitfall-Event-Id` is the same on every try of one event, so
//! a receiver that saw it already answers 2xx and does nothing.
//!
//! The secret is stored sealed (`secret_box.rs`) and opened here, for one
//! try. One sealed under a key this process does not hold makes it read
//! the key files again (another process rotated them), so a rotation
//! fails no try. One that still does not open (another key sealed it, or
//! the row was altered) fails the try without sending: the reason is
//! recorded and logged, never the secret, and the delivery is retried like
//! any failed one, so a replica with the right key, or this one restarted
//! with it, can still deliver it within the window.

use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::secret_key::SecretKeys;
use crate::store::{ClaimedDelivery, TryOutcome, UnixMillis};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "pitfall-signature";
/// The idempotency id header.
pub const EVENT_ID_HEADER: &str = "pitfall-event-id";
/// The event type header (`findings`, `ping`).
pub const EVENT_HEADER: &str = "pitfall-event";

/// The signature header's value for `body` sent at `unix_seconds`.
pub fn signature(secret: &str, unix_seconds: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(unix_seconds.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={unix_seconds},v1={hex}")
}

/// When to try again.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first wait.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
    /// How long after its event a delivery is given up.
    pub give_up_after: Duration,
}

impl Backoff {
    /// After failed try number `attempts` (1-based) of an event enqueued at
    /// `created_at`: when to try again, or `None` to give up. Exponential,
    /// with half of each wait drawn at random (replicas and receivers
    /// recovering from one outage do not all retry at once).
    pub fn retry_at(
        &self,
        attempts: i64,
        created_at: UnixMillis,
        now: UnixMillis,
    ) -> Option<UnixMillis> {
        let exponent = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX).min(30);
        let full = self.base.saturating_mul(1 << exponent).min(self.max);
        let full_ms = i64::try_from(full.as_millis()).unwrap_or(i64::MAX).max(1);
        let half = full_ms / 2;
        let jitter = if half > 0 { (random_u64() % (half as u64 + 1)) as i64 } else { 0 };
        let at = now.saturating_add(full_ms - half + jitter);
        let deadline = created_at
            .saturating_add(i64::try_from(self.give_up_after.as_millis()).unwrap_or(i64::MAX));
        (at <= deadline).then_some(at)
    }
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // Jitter only spreads retries: a failed draw leaves it at zero.
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// Sends a claimed delivery once (blocking), signed with its secret opened
/// with `keys` (which read their files again for a secret sealed under a
/// key they do not hold: a rotation); the outcome to record and how long
/// it took.
pub fn try_once(
    agent: &ureq::Agent,
    claimed: &ClaimedDelivery,
    keys: &SecretKeys,
    backoff: &Backoff,
) -> (TryOutcome, i64) {
    let started = std::time::Instant::now();
    let failed = |status: Option<u16>, error: String| TryOutcome::Failed {
        status,
        error,
        retry_at: backoff.retry_at(claimed.attempts, claimed.created_at, crate::store::now_ms()),
    };
    let secret = match keys.open(&claimed.secret) {
        Ok(secret) => secret,
        Err(why) => return (failed(None, format!("not sent: the watch's secret: {why}")), 0),
    };
    let now_ms = crate::store::now_ms();
    let headers = [
        (SIGNATURE_HEADER, signature(&secret, now_ms / 1000, claimed.body.as_bytes())),
        (EVENT_ID_HEADER, claimed.event_id.clone()),
        (EVENT_HEADER, claimed.kind.clone()),
    ];
    let result =
        super::target::post(agent, &claimed.webhook_url, &headers, claimed.body.as_bytes());
    let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let outcome = match result {
        Ok(status) if (200..300).contains(&status) => TryOutcome::Delivered { status },
        Ok(status) if (300..400).contains(&status) => {
            failed(Some(status), format!("answered {status}: redirects are not followed"))
        }
        Ok(status) => failed(Some(status), format!("answered {status}")),
        Err(error) => failed(None, error),
    };
    (outcome, elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signature is the HMAC of "t.body" (checked against an HMAC
    /// computed independently, by RFC 2104 over sha2).
    #[test]
    fn the_signature_is_hmac_sha256_of_the_timestamp_and_body() {
        use sha2::Digest;
        let (secret, t, body) = ("s3cret-key", 1_700_000_000_i64, br#"{"a":1}"#);
        let mut key = [0u8; 64];
        key[..secret.len()].copy_from_slice(secret.as_bytes());
        let pad = |byte: u8| key.iter().map(|k| k ^ byte).collect::<Vec<u8>>();
        let inner = Sha256::new()
            .chain_update(pad(0x36))
            .chain_update(format!("{t}."))
            .chain_update(body)
            .finalize();
        let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
        let hex: String = outer.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(signature(secret, t, body), format!("t={t},v1={hex}"));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_gives_up_after_the_window() {
        let backoff = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
            give_up_after: Duration::from_secs(24 * 3600),
        };
        for attempts in 1..=10_i64 {
            let full = (1000_i64 << (attempts - 1)).min(60_000);
            for _ in 0..50 {
                let wait = backoff.retry_at(attempts, 0, 0).expect("within the window");
                assert!((full - full / 2..=full).contains(&wait), "try {attempts}: {wait} ms");
            }
        }
        let day = 24 * 3600 * 1000;
        assert!(backoff.retry_at(3, 0, day - 10).is_none(), "past the window: given up");
        assert!(backoff.retry_at(3, 0, day - 10_000).is_some());
    }
}
