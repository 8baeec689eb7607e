//! Runs kept in memory: the same integrator, run loop and trip policy as
//! [`crate::run_to_folder`] ([`hybridsim::runner::run`] on the calling thread), with the rows
//! collected into one row-major buffer instead of `results.csv`. The rows are the numbers the
//! folder run writes, bit for bit (its CSV spells each number so that it reads back exactly).
//! Used by the Python package and by batch studies ([`crate::sweep`]).

use crate::LoadedModel;
use hybridsim::output::{Column, Recorder};
use hybridsim::physical::transfer::TransferConnector;
use hybridsim::physical::SafetySummary;
use hybridsim::runner::{EndState, RunSink};
use hybridsim::{Model, ModelError};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The controller-rate records of one laboratory (the columns of `lab.csv`).
#[derive(Debug, Clone)]
pub struct LabTable {
    /// The physical substructure.
    pub substructure: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Row-major values, `columns.len()` per record.
    pub data: Vec<f64>,
}

/// A finished run held in memory.
#[derive(Debug, Clone)]
pub struct MemoryRun {
    /// Recorded columns (the `results.csv` header is `name[unit]` of each).
    pub columns: Vec<Column>,
    /// Row-major values, `columns.len()` per row: the rows of `results.csv`.
    pub data: Vec<f64>,
    /// Laboratory records (empty unless asked for, see [`MemoryOptions::lab_records`]).
    pub lab: Vec<LabTable>,
    /// How the run ended.
    pub state: EndState,
    /// Completed coarse steps.
    pub steps: u64,
    /// Time inside integrator steps.
    pub step_time: Duration,
    /// Wall time of the whole run (building included).
    pub wall_time: Duration,
    /// Safety state of every laboratory at the end: (substructure, summary).
    pub safety: Vec<(String, SafetySummary)>,
}

impl MemoryRun {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.data.len() / self.columns.len().max(1)
    }

    /// The values of column `name` (without its unit), if recorded.
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let n = self.columns.len();
        let j = self.columns.iter().position(|c| c.name == name)?;
        Some(self.data.iter().skip(j).step_by(n).copied().collect())
    }
}

/// Options of [`run_in_memory`].
#[derive(Clone, Default)]
pub struct MemoryOptions {
    /// Keep the controller-rate records of the laboratories (one row per controller tick:
    /// large for long runs, so off by default).
    pub lab_records: bool,
    /// Builds the transfer systems of laboratories that a front end connects (network links,
    /// a Python object); without one such a laboratory refuses to start.
    pub connector: Option<std::sync::Arc<dyn TransferConnector>>,
}

struct MemorySink {
    data: Vec<f64>,
    lab: Vec<(usize, Vec<f64>)>,
    keep_lab: bool,
}

impl RunSink for MemorySink {
    fn row(&mut self, row: &[f64]) -> bool {
        self.data.extend_from_slice(row);
        true
    }
    fn lab_record(&mut self, partition: usize, record: &[f64]) -> bool {
        if self.keep_lab {
            if let Some((_, buf)) = self.lab.iter_mut().find(|(k, _)| *k == partition) {
                buf.extend_from_slice(record);
            }
        }
        true
    }
}

/// Run `model` to its end (or first fault) in memory. `abort` stops it between steps (with a
/// laboratory: through the safety layer, as an operator abort).
pub fn run_in_memory(
    model: &Model,
    abort: &AtomicBool,
    opts: &MemoryOptions,
) -> Result<MemoryRun, ModelError> {
    let t0 = Instant::now();
    let mut integ = hybridsim::integrators::build_with(model, opts.connector.as_deref())?;
    if !opts.lab_records {
        // Nobody reads them: the per-tick lab records are not even gathered.
        integ.for_each_lab(&mut |_, lab| lab.set_records_kept(false));
    }
    let mut recorder = Recorder::new(model, integ.as_ref());
    let columns = recorder.columns(integ.as_ref());
    let ncol = columns.len();
    let every = model.output.every.max(1);
    let n_steps = model.analysis.n_steps();
    let labs: Vec<(usize, String, Vec<String>)> = integ
        .partitions()
        .iter()
        .enumerate()
        .filter_map(|(k, p)| {
            let cols = p.lab()?.lab_columns();
            (!cols.is_empty()).then(|| (k, p.state.name.clone(), cols))
        })
        .collect();
    let mut sink = MemorySink {
        data: Vec::with_capacity((n_steps / every + 2) as usize * ncol),
        lab: labs.iter().map(|(k, _, _)| (*k, Vec::new())).collect(),
        keep_lab: opts.lab_records,
    };
    let settings = hybridsim::runner::RunSettings {
        n_steps,
        every: model.output.every,
        divergence: model.lab.as_ref().map(|l| l.safety.divergence),
        max_overruns: None,
    };
    let mut row = vec![0.0; ncol];
    // Online model updating ([updating]): the estimates reach the receivers as in a folder run.
    let mut updating =
        hybridsim::online_updating::OnlineUpdating::new(model, integ.as_mut(), n_steps)?;
    let mut sequential = hybridsim::runner::Sequential(integ.as_mut());
    let mut with_updating;
    let exec: &mut dyn hybridsim::runner::StepExecutor = match updating.as_mut() {
        Some(updating) => {
            with_updating = hybridsim::online_updating::WithUpdating {
                inner: &mut sequential,
                updating,
            };
            &mut with_updating
        }
        None => &mut sequential,
    };
    let end = hybridsim::runner::run(exec, &mut recorder, &mut sink, &settings, abort, &mut row);
    let safety = integ
        .partitions()
        .iter()
        .filter_map(|p| Some((p.state.name.clone(), p.lab()?.safety_summary())))
        .collect();
    let lab = if opts.lab_records {
        labs.into_iter()
            .zip(sink.lab)
            .map(|((_, name, cols), (_, data))| LabTable {
                substructure: name,
                columns: cols,
                data,
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(MemoryRun {
        columns,
        data: sink.data,
        lab,
        state: end.state,
        steps: end.steps,
        step_time: end.step_time,
        wall_time: t0.elapsed(),
        safety,
    })
}

/// [`run_in_memory`] of a loaded model.
pub fn run_loaded_in_memory(
    loaded: &LoadedModel,
    abort: &AtomicBool,
    opts: &MemoryOptions,
) -> Result<MemoryRun, ModelError> {
    run_in_memory(&loaded.model, abort, opts)
}
