//! The sandbox's limits: each a named default with the reason for its value
//! (../shared/DESIGN.md, "Sandbox limits"). A rule that breaches one fails
//! alone; every other rule of the check goes on.

use std::time::Duration;

/// Largest module accepted. Real rules are a few KiB; 1 MiB leaves room for
/// embedded test manifests while bounding parse and compile work.
pub const DEFAULT_MAX_MODULE_BYTES: usize = 1 << 20;

/// Linear memory a rule may use. A manifest view and a finding need far
/// less; 16 MiB bounds what hundreds of concurrent instances can pin.
pub const DEFAULT_MAX_MEMORY_BYTES: usize = 16 << 20;

/// Wasm stack. Rules are shallow; 256 KiB turns runaway recursion into a
/// prompt trap instead of a host stack overflow.
pub const DEFAULT_MAX_WASM_STACK: usize = 256 << 10;

/// Fuel (roughly, wasm instructions) per evaluation: a few milliseconds of
/// CPU. Deterministic, so a rule that is too slow is too slow everywhere,
/// including in its publish-time tests.
pub const DEFAULT_FUEL: u64 = 10_000_000;

/// Fuel charged per host call on top of the call itself, plus one unit per
/// byte copied, so a loop around host calls exhausts fuel as fast as the
/// host work it causes.
pub const HOST_CALL_FUEL: u64 = 200;

/// Wall-clock backstop per evaluation, for anything fuel does not meter.
/// Generous so a busy machine never fails a well-behaved rule.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(100);

/// How often the epoch advances (the deadline's resolution).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Output (evidence paths, parameters, remedies) one evaluation may report.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 << 10;

/// Compile time bound at load; Cranelift compiles a 1 MiB module in well
/// under a second on these machines, so ten seconds means a compile bomb.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(10);

/// Functions per module: rules have a handful; thousands are a compile bomb.
pub const MAX_FUNCTIONS: u32 = 10_000;

/// Locals per function: each costs register-allocator work at compile time.
pub const MAX_LOCALS_PER_FUNCTION: u32 = 10_000;

/// Bytes of one function body: the largest bundled rule's biggest function
/// is a few KiB; Cranelift's time and memory grow with a function's size
/// (register allocation is superlinear), so 128 KiB bounds compile work per
/// function long before the module size limit does.
pub const MAX_FUNCTION_BODY_BYTES: usize = 128 << 10;

/// Nesting depth of blocks, loops and ifs in one function. Rust rules nest
/// a few dozen deep; each level costs a frame in the validator and in
/// Cranelift's translator, and 100,000 nested blocks fit in a small module.
pub const MAX_NESTING_DEPTH: u32 = 1000;

/// Table elements: Rust rules use a few for indirect calls.
pub const MAX_TABLE_ELEMENTS: usize = 10_000;

/// Concurrent instances across the process (pooling allocator slots).
/// Checks run on a bounded thread pool, one instance per thread at a time.
pub const DEFAULT_MAX_INSTANCES: u32 = 256;

/// Linear memory kept resident between instances: zeroed with `memset`
/// instead of `madvise`, which halves instantiation time for small rules.
pub const KEEP_RESIDENT_BYTES: usize = 256 << 10;

/// Bytes the memo of evaluations may hold across all rules
/// (`crate::memo`). At the bench's 10,000 rules it holds 4 MiB after 200
/// machines and fills 32 MiB by 12,000, answering 86 % of candidates (24
/// MiB: 85 %); a 10,000-rule server's RSS stays under 512 MiB with it and
/// the result cache both full. 0 turns the memo off, so every candidate of
/// every check runs in the sandbox.
pub const DEFAULT_MEMO_BYTES: usize = 32 << 20;

/// The only import module a rule may use.
pub const HOST_MODULE: &str = "pitfall";

/// The limits of one engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// See [`DEFAULT_MAX_MODULE_BYTES`].
    pub max_module_bytes: usize,
    /// See [`DEFAULT_MAX_MEMORY_BYTES`].
    pub max_memory_bytes: usize,
    /// See [`DEFAULT_MAX_WASM_STACK`].
    pub max_wasm_stack: usize,
    /// See [`DEFAULT_FUEL`].
    pub fuel: u64,
    /// See [`DEFAULT_DEADLINE`].
    pub deadline: Duration,
    /// See [`DEFAULT_MAX_OUTPUT_BYTES`].
    pub max_output_bytes: usize,
    /// See [`DEFAULT_COMPILE_TIMEOUT`].
    pub compile_timeout: Duration,
    /// See [`DEFAULT_MAX_INSTANCES`].
    pub max_instances: u32,
    /// See [`DEFAULT_MEMO_BYTES`].
    pub memo_bytes: usize,
    /// Whether an [`crate::Evaluator`] evaluates a rule again in the
    /// instance it made for it, reset to its fresh state
    /// (`crate::reset`), rather than instantiating it afresh. The state an
    /// evaluation starts from is the same either way; `false` costs an
    /// instantiation per evaluation (the bench measures both).
    pub reuse_instances: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_module_bytes: DEFAULT_MAX_MODULE_BYTES,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            max_wasm_stack: DEFAULT_MAX_WASM_STACK,
            fuel: DEFAULT_FUEL,
            deadline: DEFAULT_DEADLINE,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            compile_timeout: DEFAULT_COMPILE_TIMEOUT,
            max_instances: DEFAULT_MAX_INSTANCES,
            memo_bytes: DEFAULT_MEMO_BYTES,
            reuse_instances: true,
        }
    }
}

impl Limits {
    /// Epoch ticks that make up the deadline (at least one).
    pub(crate) fn deadline_ticks(&self) -> u64 {
        (self.deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}
