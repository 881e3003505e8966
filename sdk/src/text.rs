//! Number and list formatting without `core::fmt`, which would add
//! kilobytes of float formatting code to every rule module.

use alloc::string::String;

/// The names of `wanted` that `have` lacks, joined with `, ` (empty when
/// it has them all): a CPU's missing flags (`avx2, fma`).
pub fn missing(have: &[String], wanted: &[&str]) -> String {
    let mut out = String::new();
    for name in wanted.iter().filter(|w| !have.iter().any(|h| h == *w)) {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}

/// Appends `value` in decimal to `out`.
pub fn push_int(out: &mut String, value: i64) {
    let mut buf = [0u8; 24];
    out.push_str(format_int(value, &mut buf));
}

/// `value` rounded to exactly `decimals` places (at most 6), trailing zeros
/// kept: `fixed(140.0, 1)` is `"140.0"` (for sizes shown to people).
pub fn fixed(value: f64, decimals: u32) -> String {
    let decimals = decimals.min(6);
    let mut out = String::new();
    let mut buf = [0u8; 48];
    let text = format_decimal(value, decimals, &mut buf);
    out.push_str(text);
    let have = text.find('.').map_or(0, |dot| text.len() - dot - 1) as u32;
    if have < decimals && value.is_finite() {
        if have == 0 {
            out.push('.');
        }
        for _ in have..decimals {
            out.push('0');
        }
    }
    out
}

/// Writes `value` in decimal into `buf` and returns it as text.
/// (`buf` is big enough for any `i64`.)
pub fn format_int(value: i64, buf: &mut [u8; 24]) -> &str {
    let mut i = buf.len();
    let negative = value < 0;
    let mut n = value.unsigned_abs();
    // Down to 32 bits first: on wasm32 a 64-bit division by 10 becomes a
    // call to a 128-bit multiplication routine, a 32-bit one is inline.
    while n > u64::from(u32::MAX) {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    let mut n = n as u32;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        i -= 1;
        buf[i] = b'-';
    }
    // SAFETY: `buf[i..]` holds ASCII digits and a sign, written above.
    unsafe { core::str::from_utf8_unchecked(&buf[i..]) }
}

/// Writes `value` rounded to `decimals` places (at most 6) into `buf`;
/// trailing zeros after the point are dropped (`2.50` → `2.5`, `3.0` → `3`).
pub fn format_decimal(value: f64, decimals: u32, buf: &mut [u8; 48]) -> &str {
    if !value.is_finite() {
        return "NaN";
    }
    let decimals = decimals.min(6);
    let scale = 10u64.pow(decimals);
    let negative = value < 0.0;
    let scaled = (if negative { -value } else { value }) * scale as f64 + 0.5;
    if scaled >= 9.0e18 {
        return "huge";
    }
    let scaled = scaled as u64;
    let (whole, mut frac) = (scaled / scale, scaled % scale);
    let mut ibuf = [0u8; 24];
    let whole_text = format_int(whole as i64, &mut ibuf);
    let mut len = 0;
    let mut push = |b: u8, len: &mut usize| {
        buf[*len] = b;
        *len += 1;
    };
    if negative && scaled != 0 {
        push(b'-', &mut len);
    }
    for &b in whole_text.as_bytes() {
        push(b, &mut len);
    }
    let mut digits = decimals;
    while digits > 0 && frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    if digits > 0 {
        push(b'.', &mut len);
        let start = len;
        for _ in 0..digits {
            push(b'0', &mut len);
        }
        let mut j = len;
        while frac > 0 {
            j -= 1;
            buf[j] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        debug_assert!(j >= start);
    }
    // SAFETY: `buf[..len]` holds ASCII digits, a sign and a point, written above.
    unsafe { core::str::from_utf8_unchecked(&buf[..len]) }
}

/// `major.minor` of a compute capability without `core::fmt` (which would
/// add kilobytes to a rule module).
pub trait CapabilityText {
    /// Writes `major.minor` into `buf` and returns it.
    fn write_to<'b>(&self, buf: &'b mut [u8; 24]) -> &'b str;
}

impl CapabilityText for crate::version::ComputeCapability {
    fn write_to<'b>(&self, buf: &'b mut [u8; 24]) -> &'b str {
        let mut major = [0u8; 24];
        let mut minor = [0u8; 24];
        let major = format_int(i64::from(self.major), &mut major);
        let minor = format_int(i64::from(self.minor), &mut minor);
        let len = major.len() + 1 + minor.len();
        buf[..major.len()].copy_from_slice(major.as_bytes());
        buf[major.len()] = b'.';
        buf[major.len() + 1..len].copy_from_slice(minor.as_bytes());
        core::str::from_utf8(&buf[..len]).unwrap_or("?")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        let mut b = [0u8; 24];
        assert_eq!(format_int(0, &mut b), "0");
        assert_eq!(format_int(-42, &mut b), "-42");
        assert_eq!(format_int(i64::MIN, &mut b), "-9223372036854775808");
        assert_eq!(format_int(4_294_967_295, &mut b), "4294967295");
        assert_eq!(format_int(4_294_967_296, &mut b), "4294967296");
        assert_eq!(format_int(10_000_000_000, &mut b), "10000000000");
    }

    #[test]
    fn fixed_keeps_trailing_zeros() {
        assert_eq!(fixed(140.0, 1), "140.0");
        assert_eq!(fixed(49.04, 1), "49.0");
        assert_eq!(fixed(2.25, 2), "2.25");
        assert_eq!(fixed(3.0, 0), "3");
        let mut s = String::from("sm_");
        push_int(&mut s, 75);
        assert_eq!(s, "sm_75");
    }

    #[test]
    fn decimals() {
        let mut b = [0u8; 48];
        assert_eq!(format_decimal(2.5, 2, &mut b), "2.5");
        assert_eq!(format_decimal(3.0, 1, &mut b), "3");
        assert_eq!(format_decimal(140.0, 0, &mut b), "140");
        assert_eq!(format_decimal(0.049, 1, &mut b), "0");
        assert_eq!(format_decimal(-1.25, 2, &mut b), "-1.25");
        assert_eq!(format_decimal(27.157, 1, &mut b), "27.2");
    }
}
