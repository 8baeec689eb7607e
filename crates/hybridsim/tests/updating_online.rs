//! Online model updating during a run (issue 14, `hybridsim::online_updating`): the estimates
//! reach the receiver exactly one coarse step after their update, an update after start-up
//! allocates nothing, a stiffness that degrades during the run is tracked, and models the run
//! cannot update are refused at start-up naming the field.

mod common;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

use common::counting::count;
use hybridsim::integrators::{self, TimeIntegrator};
use hybridsim::online_updating::{IdentifiedSource, OnlineUpdating, UpdateState};

/// The two-columns model (`common::two_columns_text`): `col_a` (k = 10 kN/m, the "tested"
/// column, identified from its own force) and `col_b` (the numerical column, which starts 40 %
/// too stiff and receives the estimate), Δt = 10 ms for 8 s, with the `[updating]` table `updating`.
fn model_text(integrator: &str, updating: &str) -> String {
    common::two_columns_text(integrator, "0.01", "8.0", 1.4e4, updating)
}

const UPDATING: &str = common::TWO_COLUMNS_UPDATING;

fn load(text: &str) -> Result<hybridsim::Model, String> {
    hybridsim::Model::from_toml(
        text,
        "columns.toml",
        &common::Folder(common::root().join("examples")),
    )
    .map_err(|e| e.to_string())
}

fn slot(integ: &dyn TimeIntegrator, name: &str) -> usize {
    integ.partitions()[0]
        .state
        .slots
        .iter()
        .position(|s| s.name() == name)
        .unwrap()
}

fn k_of(integ: &dyn TimeIntegrator, slot: usize) -> f64 {
    integ.partitions()[0].state.slots[slot].element.parameters()[0].1
}

/// The stiffness of `col_a` during the run: 10 kN/m, falling linearly by 30 % between 2 s
/// and 6 s.
fn k_true(t: f64) -> f64 {
    1.0e4 * (1.0 - 0.3 * ((t - 2.0) / 4.0).clamp(0.0, 1.0))
}

/// MG-α: the estimate of the update after step `n` is in `col_b` after step `n + 1` and not
/// before; the degrading stiffness of `col_a` is tracked within 2 % and inside the 3σ band at
/// the end; no update after start-up allocates.
#[test]
fn estimates_reach_the_receiver_one_step_later_and_track_a_degrading_stiffness() {
    let model = load(&model_text("mg-alpha", UPDATING)).unwrap();
    let mut integ = integrators::build(&model).unwrap();
    let n_steps = model.analysis.n_steps();
    let mut online = OnlineUpdating::new(&model, integ.as_mut(), n_steps)
        .unwrap()
        .expect("[updating]");
    assert!(matches!(
        online.source(),
        IdentifiedSource::Numerical { partition: 0, .. }
    ));
    let (a, b) = (slot(integ.as_ref(), "col_a"), slot(integ.as_ref(), "col_b"));
    assert_eq!(
        k_of(integ.as_ref(), b),
        1.4e4,
        "start-up keeps the receiver's value"
    );
    // Make `col_a` its own copy before counting (the first change of an element allocates).
    integ.set_element_parameter(0, a, "k", 1.0e4).unwrap();
    let mut previous: Option<f64> = None;
    let mut allocations = 0;
    let mut worst_tracking: f64 = 0.0;
    for n in 1..=n_steps {
        integ.step().unwrap();
        let t = integ.time();
        integ.set_element_parameter(0, a, "k", k_true(t)).unwrap();
        let before = k_of(integ.as_ref(), b);
        allocations += count(|| online.after_step(integ.as_mut()));
        let after = k_of(integ.as_ref(), b);
        match previous {
            // After step n the receiver holds the estimate of the update after step n − 1.
            Some(p) => assert_eq!(after, p, "step {n}"),
            None => assert_eq!(after, before, "step {n}: nothing to apply yet"),
        }
        let estimate = online.identification().unwrap().parameter(0);
        previous = Some(estimate);
        if t > 3.0 {
            worst_tracking = worst_tracking.max((estimate - k_true(t)).abs() / k_true(t));
        }
    }
    assert_eq!(allocations, 0, "an update allocated");
    assert_eq!(online.updates(), n_steps);
    let id = online.identification().unwrap();
    let (k, sd) = (id.parameter(0), id.parameter_sd(0));
    let truth = k_true(integ.time());
    println!("final k = {k:.1} ± {sd:.1} (truth {truth}), worst tracking error after 3 s {worst_tracking:.4}");
    assert!((k - truth).abs() < 0.02 * truth, "{k} vs {truth}");
    assert!((k - truth).abs() < 3.0 * sd, "{k} ± {sd} vs {truth}");
    assert!(worst_tracking < 0.05, "{worst_tracking}");
    let s = online.summary();
    assert_eq!(s.state, UpdateState::Active);
    assert_eq!(s.applied, n_steps - 1);
    assert_eq!(s.receivers, ["col_b"]);
    let csv = online.csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "time,k,sd.k,force.predicted,force.measured,state");
    assert_eq!(lines.len() as u64, n_steps + 1);
    assert!(lines[1].ends_with(",0"), "state 0: active");
}

/// `period = 4`: one update every four steps, over the kinematics of the four steps.
#[test]
fn a_period_spaces_the_updates() {
    let text = model_text("mg-alpha", &format!("{UPDATING}period = 4\n"));
    let model = load(&text).unwrap();
    let mut integ = integrators::build(&model).unwrap();
    let mut online = OnlineUpdating::new(&model, integ.as_mut(), 100)
        .unwrap()
        .unwrap();
    for _ in 0..100 {
        integ.step().unwrap();
        online.after_step(integ.as_mut());
    }
    assert_eq!(online.updates(), 25);
    let k = online.identification().unwrap().parameter(0);
    assert!((k - 1.0e4).abs() < 0.02e4, "{k}");
    assert_eq!(online.csv().lines().count(), 26);
}

/// A scheme that cannot change element parameters, or a receiver that is not an element of
/// the integrator, is refused at start-up at `updating.receivers`; no `[updating]`, no task.
#[test]
fn models_the_run_cannot_update_are_refused() {
    let model = load(&model_text("lsrt2", UPDATING)).unwrap();
    let mut integ = integrators::build(&model).unwrap();
    let e = OnlineUpdating::new(&model, integ.as_mut(), 10)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("updating.receivers"), "{e}");
    assert!(
        e.contains("`lsrt2` integrator cannot change element parameters"),
        "{e}"
    );

    let text = model_text("mg-alpha", UPDATING);
    let without = text.split("[updating]").next().unwrap();
    let model = load(without).unwrap();
    let mut integ = integrators::build(&model).unwrap();
    assert!(OnlineUpdating::new(&model, integ.as_mut(), 10)
        .unwrap()
        .is_none());
}

/// `hybridsim::Simulation` applies `[updating]` (no silent inaction): stepping the two-pier
/// example identifies the tested pier's A within 1 % (prior 40 % off), and after every step the
/// numerical pier holds the estimate of the update after the step before (one step of
/// latency, as in `hybridsim run`).
#[test]
fn simulation_applies_updating_like_a_run() {
    let text =
        std::fs::read_to_string(common::root().join("examples/updating_two_pier_bridge.toml"))
            .unwrap();
    let model = hybridsim::Model::from_toml(
        &text,
        "updating_two_pier_bridge.toml",
        &common::Folder(common::root().join("examples")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = hybridsim::Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let (k, s) = sim
        .integrator
        .partitions()
        .iter()
        .enumerate()
        .find_map(|(k, p)| Some((k, p.state.slots.iter().position(|s| s.name() == "pier_b")?)))
        .expect("pier_b");
    let a_of = |sim: &hybridsim::Simulation| {
        sim.integrator.partitions()[k].state.slots[s]
            .element
            .parameters()
            .iter()
            .find(|(n, _)| *n == "A")
            .unwrap()
            .1
    };
    assert_eq!(a_of(&sim), 7.0e7);
    let mut previous: Option<f64> = None;
    for n in 0..sim.n_steps() {
        sim.step().unwrap();
        if let Some(p) = previous {
            assert_eq!(a_of(&sim), p, "step {n}");
        }
        previous = Some(
            sim.updating()
                .expect("[updating]")
                .identification()
                .expect("the filter inline")
                .parameter(0),
        );
    }
    let u = sim.updating().unwrap();
    assert_eq!(u.updates(), sim.n_steps());
    assert_eq!(u.summary().applied, sim.n_steps() - 1);
    let a = u.identification().unwrap().parameter(0);
    assert!((a - 5.0e7).abs() < 0.01 * 5.0e7, "A = {a}");
}
