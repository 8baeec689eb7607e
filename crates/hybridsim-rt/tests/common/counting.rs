//! A counting global allocator: allocations made while a thread has marked itself as inside
//! the real-time loop ([`mark`]) are counted in [`LOOP_ALLOCATIONS`]. Each test binary that
//! declares `mod common;` installs it.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

/// Allocations (and reallocations) made inside marked loops, all threads.
pub static LOOP_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Deallocations made inside marked loops, all threads (a real-time step frees nothing
/// either: refactorization hands the old operators back to be freed off the loop).
#[allow(dead_code)]
pub static LOOP_FREES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static IN_LOOP: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if IN_LOOP.try_with(|c| c.get()).unwrap_or(false) {
            LOOP_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if IN_LOOP.try_with(|c| c.get()).unwrap_or(false) {
            LOOP_FREES.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if IN_LOOP.try_with(|c| c.get()).unwrap_or(false) {
            LOOP_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Mark (or unmark) the calling thread as inside the loop whose allocations are counted.
pub fn mark(on: bool) {
    IN_LOOP.with(|c| c.set(on));
}
