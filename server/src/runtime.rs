//! The server's threads: how many checks evaluate at once, and the tokio
//! runtime that serves them.
//!
//! A check is CPU work: a few hundred microseconds for a typical manifest,
//! at most its candidates' fuel and deadlines for hostile ones. It runs on
//! the runtime worker that read its request, not on a blocking thread it
//! would be handed to and back from: that handoff (a wake-up, a context
//! switch and another core's caches each way, the manifest freed on a
//! thread other than the one that allocated it) cost more than a third
//! of the server's throughput with distinct manifests (BENCHMARKS.md,
//! round 9). So that a check can never hold up the rest of the server
//! (health, metrics, the web page, publishing, other requests' bodies), at
//! most [`evaluation_slots`] checks run at once and the runtime has one
//! worker more than that: one is always free for everything else.

use std::io;

/// Checks that evaluate at once: one per core. More gained no throughput
/// and cost memory (each evaluating thread keeps its own allocator heap).
pub fn evaluation_slots() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The runtime the server runs on: [`evaluation_slots`] workers for
/// checks, and one more that no check can occupy.
pub fn build() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(evaluation_slots() + 1)
        .thread_name("pitfall-worker")
        .enable_all()
        .build()
}
