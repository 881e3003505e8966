//! [PEP 440] versions of Python packages: `0.27.2rc0`, `2.12.0+cu126`,
//! `0.6.3.post1`, `2.13.0.dev20260501`, `1!2.0`; and their packed keys.
//!
//! [PEP 440]: https://peps.python.org/pep-0440/

use crate::scan::*;
use crate::*;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

/// Pre-release phase; the derive order is the PEP 440 order `a < b < rc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Phase {
    Alpha,
    Beta,
    Rc,
}

/// Pre-release spellings, longest first so `alpha` is not read as `a` +
/// `lpha` and `preview` not as `pre` + `view`.
pub(crate) const PRE_LABELS: [(&[u8], Phase); 8] = [
    (b"alpha", Phase::Alpha),
    (b"beta", Phase::Beta),
    (b"preview", Phase::Rc),
    (b"pre", Phase::Rc),
    (b"rc", Phase::Rc),
    (b"a", Phase::Alpha),
    (b"b", Phase::Beta),
    (b"c", Phase::Rc),
];
pub(crate) const POST_LABELS: [(&[u8], ()); 3] = [(b"post", ()), (b"rev", ()), (b"r", ())];
pub(crate) const DEV_LABELS: [(&[u8], ()); 1] = [(b"dev", ())];

/// Parses one optional suffix group `[sep] label [sep] [number]` at `*i`.
/// A missing number means 0 (PEP 440 "implicit number"). Leaves `*i`
/// untouched when the label is absent, so the next group can try.
pub(crate) fn suffix<T: Copy>(
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
    pub(crate) text: String,
    pub(crate) epoch: u64,
    pub(crate) release: Vec<u64>,
    pub(crate) pre: Option<(Phase, u64)>,
    pub(crate) post: Option<u64>,
    pub(crate) dev: Option<u64>,
    /// Lowercase, separators turned into `.`, numeric segments without
    /// leading zeros: so two equal labels have equal text.
    pub(crate) local: Option<String>,
    /// The public sort key packed into one integer ([`pack`]), when every
    /// part fits its field: comparing two versions is then one integer
    /// comparison. A check compares versions in every interval-tree stab
    /// and every specifier, and the tuple key (a slice scanned for
    /// trailing zeros, then compared) was a twentieth of a loaded
    /// server's CPU.
    pub(crate) packed: Option<u128>,
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
    pub(crate) fn key(&self) -> Key<'_> {
        (
            self.epoch,
            trim_zeros(&self.release),
            pre_key(self.pre, self.post, self.dev),
            self.post,
            dev_key(self.dev),
        )
    }

    /// Compares everything but the local label (the "public" version):
    /// `2.11.0+cu126` and `2.11.0` are the same release.
    pub fn cmp_public(&self, other: &Self) -> Ordering {
        match (self.packed, other.packed) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.key().cmp(&other.key()),
        }
    }

    /// Same epoch and release, ignoring pre/post/dev/local (PEP 440's
    /// "base version"), used by the exclusive `<` and `>` rules.
    pub(crate) fn same_base(&self, other: &Self) -> bool {
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
pub(crate) const PACKED_NUMBER_BITS: u32 = 16;

/// Bits of the pre key's rank (0-4, [`pre_key`]).
pub(crate) const PACKED_PRE_RANK_BITS: u32 = 3;

/// Bits of a packed key below the epoch and release: pre (rank + number),
/// post and dev (a flag bit + number each).
pub(crate) const PACKED_BELOW_RELEASE: u32 = PACKED_PRE_RANK_BITS + 1 + 1 + 3 * PACKED_NUMBER_BITS;

/// Release segments a packed key holds (after trailing zeros are trimmed).
pub(crate) const PACKED_RELEASE_SEGMENTS: usize = 4;

/// The public sort key ([`Key`]) as one integer whose order is the key's,
/// or `None` when a part does not fit its field (then the tuple is
/// compared). From the top: epoch (8 bits), four release segments (16
/// each, missing ones 0: for release lists without trailing zeros,
/// lexicographic order is the order of the zero-padded lists), the pre key
/// (3 + 16), post (a presence bit, so that none sorts first, + 16) and the
/// dev key (a "no dev" bit, so that a dev-release sorts first, + 16): 125
/// bits.
pub(crate) fn pack(
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
pub(crate) type Key<'a> = (u64, &'a [u64], (u8, u64), Option<u64>, (bool, u64));

/// Sort key of the pre-release part. A dev-release of a final release
/// (`1.0.dev1`: no pre, no post) sorts before every pre-release of it; a
/// version with no pre-release otherwise sorts after all of them.
pub(crate) fn pre_key(pre: Option<(Phase, u64)>, post: Option<u64>, dev: Option<u64>) -> (u8, u64) {
    match (pre, post, dev) {
        (Some((phase, n)), _, _) => (1 + phase as u8, n),
        (None, None, Some(_)) => (0, 0),
        (None, _, _) => (4, 0),
    }
}

/// Sort key of the dev part: no dev-release sorts after any dev-release.
pub(crate) fn dev_key(dev: Option<u64>) -> (bool, u64) {
    (dev.is_none(), dev.unwrap_or(0))
}

/// Parses already-trimmed text; the error is the reason only, so
/// [`Specifier`] can report it against its own input.
pub(crate) fn parse_pep440(s: &str) -> Result<Version, &'static str> {
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
pub(crate) fn cmp_local(a: Option<&str>, b: Option<&str>) -> Ordering {
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

impl Version {
    /// The CUDA version a PyTorch wheel was built for, from its local
    /// label (`2.8.0+cu128` → `Some((12, 8))`); see [`cuda_tag`].
    pub fn cuda_build(&self) -> Option<(u64, u64)> {
        self.local().and_then(cuda_tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;
    use core::cmp::Ordering::{Equal, Greater, Less};
    use std::format;
    use std::string::ToString;

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
}
