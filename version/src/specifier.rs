//! PEP 440 version specifiers (`>=2.8,<2.11`) and the packed intervals
//! that the engine's gates test.

use crate::pep440::*;
use crate::*;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use core::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Compatible,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Clause {
    /// `op version` (no wildcard).
    Cmp(Op, Version),
    /// `==V.*` (or `!=V.*` when `negated`): epoch and release prefix match.
    Prefix { negated: bool, version: Version },
    /// `===text`: case-insensitive string equality, no version semantics.
    Arbitrary(String),
}

/// A PEP 440 version specifier such as `>=0.27.2rc0`, `<0.10.2`, `==2.12.*`,
/// `~=2.12`, `!=1.0` or `>=2.8,<2.11` (comma = and).
///
/// Each clause is evaluated per PEP 440, matching the Python `packaging`
/// library (26.x) with `prereleases=True`:
///
/// * `==V` / `!=V` ignore the candidate's local label unless `V` has one
///   (`==1.0` matches `1.0+cu126`; `==1.0+cu126` matches only that).
/// * `==V.*` / `!=V.*` match on epoch and zero-padded release prefix; the
///   candidate's pre/post/dev/local parts do not matter (`==2.12.*` matches
///   `2.12.0rc1` and `2.12.5+cu126`).
/// * `~=V.N` is `>=V.N, ==V.*`.
/// * `<=V` / `>=V` compare without the candidate's local label.
/// * `<V` (V not a pre-release) means `<V.dev0`: it excludes V's own
///   pre-releases (`2.11.0rc1` is not `<2.11`), but not those of an earlier
///   release (`1.0a1` is `<1.0.post1`).
/// * `>V` excludes V's local variants and, when V is a final or pre-release,
///   V's post-releases (`1.7.post1` is not `>1.7`; `1.0.post1` is `>1.0a1`).
/// * `===text` compares the candidate's original text, ignoring ASCII case.
///
/// Pre-releases: there is **no** global "exclude pre-releases unless asked"
/// filter (that rule is about choosing what to install; rules judge what *is*
/// installed, as pip does for installed packages). A pre- or dev-release is
/// matched by its place in the order, so `0.27.2rc0` matches `>=0.27.2rc0`,
/// `2.13.0.dev20260501` matches `>=2.12`, and `0.27.2rc0` does not match
/// `>=0.27.2`.
///
/// `==` between two `Specifier`s compares their text (after trimming).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Specifier {
    text: String,
    clauses: Vec<Clause>,
}

impl Specifier {
    /// The version an `==V`, `>=V` or `~=V` clause names, when the whole
    /// specifier admits it (`>=2.3,<3` gives `2.3`; `<2` gives none): a
    /// version to install that the specifier itself names.
    pub fn admitted_bound(&self) -> Option<&Version> {
        self.clauses.iter().find_map(|c| match c {
            Clause::Cmp(Op::Eq | Op::Ge | Op::Compatible, v) if self.contains(v) => Some(v),
            _ => None,
        })
    }

    /// A version to install that meets the specifier, named by its own
    /// bounds when no table of releases is at hand: the version an `==`,
    /// `>=` or `~=` clause names ([`Specifier::admitted_bound`]), else
    /// the version a `<=` clause names, else the release line just below
    /// a `<V` clause (`<2` gives `1`, `<2.3` gives `2.2`, `<0.10.2` gives
    /// `0.10.1`), else the release just above a `>V` clause (`>2.3` gives
    /// `2.4`). `None` when none of these is admitted (`!=1.0` alone).
    pub fn installable(&self) -> Option<Version> {
        if let Some(v) = self.admitted_bound() {
            return Some(v.clone());
        }
        let admitted = |v: Version| self.contains(&v).then_some(v);
        let candidates = self.clauses.iter().filter_map(|c| match c {
            Clause::Cmp(Op::Le, v) => Some(v.clone()),
            Clause::Cmp(Op::Lt, v) => release_line_below(v),
            Clause::Cmp(Op::Gt, v) => release_above(v),
            _ => None,
        });
        candidates.into_iter().find_map(admitted)
    }

    /// Parses a comma-separated list of clauses; whitespace around operators,
    /// versions and commas is ignored.
    ///
    /// # Errors
    /// An empty specifier or clause, a clause without operator (`1.0`), an
    /// invalid version, `.*` with an operator other than `==`/`!=` or after a
    /// pre/post/dev/local part, a local label with an operator other than
    /// `==`/`!=`, or `~=` with a single release segment.
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let err = |reason| VersionError::new(KIND_SPEC, reason, s);
        let t = s.trim();
        if t.is_empty() {
            return Err(err(E_EMPTY));
        }
        let clauses = t
            .split(',')
            .map(|c| parse_clause(c.trim()).map_err(err))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { text: String::from(t), clauses })
    }

    /// Whether `v` satisfies every clause.
    pub fn contains(&self, v: &Version) -> bool {
        self.clauses.iter().all(|c| clause_contains(c, v))
    }

    /// The text this specifier was parsed from, without surrounding
    /// whitespace.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The versions this specifier admits among those whose public version
    /// packs ([`Version::packed_public`]), as one interval of packed keys,
    /// when they are exactly that: every clause `>=V`, `<=V`, `<V` or `==V`
    /// (without a local label), each `V` packing. For a version `v` with a
    /// packed key `k`, `contains(v)` is then `interval.contains(k)`: a
    /// check can decide such a selector with integer comparisons, without
    /// reading the specifier. `None` for anything else (`>`, `!=`, `~=`,
    /// wildcards, `===`), whose PEP 440 rules are not one interval.
    pub fn packed_interval(&self) -> Option<PackedInterval> {
        let mut interval = PackedInterval::ALL;
        for clause in &self.clauses {
            let Clause::Cmp(op, s) = clause else { return None };
            let key = s.packed?;
            // Keys are integers below 2^125: `<= key` is `< key + 1`.
            let after = key + 1;
            match op {
                Op::Ge => interval.raise(key),
                Op::Le => interval.cap(after),
                Op::Lt if s.is_prerelease() => interval.cap(key),
                // `<V` is `<V.dev0` (V keeps its post), as `clause_contains`.
                Op::Lt => interval.cap(pack(s.epoch, &s.release, None, s.post, Some(0))?),
                Op::Eq if s.local.is_none() => {
                    interval.raise(key);
                    interval.cap(after);
                }
                _ => return None,
            }
        }
        Some(interval)
    }

    /// Conservative bounds `(lower, upper)` of what this specifier admits,
    /// both inclusive and without local labels, `None` for unbounded:
    /// every version it contains has its public part within them. An
    /// index can then skip the specifier for versions outside the bounds
    /// without calling [`Specifier::contains`]; inside them it still must.
    ///
    /// Clauses that give no simple bound (`!=`, `==X.*`, `===`) leave the
    /// bounds as they are, so the answer is never narrower than the truth.
    pub fn bounds(&self) -> (Option<Version>, Option<Version>) {
        let mut lower: Option<Version> = None;
        let mut upper: Option<Version> = None;
        for clause in &self.clauses {
            let Clause::Cmp(op, v) = clause else { continue };
            let v = v.without_local();
            let (raises_lower, lowers_upper) = match op {
                Op::Eq => (true, true),
                Op::Lt | Op::Le => (false, true),
                Op::Gt | Op::Ge | Op::Compatible => (true, false),
                Op::Ne => (false, false),
            };
            if raises_lower && lower.as_ref().is_none_or(|l| v > *l) {
                lower = Some(v.clone());
            }
            if lowers_upper && upper.as_ref().is_none_or(|u| v < *u) {
                upper = Some(v);
            }
        }
        (lower, upper)
    }
}

/// The release line just below `v`: its last non-zero release segment
/// lowered by one, the segments after it dropped (`2.3.0` gives `2.2`,
/// `2` gives `1`); `None` below `0`.
fn release_line_below(v: &Version) -> Option<Version> {
    let release = v.release();
    let last = release.iter().rposition(|&n| n > 0)?;
    let mut parts: Vec<u64> = release[..=last].to_vec();
    parts[last] -= 1;
    with_release(v.epoch(), &parts)
}

/// The release just above `v`: its last release segment raised by one
/// (`2.3` gives `2.4`, `2.3.1` gives `2.3.2`).
fn release_above(v: &Version) -> Option<Version> {
    let mut parts: Vec<u64> = v.release().to_vec();
    *parts.last_mut()? += 1;
    with_release(v.epoch(), &parts)
}

/// Appends `n` in decimal (without `core::fmt`, which rules avoid).
fn push_u64(text: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut rest = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    digits[i..].iter().for_each(|&d| text.push(char::from(d)));
}

fn with_release(epoch: u64, parts: &[u64]) -> Option<Version> {
    let mut text = String::new();
    if epoch > 0 {
        push_u64(&mut text, epoch);
        text.push('!');
    }
    for (i, n) in parts.iter().enumerate() {
        if i > 0 {
            text.push('.');
        }
        push_u64(&mut text, *n);
    }
    Version::parse(&text).ok()
}

/// Parses one trimmed clause of a specifier, e.g. `>=2.8`.
fn parse_clause(c: &str) -> Result<Clause, &'static str> {
    const OPS: [(&str, Option<Op>); 8] = [
        ("===", None),
        ("~=", Some(Op::Compatible)),
        ("==", Some(Op::Eq)),
        ("!=", Some(Op::Ne)),
        ("<=", Some(Op::Le)),
        (">=", Some(Op::Ge)),
        ("<", Some(Op::Lt)),
        (">", Some(Op::Gt)),
    ];
    if c.is_empty() {
        return Err("empty clause (stray comma?)");
    }
    let Some((rest, op)) =
        OPS.iter().find_map(|(p, op)| c.strip_prefix(p).map(|r| (r.trim(), *op)))
    else {
        return Err("each clause needs an operator: ==, !=, <, <=, >, >=, ~= or ===");
    };
    if rest.is_empty() {
        return Err("operator without a version");
    }
    let Some(op) = op else {
        // As in `packaging`: an arbitrary string is one token.
        if rest.contains(char::is_whitespace) {
            return Err("the text after === must not contain spaces");
        }
        return Ok(Clause::Arbitrary(String::from(rest)));
    };
    if let Some(prefix) = rest.strip_suffix(".*") {
        if !matches!(op, Op::Eq | Op::Ne) {
            return Err("'.*' is only allowed with == and !=");
        }
        let version = parse_pep440(prefix)?;
        if version.pre.is_some()
            || version.post.is_some()
            || version.dev.is_some()
            || version.local.is_some()
        {
            return Err("'.*' may only follow a release such as 2.12");
        }
        return Ok(Clause::Prefix { negated: op == Op::Ne, version });
    }
    let version = parse_pep440(rest)?;
    if version.local.is_some() && !matches!(op, Op::Eq | Op::Ne) {
        return Err("a local label (+...) is only allowed with == and !=");
    }
    if op == Op::Compatible && version.release.len() < 2 {
        return Err("~= needs at least two release segments, e.g. ~=2.12");
    }
    Ok(Clause::Cmp(op, version))
}

/// `==prefix.*`: same epoch, and the candidate's release (zero-padded) starts
/// with `prefix`. Pre/post/dev/local parts of the candidate do not matter.
fn prefix_match(v: &Version, epoch: u64, prefix: &[u64]) -> bool {
    v.epoch == epoch
        && prefix.iter().enumerate().all(|(i, &p)| v.release.get(i).copied().unwrap_or(0) == p)
}

/// Whether `v` satisfies one clause; see [`Specifier`] for the rules.
fn clause_contains(c: &Clause, v: &Version) -> bool {
    match c {
        Clause::Arbitrary(text) => v.as_str().eq_ignore_ascii_case(text),
        Clause::Prefix { negated, version } => {
            prefix_match(v, version.epoch, &version.release) != *negated
        }
        Clause::Cmp(op, s) => {
            // Specifiers without a local label ignore the candidate's.
            let public = v.cmp_public(s);
            match op {
                Op::Eq | Op::Ne => {
                    let eq = if s.local.is_some() { v == s } else { public == Ordering::Equal };
                    eq == (*op == Op::Eq)
                }
                Op::Le => public != Ordering::Greater,
                Op::Ge => public != Ordering::Less,
                Op::Compatible => {
                    // `~=2.12.3` is `>=2.12.3, ==2.12.*`: drop the last
                    // release segment (parse ensured there are two).
                    let kept = s.release.len().saturating_sub(1);
                    public != Ordering::Less
                        && prefix_match(v, s.epoch, s.release.get(..kept).unwrap_or(&[]))
                }
                Op::Lt => {
                    if s.is_prerelease() {
                        public == Ordering::Less
                    } else {
                        // `<V` excludes V's own pre-releases: it means
                        // `<V.dev0`, the first of them (V keeps its post).
                        let (epoch, release, _, post, _) = s.key();
                        let bound =
                            (epoch, release, pre_key(None, post, Some(0)), post, dev_key(Some(0)));
                        v.key() < bound
                    }
                }
                Op::Gt => {
                    // `>V` for a final or pre-release V excludes V's
                    // post-releases (same release and same pre part); V's
                    // local variants are excluded by comparing publicly.
                    public == Ordering::Greater
                        && !(s.dev.is_none()
                            && s.post.is_none()
                            && v.same_base(s)
                            && v.pre == s.pre)
                }
            }
        }
    }
}

/// Versions as packed public keys from `lower` (admitted) up to `upper`
/// (not admitted), [`Specifier::packed_interval`]. Keys use 125 bits
/// ([`Version::packed_public`]), so an inclusive bound's successor and
/// `u128::MAX` (unbounded above) are never a version's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedInterval {
    /// The least key admitted (0: unbounded below).
    pub lower: u128,
    /// The least key above the interval (`u128::MAX`: unbounded above).
    pub upper: u128,
}

impl PackedInterval {
    /// Every version.
    pub const ALL: PackedInterval = PackedInterval { lower: 0, upper: u128::MAX };

    /// Whether a version with this packed key is in the interval.
    pub fn contains(&self, key: u128) -> bool {
        self.lower <= key && key < self.upper
    }

    fn raise(&mut self, lower: u128) {
        self.lower = self.lower.max(lower);
    }

    fn cap(&mut self, upper: u128) {
        self.upper = self.upper.min(upper);
    }
}

impl FromStr for Specifier {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Specifier {
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

    #[test]
    fn installable_versions_come_from_the_bounds() {
        for (spec, want) in [
            (">=2.3,<3", Some("2.3")),
            ("==1.26.4", Some("1.26.4")),
            ("<2", Some("1")),
            ("<2.3", Some("2.2")),
            ("<2.3.0", Some("2.2")),
            ("<0.10.2", Some("0.10.1")),
            ("<=1.26.4", Some("1.26.4")),
            (">2.3", Some("2.4")),
            ("<1!2", Some("1!1")),
            ("<0", None),
            ("!=1.0", None),
            ("<2,!=1", None),
        ] {
            let got = Specifier::parse(spec).expect("parses").installable();
            assert_eq!(got.as_ref().map(Version::as_str), want, "{spec}");
        }
    }

    #[test]
    fn specifier_bounds_hold_every_contained_version() {
        let b = |s: &str| Some(v(s));
        assert_eq!(spec("<0.27.2rc0").bounds(), (None, b("0.27.2rc0")));
        assert_eq!(spec(">=0.20, <0.27").bounds(), (b("0.20"), b("0.27")));
        assert_eq!(spec("==2.12.0+cu126").bounds(), (b("2.12.0"), b("2.12.0")));
        assert_eq!(spec("~=2.12.3, <=2.12.9").bounds(), (b("2.12.3"), b("2.12.9")));
        assert_eq!(spec(">1, >=3, <9, <5").bounds(), (b("3"), b("5")));
        assert_eq!(spec("!=1.0").bounds(), (None, None));
        assert_eq!(spec("==2.12.*").bounds(), (None, None));
        // The promise itself, over a spread of versions and specifiers.
        let versions = [
            "0.1",
            "0.27.1",
            "0.27.2rc0",
            "0.27.2",
            "1.0.dev1",
            "1.0",
            "1.0+cu12",
            "1.0.post1",
            "2!0.1",
        ];
        for s in ["<0.27.2rc0", "<=1.0", ">0.27.1,<1.0", "~=0.27.1", "==1.0", ">=1.0.dev0", "<1.0"]
        {
            let (lo, hi) = spec(s).bounds();
            for t in versions {
                let w = v(t);
                if spec(s).contains(&w) {
                    let public = w.without_local();
                    assert!(
                        lo.as_ref().is_none_or(|l| public >= *l),
                        "{t} in {s} but below {lo:?}"
                    );
                    assert!(
                        hi.as_ref().is_none_or(|h| public <= *h),
                        "{t} in {s} but above {hi:?}"
                    );
                }
            }
        }
    }

    /// A specifier's packed interval admits exactly what `contains` does,
    /// for every version that packs: pre-, post- and dev-releases around
    /// each bound (`<V` leaves out V's pre-releases, keeps none of V's
    /// posts), local labels, epochs, trailing zeros; and only the shapes
    /// that are one interval get one.
    #[test]
    fn packed_intervals_admit_exactly_what_specifiers_contain() {
        let versions: Vec<Version> = [
            "0.4",
            "0.4.9",
            "0.5.0.dev0",
            "0.5.0.dev3",
            "0.5.0a1",
            "0.5.0rc1",
            "0.5.0rc1.post1",
            "0.5",
            "0.5.0",
            "0.5.0+cu121",
            "0.5.0.post1",
            "0.5.0.post1.dev2",
            "0.5.1.dev0",
            "0.5.1",
            "0.6.0rc0",
            "0.6",
            "0.6.0.post2",
            "0.6.0+local.7",
            "1!0.1",
            "2.0",
            "0.27.2rc0",
            "0.27.1",
            "0.27.2",
            "0.27.2.post1",
            "10.0",
            "65535.1",
            "65536.0",
            "1.2.3.4.5",
        ]
        .iter()
        .map(|t| Version::parse(t).unwrap_or_else(|e| panic!("{t}: {e}")))
        .collect();
        let packing = versions.iter().filter(|v| v.packed_public().is_some()).count();
        assert!(packing >= versions.len() - 2, "{packing} of {} pack", versions.len());
        let compiled = [
            ">=0.5.0",
            "<0.5.0",
            ">=0.5,<0.6",
            "<=0.5.0",
            "==0.5",
            ">=0.5.0rc1,<0.6.0rc0",
            "<0.5.0rc1",
            "<0.5.0.post1",
            "==0.5.0,>=0.5",
            ">=0.27.2rc0",
            "<0.27.2rc0",
            ">=0.4,<=0.5.0.post1,<0.6",
            ">=1!0",
            "<65535.1",
            "<=0.5.0rc1,<0.5.0rc1",
            "<0.5.0rc1,<=0.5.0rc1",
        ];
        for text in compiled {
            let spec = Specifier::parse(text).expect("parses");
            let interval =
                spec.packed_interval().unwrap_or_else(|| panic!("{text} is one interval"));
            for v in &versions {
                if let Some(key) = v.packed_public() {
                    assert_eq!(interval.contains(key), spec.contains(v), "{text} on {v}");
                }
            }
        }
        for text in [
            ">0.5",
            "!=0.5",
            "~=0.5",
            "==0.5.*",
            "===0.5",
            "==0.5+cu121",
            ">=0.5,!=0.5.1",
            "<65536.0",
        ] {
            assert_eq!(Specifier::parse(text).expect("parses").packed_interval(), None, "{text}");
        }
    }

    #[test]
    fn specifier_contains() {
        let table: &[(&str, &str, bool)] = &[
            (">=0.27.2rc0", "0.27.2rc0", true),
            (">=0.27.2rc0", "0.27.2", true),
            (">=0.27.2rc0", "0.27.1", false),
            (">=0.27.2", "0.27.2rc0", false),
            (">=2.12", "2.13.0.dev20260501", true),
            (">=2.12", "2.12.0+cu126", true),
            ("<0.10.2", "0.10.1", true),
            ("<0.10.2", "0.10.2", false),
            ("<0.10.2", "0.9.99", true),
            ("<0.10.2", "0.10.2rc1", false),
            ("<0.10.2", "0.10.2.dev1", false),
            ("<0.10.2rc2", "0.10.2rc1", true),
            ("<0.10.2rc2", "0.10.2.dev1", true),
            ("<0.10.2", "0.10.1+local", true),
            ("<0.10.2", "0.10.1.post1", true),
            ("<=2.11", "2.11.0+cu126", true),
            ("<=2.11", "2.11.0.post1", false),
            ("<=2.11", "2.11.0rc1", true),
            ("==2.12.*", "2.12.0", true),
            ("==2.12.*", "2.12.5+cu126", true),
            ("==2.12.*", "2.12.0rc1", true),
            ("==2.12.*", "2.12.1.post1", true),
            ("==2.12.*", "2.12", true),
            ("==2.12.*", "2.13.0", false),
            ("==2.12.*", "2.1", false),
            ("==2.12.*", "1!2.12.0", false),
            ("==2.0.*", "2", true),
            ("== 2.12.*", "2.12.3", true),
            ("!=2.12.*", "2.12.3", false),
            ("!=2.12.*", "2.11.3", true),
            ("~=2.12", "2.12.0", true),
            ("~=2.12", "2.15.1", true),
            ("~=2.12", "3.0", false),
            ("~=2.12", "2.11.9", false),
            ("~=2.12.3", "2.12.9", true),
            ("~=2.12.3", "2.12.2", false),
            ("~=2.12.3", "2.13.0", false),
            ("~=1.4.5a4", "1.4.5", true),
            ("~=1.4.5a4", "1.4.5a3", false),
            ("~=1.4.5a4", "1.4.9", true),
            ("~=1.4.5a4", "1.5.0", false),
            ("!=1.0", "1.0", false),
            ("!=1.0", "1.0.0", false),
            ("!=1.0", "1.0+local", false),
            ("!=1.0", "1.0.1", true),
            ("!=1.0", "1.0rc1", true),
            ("==1.0", "1.0.0", true),
            ("==1.0", "1.0+cu126", true),
            ("==1.0", "1.0.post1", false),
            ("==1.0+cu126", "1.0+cu126", true),
            ("==1.0+cu126", "1.0", false),
            ("==1.0+cu126", "1.0+cu118", false),
            ("!=1.0+cu126", "1.0+cu118", true),
            (">1.7", "1.7.1", true),
            (">1.7", "1.7.post1", false),
            (">1.7", "1.7+local", false),
            (">1.7", "1.8.dev0", true),
            (">1.7.post2", "1.7.post3", true),
            (">1.7.post2", "1.7.post2", false),
            (">1.7rc1", "1.7", true),
            // Exclusive comparisons only carve out V's own family.
            ("<1.0.post1", "1.0a1", true),
            ("<1.0.post1", "1.0", true),
            ("<1.0.post1", "1.0+local", true),
            ("<1.0.post1", "1.0.post1.dev0", false),
            ("<1.0.post1", "1.0.post0", true),
            ("<1.0.dev5", "1.0.dev4", true),
            ("<1.0.dev5", "1.0.dev5", false),
            ("<1.0rc1", "1.0b2.post1", true),
            ("<1.0rc1", "1.0rc1+local", false),
            (">1.0a1", "1.0a1.post1", false),
            (">1.0a1", "1.0a1+local", false),
            (">1.0a1", "1.0a2.dev0", true),
            (">1.0a1", "1.0", true),
            (">1.0a1", "1.0.post1", true),
            (">1.0a1", "1.0+local", true),
            (">1.0.post1", "1.0.post1+local", false),
            (">1.0.post1", "1.0.post2.dev0", true),
            (">1.0.dev1", "1.0.dev1+local", false),
            (">1.0.dev1", "1.0.dev2", true),
            (">1.0.dev1", "1.0.post1", true),
            (">1.7", "1.7.post1.dev0", false),
            (">1.7", "1.7.0.1", true),
            (">=2.8,<2.11", "2.8.0", true),
            (">=2.8,<2.11", "2.10.1+cu124", true),
            (">=2.8,<2.11", "2.11.0", false),
            (">=2.8,<2.11", "2.11.0rc1", false),
            (">=2.8,<2.11", "2.7.1", false),
            (" >= 2.8 , < 2.11 ", "2.9", true),
            ("===1.0+Local", "1.0+local", true),
            ("===1.0", "1.0.0", false),
            (">=1!1.0", "2.0", false),
        ];
        for &(s, ver, want) in table {
            assert_eq!(spec(s).contains(&v(ver)), want, "{ver} in {s}");
        }
        let s = spec("  >=2.8,<2.11 ");
        assert_eq!(s.as_str(), ">=2.8,<2.11");
        assert_eq!(s.to_string(), ">=2.8,<2.11");
        assert_eq!(">=1".parse::<Specifier>(), Ok(spec(">=1")));
    }

    #[test]
    fn specifier_rejects_invalid() {
        let bad = [
            "",
            "1.0",
            ">=",
            ">=abc",
            ">=1.0,",
            ",>=1.0",
            ">=1.0,,<2",
            ">=2.12.*",
            "<2.*",
            "~=2.*",
            "~=2",
            "~=1.0+local",
            ">=1.0+local",
            "==2.12rc1.*",
            "==2.12+cu126.*",
            "==2..*",
            "=>1.0",
            "=1.0",
            "<>1.0",
            "===1.0 .*",
            "===",
        ];
        for s in bad {
            let e = match Specifier::parse(s) {
                Ok(x) => panic!("{s:?} should be rejected, got {x:?}"),
                Err(e) => e,
            };
            assert_eq!(e.input(), s);
            assert!(e.to_string().contains("version specifier"), "{e}");
        }
    }
}
