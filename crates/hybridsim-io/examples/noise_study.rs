//! Profiling driver of the issue-19 benchmark without Python: the quick start run `N` times in
//! memory, one load-cell noise seed (`lab.seed`) each, on one thread (so a profiler sees only
//! the run loop). Prints the wall time per realization and per coarse step, and a checksum of
//! the results (the sum of every recorded number) so that a change to the lab path can be
//! checked to leave the numbers bit for bit the same.
//!
//!     cargo run --release -p hybridsim-io --example noise_study -- [N] [MODEL] [--batch [--serial-variants]]
//!
//! With `--batch` the realizations run as the Python `hybridsim.batch` runs them (variants
//! built and run on every core), timed from the overrides to the last result.
//! `--parsed-variants` builds every variant by parsing and validating its text, as
//! `sweep::variant` did before its typed path for `lab.seed` (for before/after comparisons).

use hybridsim_io::memory::{run_in_memory, MemoryOptions};
use hybridsim_io::sweep::{apply_overrides, base_folder, load_text, Override};
use hybridsim_io::LoadedModel;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// `sweep::variant`, or with `--parsed-variants` the variant parsed from its text.
fn variant(base: &LoadedModel, o: &[Override]) -> Result<LoadedModel, hybridsim::ModelError> {
    if !std::env::args().any(|a| a == "--parsed-variants") {
        return hybridsim_io::sweep::variant(base, o);
    }
    let source = base.path.display().to_string();
    let text = apply_overrides(&base.text, &source, o)?;
    load_text(&text, &source, &base_folder(base), base.path.clone())
}

fn main() {
    let batch = std::env::args().any(|a| a == "--batch");
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let n: u64 = args
        .next()
        .map_or(50, |a| a.parse().expect("N: an integer"));
    let path = args.next().map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart.toml"),
        PathBuf::from,
    );
    let base = hybridsim_io::load_model(&path).unwrap_or_else(|e| panic!("{e}"));
    if batch {
        let list: Vec<Vec<Override>> = (1..=n)
            .map(|s| {
                vec![Override {
                    key: "lab.seed".into(),
                    value: toml::Value::Integer(s as i64),
                }]
            })
            .collect();
        let t0 = Instant::now();
        // `--serial-variants`: build the variants on the calling thread first, as the batch
        // API did before `variants_parallel` (for before/after comparisons).
        let loaded: Vec<LoadedModel> = if std::env::args().any(|a| a == "--serial-variants") {
            list.iter()
                .map(|o| variant(&base, o).unwrap_or_else(|e| panic!("{e}")))
                .collect()
        } else {
            hybridsim_io::sweep::parallel_map(list.len(), None, |i| {
                variant(&base, &list[i]).unwrap_or_else(|e| panic!("{e}"))
            })
            .unwrap()
        };
        let t_build = t0.elapsed().as_secs_f64();
        let abort = AtomicBool::new(false);
        let opts = MemoryOptions::default();
        let runs = hybridsim_io::sweep::parallel_map(loaded.len(), None, |i| {
            run_in_memory(&loaded[i].model, &abort, &opts).unwrap_or_else(|e| panic!("{e}"))
        })
        .unwrap();
        let dt = t0.elapsed().as_secs_f64();
        let bits = runs
            .iter()
            .flat_map(|r| &r.data)
            .fold(0_u64, |b, x| b.rotate_left(5) ^ x.to_bits());
        println!("batch: {n} realizations in {dt:.3} s (variants built in {t_build:.3} s); bits {bits:016x}");
        return;
    }
    let models: Vec<_> = (1..=n)
        .map(|s| {
            let o = Override {
                key: "lab.seed".into(),
                value: toml::Value::Integer(s as i64),
            };
            variant(&base, &[o]).unwrap_or_else(|e| panic!("{e}")).model
        })
        .collect();
    let abort = AtomicBool::new(false);
    let opts = MemoryOptions::default();
    let t0 = Instant::now();
    let mut checksum = 0.0_f64;
    let mut bits = 0_u64;
    let mut steps = 0;
    for m in &models {
        let r = run_in_memory(m, &abort, &opts).unwrap_or_else(|e| panic!("{e}"));
        steps += r.steps;
        for x in &r.data {
            checksum += x;
            bits = bits.rotate_left(5) ^ x.to_bits();
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{n} realizations in {dt:.3} s: {:.2} ms each, {:.3} µs per coarse step; checksum {checksum:e}, bits {bits:016x}",
        dt / n as f64 * 1e3,
        dt / steps as f64 * 1e6
    );
}
