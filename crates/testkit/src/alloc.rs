//! A global allocator that counts allocations, for "nothing is allocated per request" tests.
//!
//! A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;
//! ```
//!
//! and reads [`allocations`] before and after the work it watches. That count is process-wide
//! (every thread), so such tests run one at a time; [`thread_allocations`] counts only the
//! calling thread's, for work that runs on the test's own thread (the test harness's main
//! thread may allocate at any moment while a test runs). [`live_bytes`] is the heap in use
//! (bytes asked for and not yet freed), for "what does X hold, and is it given back" tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

fn live(delta: i64) {
    LIVE.fetch_add(delta, Ordering::Relaxed);
}

/// Bytes allocated through [`CountingAlloc`] and not freed yet (the sizes asked for, so a
/// large buffer counts whole even where the kernel has not backed its pages).
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::SeqCst)
}

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates.
    static THREAD_ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn count() {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    // `try_with`: during thread teardown the slot may be gone; the global count still counts.
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
}

/// The system allocator, counting `alloc` and `realloc` calls (frees are not counted) and the
/// bytes in use.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

/// Allocations (`alloc` + `realloc`) made so far through [`CountingAlloc`] in this process.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::SeqCst)
}

/// Allocations (`alloc` + `realloc`) made so far through [`CountingAlloc`] by the calling
/// thread.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.try_with(std::cell::Cell::get).unwrap_or(0)
}

// SAFETY: delegates every call to the system allocator with the caller's arguments; only counts.
#[allow(unsafe_code)] // a counting global allocator cannot be written without `unsafe impl`
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            live(layout.size() as i64);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            live(layout.size() as i64);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        live(-(layout.size() as i64));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            live(new_size as i64 - layout.size() as i64);
        }
        p
    }
}
