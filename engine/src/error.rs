//! The engine's errors. Loading a module fails with a [`LoadError`] that
//! names the step; a failing evaluation is not an error of the engine but
//! an outcome of that rule (see [`crate::check::RuleOutcome`]).

/// Why a module was refused; each variant is one step of loading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// Larger than [`crate::Limits::max_module_bytes`].
    #[error("size: the module has {size} bytes, the limit is {limit}")]
    TooLarge {
        /// The module's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Not valid WebAssembly under the engine's feature set.
    #[error("validation: {0}")]
    InvalidWasm(String),
    /// ABI version or shape.
    #[error("abi: {0}")]
    Abi(String),
    /// A forbidden or mistyped import.
    #[error("imports: {0}")]
    Import(String),
    /// A missing or mistyped export.
    #[error("exports: {0}")]
    Export(String),
    /// Beyond the sandbox's resource limits.
    #[error("limits: {0}")]
    Limits(String),
    /// Beyond the complexity bounds that keep compile time bounded.
    #[error("complexity: {0}")]
    TooComplex(String),
    /// Metadata missing or ill-formed.
    #[error("metadata: {0}")]
    Metadata(String),
    /// Embedded test cases missing or ill-formed.
    #[error("tests: {0}")]
    Tests(String),
    /// Cranelift refused or failed.
    #[error("compile: {0}")]
    Compile(String),
    /// Compilation took longer than the bound.
    #[error("compile: exceeded the time bound of {0:?}")]
    CompileTimeout(std::time::Duration),
}

impl LoadError {
    /// The step that refused the module (`size`, `validation`, `abi`, ...).
    pub fn step(&self) -> &'static str {
        match self {
            LoadError::TooLarge { .. } => "size",
            LoadError::InvalidWasm(_) => "validation",
            LoadError::Abi(_) => "abi",
            LoadError::Import(_) => "imports",
            LoadError::Export(_) => "exports",
            LoadError::Limits(_) => "limits",
            LoadError::TooComplex(_) => "complexity",
            LoadError::Metadata(_) => "metadata",
            LoadError::Tests(_) => "tests",
            LoadError::Compile(_) | LoadError::CompileTimeout(_) => "compile",
        }
    }
}

/// The engine itself could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("engine setup: {0}")]
pub struct EngineError(pub String);

/// A check stopped at its caller's deadline, before every candidate was
/// evaluated. The deadline is looked at before each evaluation in the
/// sandbox, so a check overruns it by at most one rule's own wall-clock
/// bound ([`crate::Limits::deadline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the check passed its deadline with {evaluated} of {candidates} candidates evaluated")]
pub struct PastDeadline {
    /// Candidates answered (by their memo or in the sandbox) before it.
    pub evaluated: usize,
    /// Candidates the manifest's selectors admitted.
    pub candidates: usize,
}
