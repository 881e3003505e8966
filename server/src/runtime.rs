//! The server's threads: how many checks evaluate at once, and the tokio
//! runtime that serves them.
//!
//! A check is CPU work: a few hundred microseconds for a typical manifest;
//! for hostile rules, until its request's deadline (`state::RequestDeadline`,
//! looked at between evaluations) plus at most one rule's own wall-clock
//! bound. It runs on the runtime worker that read its request, not on a
//! blocking thread it would be handed to and back from: that handoff (a
//! wake-up, a context switch and another core's caches each way, the
//! manifest freed on a thread other than the one that allocated it) cost
//! about a third of the server's throughput with distinct manifests
//! (measured: 0.21-0.23 of the echo with it, 0.29-0.33
//! without). So that a check can never hold up the rest of the server
//! (health, metrics, the web page, publishing, other requests' bodies), at
//! most [`evaluation_slots`] checks run at once and the runtime has one
//! worker more than that: one is always free for everything else.
//!
//! A free worker is not enough by itself: it has to be awake to take the
//! I/O driver. tokio's workers take turns polling the driver when they
//! park, and one that the driver wakes with a single task runs it without
//! waking another; if that task is a check, the driver goes unpolled (new
//! connections, other requests' bodies) until a check ends, while the free
//! worker sleeps. So a check first [`requeue`]s its task, which wakes an
//! idle worker if there is one (`server/tests/it/slots.rs` fails without).

use std::future::poll_fn;
use std::io;
use std::task::Poll;

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

/// Puts the calling task at the back of its worker's queue, once, before
/// the task holds that worker for a while (a check). A task that wakes
/// itself while it is polled is rescheduled as a yield, and tokio then
/// wakes an idle worker, if any, to steal from that queue: whichever
/// worker ends up without the task parks on the I/O driver. (tokio's own
/// `yield_now` defers its wake-up until the worker is idle, so it wakes
/// nobody.) When every worker is busy it costs one more poll of the task.
pub async fn requeue() {
    let mut requeued = false;
    poll_fn(|cx| {
        if requeued {
            return Poll::Ready(());
        }
        requeued = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}
