//! Secrets the server must read back, sealed for the database: a watch's
//! webhook secret is the HMAC key its notifications are signed with, so
//! unlike a token it cannot be kept as a hash. It is stored encrypted
//! under a key that lives outside the database (`secret_key.rs`), so a
//! dump of the database alone signs nothing.
//!
//! The stored form is text: `sealed:v2:<key id>:<base64 of nonce ||
//! ciphertext>`, ChaCha20-Poly1305 (RFC 8439) with a random 96-bit nonce
//! per value and the 16-byte tag at the ciphertext's end. The key id
//! ([`SealingKey::id`]) names the key that sealed it, so a value is opened
//! with that key and the store can tell, in SQL, which rows a key rotation
//! has still to re-seal. `sealed:v1:<base64>` (the same without the id,
//! written before rotation existed) is still read, with each key held in
//! turn. A stored value without the `sealed:` prefix is a secret written
//! before sealing existed and opens as itself, so those watches go on
//! delivering.
//!
//! During a rotation a server holds two keys ([`SealingKeys`]): the
//! current one, which seals, and the previous one, which only opens.
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
/// The first scheme: no key id; read, no longer written.
const V1: &str = "v1:";
/// Authenticated with every v1 value: what it is sealed for.
const ASSOCIATED_DATA_V1: &[u8] = b"pitfall watch secret v1";
/// The scheme written: the key id, then the value.
const V2: &str = "v2:";
/// Authenticated with every v2 value (another label than v1's, so a v1
/// value relabelled v2 does not open).
const ASSOCIATED_DATA_V2: &[u8] = b"pitfall watch secret v2";

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

    /// The id of the key that sealed it, when the value says (`v2`).
    pub fn key_id(&self) -> Option<&str> {
        let rest = self.0.strip_prefix(SEALED)?.strip_prefix(V2)?;
        rest.split_once(':').map(|(id, _)| id)
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
    #[error("sealed with an unknown scheme (this server reads sealed:v1 and sealed:v2)")]
    UnknownVersion,
    /// Not base64, or too short to hold a nonce and a tag.
    #[error("the sealed value is malformed (not base64 of a nonce and a ciphertext)")]
    Malformed,
    /// Sealed under a key this server does not hold.
    #[error(
        "the sealed value does not open with this server's secret key: it was sealed under the key {0}, which this server does not hold (replicas must share --secret-key-file; during a rotation the previous key is read from the key file's .previous)"
    )]
    KeyNotHeld(String),
    /// The tag does not verify: sealed under another key, or altered.
    #[error(
        "the sealed value does not open with this server's secret key: sealed under another key (replicas must share --secret-key-file) or altered"
    )]
    WrongKeyOrTampered,
    /// It opened, but to bytes that are not UTF-8 (no seal of ours makes these).
    #[error("the opened secret is not UTF-8")]
    NotUtf8,
}

impl OpenError {
    /// Whether holding another key could open it (a rotation this process
    /// has not read yet), as opposed to a value no key opens.
    pub fn may_open_with_another_key(&self) -> bool {
        matches!(self, OpenError::KeyNotHeld(_) | OpenError::WrongKeyOrTampered)
    }
}

/// A stored value, parsed.
enum Stored<'a> {
    /// Stored before sealing existed.
    Clear(&'a str),
    /// `v1`: no key id.
    V1(Vec<u8>),
    /// `v2`: the key id and the nonce with the ciphertext.
    V2(&'a str, Vec<u8>),
}

fn parse(stored: &SealedSecret) -> Result<Stored<'_>, OpenError> {
    let Some(versioned) = stored.0.strip_prefix(SEALED) else {
        return Ok(Stored::Clear(&stored.0));
    };
    let decode = |encoded: &str| {
        let joined = BASE64.decode(encoded).map_err(|_| OpenError::Malformed)?;
        if joined.len() < NONCE_BYTES + TAG_BYTES {
            return Err(OpenError::Malformed);
        }
        Ok(joined)
    };
    if let Some(encoded) = versioned.strip_prefix(V1) {
        return Ok(Stored::V1(decode(encoded)?));
    }
    let rest = versioned.strip_prefix(V2).ok_or(OpenError::UnknownVersion)?;
    let (id, encoded) = rest.split_once(':').ok_or(OpenError::Malformed)?;
    Ok(Stored::V2(id, decode(encoded)?))
}

impl SealingKey {
    /// The key made of these bytes.
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> SealingKey {
        let derived = blake3::derive_key(KEY_ID_CONTEXT, &bytes);
        let id = derived[..KEY_ID_BYTES].iter().map(|b| format!("{b:02x}")).collect();
        SealingKey { cipher: ChaCha20Poly1305::new(&Key::from(bytes)), id }
    }

    /// A fresh key from the OS's randomness (tests and in-process uses; a
    /// server reads its key from a file, `secret_key.rs`).
    pub fn generate() -> Result<SealingKey, SealError> {
        let mut bytes = [0u8; KEY_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| SealError::Randomness(e.to_string()))?;
        Ok(SealingKey::from_bytes(bytes))
    }

    /// The key's id: 16 hex digits derived from it one way (BLAKE3's
    /// `derive_key`), the same in every process that reads the same key,
    /// and telling nothing of the key. Every value it seals carries it;
    /// the start-up log shows it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How every value this key seals begins (`sealed:v2:<id>:`): the
    /// store finds the rows a rotation has still to re-seal by it.
    pub fn stored_prefix(&self) -> String {
        format!("{SEALED}{V2}{}:", self.id)
    }

    /// `secret` sealed under this key, with a fresh nonce.
    pub fn seal(&self, secret: &str) -> Result<SealedSecret, SealError> {
        let joined = self.encrypt(secret, ASSOCIATED_DATA_V2)?;
        Ok(SealedSecret(format!("{}{}", self.stored_prefix(), BASE64.encode(joined))))
    }

    fn encrypt(&self, secret: &str, aad: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).map_err(|e| SealError::Randomness(e.to_string()))?;
        let ciphertext = self
            .cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: secret.as_bytes(), aad })
            .map_err(|_| SealError::Encrypt)?;
        let mut joined = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
        joined.extend_from_slice(&nonce);
        joined.extend_from_slice(&ciphertext);
        Ok(joined)
    }

    fn decrypt(&self, joined: &[u8], aad: &[u8]) -> Result<String, OpenError> {
        let (nonce, ciphertext) = joined.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| OpenError::Malformed)?;
        let plain = self
            .cipher
            .decrypt(&Nonce::from(nonce), Payload { msg: ciphertext, aad })
            .map_err(|_| OpenError::WrongKeyOrTampered)?;
        String::from_utf8(plain).map_err(|_| OpenError::NotUtf8)
    }

    /// The secret a stored value holds: a sealed one opened and verified,
    /// one stored before sealing existed as it is.
    pub fn open(&self, stored: &SealedSecret) -> Result<String, OpenError> {
        SealingKeys::new(self.clone()).open(stored)
    }
}

/// The keys a server holds: the current one seals; during a rotation the
/// previous one still opens what it sealed, until the start-up re-seals
/// it under the current one.
#[derive(Debug, Clone)]
pub struct SealingKeys {
    current: SealingKey,
    previous: Option<SealingKey>,
}

impl SealingKeys {
    /// One key, no rotation under way.
    pub fn new(current: SealingKey) -> SealingKeys {
        SealingKeys { current, previous: None }
    }

    /// The current key and the one it replaced.
    pub fn rotating(current: SealingKey, previous: SealingKey) -> SealingKeys {
        SealingKeys { current, previous: Some(previous) }
    }

    /// The key that seals.
    pub fn current(&self) -> &SealingKey {
        &self.current
    }

    /// The key the current one replaced, if it is still held.
    pub fn previous(&self) -> Option<&SealingKey> {
        self.previous.as_ref()
    }

    /// `secret` sealed under the current key.
    pub fn seal(&self, secret: &str) -> Result<SealedSecret, SealError> {
        self.current.seal(secret)
    }

    /// Whether `stored` is sealed under the current key (nothing to re-seal).
    pub fn is_current(&self, stored: &SealedSecret) -> bool {
        stored.key_id() == Some(self.current.id())
    }

    /// The secret a stored value holds: a `v2` value opened with the key
    /// its id names, a `v1` value with each key held in turn, one stored
    /// before sealing existed as it is.
    pub fn open(&self, stored: &SealedSecret) -> Result<String, OpenError> {
        let held = || std::iter::once(&self.current).chain(self.previous.as_ref());
        match parse(stored)? {
            Stored::Clear(text) => Ok(text.to_owned()),
            Stored::V2(id, joined) => held()
                .find(|k| k.id() == id)
                .ok_or_else(|| OpenError::KeyNotHeld(id.to_owned()))?
                .decrypt(&joined, ASSOCIATED_DATA_V2),
            Stored::V1(joined) => {
                let mut last = OpenError::WrongKeyOrTampered;
                for key in held() {
                    match key.decrypt(&joined, ASSOCIATED_DATA_V1) {
                        Err(e @ OpenError::WrongKeyOrTampered) => last = e,
                        other => return other,
                    }
                }
                Err(last)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_0123456789abcdef";

    fn key(byte: u8) -> SealingKey {
        SealingKey::from_bytes([byte; KEY_BYTES])
    }

    /// A value as a server before key ids sealed it.
    fn seal_v1(key: &SealingKey, secret: &str) -> SealedSecret {
        let joined = key.encrypt(secret, ASSOCIATED_DATA_V1).expect("sealed");
        SealedSecret::from_stored(format!("sealed:v1:{}", BASE64.encode(joined)))
    }

    fn encoded(sealed: &SealedSecret) -> Vec<u8> {
        let (_, encoded) = sealed.as_stored().rsplit_once(':').expect("a sealed value");
        BASE64.decode(encoded).expect("base64")
    }

    #[test]
    fn a_sealed_secret_opens_to_itself_names_its_key_and_holds_nothing_of_it_in_the_clear() {
        let sealed = key(1).seal(SECRET).expect("sealed");
        let prefix = format!("sealed:v2:{}:", key(1).id());
        assert!(sealed.as_stored().starts_with(&prefix), "{}", sealed.as_stored());
        assert_eq!(key(1).stored_prefix(), prefix);
        assert_eq!(sealed.key_id(), Some(key(1).id()));
        assert!(!sealed.as_stored().contains(SECRET));
        assert!(sealed.is_sealed());
        assert_eq!(key(1).open(&sealed), Ok(SECRET.to_owned()));
        let bytes = encoded(&sealed);
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
        assert_eq!(key(2).open(&sealed), Err(OpenError::KeyNotHeld(key(1).id().to_owned())));
        // Relabelled with the other key's id, it still does not open.
        let relabelled =
            SealedSecret::from_stored(sealed.as_stored().replace(key(1).id(), key(2).id()));
        assert_eq!(key(2).open(&relabelled), Err(OpenError::WrongKeyOrTampered));
        assert_eq!(key(2).open(&seal_v1(&key(1), SECRET)), Err(OpenError::WrongKeyOrTampered));
    }

    #[test]
    fn a_changed_byte_anywhere_does_not_open() {
        let sealed = key(1).seal(SECRET).expect("sealed");
        let prefix = key(1).stored_prefix();
        let bytes = encoded(&sealed);
        for at in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[at] ^= 0x01;
            let altered = SealedSecret::from_stored(format!("{prefix}{}", BASE64.encode(&altered)));
            assert_eq!(key(1).open(&altered), Err(OpenError::WrongKeyOrTampered), "byte {at}");
        }
        let cut = &bytes[..bytes.len() - 1];
        let cut = SealedSecret::from_stored(format!("{prefix}{}", BASE64.encode(cut)));
        assert_eq!(key(1).open(&cut), Err(OpenError::WrongKeyOrTampered), "a cut tag");
        // A v2 value relabelled v1 (or the reverse) is another label.
        let as_v1 = SealedSecret::from_stored(format!("sealed:v1:{}", BASE64.encode(&bytes)));
        assert_eq!(key(1).open(&as_v1), Err(OpenError::WrongKeyOrTampered));
        let v1 = encoded(&seal_v1(&key(1), SECRET));
        let as_v2 = SealedSecret::from_stored(format!("{prefix}{}", BASE64.encode(v1)));
        assert_eq!(key(1).open(&as_v2), Err(OpenError::WrongKeyOrTampered));
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
        assert_eq!(
            open(&format!("{}not base64!", key(1).stored_prefix())),
            Err(OpenError::Malformed)
        );
        assert_eq!(
            open(&format!("sealed:v2:{}", BASE64.encode([0u8; 40]))),
            Err(OpenError::Malformed)
        );
        assert_eq!(open("sealed:v3:AAAA"), Err(OpenError::UnknownVersion));
    }

    #[test]
    fn a_value_stored_before_sealing_opens_as_itself() {
        let legacy = SealedSecret::from_stored(SECRET.to_owned());
        assert!(!legacy.is_sealed());
        assert_eq!(legacy.key_id(), None);
        assert_eq!(key(1).open(&legacy), Ok(SECRET.to_owned()));
        assert_eq!(key(2).open(&legacy), Ok(SECRET.to_owned()), "whatever the key");
    }

    /// During a rotation: the current key seals; what the previous one
    /// sealed opens, v1 (tried with each key) and v2 (by its id) alike;
    /// nothing else does.
    #[test]
    fn a_rotation_opens_what_either_key_sealed_and_seals_with_the_new_one() {
        let keys = SealingKeys::rotating(key(2), key(1));
        let new = keys.seal(SECRET).expect("sealed");
        assert_eq!(new.key_id(), Some(key(2).id()));
        assert!(keys.is_current(&new));
        for sealed in [
            new,
            key(1).seal(SECRET).expect("old"),
            seal_v1(&key(1), SECRET),
            seal_v1(&key(2), SECRET),
        ] {
            assert_eq!(keys.open(&sealed), Ok(SECRET.to_owned()), "{sealed:?}");
        }
        assert!(!keys.is_current(&key(1).seal(SECRET).expect("old")));
        assert!(
            !keys.is_current(&seal_v1(&key(2), SECRET)),
            "a v1 value is re-sealed to say its key"
        );
        let foreign = key(3).seal(SECRET).expect("foreign");
        let not_held = keys.open(&foreign).expect_err("not held");
        assert_eq!(not_held, OpenError::KeyNotHeld(key(3).id().to_owned()));
        assert!(not_held.may_open_with_another_key());
        assert_eq!(keys.open(&seal_v1(&key(3), SECRET)), Err(OpenError::WrongKeyOrTampered));
        assert_eq!(keys.previous().map(SealingKey::id), Some(key(1).id()));
        assert!(!OpenError::Malformed.may_open_with_another_key());
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
        let keys = SealingKeys::rotating(key(2), key(1));
        assert!(!format!("{keys:?}").contains(&"02".repeat(4)), "{keys:?}");
    }
}
