//! The bundled rules: every crate under `rules/`, built to wasm by this
//! crate's build script and embedded here, so the server and the CLI serve
//! them with no other step.

/// One embedded rule module.
#[derive(Debug, Clone, Copy)]
pub struct BundledModule {
    /// The rule crate's package name (`rule-<id>`).
    pub crate_name: &'static str,
    /// The rule crate's directory (for messages and `pitfall rule test`).
    pub source_dir: &'static str,
    /// The module's bytes.
    pub wasm: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
