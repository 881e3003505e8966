//! Semantic Versioning, for Rust- and npm-style tools.

use crate::*;
use core::fmt;
use core::hash::Hash;
use core::str::FromStr;

/// A [Semantic Versioning](https://semver.org) version: a thin wrapper over
/// [`::semver::Version`] whose parser also accepts a leading `v` (`v1.2.3`) and
/// surrounding whitespace. Ordering is `semver`'s.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SemVer(pub ::semver::Version);

impl SemVer {
    /// Parses `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, optionally prefixed by `v`.
    ///
    /// # Errors
    /// Anything `semver` rejects (`1.2`, `1.2.3.4`, `01.2.3`, ...).
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let t = s.trim();
        let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
        ::semver::Version::parse(t).map(SemVer).map_err(|_| {
            VersionError::new(KIND_SEMVER, "expected MAJOR.MINOR.PATCH[-PRE][+BUILD]", s)
        })
    }
}

impl FromStr for SemVer {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for SemVer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn semver() {
        let a = match SemVer::parse("v1.2.3") {
            Ok(x) => x,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(a.0, ::semver::Version::new(1, 2, 3));
        assert_eq!(a.to_string(), "1.2.3");
        assert_eq!(SemVer::parse(" 1.2.3 "), Ok(a.clone()));
        let rc = SemVer::parse("1.2.3-rc.1").ok();
        assert!(rc.is_some_and(|rc| rc < a));
        assert!(SemVer::parse("1.10.0").ok() > SemVer::parse("1.9.0").ok());
        assert_eq!("1.2.3".parse::<SemVer>(), Ok(a));
        for s in ["", "1.2", "v", "1.2.3.4", "01.2.3", "x"] {
            let e = SemVer::parse(s).err();
            assert!(e.as_ref().is_some_and(|e| e.input() == s), "{s:?} should be rejected");
            assert!(e.is_some_and(|e| e.to_string().contains("semantic version")));
        }
    }
}
