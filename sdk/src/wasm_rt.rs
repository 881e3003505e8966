//! What a `no_std` rule needs on wasm32 and gets from the SDK: an allocator
//! and a panic handler.
//!
//! Each evaluation runs in a fresh instance that is thrown away afterwards,
//! so a bump allocator that never reuses memory is both the smallest and the
//! fastest choice; the engine's memory limit bounds it.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::sync::atomic::{AtomicUsize, Ordering};

const PAGE: usize = 65536;

unsafe extern "C" {
    /// End of the data and stack, set by the linker.
    static __heap_base: u8;
}

/// Next free byte; 0 until the first allocation.
static NEXT: AtomicUsize = AtomicUsize::new(0);

struct BumpAlloc;

// SAFETY: `alloc` hands out disjoint, suitably aligned regions inside linear
// memory (growing it when needed) and returns null when memory cannot grow;
// nothing is ever handed out twice. wasm32 rules are single-threaded.
unsafe impl GlobalAlloc for BumpAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut next = NEXT.load(Ordering::Relaxed);
        if next == 0 {
            next = (&raw const __heap_base) as usize;
        }
        let align = layout.align();
        let Some(start) = next.checked_add(align - 1).map(|n| n & !(align - 1)) else {
            return core::ptr::null_mut();
        };
        let Some(end) = start.checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        let have = wasm32::memory_size(0) * PAGE;
        if end > have {
            let pages = (end - have).div_ceil(PAGE);
            if wasm32::memory_grow(0, pages) == usize::MAX {
                return core::ptr::null_mut();
            }
        }
        NEXT.store(end, Ordering::Relaxed);
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Give back the most recent allocation (the common push/pop of
        // temporaries); anything else is reclaimed when the instance ends.
        let end = ptr as usize + layout.size();
        let _ = NEXT.compare_exchange(end, ptr as usize, Ordering::Relaxed, Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: BumpAlloc = BumpAlloc;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // A trap: the engine reports it as this rule's error.
    wasm32::unreachable()
}
