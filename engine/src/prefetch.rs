//! A hint to the CPU to start loading memory a check will read soon.
//!
//! A check touches each of its candidates' rule, gate and memo once, each
//! a cache miss among thousands of rules. Asked for one after another as
//! the check reads them, those misses come one at a time; hinted for all
//! the candidates first, they overlap.

/// Asks for the cache line at `p` (x86-64 only; elsewhere nothing).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and cannot fault, whatever `p` is.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
