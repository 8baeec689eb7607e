//! The numerical job of coarse step n + 1 leaves the link thread of the threaded PG-α runner
//! before the results row of step n is made (docs/realtime-pipeline.md): the row's values are
//! captured, the job is sent, and the row is made from the capture once the job is back.
//! Deterministic, by ordering: a storey spring of the numerical partition counts its law's
//! evaluations (on whichever thread runs the numerical step), and a record tap (on the link
//! thread, right after the row went to the sink) reads the count. Before, the row of step n
//! was made before the numerical job of step n + 1 was sent, so the tap saw the count of step
//! n; now it sees that of step n + 1. Its own test binary: the count is global.
use hybridsim::config::{ElementContext, ElementRegistry};
use hybridsim::elements::{DofRef, Element, ElementLaw, ElementRef, Scalar};
use hybridsim::error::Diagnostics;
use hybridsim::integrators::{PgAlpha, StepSettings};
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::runner::{self, RecordTap, RunSettings, RunSink, Sequential, Tapped};
use hybridsim::Model;
use hybridsim_rt::{run_integrator, RunOptions, RunStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

static LAW_CALLS: AtomicU64 = AtomicU64::new(0);

/// A two-node linear spring along `x` that counts the evaluations of its law (no linear
/// stiffness is declared, so the numerical step evaluates the law).
#[derive(Debug, Clone)]
struct CountingSpring {
    dofs: Vec<DofRef>,
    k: f64,
}

impl ElementLaw for CountingSpring {
    fn law<T: Scalar>(&self, u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        LAW_CALLS.fetch_add(1, Ordering::SeqCst);
        let d = u[1] - u[0];
        r[0] = d * (-self.k);
        r[1] = d * self.k;
    }
}

impl Element for CountingSpring {
    fn kind(&self) -> &'static str {
        "counting_spring"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    hybridsim::impl_element_evaluation!();
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        let d = u[1] - u[0];
        Some(0.5 * self.k * d * d)
    }
}

fn build_counting(
    _ctx: &ElementContext,
    table: toml::Table,
    _diag: &mut Diagnostics,
    _field: &str,
) -> Option<ElementRef> {
    let nodes = table.get("nodes")?.as_array()?;
    let dofs = nodes
        .iter()
        .map(|n| DofRef {
            node: n.as_integer().unwrap(),
            dof: "x".into(),
        })
        .collect();
    let k = table.get("k")?.as_float()?;
    Some(Arc::new(CountingSpring { dofs, k }))
}

/// Six storeys, storey 1 physical on the virtual lab, storey 3 (numerical) a counting spring;
/// PG-α, a row every step with energies.
fn chain() -> Model {
    let mut t = String::from("title = \"counting chain\"\n");
    for i in 1..=6 {
        t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
    }
    t += "[substructure.frame]\n[substructure.first_storey]\nphysical = true\n\
          estimate = { dofs = [[1, \"x\"]], stiffness = [[40000.0]], damping = [[60.0]] }\n\
          [[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = 60.0\n\
          split = { frame = 0.5, first_storey = 0.5 }\n\
          [[element]]\ntype = \"spring\"\nname = \"column1\"\nnodes = [1]\ndof = \"x\"\n\
          k = 40000.0\nsubstructure = \"first_storey\"\n";
    for i in 2..=6 {
        let kind = if i == 3 { "counting_spring" } else { "spring" };
        let dof = if i == 3 { "" } else { "dof = \"x\"\n" };
        t += &format!(
            "[[element]]\ntype = \"{kind}\"\nname = \"column{i}\"\nnodes = [{}, {i}]\n{dof}\
             k = 40000.0\nsubstructure = \"frame\"\n\
             [[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n\
             substructure = \"frame\"\n",
            i - 1
        );
    }
    t += "[units]\nlength = \"m\"\nforce = \"kN\"\ntime = \"s\"\n\
          [[ground_motion]]\ndirection = \"x\"\n\
          synthetic = { seed = 2026, duration = 2.0, pga = 0.1 }\n\
          [analysis]\nintegrator = \"pg-alpha\"\nrho_inf = 0.9\ntime_step = 0.004\n\
          subcycles = 4\nduration = 2.0\n\
          [output]\nevery = 1\nenergy = true\n\
          [lab]\nregime = \"real-time\"\ntime_scale = 1.0\nseed = 2027\n\
          [[lab.actuator]]\nname = \"storey1\"\ndofs = [[1, \"x\"]]\n\
          capacity = { stroke = 0.3, velocity = 2.5, force = 6000.0 }\n\
          dynamics = { kind = \"delay\", delay = 0.004 }\n\
          [safety]\non_trip = \"hold\"\n\
          [safety.actuator.storey1]\ndisplacement = 0.25\nvelocity = 2.0\nforce = 5000.0\n\
          increment = 0.002\n\
          [safety.divergence]\ndisplacement = 0.2\nforce = 20000.0\n";
    let mut registry = ElementRegistry::default();
    registry.register("counting_spring", build_counting);
    Model::from_toml_with(&t, "counting_chain.toml", &NoFiles, &registry)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A row and the law count when it was made.
type Counted = (Vec<f64>, u64);

/// The law count at every row (and the rows).
#[derive(Clone, Default)]
struct Counts(Arc<Mutex<Vec<Counted>>>);

impl RecordTap for Counts {
    fn row(&mut self, row: &[f64]) {
        let calls = LAW_CALLS.load(Ordering::SeqCst);
        self.0.lock().unwrap().push((row.to_vec(), calls));
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) {}
}

struct Nothing;

impl RunSink for Nothing {
    fn row(&mut self, _: &[f64]) -> bool {
        true
    }
    fn lab_record(&mut self, _: usize, _: &[f64]) -> bool {
        true
    }
}

fn integrator(model: &Model) -> PgAlpha {
    let parts =
        hybridsim::assembly::build_partitions(model, hybridsim::assembly::Grouping::Partitioned)
            .unwrap();
    PgAlpha::new(parts, &StepSettings::from_analysis(&model.analysis)).unwrap()
}

/// Law evaluations since the first row, at every row.
fn since_first(counts: &[Counted]) -> Vec<u64> {
    counts.iter().map(|(_, c)| c - counts[0].1).collect()
}

#[test]
fn the_numerical_job_of_the_next_step_runs_before_the_row_is_made() {
    let model = chain();
    let n_steps = 100;

    // `hybridsim run`'s loop on one thread: the count at the row of step s is that of the
    // numerical steps 1..=s.
    let sequential = Counts::default();
    {
        let mut pg = integrator(&model);
        let mut recorder = Recorder::new(&model, &pg);
        let mut row = vec![0.0; recorder.n_columns()];
        let mut tap = sequential.clone();
        let end = runner::run(
            &mut Sequential(&mut pg),
            &mut recorder,
            &mut Tapped {
                sink: &mut Nothing,
                tap: &mut tap,
            },
            &RunSettings {
                n_steps,
                every: 1,
                divergence: None,
                max_overruns: None,
            },
            &AtomicBool::new(false),
            &mut row,
        );
        assert_eq!(end.steps, n_steps);
    }
    let sequential = sequential.0.lock().unwrap().clone();

    let threaded = Counts::default();
    let out = run_integrator(
        &model,
        integrator(&model),
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            max_steps: Some(n_steps),
            tap: Some(Arc::new(Mutex::new(Some(
                Box::new(threaded.clone()) as Box<dyn RecordTap>
            )))),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let threaded = threaded.0.lock().unwrap().clone();

    assert_eq!(sequential.len(), n_steps as usize + 1);
    assert_eq!(threaded.len(), sequential.len());
    let seq = since_first(&sequential);
    let thr = since_first(&threaded);
    for s in 1..seq.len() {
        assert!(
            seq[s] > seq[s - 1],
            "the numerical step {s} evaluates the law"
        );
    }
    // The row of step s (1 ≤ s < the last) is made after the numerical job of step s + 1
    // ran; the last row after the last step.
    // The row of step s (1 ≤ s < the last) is made after the numerical job of step s + 1
    // ran (its free step evaluates the law; the link update of step s + 1 follows later), the
    // last row after the last step.
    let last = seq.len() - 1;
    for s in 1..last {
        assert!(
            thr[s] > seq[s] && thr[s] <= seq[s + 1],
            "the row of step {s} was made before the numerical job of step {} ran \
             (law evaluations at the row: {}, through step {s}: {}, through step {}: {})",
            s + 1,
            thr[s],
            seq[s],
            s + 1,
            seq[s + 1]
        );
    }
    assert_eq!(thr[last], seq[last]);
    // And the rows are the same bits.
    let bits = |rows: &[Counted]| -> Vec<Vec<u64>> {
        rows.iter()
            .map(|(r, _)| r.iter().map(|x| x.to_bits()).collect())
            .collect()
    };
    assert_eq!(bits(&threaded), bits(&sequential));
    let kept: Vec<Vec<u64>> = out
        .rows
        .iter()
        .map(|r| r.iter().map(|x| x.to_bits()).collect())
        .collect();
    assert_eq!(kept, bits(&sequential));
}
