//! A global allocator that counts allocations, for "nothing is allocated per request" tests.
//!
//! A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;
//! ```
//!
//! and reads [`allocations`] before and after the work it watches. The count is process-wide
//! (every thread), so such tests run one at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCS: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting `alloc` and `realloc` calls (frees are not counted).
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

/// Allocations (`alloc` + `realloc`) made so far through [`CountingAlloc`] in this process.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::SeqCst)
}

// SAFETY: delegates every call to the system allocator with the caller's arguments; only counts.
#[allow(unsafe_code)] // a counting global allocator cannot be written without `unsafe impl`
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
