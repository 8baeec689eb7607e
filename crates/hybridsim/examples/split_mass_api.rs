//! The Rust API in one file: read a model, build its integrator, run it through the one run
//! loop of every runner with a sink that keeps the rows in memory, and print the interface
//! force.
//!
//! ```sh
//! cargo run -p hybridsim --example split_mass_api [-- MODEL.toml]
//! ```

use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::runner::{self, RunSettings, RunSink, Sequential};
use hybridsim::Model;
use std::sync::atomic::AtomicBool;

/// Keeps every results row (a run on disk uses the bounded queues of `hybridsim-io`).
#[derive(Default)]
struct Rows(Vec<Vec<f64>>);

impl RunSink for Rows {
    fn row(&mut self, row: &[f64]) -> bool {
        self.0.push(row.to_vec());
        true
    }
    fn lab_record(&mut self, _partition: usize, _record: &[f64]) -> bool {
        true
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/split_mass_v1.toml"
        )
        .to_string()
    });
    let text = std::fs::read_to_string(&path)?;
    let model = Model::from_toml(&text, &path, &NoFiles)?;
    let mut integrator = hybridsim::integrators::build(&model)?;
    let mut recorder = Recorder::new(&model, integrator.as_ref());
    let columns: Vec<String> = recorder
        .columns(integrator.as_ref())
        .iter()
        .map(|c| c.header())
        .collect();
    let mut row = vec![0.0; columns.len()];
    let mut rows = Rows::default();
    let settings = RunSettings {
        n_steps: model.analysis.n_steps(),
        every: model.output.every,
        divergence: None,
        max_overruns: None,
    };
    let end = runner::run(
        &mut Sequential(integrator.as_mut()),
        &mut recorder,
        &mut rows,
        &settings,
        &AtomicBool::new(false),
        &mut row,
    );
    println!(
        "{}: {} after {} steps ({} rows)",
        model.source,
        end.state.status(),
        end.steps,
        rows.0.len()
    );
    let time = columns
        .iter()
        .position(|c| c.starts_with("time"))
        .unwrap_or(0);
    if let Some(lambda) = columns.iter().position(|c| c.starts_with("lambda.")) {
        println!("{:>10}  {}", columns[time], columns[lambda]);
        let stride = (rows.0.len() / 10).max(1);
        for r in rows.0.iter().step_by(stride) {
            println!("{:>10.4}  {:>12.4}", r[time], r[lambda]);
        }
    }
    Ok(())
}
