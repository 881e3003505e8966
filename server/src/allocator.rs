//! The process's memory, as the allocator (mimalloc) gets it from the
//! kernel.

/// Turns transparent huge pages off for this process; the binaries that
/// use mimalloc as their allocator call it first thing in `main`.
///
/// mimalloc 3 asks for huge pages on its arenas (`madvise(MADV_HUGEPAGE)`),
/// so on a kernel whose THP mode is `madvise` (Debian's default) the first
/// touch of each 2 MiB of heap makes the kernel zero all of it. A server
/// spreads small allocations over a heap per thread, so most of those
/// pages are touched sparsely: zeroing them was a fifth of the CPU of a
/// start with 10,000 rules, and a restart went 2.4-2.6 s to 1.9-2.2 s
/// without (BENCHMARKS.md). The flag is checked at every page fault, so
/// setting it after mimalloc's arenas were reserved still takes effect;
/// it also stops `khugepaged` collapsing the heap later. Best effort: a
/// kernel without the call leaves things as they were.
pub fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("note: could not turn transparent huge pages off ({e}); starting anyway");
    }
}
