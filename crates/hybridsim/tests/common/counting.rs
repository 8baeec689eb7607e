//! A counting global allocator for the "a real-time step must not allocate" tests.
//!
//! Only allocations made by the thread under test count, and each thread keeps its own count:
//! the test harness's own threads may allocate at any time (to report a slow test, for
//! instance), and the other tests of the binary run at the same time on threads of their own
//! (a count shared by all threads let one test's allocations reach another's result). Install
//! it in a test binary with
//! `#[global_allocator] static GLOBAL: common::counting::Counting = common::counting::Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The allocator: the system one, counting while [`count`] runs on the calling thread.
pub struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Count one allocation if this thread is counting.
fn note_allocation() {
    if COUNTING.try_with(|c| c.get()).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Heap allocations (and reallocations) made by this thread while `f` runs.
pub fn count<F: FnMut()>(mut f: F) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(|n| n.get())
}
