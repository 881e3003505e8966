//! GPU compute capabilities: `8.6`, `sm_90`, `9.0a`.

use crate::scan::*;
use crate::*;
use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

/// A CUDA GPU compute capability, `major.minor` (`7.5`, `9.0`, `12.0`).
///
/// Parses `"7.5"`, `"sm_75"`, `"75"`, `"compute_90"`, `"9.0a"`, `"sm_100f"`.
/// In the dotless forms the last digit is the minor version (`sm_120` is
/// 12.0). An arch-specific suffix (`a`, `f`) is kept for display
/// ([`ComputeCapability::suffix`]) but ignored by `Eq`, `Ord` and `Hash`,
/// which look at `(major, minor)` only: `9.0a == 9.0`, `12.0 > 9.0`.
#[derive(Clone, Copy, Debug)]
pub struct ComputeCapability {
    /// Major version: `8` in `8.6`.
    pub major: u32,
    /// Minor version: `6` in `8.6`.
    pub minor: u32,
    /// `b'a'`, `b'f'`, or 0 for none. Private so it can only hold those.
    suffix: u8,
}

impl ComputeCapability {
    /// A capability without arch-specific suffix.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor, suffix: 0 }
    }

    /// Parses a compute capability; surrounding whitespace is ignored and the
    /// `sm_`/`compute_` prefixes and the `a`/`f` suffix are case-insensitive.
    ///
    /// # Errors
    /// Anything else, including a bare single digit (`"9"`), which is
    /// ambiguous between `9.0` and a typo.
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let err = |reason| VersionError::new(KIND_CC, reason, s);
        let t = s.trim();
        if t.is_empty() {
            return Err(err(E_EMPTY));
        }
        let b = t.as_bytes();
        let skip = [&b"sm_"[..], b"compute_"]
            .iter()
            .find(|p| starts_with_ci(b, 0, p))
            .map_or(0, |p| p.len());
        let mut body = &t[skip..];
        let mut suffix = 0;
        if let Some(c @ (b'a' | b'f' | b'A' | b'F')) = body.bytes().last() {
            suffix = c.to_ascii_lowercase();
            body = &body[..body.len() - 1];
        }
        let to_u32 = |n: u64| u32::try_from(n).map_err(|_| err(E_TOO_LARGE));
        let (major, minor) = match body.split_once('.') {
            Some((ma, mi)) if !ma.is_empty() && !mi.is_empty() => (
                whole_number(ma).map_err(|_| err("expected major.minor, e.g. 8.6"))?,
                whole_number(mi).map_err(|_| err("expected major.minor, e.g. 8.6"))?,
            ),
            Some(_) => return Err(err("expected major.minor, e.g. 8.6")),
            None => {
                if body.len() < 2 || !is_digits(body) {
                    return Err(err("expected major.minor (8.6) or sm_XY (sm_86)"));
                }
                let (ma, mi) = body.split_at(body.len() - 1);
                (whole_number(ma).map_err(err)?, whole_number(mi).map_err(err)?)
            }
        };
        Ok(Self { major: to_u32(major)?, minor: to_u32(minor)?, suffix })
    }

    /// The `sm_XY` number: `major * 10 + minor` (75 for 7.5, 120 for 12.0).
    pub fn sm(&self) -> u32 {
        self.major.saturating_mul(10).saturating_add(self.minor)
    }

    /// The arch-specific suffix, `Some('a')` for `9.0a`, `Some('f')` for
    /// `10.0f`, `None` for a plain capability.
    pub fn suffix(&self) -> Option<char> {
        (self.suffix != 0).then_some(char::from(self.suffix))
    }
}

impl Ord for ComputeCapability {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor).cmp(&(other.major, other.minor))
    }
}

impl PartialOrd for ComputeCapability {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ComputeCapability {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ComputeCapability {}

impl Hash for ComputeCapability {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.major, self.minor).hash(state);
    }
}

impl FromStr for ComputeCapability {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        match self.suffix() {
            Some(c) => write!(f, "{c}"),
            None => Ok(()),
        }
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
    fn compute_capability() {
        let table: &[(&str, u32, u32, Option<char>, &str)] = &[
            ("7.5", 7, 5, None, "7.5"),
            ("sm_75", 7, 5, None, "7.5"),
            ("75", 7, 5, None, "7.5"),
            ("compute_90", 9, 0, None, "9.0"),
            ("9.0a", 9, 0, Some('a'), "9.0a"),
            ("sm_90a", 9, 0, Some('a'), "9.0a"),
            ("SM_100F", 10, 0, Some('f'), "10.0f"),
            ("12.0", 12, 0, None, "12.0"),
            ("10.0", 10, 0, None, "10.0"),
            ("sm_120", 12, 0, None, "12.0"),
            (" 8.6 ", 8, 6, None, "8.6"),
            ("08.6", 8, 6, None, "8.6"),
        ];
        for &(s, major, minor, suffix, shown) in table {
            let c = cc(s);
            assert_eq!((c.major, c.minor, c.suffix()), (major, minor, suffix), "{s}");
            assert_eq!(c.to_string(), shown, "{s}");
            assert_eq!(c, ComputeCapability::new(major, minor), "{s}");
            assert_eq!(c.sm(), major * 10 + minor, "{s}");
        }
        assert_eq!(cc("sm_75").sm(), 75);
        assert_eq!(cc("12.0").sm(), 120);

        let order: &[(&str, &str, Ordering)] = &[
            ("12.0", "9.0", Greater),
            ("7.5", "8.0", Less),
            ("8.6", "8.9", Less),
            ("9.0a", "9.0", Equal),
            ("sm_90a", "compute_90", Equal),
            ("10.0", "9.0", Greater),
            ("sm_100", "sm_90", Greater),
            ("8.0", "80", Equal),
        ];
        for &(a, b, want) in order {
            check_order(&cc(a), &cc(b), want, "compute capability");
        }
        const HOPPER: ComputeCapability = ComputeCapability::new(9, 0);
        assert!(cc("sm_120") >= HOPPER);
        assert!(cc("8.9") < HOPPER);
        assert_eq!("sm_86".parse::<ComputeCapability>(), Ok(ComputeCapability::new(8, 6)));

        for s in [
            "",
            "9",
            "sm_",
            "sm_9",
            "7.",
            ".5",
            "x.y",
            "7.5b",
            "sm_75x",
            "7.5.1",
            "sm75",
            "a",
            "99999999999.0",
        ] {
            let e = match ComputeCapability::parse(s) {
                Ok(x) => panic!("{s:?} should be rejected, got {x:?}"),
                Err(e) => e,
            };
            assert_eq!(e.input(), s);
            assert!(e.to_string().contains("compute capability"));
        }
    }
}
