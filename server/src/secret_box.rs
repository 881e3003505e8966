//! Secrets the server must read back, sealed for the database: a watch's
//! webhook secret is the HMAC key its notifications are signed with, so
//! unlike a token it cannot be kept as a hash. It is stored encrypted
//! under a key that lives outside the database (`secret_key.rs`), so a
//! dump of the database alone signs nothing.
//!
//! The stored form is text: `sealed:v1:<base64 of nonce || ciphertext>`,
//! ChaCha20-Poly1305 (RFC 8439) with a random 96-bit nonce per value and
//! the 16-byte tag at the ciphertext's end. The version in the prefix lets
//! a later scheme live beside this one. A stored value without the
//! `sealed:` prefix is a secret written before sealing existed and opens
//! as itself, so those watches go on delivering.
//!
//! The associated data is a fixed label, not the watch: a value sealed for
//! another purpose under the same key does not open as a watch secret, but
//! a sealed secret copied to another watch's row opens there (someone who
//! can write the database can move a secret, not read it).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

/// The key's length: 256 bits, ChaCha20's.
pub const KEY_BYTES: usize = 32;
/// The nonce's length: 96 bits, RFC 8439's. Random nonces this long stay
/// far from a repeat for the number of secrets a registry ever seals.
const NONCE_BYTES: usize = 12;
/// Poly1305's tag, appended to the ciphertext.
const TAG_BYTES: usize = 16;
/// What marks a sealed value, before its version.
const SEALED: &str = "sealed:";
/// The only version written and read today.
const V1: &str = "v1:";
/// Authenticated with every value: what it is sealed for.
const ASSOCIATED_DATA: &[u8] = b"pitfall watch secret v1";

/// The context of the key id's derivation (BLAKE3 `derive_key`).
const KEY_ID_CONTEXT: &str = "pitfall 2026 watch secret key id";
/// Bytes of the derived id kept (shown as twice as many hex digits).
const KEY_ID_BYTES: usize = 8;

/// The key that seals and opens secrets. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct SealingKey {
    cipher: ChaCha20Poly1305,
    id: String,
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

/// A secret as the database holds it: sealed, or a value stored before
/// sealing existed. Only [`SealingKey::seal`] makes one to be written
/// (the store's writes take this type, and the server makes it from text
/// only for what it read back), so nothing stores a secret in the clear
/// by mistake. Its `Debug` shows only which of the two it is.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSecret(String);

impl std::fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_sealed() { "sealed" } else { "not sealed" };
        write!(f, "SealedSecret({kind}, ..)")
    }
}

impl SealedSecret {
    /// A value read from the database, as it is there, to be opened.
    pub fn from_stored(text: String) -> SealedSecret {
        SealedSecret(text)
    }

    /// The text to store.
    pub fn as_stored(&self) -> &str {
        &self.0
    }

    /// Whether it is sealed (false: a secret stored before sealing existed).
    pub fn is_sealed(&self) -> bool {
        self.0.starts_with(SEALED)
    }
}

/// Why a secret could not be sealed.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// No nonce: the OS gave no randomness.
    #[error("no randomness from the OS for a nonce: {0}")]
    Randomness(String),
    /// The cipher refused the value (only a value of many GiB would be).
    #[error("the secret could not be encrypted")]
    Encrypt,
}

/// Why a stored value did not open. None of them carries the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// `sealed:` with a version this server does not know.
    #[error("sealed with an unknown scheme (this server reads sealed:v1)")]
    UnknownVersion,
    /// Not base64, or too short to hold a nonce and a tag.
    #[error("the sealed value is malformed (not base64 of a nonce and a ciphertext)")]
    Malformed,
    /// The tag does not verify: sealed under another key, or altered.
    #[error(
        "the sealed value does not open with this server's secret key: sealed under another key (replicas must share --secret-key-file) or altered"
    )]
    WrongKeyOrTampered,
    /// It opened, but to bytes that are not UTF-8 (no seal of ours makes these).
    #[error("the opened secret is not UTF-8")]
    NotUtf8,
}

impl SealingKey {
    /// The key made of these bytes.
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> SealingKey {
        let derived = blake3::derive_key(KEY_ID_CONTEXT, &bytes);
        let id = derived[..KEY_ID_BYTES].iter().map(|b| format!("{b:02x}")).collect();
        SealingKey { cipher: ChaCha20Poly1305::new(&Key::from(bytes)), id }
    }

    /// The key's id: 16 hex digits derived from it one way (BLAKE3's
    /// `derive_key`), the same in every process that reads the same key,
    /// and telling nothing of the key. The store records which key its
    /// secrets were sealed under by it; the start-up log shows it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A fresh key from the OS's randomness (tests and in-process uses; a
    /// server reads its key from a file, `secret_key.rs`).
    pub fn generate() -> Result<SealingKey, SealError> {
        let mut bytes = [0u8; KEY_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| SealError::Randomness(e.to_string()))?;
        Ok(SealingKey::from_bytes(bytes))
    }

    /// `secret` sealed under this key, with a fresh nonce.
    pub fn seal(&self, secret: &str) -> Result<SealedSecret, SealError> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).map_err(|e| SealError::Randomness(e.to_string()))?;
        let ciphertext = self
            .cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: secret.as_bytes(), aad: ASSOCIATED_DATA })
            .map_err(|_| SealError::Encrypt)?;
        let mut joined = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
        joined.extend_from_slice(&nonce);
        joined.extend_from_slice(&ciphertext);
        Ok(SealedSecret(format!("{SEALED}{V1}{}", BASE64.encode(joined))))
    }

    /// The secret a stored value holds: a sealed one opened and verified,
    /// one stored before sealing existed as it is.
    pub fn open(&self, stored: &SealedSecret) -> Result<String, OpenError> {
        let Some(versioned) = stored.0.strip_prefix(SEALED) else {
            return Ok(stored.0.clone());
        };
        let encoded = versioned.strip_prefix(V1).ok_or(OpenError::UnknownVersion)?;
        let joined = BASE64.decode(encoded).map_err(|_| OpenError::Malformed)?;
        if joined.len() < NONCE_BYTES + TAG_BYTES {
            return Err(OpenError::Malformed);
        }
        let (nonce, ciphertext) = joined.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| OpenError::Malformed)?;
        let plain = self
            .cipher
            .decrypt(&Nonce::from(nonce), Payload { msg: ciphertext, aad: ASSOCIATED_DATA })
            .map_err(|_| OpenError::WrongKeyOrTampered)?;
        String::from_utf8(plain).map_err(|_| OpenError::NotUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_0123456789abcdef";

    fn key(byte: u8) -> SealingKey {
        SealingKey::from_bytes([byte; KEY_BYTES])
    }

    #[test]
    fn a_sealed_secret_opens_to_itself_and_holds_nothing_of_it_in_the_clear() {
        let sealed = key(1).seal(SECRET).expect("sealed");
        assert!(sealed.as_stored().starts_with("sealed:v1:"), "{}", sealed.as_stored());
        assert!(!sealed.as_stored().contains(SECRET));
        assert!(sealed.is_sealed());
        assert_eq!(key(1).open(&sealed), Ok(SECRET.to_owned()));
        let encoded = sealed.as_stored().trim_start_matches("sealed:v1:");
        let bytes = BASE64.decode(encoded).expect("base64");
        assert_eq!(bytes.len(), NONCE_BYTES + SECRET.len() + TAG_BYTES, "nonce, ciphertext, tag");
    }

    #[test]
    fn each_seal_draws_its_own_nonce() {
        let (a, b) = (key(1).seal(SECRET).expect("a"), key(1).seal(SECRET).expect("b"));
        assert_ne!(a, b, "the same secret sealed twice reads differently");
        assert_eq!(key(1).open(&b), Ok(SECRET.to_owned()));
    }

    #[test]
    fn another_key_does_not_open_it() {
        let sealed = key(1).seal(SECRET).expect("sealed");
        assert_eq!(key(2).open(&sealed), Err(OpenError::WrongKeyOrTampered));
    }

    #[test]
    fn a_changed_byte_anywhere_does_not_open() {
        let sealed = key(1).seal(SECRET).expect("sealed");
        let bytes =
            BASE64.decode(sealed.as_stored().trim_start_matches("sealed:v1:")).expect("base64");
        for at in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[at] ^= 0x01;
            let altered =
                SealedSecret::from_stored(format!("sealed:v1:{}", BASE64.encode(&altered)));
            assert_eq!(key(1).open(&altered), Err(OpenError::WrongKeyOrTampered), "byte {at}");
        }
        let cut = &bytes[..bytes.len() - 1];
        let cut = SealedSecret::from_stored(format!("sealed:v1:{}", BASE64.encode(cut)));
        assert_eq!(key(1).open(&cut), Err(OpenError::WrongKeyOrTampered), "a cut tag");
    }

    #[test]
    fn malformed_and_unknown_versions_are_told_apart() {
        let open = |text: &str| key(1).open(&SealedSecret::from_stored(text.to_owned()));
        assert_eq!(open("sealed:v1:not base64!"), Err(OpenError::Malformed));
        assert_eq!(open("sealed:v1:"), Err(OpenError::Malformed));
        assert_eq!(
            open(&format!("sealed:v1:{}", BASE64.encode([0u8; 27]))),
            Err(OpenError::Malformed)
        );
        assert_eq!(open("sealed:v2:AAAA"), Err(OpenError::UnknownVersion));
    }

    #[test]
    fn a_value_stored_before_sealing_opens_as_itself() {
        let legacy = SealedSecret::from_stored(SECRET.to_owned());
        assert!(!legacy.is_sealed());
        assert_eq!(key(1).open(&legacy), Ok(SECRET.to_owned()));
        assert_eq!(key(2).open(&legacy), Ok(SECRET.to_owned()), "whatever the key");
    }

    #[test]
    fn a_key_id_is_the_keys_own_and_tells_nothing_of_it() {
        let id = key(1).id().to_owned();
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
        assert_eq!(key(1).id(), id, "the same key, the same id");
        assert_ne!(key(2).id(), id, "another key, another id");
        assert!(!"01".repeat(KEY_BYTES).contains(&id), "not the key's own bytes");
    }

    #[test]
    fn debug_shows_no_secret_and_no_key() {
        let sealed = key(1).seal(SECRET).expect("sealed");
        assert_eq!(format!("{sealed:?}"), "SealedSecret(sealed, ..)");
        let legacy = SealedSecret::from_stored(SECRET.to_owned());
        assert_eq!(format!("{legacy:?}"), "SealedSecret(not sealed, ..)");
        assert_eq!(format!("{:?}", key(1)), "SealingKey(..)");
    }
}
