//! The signed rule bundle: the registry's approved rule set as one file,
//! signed with ed25519, so a client can check offline with exactly the
//! rules the server serves and know that nobody changed them on the way.
//!
//! Layout (integers little-endian; `api/BUNDLE.md` says why each part is there):
//!
//! | bytes | what |
//! | --- | --- |
//! | 8 | magic `PITFALLB` |
//! | 4 | format version (2; 1 is still read) |
//! | 4 | index length `N` |
//! | N | the index: JSON ([`BundleIndex`]) |
//! | 64 | ed25519 signature of every byte before it (magic, version, length, index) |
//! | ... | the modules' bytes, concatenated in index order, nothing after |
//!
//! The signature covers the index, and the index holds each module's size
//! and sha256: a verifier checks the signature with its pinned key first,
//! then every module's digest, then that the file ends where the last
//! module does. Nothing is read as trusted before the signature holds.
//!
//! Format 2 signs when the bundle was issued and when it expires, so a
//! client can tell a stale bundle (a mirror or someone in the path
//! replaying an old one, or answering 304 for ever) from a current one;
//! format 1 had neither and is read as a bundle of unknown age.

use ed25519_dalek::{Signature, Signer, SigningKey};
use pitfall_contract::meta::{RuleMeta, Severity};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::key::PublicKey;

/// The first bytes of every bundle.
pub const MAGIC: &[u8; 8] = b"PITFALLB";
/// The format this crate writes.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format it still reads (no issue time or expiry).
pub const OLDEST_READ_FORMAT: u32 = 1;
/// How long a bundle is valid by default: a week, so a client offline for
/// a few days still checks, and a replayed bundle stops being accepted as
/// current within a week.
pub const DEFAULT_VALIDITY: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);
/// The media type `GET /v1/bundle` answers with.
pub const MEDIA_TYPE: &str = "application/vnd.pitfall.bundle";
/// An index larger than this is refused before it is parsed: 64 MiB is
/// some 200,000 rules' entries, past any registry we plan for.
pub const MAX_INDEX_BYTES: usize = 64 << 20;

const HEADER_BYTES: usize = 16;
const SIGNATURE_BYTES: usize = 64;

/// What the bundle says about itself and each rule (the signed part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BundleIndex {
    /// The format version, as in the header.
    pub format: u32,
    /// The registry's ruleset revision these rules are (checks made with
    /// this bundle answer with it).
    pub ruleset_revision: String,
    /// The key that signed it (`ed25519:<base64>`): a verifier compares it
    /// with its pinned key to say "signed by another key" rather than
    /// "tampered".
    pub public_key: String,
    /// When it was signed, in seconds since the Unix epoch (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// When it stops being current, in seconds since the Unix epoch
    /// (format 2): a client warns past it, or refuses with `--require-fresh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The rules, by id; the modules follow in this order.
    pub rules: Vec<BundleEntry>,
}

/// One rule in the bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BundleEntry {
    /// The rule's id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// The module's sha256 (hex).
    pub sha256: String,
    /// The module's size in bytes.
    pub size: u64,
    /// One line, what breaks.
    pub title: String,
    /// error, warning or info.
    pub severity: Severity,
    /// One paragraph.
    pub summary: String,
    /// The `applies_to` selectors.
    pub applies_to: Vec<String>,
}

/// Why a bundle was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Shorter than its header, index or signature claims.
    #[error("the bundle is truncated ({0})")]
    Truncated(&'static str),
    /// Not a bundle at all.
    #[error("not a Pitfall bundle (no PITFALLB magic)")]
    NotABundle,
    /// A format this client does not read.
    #[error(
        "bundle format {0} is not supported (this client reads formats {OLDEST_READ_FORMAT} to {FORMAT_VERSION})"
    )]
    UnsupportedFormat(u32),
    /// Signed, but by a key other than the pinned ones.
    #[error("the bundle is signed by {signed_by}, not by the pinned key {pinned}")]
    WrongKey {
        /// The key the bundle names (unverified).
        signed_by: String,
        /// The keys the client trusts (", "-separated).
        pinned: String,
    },
    /// The signature does not verify: the signed part was changed.
    #[error("the bundle's signature does not verify with the pinned key {pinned}: it was altered")]
    BadSignature {
        /// The keys the client trusts (", "-separated).
        pinned: String,
    },
    /// The signed index is not what the format says.
    #[error("the bundle's index is invalid: {0}")]
    BadIndex(String),
    /// A module whose bytes do not have the digest the index signs.
    #[error("module {rule_id} {version} does not match its signed sha256: it was altered")]
    DigestMismatch {
        /// The rule.
        rule_id: String,
        /// Its version.
        version: String,
    },
    /// Module bytes do not add up to the rest of the file.
    #[error("the modules take {expected} bytes but {actual} follow the signature")]
    LengthMismatch {
        /// What the index's sizes add up to.
        expected: u64,
        /// What the file holds.
        actual: u64,
    },
}

/// A bundle as written: its bytes and the HTTP entity tag naming them.
#[derive(Debug, Clone)]
pub struct SignedBundle {
    /// The file.
    pub bytes: Vec<u8>,
    /// `"<revision>-<digest>"`, quoted as HTTP wants it.
    pub etag: String,
    /// The ruleset revision it holds.
    pub ruleset_revision: String,
    /// How many rules it holds.
    pub rules: usize,
}

/// Signs bundles: an ed25519 signing key.
pub struct BundleSigner {
    key: SigningKey,
}

impl std::fmt::Debug for BundleSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("BundleSigner").field("public_key", &self.public_key().to_string()).finish()
    }
}

impl BundleSigner {
    /// A signer from a 32-byte ed25519 seed.
    pub fn from_seed(seed: &[u8; 32]) -> BundleSigner {
        BundleSigner { key: SigningKey::from_bytes(seed) }
    }

    /// Reads a PKCS#8 PEM private key (`openssl genpkey -algorithm ed25519`).
    pub fn from_pkcs8_pem(pem: &str) -> Result<BundleSigner, String> {
        use ed25519_dalek::pkcs8::DecodePrivateKey;
        SigningKey::from_pkcs8_pem(pem).map(|key| BundleSigner { key }).map_err(|e| e.to_string())
    }

    /// The key as PKCS#8 PEM, to store it.
    pub fn to_pkcs8_pem(&self) -> Result<String, String> {
        use ed25519_dalek::pkcs8::{EncodePrivateKey, spki::der::pem::LineEnding};
        self.key.to_pkcs8_pem(LineEnding::LF).map(|pem| pem.to_string()).map_err(|e| e.to_string())
    }

    /// The public half, which clients pin.
    pub fn public_key(&self) -> PublicKey {
        PublicKey::from(self.key.verifying_key())
    }

    /// Writes and signs a bundle of these rules (sorted by id), issued at
    /// `issued_at` and expiring `valid_for` later (both rounded down to
    /// whole seconds). Replicas with one key and one set write the same
    /// entity tag, which leaves the times out.
    pub fn sign(
        &self,
        ruleset_revision: &str,
        rules: &[(&RuleMeta, &[u8])],
        issued_at: std::time::SystemTime,
        valid_for: std::time::Duration,
    ) -> SignedBundle {
        let mut rules: Vec<&(&RuleMeta, &[u8])> = rules.iter().collect();
        rules.sort_by(|a, b| a.0.id.cmp(&b.0.id));
        let issued = unix_seconds(issued_at);
        let index = BundleIndex {
            format: FORMAT_VERSION,
            ruleset_revision: ruleset_revision.to_owned(),
            public_key: self.public_key().to_string(),
            issued_at: Some(issued),
            expires_at: Some(issued.saturating_add(valid_for.as_secs())),
            rules: rules.iter().map(|(meta, module)| entry(meta, module)).collect(),
        };
        // Serialising plain structs of strings and numbers cannot fail.
        let index_json = serde_json::to_vec(&index).unwrap_or_default();
        let modules_len: usize = rules.iter().map(|(_, m)| m.len()).sum();
        let mut bytes =
            Vec::with_capacity(HEADER_BYTES + index_json.len() + SIGNATURE_BYTES + modules_len);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&u32::try_from(index_json.len()).unwrap_or(u32::MAX).to_le_bytes());
        bytes.extend_from_slice(&index_json);
        let signature = self.key.sign(&bytes);
        let etag = etag(&index);
        bytes.extend_from_slice(&signature.to_bytes());
        for (_, module) in &rules {
            bytes.extend_from_slice(module);
        }
        SignedBundle {
            bytes,
            etag,
            ruleset_revision: ruleset_revision.to_owned(),
            rules: rules.len(),
        }
    }
}

fn entry(meta: &RuleMeta, module: &[u8]) -> BundleEntry {
    BundleEntry {
        id: meta.id.clone(),
        version: meta.version.clone(),
        sha256: hex(&Sha256::digest(module)),
        size: module.len() as u64,
        title: meta.title.clone(),
        severity: meta.severity,
        summary: meta.summary.clone(),
        applies_to: meta.applies_to.clone(),
    }
}

/// Seconds since the Unix epoch (0 before it).
pub fn unix_seconds(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The entity tag of a bundle: its revision (readable in logs) and a
/// digest of the key and every rule's id, version and sha256. The issue
/// and expiry times are left out, so a re-signed bundle of the same set
/// (a later replica, a refresh) is the same entity: a client holding it
/// is answered 304 and looks at its own copy's expiry.
fn etag(index: &BundleIndex) -> String {
    let mut h = Sha256::new();
    h.update(index.public_key.as_bytes());
    h.update(b"\n");
    h.update(index.ruleset_revision.as_bytes());
    for rule in &index.rules {
        h.update(b"\n");
        for part in [&rule.id, &rule.version, &rule.sha256] {
            h.update(part.as_bytes());
            h.update(b" ");
        }
    }
    let digest = hex(&h.finalize());
    let revision: String =
        index.ruleset_revision.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("\"{revision}-{}\"", &digest[..32])
}

/// A bundle whose signature and digests hold.
#[derive(Debug, Clone)]
pub struct Bundle<'a> {
    /// Its verified index.
    pub index: BundleIndex,
    /// Each rule's module, in index order.
    modules: Vec<&'a [u8]>,
    etag: String,
}

/// The header fields and the split of the file.
struct Parts<'a> {
    format: u32,
    signed: &'a [u8],
    index: &'a [u8],
    signature: &'a [u8],
    modules: &'a [u8],
}

fn split(bytes: &[u8]) -> Result<Parts<'_>, BundleError> {
    if bytes.len() < HEADER_BYTES {
        return Err(if bytes.starts_with(&MAGIC[..bytes.len().min(8)]) && !bytes.is_empty() {
            BundleError::Truncated("header")
        } else {
            BundleError::NotABundle
        });
    }
    if &bytes[..8] != MAGIC {
        return Err(BundleError::NotABundle);
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let format = word(8);
    if !(OLDEST_READ_FORMAT..=FORMAT_VERSION).contains(&format) {
        return Err(BundleError::UnsupportedFormat(format));
    }
    let index_len = word(12) as usize;
    if index_len > MAX_INDEX_BYTES {
        return Err(BundleError::BadIndex(format!(
            "{index_len} bytes, over the bound of {MAX_INDEX_BYTES}"
        )));
    }
    let index_end = HEADER_BYTES + index_len;
    let signature_end = index_end + SIGNATURE_BYTES;
    if bytes.len() < index_end {
        return Err(BundleError::Truncated("index"));
    }
    if bytes.len() < signature_end {
        return Err(BundleError::Truncated("signature"));
    }
    Ok(Parts {
        format,
        signed: &bytes[..index_end],
        index: &bytes[HEADER_BYTES..index_end],
        signature: &bytes[index_end..signature_end],
        modules: &bytes[signature_end..],
    })
}

/// Reads the index without checking anything: only to say what a refused
/// bundle claims (which key, which revision). Never use it to run rules.
pub fn read_index_unverified(bytes: &[u8]) -> Result<BundleIndex, BundleError> {
    let parts = split(bytes)?;
    serde_json::from_slice(parts.index).map_err(|e| BundleError::BadIndex(e.to_string()))
}

/// Whether these bytes start like a bundle (to tell one from a `.wasm`).
pub fn looks_like_bundle(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl<'a> Bundle<'a> {
    /// Checks a bundle against the pinned key: the signature over the
    /// header and index, then each module's size and sha256, then that
    /// nothing follows the last module. Its age is not judged here: see
    /// [`Bundle::freshness`].
    pub fn verify(bytes: &'a [u8], pinned: &PublicKey) -> Result<Bundle<'a>, BundleError> {
        Bundle::verify_any(bytes, std::slice::from_ref(pinned))
    }

    /// As [`Bundle::verify`], with any of several pinned keys (two while
    /// a registry rotates its key: the old and the new).
    pub fn verify_any(bytes: &'a [u8], pinned: &[PublicKey]) -> Result<Bundle<'a>, BundleError> {
        let parts = split(bytes)?;
        let pinned_text = pinned.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let signature = Signature::from_slice(parts.signature)
            .map_err(|_| BundleError::BadSignature { pinned: pinned_text.clone() })?;
        let verifies =
            |key: &PublicKey| key.verifying_key().verify_strict(parts.signed, &signature).is_ok();
        if !pinned.iter().any(verifies) {
            // Which failure it is only decides the message: a bundle that
            // names another key was most likely signed by it.
            let claimed =
                serde_json::from_slice::<BundleIndex>(parts.index).ok().map(|i| i.public_key);
            return Err(match claimed {
                Some(signed_by) if pinned.iter().all(|k| k.to_string() != signed_by) => {
                    BundleError::WrongKey { signed_by, pinned: pinned_text }
                }
                _ => BundleError::BadSignature { pinned: pinned_text },
            });
        }
        let index: BundleIndex = serde_json::from_slice(parts.index)
            .map_err(|e| BundleError::BadIndex(e.to_string()))?;
        if index.format != parts.format {
            return Err(BundleError::BadIndex(format!(
                "index format {} in a format {} file",
                index.format, parts.format
            )));
        }
        if index.format >= 2 {
            match (index.issued_at, index.expires_at) {
                (Some(issued), Some(expires)) if issued <= expires => {}
                _ => {
                    return Err(BundleError::BadIndex(
                        "a format 2 index needs issued_at <= expires_at".to_owned(),
                    ));
                }
            }
        }
        let mut ids = std::collections::HashSet::with_capacity(index.rules.len());
        let mut modules = Vec::with_capacity(index.rules.len());
        let mut rest = parts.modules;
        let expected: u64 = index.rules.iter().map(|r| r.size).fold(0u64, u64::saturating_add);
        if expected != rest.len() as u64 {
            return Err(BundleError::LengthMismatch { expected, actual: rest.len() as u64 });
        }
        for rule in &index.rules {
            if !ids.insert(rule.id.as_str()) {
                return Err(BundleError::BadIndex(format!("rule {} appears twice", rule.id)));
            }
            // The total matched above, so every size fits in what is left.
            let size = usize::try_from(rule.size).unwrap_or(usize::MAX).min(rest.len());
            let (module, tail) = rest.split_at(size);
            if hex(&Sha256::digest(module)) != rule.sha256.to_ascii_lowercase() {
                return Err(BundleError::DigestMismatch {
                    rule_id: rule.id.clone(),
                    version: rule.version.clone(),
                });
            }
            modules.push(module);
            rest = tail;
        }
        let etag = etag(&index);
        Ok(Bundle { index, modules, etag })
    }

    /// Whether the bundle is still current at `now`.
    pub fn freshness(&self, now: std::time::SystemTime) -> Freshness {
        match self.index.expires_at {
            None => Freshness::Unknown,
            Some(expires) if unix_seconds(now) < expires => {
                Freshness::Current { expires_at: expires }
            }
            Some(expires) => Freshness::Expired { expires_at: expires },
        }
    }

    /// Each rule's index entry and module bytes, in index order.
    pub fn modules(&self) -> impl Iterator<Item = (&BundleEntry, &'a [u8])> + '_ {
        self.index.rules.iter().zip(self.modules.iter().copied())
    }

    /// The entity tag the server gave this bundle.
    pub fn etag(&self) -> &str {
        &self.etag
    }
}

/// A verified bundle's age against its signed expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Before its expiry (seconds since the Unix epoch).
    Current {
        /// When it expires.
        expires_at: u64,
    },
    /// At or past its expiry.
    Expired {
        /// When it expired.
        expires_at: u64,
    },
    /// A format 1 bundle: it signs no expiry, so its age cannot be told.
    Unknown,
}

impl Freshness {
    /// Whether it may be used as current: only before a signed expiry.
    pub fn is_current(self) -> bool {
        matches!(self, Freshness::Current { .. })
    }
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str) -> RuleMeta {
        serde_json::from_value(serde_json::json!({
            "id": id, "version": "1.0.0", "title": "t", "severity": "error", "summary": "s",
            "message": "m", "applies_to": ["package:vllm"], "author": "a",
            "references": [{"title": "r", "url": "https://example.org"}],
            "remedies": [{"summary": "fix", "actions": []}]
        }))
        .expect("meta")
    }

    fn signer(seed: u8) -> BundleSigner {
        BundleSigner::from_seed(&[seed; 32])
    }

    const DAY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

    fn at(unix: u64) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix)
    }

    fn sample_at(signer: &BundleSigner, issued: u64) -> SignedBundle {
        let (a, b) = (meta("b-rule"), meta("a-rule"));
        let rules = [(&a, b"module b".as_slice()), (&b, b"module a, longer".as_slice())];
        signer.sign("7", &rules, at(issued), DEFAULT_VALIDITY)
    }

    fn sample(signer: &BundleSigner) -> SignedBundle {
        sample_at(signer, 1_800_000_000)
    }

    /// A bundle as format 1 wrote it: no issue time, no expiry.
    fn format_1(signer: &BundleSigner) -> Vec<u8> {
        let module = b"module a".as_slice();
        let mut index = serde_json::to_value(BundleIndex {
            format: 1,
            ruleset_revision: "3".to_owned(),
            public_key: signer.public_key().to_string(),
            issued_at: None,
            expires_at: None,
            rules: vec![entry(&meta("a-rule"), module)],
        })
        .expect("index");
        assert!(index.get("issued_at").is_none(), "format 1 has no times");
        index["format"] = 1.into();
        let json = serde_json::to_vec(&index).expect("json");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&u32::try_from(json.len()).expect("len").to_le_bytes());
        bytes.extend_from_slice(&json);
        let signature = signer.key.sign(&bytes);
        bytes.extend_from_slice(&signature.to_bytes());
        bytes.extend_from_slice(module);
        bytes
    }

    #[test]
    fn the_issue_time_and_expiry_are_signed_and_judged() {
        let s = signer(1);
        let signed = sample_at(&s, 1_800_000_000);
        let bundle = Bundle::verify(&signed.bytes, &s.public_key()).expect("verifies");
        assert_eq!(bundle.index.issued_at, Some(1_800_000_000));
        assert_eq!(bundle.index.expires_at, Some(1_800_000_000 + 7 * 24 * 3600));
        let expires_at = 1_800_000_000 + 7 * 24 * 3600;
        assert_eq!(bundle.freshness(at(1_800_000_000) + DAY), Freshness::Current { expires_at });
        assert_eq!(bundle.freshness(at(expires_at)), Freshness::Expired { expires_at });
        // A later signature of the same set is the same entity.
        assert_eq!(sample_at(&s, 1_800_000_000 + 3600).etag, signed.etag);
        assert_ne!(sample_at(&s, 1_800_000_000 + 3600).bytes, signed.bytes);
        // Moving the expiry is altering the signed part.
        let text = String::from_utf8_lossy(&signed.bytes).into_owned();
        let at_expiry = text.find(&expires_at.to_string()).expect("expiry in the index");
        let mut later = signed.bytes.clone();
        later[at_expiry] += 1;
        assert!(matches!(
            Bundle::verify(&later, &s.public_key()),
            Err(BundleError::BadSignature { .. })
        ));
    }

    #[test]
    fn a_format_1_bundle_still_verifies_with_an_unknown_age() {
        let s = signer(1);
        let bytes = format_1(&s);
        let bundle = Bundle::verify(&bytes, &s.public_key()).expect("format 1 verifies");
        assert_eq!(bundle.index.format, 1);
        assert_eq!(bundle.freshness(at(0)), Freshness::Unknown);
        assert!(!bundle.freshness(at(0)).is_current());
        // A format 3 file is not read.
        let mut future = bytes.clone();
        future[8] = 3;
        assert_eq!(
            Bundle::verify(&future, &s.public_key()).expect_err("refused"),
            BundleError::UnsupportedFormat(3)
        );
    }

    #[test]
    fn either_of_two_pinned_keys_verifies_during_a_rotation() {
        let (old, new, other) = (signer(1), signer(2), signer(3));
        let pinned = [old.public_key(), new.public_key()];
        for s in [&old, &new] {
            assert!(Bundle::verify_any(&sample(s).bytes, &pinned).is_ok());
        }
        let err = Bundle::verify_any(&sample(&other).bytes, &pinned).expect_err("refused");
        assert!(matches!(err, BundleError::WrongKey { .. }), "{err}");
        assert!(err.to_string().contains(&new.public_key().to_string()), "{err}");
        assert!(Bundle::verify_any(&sample(&old).bytes, &[]).is_err(), "no key, no bundle");
    }

    #[test]
    fn a_signed_bundle_verifies_and_lists_its_modules_sorted_by_id() {
        let s = signer(1);
        let signed = sample(&s);
        let bundle = Bundle::verify(&signed.bytes, &s.public_key()).expect("verifies");
        let got: Vec<(&str, &[u8])> = bundle.modules().map(|(e, m)| (e.id.as_str(), m)).collect();
        assert_eq!(
            got,
            vec![("a-rule", b"module a, longer".as_slice()), ("b-rule", b"module b".as_slice())]
        );
        assert_eq!(bundle.index.ruleset_revision, "7");
        assert_eq!(bundle.etag(), signed.etag);
        assert!(signed.etag.starts_with("\"7-"));
    }

    #[test]
    fn the_same_set_and_key_give_the_same_bytes() {
        assert_eq!(sample(&signer(1)).bytes, sample(&signer(1)).bytes);
        assert_ne!(sample(&signer(1)).etag, sample(&signer(2)).etag);
    }

    /// Every byte of the header, then every 5th byte and the last: each
    /// part of the file (index, signature, modules) many times over, in a
    /// fraction of the time every byte would take.
    fn positions(len: usize) -> impl Iterator<Item = usize> {
        (0..HEADER_BYTES).chain((HEADER_BYTES..len).step_by(5)).chain([len - 1])
    }

    #[test]
    fn flipped_bytes_anywhere_are_refused() {
        let s = signer(1);
        let signed = sample(&s);
        for i in positions(signed.bytes.len()) {
            let mut bytes = signed.bytes.clone();
            bytes[i] ^= 0x01;
            assert!(
                Bundle::verify(&bytes, &s.public_key()).is_err(),
                "byte {i} flipped and still verified"
            );
        }
    }

    #[test]
    fn truncated_or_extended_bundles_are_refused() {
        let s = signer(1);
        let signed = sample(&s);
        for len in positions(signed.bytes.len()) {
            assert!(
                Bundle::verify(&signed.bytes[..len], &s.public_key()).is_err(),
                "{len} bytes verified"
            );
        }
        let mut longer = signed.bytes.clone();
        longer.push(0);
        assert!(matches!(
            Bundle::verify(&longer, &s.public_key()),
            Err(BundleError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn another_key_is_named_as_such() {
        let signed = sample(&signer(1));
        let err = Bundle::verify(&signed.bytes, &signer(2).public_key()).expect_err("refused");
        assert!(matches!(err, BundleError::WrongKey { .. }), "{err}");
    }

    #[test]
    fn signing_keys_round_trip_through_pem() {
        let s = signer(9);
        let pem = s.to_pkcs8_pem().expect("pem");
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let back = BundleSigner::from_pkcs8_pem(&pem).expect("reads back");
        assert_eq!(back.public_key(), s.public_key());
        assert!(BundleSigner::from_pkcs8_pem("not a key").is_err());
    }
}
