//! The two-core MG-α step (`analysis.threads = 2`, issue 20) allocates nothing on *any*
//! thread: the stepping thread and the worker (`hybridsim-solve`) that takes up part B of the
//! effective matrix, the predictor's, gather's and corrector's halves.
//!
//! The counting allocator of the other tests counts the calling thread only, so it cannot see
//! the worker. This binary holds this one test, so that while it counts, the only threads that
//! run are its own and the worker: every allocation of the process counts.
mod common;
use common::*;

use hybridsim::Simulation;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The system allocator, counting every thread's allocations while [`COUNTING`] is set.
struct EveryThread;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for EveryThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: EveryThread = EveryThread;

/// 990-DOF moment frame (30 storeys × 10 bays) shaken at its base, stepped on two cores: 500
/// steps count no allocation of any thread (the worker's loop included).
#[test]
fn the_two_core_step_allocates_on_no_thread() {
    let text = frame(30, 10).replace("duration = 0.01\n", "duration = 0.6\nthreads = 2\n")
        + "[[ground_motion]]\ndirection = \"x\"\nsynthetic = { seed = 11, duration = 5.0, pga = 3.0 }\n";
    let mut sim = Simulation::new(model(&text)).unwrap();
    assert!(sim.integrator.solve_parts().is_some(), "not in two parts");
    let mut row = vec![0.0; sim.columns().len()];
    // The first steps start the worker and touch every workspace.
    for _ in 0..5 {
        sim.step().unwrap();
    }
    sim.record(&mut row);
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..500 {
        sim.step().unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    sim.record(&mut row);
    assert!(
        row.iter().skip(1).any(|&x| x != 0.0),
        "the frame did not move"
    );
    assert_eq!(allocations, 0, "the two-core step allocates on some thread");
}
