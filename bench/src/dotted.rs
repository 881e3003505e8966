//! The synthetic templates' version parser in Rust: the native comparison
//! (`native.rs`) and the Extism plugin (`extism-plugin/`, which includes
//! this file by path) parse versions as the WAT template's `$dotted` does.

/// `X[.Y[.Z]][+local]` in 20-bit parts, as the template's `$dotted` does.
pub fn dotted(text: &str) -> Option<i64> {
    let public = text.split('+').next().unwrap_or("");
    let mut parts = 0;
    let mut acc = 0i64;
    for part in public.split('.') {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) || part.len() > 7 {
            return None;
        }
        let n: i64 = part.parse().ok()?;
        if n >= 1 << 20 {
            return None;
        }
        acc = (acc << 20) | n;
        parts += 1;
    }
    if parts > 3 {
        return None;
    }
    Some(acc << (20 * (3 - parts)))
}
