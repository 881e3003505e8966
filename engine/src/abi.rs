//! ABI v1 as the host sees it: the imports a rule may use (with their exact
//! signatures), the exports it must provide, and the ABI versions this host
//! runs. `sdk/ABI.md` is the prose form of this file.

use wasmparser::ValType::{self, F64, I32};

/// ABI versions this host runs.
pub const SUPPORTED_ABI_VERSIONS: &[u32] = &[1];

/// The entry point every rule exports: `() -> i32` (0 clear, 1 matched, 2 undetermined).
pub const EVALUATE_EXPORT: &str = "pitfall_evaluate";

/// The linear memory every rule exports (the host reads paths and writes values there).
pub const MEMORY_EXPORT: &str = "memory";

/// One host function: name, parameters, results.
#[derive(Debug)]
pub struct HostFunction {
    /// Import name within [`crate::limits::HOST_MODULE`].
    pub name: &'static str,
    /// Parameter types.
    pub params: &'static [ValType],
    /// Result types.
    pub results: &'static [ValType],
}

/// Every function of the host module.
pub const HOST_FUNCTIONS: &[HostFunction] = &[
    HostFunction { name: "field_kind", params: &[I32, I32], results: &[I32] },
    HostFunction { name: "field_len", params: &[I32, I32], results: &[I32] },
    HostFunction { name: "field_num", params: &[I32, I32], results: &[F64] },
    HostFunction { name: "field_str", params: &[I32, I32, I32, I32], results: &[I32] },
    HostFunction { name: "evidence", params: &[I32, I32], results: &[] },
    HostFunction { name: "missing", params: &[I32, I32], results: &[] },
    HostFunction { name: "param", params: &[I32, I32, I32, I32], results: &[] },
    HostFunction { name: "remedy", params: &[I32], results: &[] },
    HostFunction { name: "version_in", params: &[I32, I32, I32, I32], results: &[I32] },
    HostFunction { name: "param_field", params: &[I32, I32, I32, I32], results: &[] },
    HostFunction { name: "text_contains", params: &[I32, I32, I32, I32], results: &[I32] },
];
