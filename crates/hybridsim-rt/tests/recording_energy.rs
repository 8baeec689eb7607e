//! The recorder evaluates the elements' stored energy only for the rows it writes (issue 20):
//! with `every = 10`, a storey spring that counts its `potential_energy` calls is asked about a
//! tenth as often as with `every = 1` on the threaded runner (before, the copy the run loop takes
//! after every step of a lab run evaluated the energies every step). Its own test binary: the
//! count is global.
use hybridsim::config::{ElementContext, ElementRegistry};
use hybridsim::elements::{DofRef, Element, ElementLaw, ElementRef, Scalar};
use hybridsim::error::Diagnostics;
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::Model;
use hybridsim_rt::{run, RunOptions, RunStatus};
use nalgebra::DMatrix;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static ENERGY_CALLS: AtomicU64 = AtomicU64::new(0);

/// A two-node linear spring along `x` that counts the calls of its stored energy.
#[derive(Debug, Clone)]
struct CountingSpring {
    dofs: Vec<DofRef>,
    k: f64,
}

impl ElementLaw for CountingSpring {
    fn law<T: Scalar>(&self, u: &[T], _v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
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
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        Some(DMatrix::from_row_slice(
            2,
            2,
            &[self.k, -self.k, -self.k, self.k],
        ))
    }
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        ENERGY_CALLS.fetch_add(1, Ordering::Relaxed);
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

/// Six storeys, storey 1 physical on the virtual lab, storey 3 a counting spring; PG-α.
fn chain(every: u64) -> Model {
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
    t += &format!(
        "[units]\nlength = \"m\"\nforce = \"kN\"\ntime = \"s\"\n\
         [[ground_motion]]\ndirection = \"x\"\n\
         synthetic = {{ seed = 2026, duration = 2.0, pga = 0.1 }}\n\
         [analysis]\nintegrator = \"pg-alpha\"\nrho_inf = 0.9\ntime_step = 0.004\n\
         subcycles = 4\nduration = 2.0\n\
         [output]\nevery = {every}\n\
         [lab]\nregime = \"real-time\"\ntime_scale = 1.0\nseed = 2027\n\
         [[lab.actuator]]\nname = \"storey1\"\ndofs = [[1, \"x\"]]\n\
         capacity = {{ stroke = 0.3, velocity = 2.5, force = 6000.0 }}\n\
         dynamics = {{ kind = \"delay\", delay = 0.004 }}\n\
         [safety]\non_trip = \"hold\"\n\
         [safety.actuator.storey1]\ndisplacement = 0.25\nvelocity = 2.0\nforce = 5000.0\n\
         increment = 0.002\n\
         [safety.divergence]\ndisplacement = 0.2\nforce = 20000.0\n"
    );
    let mut registry = ElementRegistry::default();
    registry.register("counting_spring", build_counting);
    Model::from_toml_with(&t, "counting_chain.toml", &NoFiles, &registry)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Stored-energy evaluations of the counting spring during a fast threaded run.
fn energy_calls(every: u64) -> (u64, u64) {
    let model = chain(every);
    let before = ENERGY_CALLS.load(Ordering::SeqCst);
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    (ENERGY_CALLS.load(Ordering::SeqCst) - before, out.steps)
}

#[test]
fn the_stored_energy_is_evaluated_for_the_rows_only() {
    let (every_one, steps) = energy_calls(1);
    let (every_ten, _) = energy_calls(10);
    println!("{steps} steps: every = 1: {every_one} evaluations, every = 10: {every_ten}");
    assert!(every_one >= steps, "one a row at least");
    // A row every 10 steps (and the first and last): about a tenth, whatever the start-up
    // evaluations are (the same in both runs).
    let start = every_one - steps;
    assert!(
        every_ten <= start + steps / 10 + 2,
        "every = 10 evaluated the stored energy {every_ten} times in {steps} steps"
    );
}
