//! Small parsing helpers the version kinds share (bytes, ASCII only).

use crate::E_TOO_LARGE;

/// Reads a run of ASCII digits at `*i` as a number; `None` if there is none.
/// Overflow is an error rather than a wrap, so huge numbers never compare
/// wrongly.
pub(crate) fn number(b: &[u8], i: &mut usize) -> Result<Option<u64>, &'static str> {
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
pub(crate) fn whole_number(s: &str) -> Result<u64, &'static str> {
    let b = s.as_bytes();
    let mut i = 0;
    match number(b, &mut i)? {
        Some(n) if i == b.len() => Ok(n),
        _ => Err("components must be numbers"),
    }
}

pub(crate) fn is_sep(c: u8) -> bool {
    matches!(c, b'.' | b'-' | b'_')
}

pub(crate) fn starts_with_ci(b: &[u8], at: usize, lit: &[u8]) -> bool {
    b.get(at..at + lit.len()).is_some_and(|s| s.eq_ignore_ascii_case(lit))
}

pub(crate) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// The release without trailing zeros: `1.0.0` and `1` are the same release.
pub(crate) fn trim_zeros(r: &[u64]) -> &[u64] {
    let n = r.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
    &r[..n]
}
