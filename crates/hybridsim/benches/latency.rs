//! Per-step latency percentiles (p50/p99/max) of every scheme on the benchmark models, the
//! PG-α phase split (numerical free step, cost per physical substep, interface solve + link
//! update), and heap allocations per step counted by a counting global allocator.
//!
//! `cargo bench -p hybridsim --bench latency` (about a minute); `-- --quick` for a short run.
//! Each step is timed individually with `Instant` (the timer's own cost, measured and printed,
//! is included in the per-step figures; criterion's `step` benchmark gives overhead-free
//! means). Results are printed as a Markdown table for BENCHMARKS.md.
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
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
static GLOBAL: Counting = Counting;

/// Whether a case is selected by the command-line filters (none: every case).
fn selected(filter: &[String], name: &str) -> bool {
    filter.is_empty()
        || filter.iter().any(|f| match f.strip_prefix('=') {
            Some(exact) => name == exact,
            None => name.contains(f.as_str()),
        })
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64
}

/// Per-step times in ns (into a preallocated buffer) and the allocations they made.
fn time_steps<F: FnMut()>(n: usize, mut step: F, times: &mut Vec<u64>) -> u64 {
    times.clear();
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..n {
        let t = Instant::now();
        step();
        times.push(t.elapsed().as_nanos() as u64);
    }
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::SeqCst)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var_os("HYBRIDSIM_BENCH_QUICK").is_some();
    // `cargo bench` passes `--bench`; any other argument filters cases by name (a substring, or
    // the exact name after `=`, e.g. `=bridge PG-α ss=1`).
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n = if quick { 5_000 } else { 50_000 };
    let mut times: Vec<u64> = Vec::with_capacity(n);
    // Timer overhead: an empty timed region.
    time_steps(n, || {}, &mut times);
    times.sort_unstable();
    let timer = percentile(&times, 0.5);
    println!(
        "timer overhead (empty timed region): p50 {timer:.0} ns; steps per case: {n}{}",
        if quick { " (quick)" } else { "" }
    );
    println!();
    println!("| case | states | p50 [µs] | p99 [µs] | max [µs] | mean [µs] | allocations/step |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for case in common::cases() {
        if !selected(&filter, &case.name) {
            continue;
        }
        let states = common::states(&case.model);
        let mut sim = hybridsim::Simulation::new(case.model).unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..1000 {
            sim.step().unwrap();
        }
        let allocs = time_steps(
            n,
            || {
                sim.step().unwrap();
                black_box(sim.integrator.state(0)[0]);
            },
            &mut times,
        );
        let mean = times.iter().sum::<u64>() as f64 / n as f64;
        times.sort_unstable();
        println!(
            "| {} | {states} | {:.3} | {:.3} | {:.1} | {:.3} | {} |",
            case.name,
            percentile(&times, 0.5) / 1e3,
            percentile(&times, 0.99) / 1e3,
            *times.last().unwrap() as f64 / 1e3,
            mean / 1e3,
            allocs as f64 / n as f64
        );
    }
    // PG-α phases: free numerical step, physical substeps, interface solve + link update.
    println!();
    println!(
        "| PG-α phases (p50) | numerical free step [µs] | per physical substep [µs] | interface solve + link [µs] |"
    );
    println!("|---|---:|---:|---:|");
    for (label, model) in [
        (
            "split-mass",
            common::split_mass as fn(&str, usize) -> hybridsim::Model,
        ),
        ("bridge", common::bridge),
        ("linear 20-state", common::bridge_linear),
    ] {
        for ss in [1usize, 10, 128] {
            let name = format!("{label} ss={ss}");
            if !selected(&filter, &name) {
                continue;
            }
            let mut pg = common::pg_alpha(&model("pg-alpha", ss));
            let phys: Vec<usize> = pg.physical().collect();
            let m = (n / ss.max(1)).max(500);
            let mut free = Vec::with_capacity(m);
            let mut sub = Vec::with_capacity(m);
            let mut link = Vec::with_capacity(m);
            for k in 0..m + 200 {
                let t0 = Instant::now();
                pg.free_numerical_step().unwrap();
                let t1 = Instant::now();
                for &p in &phys {
                    for j in 1..=ss {
                        pg.free_physical_substep(p, j).unwrap();
                    }
                }
                let t2 = Instant::now();
                pg.interface_solve();
                pg.link_update().unwrap();
                let t3 = Instant::now();
                if k >= 200 {
                    free.push((t1 - t0).as_nanos() as u64);
                    sub.push((t2 - t1).as_nanos() as u64 / (ss * phys.len()) as u64);
                    link.push((t3 - t2).as_nanos() as u64);
                }
            }
            for v in [&mut free, &mut sub, &mut link] {
                v.sort_unstable();
            }
            println!(
                "| {name} | {:.3} | {:.3} | {:.3} |",
                percentile(&free, 0.5) / 1e3,
                percentile(&sub, 0.5) / 1e3,
                percentile(&link, 0.5) / 1e3
            );
        }
    }
}
