//! Mean per-step cost of every scheme on the benchmark models (criterion; `cargo bench -p
//! hybridsim --bench step`, add `-- --quick` for a short run). Percentiles are in the
//! `latency` benchmark.
mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;

fn steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for case in common::cases() {
        let mut sim = hybridsim::Simulation::new(case.model).unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..100 {
            sim.step().unwrap();
        }
        group.bench_function(case.name.as_str(), |b| {
            b.iter(|| {
                sim.step().unwrap();
                black_box(sim.integrator.state(0)[0]);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
