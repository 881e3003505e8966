//! The bundle's public key as people pin it: `ed25519:<base64 of the 32
//! bytes>`, one line that fits a config file, an env var or a command line.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::VerifyingKey;

/// The prefix that names the algorithm.
pub const PREFIX: &str = "ed25519:";

/// An ed25519 public key that verifies bundles.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// The key itself.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.0
    }
}

impl From<VerifyingKey> for PublicKey {
    fn from(key: VerifyingKey) -> PublicKey {
        PublicKey(key)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", STANDARD.encode(self.0.as_bytes()))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// A text that is not an `ed25519:` public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a public key: {reason} (expected `ed25519:` and 44 characters of base64)")]
pub struct KeyParseError {
    text: String,
    reason: &'static str,
}

impl FromStr for PublicKey {
    type Err = KeyParseError;

    fn from_str(text: &str) -> Result<PublicKey, KeyParseError> {
        let fail = |reason| KeyParseError { text: text.chars().take(80).collect(), reason };
        let body = text.trim().strip_prefix(PREFIX).ok_or_else(|| fail("no `ed25519:` prefix"))?;
        let bytes = STANDARD.decode(body).map_err(|_| fail("not base64"))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| fail("not 32 bytes"))?;
        VerifyingKey::from_bytes(&bytes)
            .map(PublicKey)
            .map_err(|_| fail("not a valid ed25519 point"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_text_and_bad_text_is_named() {
        let key = crate::bundle::BundleSigner::from_seed(&[3; 32]).public_key();
        let text = key.to_string();
        assert!(text.starts_with("ed25519:") && text.len() == 8 + 44, "{text}");
        assert_eq!(text.parse::<PublicKey>(), Ok(key));
        for bad in ["", "ed25519:", "rsa:AAAA", "ed25519:!!!!", "ed25519:AAAA"] {
            assert!(bad.parse::<PublicKey>().is_err(), "{bad:?} parsed");
        }
    }
}
