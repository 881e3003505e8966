//! Version parsing and comparison for rules.
//!
//! Several version schemes meet in ML infrastructure, and a rule usually
//! needs to know which one it is looking at:
//!
//! * [`Version`]: Python package versions, [PEP 440] (`0.27.2rc0`,
//!   `2.12.0+cu126`, `0.6.3.post1`, `2.13.0.dev20260501`, `1!2.0`).
//! * [`Dotted`]: plain dotted numbers: NVIDIA drivers (`570.86.15`), CUDA
//!   (`12.8`), OS releases (`24.04`).
//! * [`ComputeCapability`]: GPU compute capability (`8.6`, `sm_90`, `9.0a`).
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

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

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
    fn new(kind: &'static str, reason: &'static str, input: &str) -> Self {
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

const KIND_PEP440: &str = "PEP 440 version";
const KIND_DOTTED: &str = "dotted version";
const KIND_CC: &str = "compute capability";
const KIND_SEMVER: &str = "semantic version";
const KIND_SPEC: &str = "version specifier";

const E_EMPTY: &str = "empty input";
const E_TOO_LARGE: &str = "number too large";

// ---------------------------------------------------------------------------
// Small parsing helpers (bytes, ASCII only)
// ---------------------------------------------------------------------------

/// Reads a run of ASCII digits at `*i` as a number; `None` if there is none.
/// Overflow is an error rather than a wrap, so huge numbers never compare
/// wrongly.
fn number(b: &[u8], i: &mut usize) -> Result<Option<u64>, &'static str> {
    let start = *i;
    let mut n: u64 = 0;
    while let Some(&c) = b.get(*i) {
        if !c.is_ascii_digit() {
            break;
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(c - b'0')))
            .ok_or(E_TOO_LARGE)?;
        *i += 1;
    }
    Ok((*i > start).then_some(n))
}

/// Parses a whole string as a number of ASCII digits (leading zeros allowed).
fn whole_number(s: &str) -> Result<u64, &'static str> {
    let b = s.as_bytes();
    let mut i = 0;
    match number(b, &mut i)? {
        Some(n) if i == b.len() => Ok(n),
        _ => Err("components must be numbers"),
    }
}

fn is_sep(c: u8) -> bool {
    matches!(c, b'.' | b'-' | b'_')
}

fn starts_with_ci(b: &[u8], at: usize, lit: &[u8]) -> bool {
    b.get(at..at + lit.len()).is_some_and(|s| s.eq_ignore_ascii_case(lit))
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// The release without trailing zeros: `1.0.0` and `1` are the same release.
fn trim_zeros(r: &[u64]) -> &[u64] {
    let n = r.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
    &r[..n]
}

// ---------------------------------------------------------------------------
// PEP 440
// ---------------------------------------------------------------------------

/// Pre-release phase; the derive order is the PEP 440 order `a < b < rc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Phase {
    Alpha,
    Beta,
    Rc,
}

/// Pre-release spellings, longest first so `alpha` is not read as `a` +
/// `lpha` and `preview` not as `pre` + `view`.
const PRE_LABELS: [(&[u8], Phase); 8] = [
    (b"alpha", Phase::Alpha),
    (b"beta", Phase::Beta),
    (b"preview", Phase::Rc),
    (b"pre", Phase::Rc),
    (b"rc", Phase::Rc),
    (b"a", Phase::Alpha),
    (b"b", Phase::Beta),
    (b"c", Phase::Rc),
];
const POST_LABELS: [(&[u8], ()); 3] = [(b"post", ()), (b"rev", ()), (b"r", ())];
const DEV_LABELS: [(&[u8], ()); 1] = [(b"dev", ())];

/// Parses one optional suffix group `[sep] label [sep] [number]` at `*i`.
/// A missing number means 0 (PEP 440 "implicit number"). Leaves `*i`
/// untouched when the label is absent, so the next group can try.
fn suffix<T: Copy>(
    b: &[u8],
    i: &mut usize,
    labels: &[(&[u8], T)],
) -> Result<Option<(T, u64)>, &'static str> {
    let mut j = *i;
    if b.get(j).is_some_and(|&c| is_sep(c)) {
        j += 1;
    }
    let Some(&(label, value)) = labels.iter().find(|(l, _)| starts_with_ci(b, j, l)) else {
        return Ok(None);
    };
    j += label.len();
    if b.get(j).is_some_and(|&c| is_sep(c)) {
        j += 1;
    }
    let n = number(b, &mut j)?.unwrap_or(0);
    *i = j;
    Ok(Some((value, n)))
}

/// A Python package version per [PEP 440](https://peps.python.org/pep-0440/).
///
/// Accepts every spelling PEP 440 normalises: optional leading `v`,
/// case-insensitive, `alpha`/`a`, `beta`/`b`, `c`/`rc`/`pre`/`preview`,
/// `post`/`rev`/`r`, `dev`, separators `.`/`-`/`_` or none, implicit `0`
/// numbers, `-1` as an implicit post-release, epochs (`1!2.0`) and local
/// labels (`+cu126`).
///
/// Ordering and equality follow the spec: trailing zeros in the release are
/// ignored (`1.0 == 1.0.0`); `X.devN < XaN < XbN < XrcN < X < X.postN`, with
/// a `.devN` sorting just before whatever it is attached to; a version with a
/// local label sorts after the same version without one, and local segments
/// compare numerically when both are numbers, lexicographically when both are
/// not, and a number sorts after a word. `Hash` agrees with `Eq`.
///
/// `Display` and [`Version::as_str`] give back the text it was parsed from.
#[derive(Clone, Debug)]
pub struct Version {
    text: String,
    epoch: u64,
    release: Vec<u64>,
    pre: Option<(Phase, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    /// Lowercase, separators turned into `.`, numeric segments without
    /// leading zeros: so two equal labels have equal text.
    local: Option<String>,
    /// The public sort key packed into one integer ([`pack`]), when every
    /// part fits its field: comparing two versions is then one integer
    /// comparison. A check compares versions in every interval-tree stab
    /// and every specifier, and the tuple key (a slice scanned for
    /// trailing zeros, then compared) was a twentieth of a loaded
    /// server's CPU.
    packed: Option<u128>,
}

impl Version {
    /// Parses a PEP 440 version. Surrounding whitespace is ignored.
    ///
    /// # Errors
    /// Anything that is not a valid PEP 440 version, e.g. `""`, `"abc"`,
    /// `"1..2"`, `"1.0+"`.
    pub fn parse(s: &str) -> Result<Version, VersionError> {
        parse_pep440(s.trim()).map_err(|reason| VersionError::new(KIND_PEP440, reason, s))
    }

    /// The release segments as written, e.g. `[2, 12, 0]` for `2.12.0+cu126`.
    pub fn release(&self) -> &[u64] {
        &self.release
    }

    /// The epoch (`1` in `1!2.0`); `0` when none is written.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The post-release number, if this is a post-release (`0.6.3.post1`).
    pub fn post(&self) -> Option<u64> {
        self.post
    }

    /// The dev-release number, if this is a dev-release (`2.13.0.dev20260501`).
    pub fn dev(&self) -> Option<u64> {
        self.dev
    }

    /// Whether this is a pre-release or a dev-release (`1.0rc1`, `1.0.dev3`,
    /// `1.0.post1.dev2`), as PEP 440 and pip define it.
    pub fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    /// The normalised local label, e.g. `"cu126"` for `2.12.0+CU126` or
    /// `"ubuntu.1"` for `1.0+ubuntu-01`.
    pub fn local(&self) -> Option<&str> {
        self.local.as_deref()
    }

    /// The public version as one integer, when it fits (most real
    /// versions do): two versions that both have one order by it exactly
    /// as by their public parts (epoch, release, pre, post, dev). The local
    /// label is not in it. For structures that compare one version with
    /// many (the engine's interval trees).
    pub fn packed_public(&self) -> Option<u128> {
        self.packed
    }

    /// This version without its local label (`2.12.0+cu126` → `2.12.0`).
    pub fn without_local(&self) -> Version {
        let mut v = self.clone();
        if v.local.take().is_some() {
            // `+` can only appear as the local-label separator.
            if let Some(p) = v.text.find('+') {
                v.text.truncate(p);
            }
        }
        v
    }

    /// The text this version was parsed from, without surrounding whitespace.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Sort key of everything but the local label (the "public" version).
    fn key(&self) -> Key<'_> {
        (
            self.epoch,
            trim_zeros(&self.release),
            pre_key(self.pre, self.post, self.dev),
            self.post,
            dev_key(self.dev),
        )
    }

    /// Compares everything but the local label (the "public" version).
    fn cmp_public(&self, other: &Self) -> Ordering {
        match (self.packed, other.packed) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.key().cmp(&other.key()),
        }
    }

    /// Same epoch and release, ignoring pre/post/dev/local (PEP 440's
    /// "base version"), used by the exclusive `<` and `>` rules.
    fn same_base(&self, other: &Self) -> bool {
        match (self.packed, other.packed) {
            (Some(a), Some(b)) => a >> PACKED_BELOW_RELEASE == b >> PACKED_BELOW_RELEASE,
            _ => {
                self.epoch == other.epoch && trim_zeros(&self.release) == trim_zeros(&other.release)
            }
        }
    }
}

/// Bits of each number in a packed key (a release segment, the pre, post
/// and dev numbers); a larger number does not pack.
const PACKED_NUMBER_BITS: u32 = 16;

/// Bits of the pre key's rank (0-4, [`pre_key`]).
const PACKED_PRE_RANK_BITS: u32 = 3;

/// Bits of a packed key below the epoch and release: pre (rank + number),
/// post and dev (a flag bit + number each).
const PACKED_BELOW_RELEASE: u32 = PACKED_PRE_RANK_BITS + 1 + 1 + 3 * PACKED_NUMBER_BITS;

/// Release segments a packed key holds (after trailing zeros are trimmed).
const PACKED_RELEASE_SEGMENTS: usize = 4;

/// The public sort key ([`Key`]) as one integer whose order is the key's,
/// or `None` when a part does not fit its field (then the tuple is
/// compared). From the top: epoch (8 bits), four release segments (16
/// each, missing ones 0: for release lists without trailing zeros,
/// lexicographic order is the order of the zero-padded lists), the pre key
/// (3 + 16), post (a presence bit, so that none sorts first, + 16) and the
/// dev key (a "no dev" bit, so that a dev-release sorts first, + 16): 125
/// bits.
fn pack(
    epoch: u64,
    release: &[u64],
    pre: Option<(Phase, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
) -> Option<u128> {
    const FIELD: u64 = (1 << PACKED_NUMBER_BITS) - 1;
    let release = trim_zeros(release);
    if epoch > u64::from(u8::MAX) || release.len() > PACKED_RELEASE_SEGMENTS {
        return None;
    }
    let (pre_rank, pre_n) = pre_key(pre, post, dev);
    let (no_dev, dev_n) = dev_key(dev);
    let post_n = post.unwrap_or(0);
    if release.iter().chain([&pre_n, &post_n, &dev_n]).any(|&n| n > FIELD) {
        return None;
    }
    let n = PACKED_NUMBER_BITS;
    let mut key = u128::from(epoch);
    for i in 0..PACKED_RELEASE_SEGMENTS {
        key = key << n | u128::from(release.get(i).copied().unwrap_or(0));
    }
    key = key << PACKED_PRE_RANK_BITS | u128::from(pre_rank);
    key = key << n | u128::from(pre_n);
    key = key << 1 | u128::from(post.is_some());
    key = key << n | u128::from(post_n);
    key = key << 1 | u128::from(no_dev);
    key = key << n | u128::from(dev_n);
    Some(key)
}

/// Public-version sort key: epoch, release without trailing zeros, pre, post,
/// dev. Tuple order is PEP 440's precedence.
type Key<'a> = (u64, &'a [u64], (u8, u64), Option<u64>, (bool, u64));

/// Sort key of the pre-release part. A dev-release of a final release
/// (`1.0.dev1`: no pre, no post) sorts before every pre-release of it; a
/// version with no pre-release otherwise sorts after all of them.
fn pre_key(pre: Option<(Phase, u64)>, post: Option<u64>, dev: Option<u64>) -> (u8, u64) {
    match (pre, post, dev) {
        (Some((phase, n)), _, _) => (1 + phase as u8, n),
        (None, None, Some(_)) => (0, 0),
        (None, _, _) => (4, 0),
    }
}

/// Sort key of the dev part: no dev-release sorts after any dev-release.
fn dev_key(dev: Option<u64>) -> (bool, u64) {
    (dev.is_none(), dev.unwrap_or(0))
}

/// Parses already-trimmed text; the error is the reason only, so
/// [`Specifier`] can report it against its own input.
fn parse_pep440(s: &str) -> Result<Version, &'static str> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(E_EMPTY);
    }
    let mut i = 0;
    if matches!(b.first(), Some(b'v' | b'V')) {
        i = 1;
    }
    let e_release = "expected a release number such as 1.2";
    let mut first = number(b, &mut i)?.ok_or(e_release)?;
    let mut epoch = 0;
    if b.get(i) == Some(&b'!') {
        i += 1;
        epoch = first;
        first = number(b, &mut i)?.ok_or(e_release)?;
    }
    let mut release = Vec::with_capacity(4);
    release.push(first);
    while b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        if let Some(n) = number(b, &mut i)? {
            release.push(n);
        }
    }

    let pre = suffix(b, &mut i, &PRE_LABELS)?;
    // `1.0-1` is an implicit post-release; only `-` may introduce it.
    let post = if b.get(i) == Some(&b'-') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        number(b, &mut i)?
    } else {
        suffix(b, &mut i, &POST_LABELS)?.map(|((), n)| n)
    };
    let dev = suffix(b, &mut i, &DEV_LABELS)?.map(|((), n)| n);

    let mut local = None;
    if b.get(i) == Some(&b'+') {
        i += 1;
        let mut label = String::new();
        loop {
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_alphanumeric) {
                i += 1;
            }
            let seg = &b[start..i];
            if seg.is_empty() {
                return Err(
                    "a local label needs letters or digits after '+' and after each separator",
                );
            }
            if !label.is_empty() {
                label.push('.');
            }
            let seg = if seg.iter().all(u8::is_ascii_digit) {
                // Numeric segments compare as numbers: store them without
                // leading zeros so equal labels have equal text.
                match seg.iter().position(|&c| c != b'0') {
                    Some(p) => &seg[p..],
                    None => b"0",
                }
            } else {
                seg
            };
            label.extend(seg.iter().map(|&c| char::from(c.to_ascii_lowercase())));
            match b.get(i) {
                Some(&c) if is_sep(c) => i += 1,
                _ => break,
            }
        }
        local = Some(label);
    }

    if i < b.len() {
        return Err(match (b.get(i), b.get(i + 1)) {
            (Some(b'.'), Some(b'.')) => "empty segment (two dots in a row)",
            (Some(b'.'), None) => "trailing dot",
            _ => {
                "unexpected text (after the release only aN, bN, rcN, .postN, .devN and +local may follow)"
            }
        });
    }

    Ok(Version {
        text: String::from(s),
        packed: pack(epoch, &release, pre, post, dev),
        epoch,
        release,
        pre,
        post,
        dev,
        local,
    })
}

/// Compares two normalised local labels per PEP 440.
fn cmp_local(a: Option<&str>, b: Option<&str>) -> Ordering {
    let (a, b) = match (a, b) {
        (None, None) => return Ordering::Equal,
        (None, Some(_)) => return Ordering::Less,
        (Some(_), None) => return Ordering::Greater,
        (Some(a), Some(b)) => (a, b),
    };
    let (mut x, mut y) = (a.split('.'), b.split('.'));
    loop {
        let (p, q) = match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => (p, q),
        };
        let o = match (is_digits(p), is_digits(q)) {
            // No leading zeros are stored, so the longer number is larger.
            (true, true) => p.len().cmp(&q.len()).then_with(|| p.cmp(q)),
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => p.cmp(q),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_public(other).then_with(|| cmp_local(self.local(), other.local()))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl Hash for Version {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Exactly the parts `cmp` looks at, in canonical form.
        self.epoch.hash(state);
        trim_zeros(&self.release).hash(state);
        self.pre.hash(state);
        self.post.hash(state);
        self.dev.hash(state);
        self.local.hash(state);
    }
}

impl FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

// ---------------------------------------------------------------------------
// Dotted
// ---------------------------------------------------------------------------

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
// Compute capability
// ---------------------------------------------------------------------------

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
// SemVer
// ---------------------------------------------------------------------------

/// A [Semantic Versioning](https://semver.org) version: a thin wrapper over
/// [`semver::Version`] whose parser also accepts a leading `v` (`v1.2.3`) and
/// surrounding whitespace. Ordering is `semver`'s.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SemVer(pub semver::Version);

impl SemVer {
    /// Parses `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, optionally prefixed by `v`.
    ///
    /// # Errors
    /// Anything `semver` rejects (`1.2`, `1.2.3.4`, `01.2.3`, ...).
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let t = s.trim();
        let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
        semver::Version::parse(t).map(SemVer).map_err(|_| {
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
// Specifier
// ---------------------------------------------------------------------------

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
// Convenience comparisons
// ---------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;
    use core::cmp::Ordering::{Equal, Greater, Less};
    use std::collections::hash_map::DefaultHasher;
    use std::string::ToString;

    fn v(s: &str) -> Version {
        match Version::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn d(s: &str) -> Dotted {
        match Dotted::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn cc(s: &str) -> ComputeCapability {
        match ComputeCapability::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn spec(s: &str) -> Specifier {
        match Specifier::parse(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
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

    fn hash_of<T: Hash>(t: &T) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    /// Checks `a cmp b == want` both ways round, and that `Eq`, `PartialOrd`
    /// and `Hash` agree with it.
    fn check_order<T: Ord + Hash + fmt::Debug>(a: &T, b: &T, want: Ordering, what: &str) {
        assert_eq!(a.cmp(b), want, "{what}: {a:?} vs {b:?}");
        assert_eq!(b.cmp(a), want.reverse(), "{what} (reversed): {b:?} vs {a:?}");
        assert_eq!(a.partial_cmp(b), Some(want), "{what}: partial_cmp");
        assert_eq!(a == b, want == Equal, "{what}: eq");
        if want == Equal {
            assert_eq!(hash_of(a), hash_of(b), "{what}: equal values must hash alike");
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

    /// The packed key orders and groups exactly as the tuple key, over
    /// versions on both sides of every field's limit (so some pack and some
    /// do not, and mixed pairs fall back).
    #[test]
    fn packed_keys_order_as_the_tuple_key() {
        let numbers = [0u64, 1, 2, 9, 2024, 65_535, 65_536, 20_240_101];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        let mut versions = Vec::new();
        for _ in 0..700 {
            let mut text = String::new();
            match next(6) {
                0 => text.push_str("1!"),
                1 => text.push_str(&format!("{}!", [255, 256][next(2)])),
                _ => {}
            }
            let segments = 1 + next(6);
            let mut release = Vec::new();
            for _ in 0..segments {
                // Mostly small segments; a third of the time any, large ones too.
                let range = if next(3) == 0 { numbers.len() } else { 4 };
                release.push(numbers[next(range)].to_string());
            }
            text.push_str(&release.join("."));
            if next(3) == 0 {
                text.push_str(&format!(
                    "{}{}",
                    ["a", "b", "rc"][next(3)],
                    numbers[next(numbers.len())]
                ));
            }
            if next(3) == 0 {
                text.push_str(&format!(".post{}", numbers[next(numbers.len())]));
            }
            if next(3) == 0 {
                text.push_str(&format!(".dev{}", numbers[next(numbers.len())]));
            }
            if next(5) == 0 {
                text.push_str(["+cu126", "+local.7"][next(2)]);
            }
            versions.push(v(&text));
        }
        let packed = versions.iter().filter(|v| v.packed.is_some()).count();
        assert!(
            packed > 100 && packed < versions.len() - 100,
            "{packed} of {} packed",
            versions.len()
        );
        for a in &versions {
            for b in &versions {
                assert_eq!(a.cmp_public(b), a.key().cmp(&b.key()), "{a} vs {b}");
                let base = a.epoch == b.epoch && trim_zeros(&a.release) == trim_zeros(&b.release);
                assert_eq!(a.same_base(b), base, "same base: {a} vs {b}");
            }
        }
    }

    #[test]
    fn pep440_order_table() {
        let table: &[(&str, &str, Ordering)] = &[
            // From the brief.
            ("0.27.2rc0", "0.27.2", Less),
            ("0.27.1", "0.27.2rc0", Less),
            ("2.12.0+cu126", "2.12.0", Greater),
            ("2.12.0+cu126", "2.12.1", Less),
            ("1.0", "1.0.0", Equal),
            ("1.0.0.0", "1", Equal),
            ("v0.27.1", "0.27.1", Equal),
            ("0.6.3.post1", "0.6.3", Greater),
            ("0.6.3.post1", "0.6.4", Less),
            ("2.13.0.dev20260501", "2.13.0", Less),
            ("2.13.0.dev20260501", "2.12.9", Greater),
            ("2.13.0.dev20260501", "2.13.0a0", Less),
            ("2.13.0.dev20260501", "2.13.0.dev20260502", Less),
            ("1!2.0", "3.0", Greater),
            ("1!2.0", "1!2.0.0", Equal),
            ("0!1.0", "1.0", Equal),
            ("0.27.2-rc.1", "0.27.2rc1", Equal),
            ("0.27.2-rc.1", "0.27.2rc0", Greater),
            // Spelling normalisation.
            ("1.0alpha1", "1.0a1", Equal),
            ("1.0.a1", "1.0a1", Equal),
            ("1.0-a_1", "1.0a1", Equal),
            ("1.0a", "1.0a0", Equal),
            ("1.0ALPHA", "1.0a0", Equal),
            ("1.0beta2", "1.0b2", Equal),
            ("1.0c1", "1.0rc1", Equal),
            ("1.0pre1", "1.0rc1", Equal),
            ("1.0preview1", "1.0rc1", Equal),
            ("1.0-preview-1", "1.0rc1", Equal),
            ("1.0.post", "1.0.post0", Equal),
            ("1.0post1", "1.0.post1", Equal),
            ("1.0.rev1", "1.0.post1", Equal),
            ("1.0r1", "1.0.post1", Equal),
            ("1.0-r-1", "1.0.post1", Equal),
            ("1.0-1", "1.0.post1", Equal),
            ("1.0a1-1", "1.0a1.post1", Equal),
            ("1.0a.post1", "1.0a0.post1", Equal),
            ("1.0.dev", "1.0.dev0", Equal),
            ("1.0-dev-3", "1.0.dev3", Equal),
            ("1.0_dev3", "1.0.dev3", Equal),
            ("1.0dev3", "1.0.dev3", Equal),
            ("V1.0RC1.POST2.DEV3", "1.0rc1.post2.dev3", Equal),
            (" 1.0\n", "1.0", Equal),
            ("1.0+ubuntu-01", "1.0+ubuntu.1", Equal),
            ("1.0+CU126", "1.0+cu126", Equal),
            ("1.0+abc_def", "1.0+abc.def", Equal),
            ("1.0+00", "1.0+0", Equal),
            ("1.0+abc.007", "1.0+abc.7", Equal),
            // Release segments are numbers, not strings.
            ("1.10", "1.9", Greater),
            ("1.01", "1.1", Equal),
            ("1.0.1", "1.0", Greater),
            ("1.0.10", "1.0.9", Greater),
            ("0.10.2", "0.9.2", Greater),
            // Pre/post/dev interplay.
            ("1.0a1", "1.0b0", Less),
            ("1.0b9", "1.0rc0", Less),
            ("1.0rc9", "1.0", Less),
            ("1.0.dev0", "1.0a0.dev0", Less),
            ("1.0a0.dev0", "1.0a0", Less),
            ("1.0a0", "1.0a0.post0.dev0", Less),
            ("1.0a0.post0.dev0", "1.0a0.post0", Less),
            ("1.0a0.post0", "1.0a1.dev0", Less),
            ("1.0.post0.dev0", "1.0", Greater),
            ("1.0.post0.dev0", "1.0.post0", Less),
            ("1.0.post1", "1.0.1.dev0", Less),
            ("1.0.post1", "1.0.1", Less),
            ("1.0.dev1", "0.9.post9", Greater),
            // Local labels.
            ("1.0+abc", "1.0+abc.0", Less),
            ("1.0+abc", "1.0+abd", Less),
            ("1.0+9", "1.0+10", Less),
            ("1.0+010", "1.0+9", Greater),
            ("1.0+zzz", "1.0+0", Less),
            ("1.0+a.1", "1.0+a.b", Greater),
            ("1.0+cu118", "1.0+cu126", Less),
            ("1.0+cu126", "1.0+rocm6", Less),
            ("1.0.dev1+x", "1.0.dev1", Greater),
            ("1.0.dev1+x", "1.0a0", Less),
            ("1.0+x", "1.0.post0", Less),
            ("1.0+x", "1.0.0+x", Equal),
        ];
        for &(a, b, want) in table {
            check_order(&v(a), &v(b), want, "pep440");
        }
    }

    #[test]
    fn pep440_spec_example_chain() {
        // The ordering example from PEP 440 ("Summary of permitted suffixes
        // and relative ordering"), extended with the local-version cases.
        let chain = [
            "1.0.dev456",
            "1.0a1",
            "1.0a2.dev456",
            "1.0a12.dev456",
            "1.0a12",
            "1.0b1.dev456",
            "1.0b2",
            "1.0b2.post345.dev456",
            "1.0b2.post345",
            "1.0rc1.dev456",
            "1.0rc1",
            "1.0",
            "1.0+abc.5",
            "1.0+abc.7",
            "1.0+5",
            "1.0.post456.dev34",
            "1.0.post456",
            "1.0.15",
            "1.1.dev1",
        ];
        let parsed: Vec<Version> = chain.iter().map(|s| v(s)).collect();
        for (i, a) in parsed.iter().enumerate() {
            for (j, b) in parsed.iter().enumerate() {
                check_order(a, b, i.cmp(&j), "spec chain");
            }
        }
        let mut shuffled = parsed.clone();
        shuffled.reverse();
        shuffled.swap(3, 11);
        shuffled.sort();
        let back: Vec<&str> = shuffled.iter().map(Version::as_str).collect();
        assert_eq!(back, chain);
    }

    #[test]
    fn pep440_accessors() {
        let x = v("2.12.0+CU126");
        assert_eq!(x.release(), &[2, 12, 0]);
        assert_eq!(x.local(), Some("cu126"));
        assert_eq!(x.as_str(), "2.12.0+CU126");
        assert_eq!(x.to_string(), "2.12.0+CU126");
        assert!(!x.is_prerelease());
        let y = x.without_local();
        assert_eq!(y.local(), None);
        assert_eq!(y.as_str(), "2.12.0");
        assert_eq!(y, v("2.12"));
        assert!(y < x);
        assert_eq!(v("1.0").without_local().as_str(), "1.0");

        assert!(v("0.27.2rc0").is_prerelease());
        assert!(v("2.13.0.dev20260501").is_prerelease());
        assert!(v("1.0.post1.dev0").is_prerelease());
        assert!(!v("0.6.3.post1").is_prerelease());
        assert_eq!(v("0.6.3.post1").post(), Some(1));
        assert_eq!(v("0.6.3").post(), None);
        assert_eq!(v("2.13.0.dev20260501").dev(), Some(20_260_501));
        assert_eq!(v("1!2.0").epoch(), 1);
        assert_eq!(v("1!2.0").release(), &[2, 0]);
        assert_eq!(v("2.0").epoch(), 0);
        assert_eq!(v("1.0+ubuntu-01.Foo_0").local(), Some("ubuntu.1.foo.0"));
        assert_eq!(v("1.0+00.0a").local(), Some("0.0a"));
        assert_eq!(v("  v1.2 ").as_str(), "v1.2");
        assert_eq!("0.27.1".parse::<Version>(), Ok(v("0.27.1")));
    }

    #[test]
    fn pep440_rejects_invalid() {
        let bad = [
            "",
            "   ",
            "abc",
            "v",
            "1..2",
            "1.",
            "1.0.",
            ".1",
            "1.0+",
            "1.0+abc.",
            "1.0+abc..d",
            "1.0++abc",
            "1.0+ab c",
            "1.0+abc!",
            "1!",
            "!1",
            "1!2!3",
            "1.0a1b1",
            "1.0rc1rc2",
            "1.0.post1.post2",
            "1.0.dev1.post1",
            "1.0dev1a1",
            "1.0 1",
            "1.0-",
            "1.0_",
            "1.0x",
            "1.0alphabet",
            "1.0-1-1",
            "==1.0",
            "1.0.*",
            "vv1.0",
            "1,0",
            "１.0",
            "99999999999999999999999",
            "1.99999999999999999999999",
            "1.0a99999999999999999999999",
        ];
        for s in bad {
            let e = match Version::parse(s) {
                Ok(x) => panic!("{s:?} should be rejected, got {x:?}"),
                Err(e) => e,
            };
            assert_eq!(e.input(), s);
            assert_eq!(e.kind(), "PEP 440 version");
            assert!(!e.reason().is_empty());
            let msg = e.to_string();
            assert!(msg.contains("PEP 440") && msg.contains(e.reason()), "{msg}");
        }
        let e = Version::parse("1..2").err();
        assert_eq!(e.as_ref().map(VersionError::reason), Some("empty segment (two dots in a row)"));
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("invalid PEP 440 version \"1..2\": empty segment (two dots in a row)")
        );
        assert_eq!(Version::parse("").err().map(|e| e.reason()), Some("empty input"));
        assert_eq!(
            Version::parse("99999999999999999999999").err().map(|e| e.reason()),
            Some("number too large")
        );
        assert_eq!(
            "abc".parse::<Version>().err().map(|e| e.input().to_string()).as_deref(),
            Some("abc")
        );
    }

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

    #[test]
    fn semver() {
        let a = match SemVer::parse("v1.2.3") {
            Ok(x) => x,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(a.0, semver::Version::new(1, 2, 3));
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
}

impl ComputeCapability {
    /// Writes `major.minor` into `buf` without `core::fmt` (which would add
    /// kilobytes to a rule module) and returns it.
    pub fn write_to<'b>(&self, buf: &'b mut [u8; 24]) -> &'b str {
        let mut major = [0u8; 24];
        let mut minor = [0u8; 24];
        let major = crate::text::format_int(i64::from(self.major), &mut major);
        let minor = crate::text::format_int(i64::from(self.minor), &mut minor);
        let len = major.len() + 1 + minor.len();
        buf[..major.len()].copy_from_slice(major.as_bytes());
        buf[major.len()] = b'.';
        buf[major.len() + 1..len].copy_from_slice(minor.as_bytes());
        core::str::from_utf8(&buf[..len]).unwrap_or("?")
    }
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

impl Version {
    /// The CUDA version a PyTorch wheel was built for, from its local
    /// label (`2.8.0+cu128` → `Some((12, 8))`); see [`cuda_tag`].
    pub fn cuda_build(&self) -> Option<(u64, u64)> {
        self.local().and_then(cuda_tag)
    }
}

#[cfg(test)]
mod cuda_tag_tests {
    use super::*;

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
