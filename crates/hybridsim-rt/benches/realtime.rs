//! Benchmark (not a test): the threaded runner paced in real time at 1024 Hz for at least 60 s
//! of wall clock on Abbiati et al. (2020)'s time scale (`examples/abbiati2020_lab_1024hz.toml`,
//! ss = λ = 8). Prints deadline misses, compute time per tick and wake-up lateness p50/p99/p99.9
//! per task. Run: `cargo bench -p hybridsim-rt --bench realtime` (optionally `-- SECONDS`).
use hybridsim::model::lab::Pacing;
use hybridsim_rt::{run, RunOptions};
use std::path::Path;

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(64.0);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join("examples/abbiati2020_lab_1024hz.toml");
    let loaded = hybridsim_io::load_model(&path).unwrap_or_else(|e| panic!("{e}"));
    let model = loaded.model;
    let ts = model.lab.as_ref().unwrap().lab.time_scale;
    let steps = (seconds / ts.dt_s).ceil() as u64;
    let steps = steps.min(model.analysis.n_steps());
    println!(
        "realtime benchmark: {} Hz controller, ss = λ = {}, {steps} coarse steps = {:.1} s wall ({} ticks)",
        ts.controller_rate(),
        ts.ss,
        steps as f64 * ts.dt_s,
        steps * ts.ss as u64
    );
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Realtime),
            max_steps: Some(steps),
            // Measured on whatever scheduling the machine grants (run.json: soft_realtime).
            allow_soft_realtime: true,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "status: {:?}, {} steps in {:.2} s wall, memory locked: {}",
        out.status, out.steps, out.wall, out.memory_locked
    );
    print!("{}", out.summary());
    println!(
        "{}",
        serde_json::to_string_pretty(&out.run_json["tasks"]).unwrap()
    );
}
