//! The raw calls of ABI v1 (`sdk/ABI.md`), wrapped in safe functions.
//!
//! On `wasm32` they are imports from the host module `pitfall`; natively
//! they go to the native test harness's session (the `testing` feature),
//! so a rule's code is
//! the same in both.

#[cfg(target_arch = "wasm32")]
use alloc::{string::String, vec::Vec};

/// The ABI version this SDK speaks.
pub const ABI_VERSION: u32 = 1;

/// Field kinds as `field_kind` returns them.
pub mod kind {
    /// No such field.
    pub const MISSING: i32 = 0;
    /// JSON null.
    pub const NULL: i32 = 1;
    /// A boolean.
    pub const BOOL: i32 = 2;
    /// A number.
    pub const NUMBER: i32 = 3;
    /// A string.
    pub const STRING: i32 = 4;
    /// An array.
    pub const ARRAY: i32 = 5;
    /// An object.
    pub const OBJECT: i32 = 6;
}

/// Negative results of `field_len`, `field_str` and `version_in`.
pub mod status {
    /// The field does not exist.
    pub const MISSING: i32 = -1;
    /// The field exists but has the wrong kind for this call.
    pub const WRONG_KIND: i32 = -2;
    /// `version_in`: the field's text is not a version.
    pub const NOT_A_VERSION: i32 = -3;
}

#[cfg(target_arch = "wasm32")]
mod raw {
    #[link(wasm_import_module = "pitfall")]
    unsafe extern "C" {
        pub(super) fn field_kind(path: *const u8, path_len: usize) -> i32;
        pub(super) fn field_len(path: *const u8, path_len: usize) -> i32;
        pub(super) fn field_num(path: *const u8, path_len: usize) -> f64;
        pub(super) fn field_str(
            path: *const u8,
            path_len: usize,
            buf: *mut u8,
            buf_cap: usize,
        ) -> i32;
        pub(super) fn evidence(path: *const u8, path_len: usize);
        pub(super) fn missing(path: *const u8, path_len: usize);
        pub(super) fn param(key: *const u8, key_len: usize, value: *const u8, value_len: usize);
        pub(super) fn remedy(index: u32);
        pub(super) fn version_in(
            path: *const u8,
            path_len: usize,
            spec: *const u8,
            spec_len: usize,
        ) -> i32;
        pub(super) fn param_field(key: *const u8, key_len: usize, path: *const u8, path_len: usize);
        pub(super) fn text_contains(
            path: *const u8,
            path_len: usize,
            needle: *const u8,
            needle_len: usize,
        ) -> i32;
    }
}

/// The kind of the field at `path` (see [`kind`]).
#[cfg(target_arch = "wasm32")]
pub fn field_kind(path: &str) -> i32 {
    // SAFETY: the host reads `path_len` bytes at `path`, which is a live &str.
    unsafe { raw::field_kind(path.as_ptr(), path.len()) }
}

/// Elements of the array (members of the object) at `path`.
#[cfg(target_arch = "wasm32")]
pub fn field_len(path: &str) -> Option<usize> {
    // SAFETY: as in `field_kind`.
    let n = unsafe { raw::field_len(path.as_ptr(), path.len()) };
    usize::try_from(n).ok()
}

/// The number at `path` (also a numeric string such as `"7.5"`).
#[cfg(target_arch = "wasm32")]
pub fn field_num(path: &str) -> Option<f64> {
    // SAFETY: as in `field_kind`.
    let n = unsafe { raw::field_num(path.as_ptr(), path.len()) };
    if n.is_nan() { None } else { Some(n) }
}

/// The scalar at `path` as text.
#[cfg(target_arch = "wasm32")]
pub fn field_str(path: &str) -> Option<String> {
    // The host writes straight into the string's heap buffer: no zeroed
    // scratch buffer and no second copy (each copy is a `memory.copy`,
    // which costs more than the host call itself). Most values are short;
    // a longer one is fetched again with exactly the room it needs.
    let mut buf: Vec<u8> = Vec::with_capacity(48);
    // SAFETY: the host writes at most `buf_cap` bytes at `buf`, which is
    // `buf`'s own spare capacity.
    let n = unsafe { raw::field_str(path.as_ptr(), path.len(), buf.as_mut_ptr(), buf.capacity()) };
    let n = usize::try_from(n).ok()?;
    if n > buf.capacity() {
        buf.reserve_exact(n);
        // SAFETY: as above, with at least `n` bytes of capacity.
        let again =
            unsafe { raw::field_str(path.as_ptr(), path.len(), buf.as_mut_ptr(), buf.capacity()) };
        if usize::try_from(again).ok()? != n {
            return None;
        }
    }
    // SAFETY: the host initialised the first `n` bytes (it copies only when
    // they fit, and `n <= capacity` here).
    unsafe { buf.set_len(n) };
    // SAFETY: `field_str` writes the field's text as UTF-8 (ABI.md §4.4);
    // the host's text is a Rust `str`, so checking it again here would only
    // cost fuel.
    Some(unsafe { String::from_utf8_unchecked(buf) })
}

/// Offers the field at `path` as evidence.
#[cfg(target_arch = "wasm32")]
pub fn evidence(path: &str) {
    // SAFETY: as in `field_kind`.
    unsafe { raw::evidence(path.as_ptr(), path.len()) }
}

/// Names a field the rule needed and did not find.
#[cfg(target_arch = "wasm32")]
pub fn missing(path: &str) {
    // SAFETY: as in `field_kind`.
    unsafe { raw::missing(path.as_ptr(), path.len()) }
}

/// Sets a message/remedy parameter.
#[cfg(target_arch = "wasm32")]
pub fn param(key: &str, value: &str) {
    // SAFETY: both slices are live for the call.
    unsafe { raw::param(key.as_ptr(), key.len(), value.as_ptr(), value.len()) }
}

/// Selects remedy `index` of the metadata.
#[cfg(target_arch = "wasm32")]
pub fn remedy(index: u32) {
    // SAFETY: no pointers.
    unsafe { raw::remedy(index) }
}

/// Whether the field at `path` is a version the specifier `spec` contains
/// (`">=0.25,<0.27.2rc0"`, PEP 440 as in `applies_to`): 1 if it is, 0 if
/// not, [`status::MISSING`], [`status::WRONG_KIND`] or
/// [`status::NOT_A_VERSION`]. The host compares, so the rule's answer
/// depends on the answer only, not on the version: the registry can
/// reuse it for every version with the same answer. A specifier that does
/// not parse traps (the rule's bug, caught by its tests).
#[cfg(target_arch = "wasm32")]
pub fn version_in(path: &str, spec: &str) -> i32 {
    // SAFETY: both slices are live for the call.
    unsafe { raw::version_in(path.as_ptr(), path.len(), spec.as_ptr(), spec.len()) }
}

/// Whether the field at `path` is a scalar whose text contains `needle`,
/// ASCII letters compared without case (`google/Gemma-4-E2B-it` contains
/// `gemma-4`): 1 if it does, 0 if not, [`status::MISSING`] or
/// [`status::WRONG_KIND`]. The host looks, so the rule's answer depends on
/// the answer only, not on the text: the registry can reuse it for every
/// model id (or image, or any other text) with the same answer.
#[cfg(target_arch = "wasm32")]
pub fn text_contains(path: &str, needle: &str) -> i32 {
    // SAFETY: both slices are live for the call.
    unsafe { raw::text_contains(path.as_ptr(), path.len(), needle.as_ptr(), needle.len()) }
}

/// Sets a message/remedy parameter to the text of the field at `path`,
/// filled in by the host when it renders the finding (the rule does not
/// read it, so quoting a version costs no read of it).
#[cfg(target_arch = "wasm32")]
pub fn param_field(key: &str, path: &str) {
    // SAFETY: both slices are live for the call.
    unsafe { raw::param_field(key.as_ptr(), key.len(), path.as_ptr(), path.len()) }
}

#[cfg(all(not(target_arch = "wasm32"), feature = "testing"))]
pub use crate::testing::native::{
    evidence, field_kind, field_len, field_num, field_str, missing, param, param_field, remedy,
    text_contains, version_in,
};

#[cfg(all(not(target_arch = "wasm32"), not(feature = "testing")))]
pub use no_host::{
    evidence, field_kind, field_len, field_num, field_str, missing, param, param_field, remedy,
    text_contains, version_in,
};

/// Natively without the `testing` feature there is no host to call: a
/// rule compiles (so a workspace builds), and running it says why not.
#[cfg(all(not(target_arch = "wasm32"), not(feature = "testing")))]
#[allow(missing_docs)]
mod no_host {
    use alloc::string::String;

    fn no_host() -> ! {
        panic!("pitfall-sdk: a rule ran natively without its `testing` feature (the native host)")
    }
    pub fn field_kind(_: &str) -> i32 {
        no_host()
    }
    pub fn field_len(_: &str) -> Option<usize> {
        no_host()
    }
    pub fn field_num(_: &str) -> Option<f64> {
        no_host()
    }
    pub fn field_str(_: &str) -> Option<String> {
        no_host()
    }
    pub fn evidence(_: &str) {
        no_host()
    }
    pub fn missing(_: &str) {
        no_host()
    }
    pub fn param(_: &str, _: &str) {
        no_host()
    }
    pub fn param_field(_: &str, _: &str) {
        no_host()
    }
    pub fn version_in(_: &str, _: &str) -> i32 {
        no_host()
    }
    pub fn text_contains(_: &str, _: &str) -> i32 {
        no_host()
    }
    pub fn remedy(_: u32) {
        no_host()
    }
}
