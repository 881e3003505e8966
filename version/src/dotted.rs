//! Plain dotted numbers: NVIDIA drivers (`570.86.15`), CUDA (`12.8`),
//! OS releases (`24.04`).

use crate::scan::*;
use crate::*;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

/// A plain dotted numeric version: NVIDIA driver (`570.86.15`), CUDA
/// (`12.8`), OS release (`24.04`).
///
/// Every component must be a number; leading zeros are allowed and do not
/// matter (`580.159.04` has components 580, 159, 4). Comparison is
/// component-wise with missing components counted as 0, so `12 == 12.0` and
/// `570.86.15 < 570.124.06`. Surrounding whitespace is trimmed; anything else
/// (`v12`, `12.8a`, `12..8`) is rejected. `Hash` agrees with `Eq`.
#[derive(Clone, Debug)]
pub struct Dotted {
    text: String,
    parts: Vec<u64>,
}

impl Dotted {
    /// Parses a dotted numeric version.
    ///
    /// # Errors
    /// Empty input, empty components, non-numeric components, numbers that
    /// do not fit in a `u64`.
    pub fn parse(s: &str) -> Result<Dotted, VersionError> {
        let err = |reason| VersionError::new(KIND_DOTTED, reason, s);
        let t = s.trim();
        if t.is_empty() {
            return Err(err(E_EMPTY));
        }
        let mut parts = Vec::with_capacity(3);
        for c in t.split('.') {
            if c.is_empty() {
                return Err(err("empty component"));
            }
            parts.push(whole_number(c).map_err(err)?);
        }
        Ok(Dotted { text: String::from(t), parts })
    }

    /// The components as written, e.g. `[570, 86, 15]`.
    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// The first component (`570` for `570.86.15`, `12` for `12.8`).
    pub fn major(&self) -> u64 {
        self.parts.first().copied().unwrap_or(0)
    }

    /// The second component, 0 when absent (`8` for `12.8`).
    pub fn minor(&self) -> u64 {
        self.parts.get(1).copied().unwrap_or(0)
    }

    /// The text this version was parsed from, without surrounding whitespace.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Ord for Dotted {
    fn cmp(&self, other: &Self) -> Ordering {
        // Comparing the zero-trimmed lists equals comparing zero-padded ones.
        trim_zeros(&self.parts).cmp(trim_zeros(&other.parts))
    }
}

impl PartialOrd for Dotted {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Dotted {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Dotted {}

impl Hash for Dotted {
    fn hash<H: Hasher>(&self, state: &mut H) {
        trim_zeros(&self.parts).hash(state);
    }
}

impl FromStr for Dotted {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Dotted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    use crate::test_support::*;
    use core::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn dotted() {
        let table: &[(&str, &str, Ordering)] = &[
            ("570.86.15", "570.124.06", Less),
            ("580.159.04", "580.159.4", Equal),
            ("580.159.04", "580.159.10", Less),
            ("580.159.04", "570.999.99", Greater),
            ("12.8", "12.10", Less),
            ("12.8", "12.8.0", Equal),
            ("12", "12.0", Equal),
            ("12", "12.0.1", Less),
            ("13.0", "12.9.9", Greater),
            ("24.04", "22.04", Greater),
            ("24.04", "24.4", Equal),
            (" 12.8 ", "12.8", Equal),
            ("0", "0.0.0", Equal),
        ];
        for &(a, b, want) in table {
            check_order(&d(a), &d(b), want, "dotted");
        }
        let x = d(" 570.86.15\t");
        assert_eq!(x.parts(), &[570, 86, 15]);
        assert_eq!(x.major(), 570);
        assert_eq!(x.minor(), 86);
        assert_eq!(x.as_str(), "570.86.15");
        assert_eq!(x.to_string(), "570.86.15");
        assert_eq!(d("12").minor(), 0);
        assert_eq!("12.8".parse::<Dotted>(), Ok(d("12.8.0")));

        for s in [
            "",
            " ",
            "v12",
            "12.8a",
            "12..8",
            "12.",
            ".8",
            "a.b",
            "12.-1",
            "12,8",
            "1 2",
            "+1",
            "99999999999999999999999",
        ] {
            let e = match Dotted::parse(s) {
                Ok(x) => panic!("{s:?} should be rejected, got {x:?}"),
                Err(e) => e,
            };
            assert_eq!(e.input(), s);
            assert!(e.to_string().contains("dotted version"));
        }
    }
}
