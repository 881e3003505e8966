//! Version parsing and comparison for rules.
//!
//! Several version schemes meet in ML infrastructure, and a rule usually
//! needs to know which one it is looking at:
//!
//! * [`Version`]: Python package versions, [PEP 440] (`0.27.2rc0`,
//!   `2.12.0+cu126`, `0.6.3.post1`, `2.13.0.dev20260501`, `1!2.0`).
//! * [`Dotted`]: plain dotted numbers: NVIDIA drivers (`570.86.15`), CUDA
//!   (`12.8`), OS releases (`24.04`).
//! * [`ComputeCapability`]: GPU compute capability (`8.6`, `sm_90`, `9.0a`),
//!   and [`ArchEntry`]: an entry of a CUDA arch list and the GPUs it runs on.
//! * [`SemVer`]: Semantic Versioning, for Rust/npm-style tools.
//! * [`Specifier`]: PEP 440 requirements such as `>=2.8,<2.11`.
//!
//! The free functions [`pep440_lt`], [`pep440_ge`], [`dotted_lt`] and
//! [`dotted_ge`] compare two texts directly, which is what most rules need.
//!
//! Rules are compiled to `wasm32-unknown-unknown`, so this module is
//! `no_std` + `alloc` and hand-parses everything (no regex, no Unicode
//! tables) to keep rule modules small.
//!
//! [PEP 440]: https://peps.python.org/pep-0440/

#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

use alloc::string::String;
use core::fmt;

mod arch;
mod capability;
mod dotted;
pub mod name;
mod pep440;
mod scan;
mod semantic;
mod specifier;

pub use arch::{ArchEntry, arch_entries};
pub use capability::ComputeCapability;
pub use dotted::Dotted;
pub use pep440::Version;
pub use semantic::SemVer;
pub use specifier::{PackedInterval, Specifier};

/// A text that could not be parsed as a version, capability or specifier.
///
/// Carries what was being parsed, what was wrong, and the input as given, so
/// a rule author sees e.g. `invalid PEP 440 version "1..2": empty segment
/// (two dots in a row)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionError {
    kind: &'static str,
    reason: &'static str,
    input: String,
}

impl VersionError {
    pub(crate) fn new(kind: &'static str, reason: &'static str, input: &str) -> Self {
        Self { kind, reason, input: String::from(input) }
    }

    /// What the input was being parsed as, e.g. `"PEP 440 version"`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// What was wrong with the input, e.g. `"number too large"`.
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The text that failed to parse, exactly as it was given.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Plain quotes rather than `{:?}`: Debug escaping of `str` drags
        // Unicode tables into every rule module.
        write!(f, "invalid {} \"{}\": {}", self.kind, self.input, self.reason)
    }
}

impl core::error::Error for VersionError {}

pub(crate) const KIND_PEP440: &str = "PEP 440 version";
pub(crate) const KIND_DOTTED: &str = "dotted version";
pub(crate) const KIND_CC: &str = "compute capability";
pub(crate) const KIND_SEMVER: &str = "semantic version";
pub(crate) const KIND_SPEC: &str = "version specifier";

pub(crate) const E_EMPTY: &str = "empty input";
pub(crate) const E_TOO_LARGE: &str = "number too large";

/// `version < bound` as PEP 440 versions; `None` if either does not parse.
///
/// `pep440_lt("0.27.1", "0.27.2rc0") == Some(true)`.
pub fn pep440_lt(version: &str, bound: &str) -> Option<bool> {
    Some(Version::parse(version).ok()? < Version::parse(bound).ok()?)
}

/// `version >= bound` as PEP 440 versions; `None` if either does not parse.
///
/// `pep440_ge("2.12.0+cu126", "2.12.0") == Some(true)`.
pub fn pep440_ge(version: &str, bound: &str) -> Option<bool> {
    Some(Version::parse(version).ok()? >= Version::parse(bound).ok()?)
}

/// `version < bound` as dotted numbers; `None` if either does not parse.
///
/// `dotted_lt("570.86.15", "570.124.06") == Some(true)`.
pub fn dotted_lt(version: &str, bound: &str) -> Option<bool> {
    Some(Dotted::parse(version).ok()? < Dotted::parse(bound).ok()?)
}

/// `version >= bound` as dotted numbers; `None` if either does not parse.
///
/// `dotted_ge("12.8", "12.8.0") == Some(true)`.
pub fn dotted_ge(version: &str, bound: &str) -> Option<bool> {
    Some(Dotted::parse(version).ok()? >= Dotted::parse(bound).ok()?)
}

/// The CUDA version named by a PyTorch-style local version label:
/// `cu128` → `(12, 8)`, `cu130` → `(13, 0)`, `cu92` → `None` (ambiguous,
/// pre-11 spelling); `None` for `cpu`, `rocm6.2` and the like. Segments
/// after a dot are ignored (`cu126.post1`).
pub fn cuda_tag(local: &str) -> Option<(u64, u64)> {
    let digits = local.split('.').next()?.strip_prefix("cu")?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some((n / 10, n % 10))
}

#[cfg(test)]
mod test_support {
    use super::*;
    use core::cmp::Ordering;
    use core::cmp::Ordering::Equal;
    use core::hash::{Hash, Hasher};
    use std::collections::hash_map::DefaultHasher;

    pub(crate) fn v(s: &str) -> Version {
        match Version::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    pub(crate) fn d(s: &str) -> Dotted {
        match Dotted::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    pub(crate) fn cc(s: &str) -> ComputeCapability {
        match ComputeCapability::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    pub(crate) fn spec(s: &str) -> Specifier {
        match Specifier::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    pub(crate) fn hash_of<T: Hash>(t: &T) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    /// Checks `a cmp b == want` both ways round, and that `Eq`, `PartialOrd`
    /// and `Hash` agree with it.
    pub(crate) fn check_order<T: Ord + Hash + fmt::Debug>(
        a: &T,
        b: &T,
        want: Ordering,
        what: &str,
    ) {
        assert_eq!(a.cmp(b), want, "{what}: {a:?} vs {b:?}");
        assert_eq!(b.cmp(a), want.reverse(), "{what} (reversed): {b:?} vs {a:?}");
        assert_eq!(a.partial_cmp(b), Some(want), "{what}: partial_cmp");
        assert_eq!(a == b, want == Equal, "{what}: eq");
        if want == Equal {
            assert_eq!(hash_of(a), hash_of(b), "{what}: equal values must hash alike");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convenience() {
        assert_eq!(pep440_lt("0.27.1", "0.27.2rc0"), Some(true));
        assert_eq!(pep440_lt("0.27.2rc0", "0.27.2"), Some(true));
        assert_eq!(pep440_lt("0.27.2", "0.27.2rc0"), Some(false));
        assert_eq!(pep440_lt("1.0", "1.0.0"), Some(false));
        assert_eq!(pep440_ge("1.0", "1.0.0"), Some(true));
        assert_eq!(pep440_ge("2.12.0+cu126", "2.12.0"), Some(true));
        assert_eq!(pep440_ge("2.12.0+cu126", "2.12.1"), Some(false));
        assert_eq!(pep440_ge("v0.27.1", "0.27.1"), Some(true));
        assert_eq!(pep440_lt("abc", "1.0"), None);
        assert_eq!(pep440_ge("1.0", "1..2"), None);
        assert_eq!(dotted_lt("570.86.15", "570.124.06"), Some(true));
        assert_eq!(dotted_lt("580.159.04", "570.124.06"), Some(false));
        assert_eq!(dotted_ge("12.8", "12.8.0"), Some(true));
        assert_eq!(dotted_ge("12.6", "12.8"), Some(false));
        assert_eq!(dotted_lt("12.8", "x"), None);
        assert_eq!(dotted_ge("", "1"), None);
    }

    #[test]
    fn cuda_tags() {
        assert_eq!(cuda_tag("cu128"), Some((12, 8)));
        assert_eq!(cuda_tag("cu130"), Some((13, 0)));
        assert_eq!(cuda_tag("cu126.post1"), Some((12, 6)));
        assert_eq!(cuda_tag("cpu"), None);
        assert_eq!(cuda_tag("rocm6.2"), None);
        assert_eq!(cuda_tag("cu92"), None);
        assert_eq!(Version::parse("2.12.0+cu129").ok().and_then(|v| v.cuda_build()), Some((12, 9)));
    }
}
