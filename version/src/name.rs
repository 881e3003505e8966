//! Package names as Python packaging compares them ([PEP 503]), and the
//! trimming every host read of a name or version does.
//!
//! [PEP 503]: https://peps.python.org/pep-0503/

use alloc::string::String;

/// PEP 503 name normalisation: lower case, runs of `-`, `_`, `.` become `-`.
pub fn package_key(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    push_package_key(&mut out, name);
    out
}

/// [`package_key`], borrowing `name` when it already is its own key, as
/// nearly every name a Python environment lists is (`torch`,
/// `flash-attn`): the host derives a key for each of a manifest's
/// hundreds of packages per check.
pub fn package_key_cow(name: &str) -> alloc::borrow::Cow<'_, str> {
    // One pass: lower-case letters and digits, single dashes between them.
    // (Four passes over the bytes cost as much as the key's allocation.)
    let mut after_dash = true;
    let mut is_key = true;
    for &b in name.as_bytes() {
        if b == b'-' {
            is_key &= !after_dash;
            after_dash = true;
        } else {
            is_key &= b.is_ascii_lowercase() || b.is_ascii_digit();
            after_dash = false;
        }
    }
    // A trailing dash makes no key (an empty name is its own).
    let is_key = is_key && (!after_dash || name.is_empty());
    if is_key {
        alloc::borrow::Cow::Borrowed(name)
    } else {
        alloc::borrow::Cow::Owned(package_key(name))
    }
}

/// `text.trim()`, without its cost where it has nothing to do: `trim`
/// decodes each end as a char and tests it for Unicode white space, and
/// ASCII letters and digits at both ends (nearly every package name and
/// version a host reads) cannot be white space. A host trims hundreds of
/// them per manifest.
pub fn trim(text: &str) -> &str {
    let plain = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    if plain(text.as_bytes().first()) && plain(text.as_bytes().last()) { text } else { text.trim() }
}

/// Appends [`package_key`]`(name)` to `out`. Works on bytes, written
/// straight into `out`'s spare capacity: every byte it changes or drops is
/// ASCII, so multi-byte characters pass through whole (as
/// `char::to_ascii_lowercase` leaves them).
pub fn push_package_key(out: &mut String, name: &str) {
    let name = trim(name);
    out.reserve(name.len());
    // SAFETY: only whole ASCII bytes are dropped (separators) or replaced
    // by ASCII (`-`, lower-case letters); every other byte is appended in
    // its original order, so `out` stays UTF-8.
    let buf = unsafe { out.as_mut_vec() };
    let spare = buf.spare_capacity_mut();
    // The key is never longer than the name: a `-` is written only in
    // place of at least one separator that was dropped.
    let mut n = 0;
    let mut sep = false;
    for &b in name.as_bytes() {
        if matches!(b, b'-' | b'_' | b'.') {
            sep = true;
            continue;
        }
        if sep && n > 0 {
            spare[n].write(b'-');
            n += 1;
        }
        sep = false;
        spare[n].write(b.to_ascii_lowercase());
        n += 1;
    }
    let len = buf.len() + n;
    // SAFETY: the `n` bytes after the old length were written just above,
    // within the capacity reserved for them.
    unsafe { buf.set_len(len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition `package_key` implements on bytes: char by char.
    fn package_key_by_chars(name: &str) -> String {
        let mut out = String::new();
        let mut sep = false;
        for c in name.trim().chars() {
            if matches!(c, '-' | '_' | '.') {
                sep = true;
            } else {
                if sep && !out.is_empty() {
                    out.push('-');
                }
                sep = false;
                out.push(c.to_ascii_lowercase());
            }
        }
        out
    }

    #[test]
    fn package_key_on_bytes_matches_the_char_definition() {
        for name in [
            "vllm",
            "flash-attn",
            "Flash_Attn",
            "zope.interface",
            "Foo.-_Bar__baz",
            " torch ",
            "\u{a0}torch\u{2003}",
            "-lead",
            "trail_",
            "..",
            "",
            " ",
            "Ünïcode_Näme",
            "a\u{300}-B",
            "x.\u{1F600}.Y",
            "UPPER",
        ] {
            assert_eq!(package_key(name), package_key_by_chars(name), "{name:?}");
        }
    }

    #[test]
    fn package_key_cow_borrows_exactly_the_names_that_are_keys() {
        for name in [
            "vllm",
            "flash-attn",
            "a1-b2-c3",
            "x",
            "",
            "Flash_Attn",
            "zope.interface",
            "-lead",
            "trail-",
            "a--b",
            " torch",
            "UPPER",
            "Ünïcode",
            "a_b",
            "a.b",
            "\u{a0}torch",
            "-",
            "--",
            "a-",
            "1-2",
            "9",
            "a-b-",
            "torch\u{a0}",
        ] {
            let cow = package_key_cow(name);
            assert_eq!(cow, package_key(name), "{name:?}");
            // Borrowed exactly for ASCII names that are their own key (a
            // non-ASCII name is left to `package_key`, which is right too).
            let borrowed = matches!(cow, alloc::borrow::Cow::Borrowed(_));
            assert_eq!(
                borrowed,
                name.is_ascii() && package_key(name) == name,
                "{name:?} borrowed={borrowed}"
            );
        }
    }

    #[test]
    fn package_path_is_built_in_place() {
        let mut path = String::from("packages.");
        push_package_key(&mut path, "Flash_Attn");
        assert_eq!(path, "packages.flash-attn");
    }
}
