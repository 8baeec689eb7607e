//! Refactorization on request during online model updating (issue 14, `[updating] refactorize
//! = "on_update"`; Abbiati et al. 2020, §2.2): after new values reach a receiver and the
//! operators built for them are swapped in, the integrator steps as one built with those values
//! from the start (D^N, and for PG-α ℚ^N and H, really changed); without it the documented
//! behaviour (matrices kept) is unchanged; the swap allocates nothing; a panic in the build
//! turns refactorization off, not the run.

mod common;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

use common::counting::count;
use hybridsim::integrators::TimeIntegrator;
use hybridsim::model::{Model, NoFiles};
use hybridsim::Simulation;

/// A three-storey shear chain under a sine force: storey 1 tested (a physical partition
/// without a laboratory, with its estimate) or, with `mg-alpha`, all numerical; the receiver
/// `k3` (a spring, or a Bouc–Wen column with `bouc_wen`) lies in the numerical part. No
/// Rayleigh damping (its `K_R` would follow the model file's stiffness, which a swap keeps).
fn chain(integrator: &str, k3: f64, bouc_wen: bool, updating: &str) -> Model {
    let partitioned = integrator == "pg-alpha";
    let sub = |s: &str| {
        if partitioned {
            format!("substructure = \"{s}\"\n")
        } else {
            "substructure = \"frame\"\n".to_string()
        }
    };
    let mut t =
        String::from("title = \"chain\"\n[units]\nlength = \"m\"\nforce = \"N\"\ntime = \"s\"\n");
    for i in 1..=3 {
        t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
    }
    t += "[substructure.frame]\n";
    if partitioned {
        t += "[substructure.storey]\nphysical = true\n\
              estimate = { dofs = [[1, \"x\"]], stiffness = [[40000.0]], damping = [[60.0]] }\n";
        t += "[[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = 50.0\n\
              split = { frame = 0.5, storey = 0.5 }\n";
    } else {
        t += "[[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = 50.0\n\
              substructure = \"frame\"\n";
    }
    t += &format!(
        "[[element]]\ntype = \"spring\"\nname = \"k1\"\nnodes = [1]\ndof = \"x\"\nk = 4.0e4\n{}",
        sub("storey")
    );
    t += &format!(
        "[[element]]\ntype = \"dashpot\"\nname = \"c1\"\nnodes = [1]\ndof = \"x\"\nc = 60.0\n{}",
        sub("storey")
    );
    t += "[[element]]\ntype = \"spring\"\nname = \"k2\"\nnodes = [1, 2]\ndof = \"x\"\n\
          k = 3.0e4\nsubstructure = \"frame\"\n";
    if bouc_wen {
        t += &format!(
            "[[element]]\ntype = \"bouc_wen\"\nname = \"k3\"\nnodes = [2, 3]\ndof = \"x\"\n\
             A = {k3:e}\nbeta = 30.0\ngamma = 20.0\nn = 1.0\nsubstructure = \"frame\"\n"
        );
    } else {
        t += &format!(
            "[[element]]\ntype = \"spring\"\nname = \"k3\"\nnodes = [2, 3]\ndof = \"x\"\n\
             k = {k3:e}\nsubstructure = \"frame\"\n"
        );
    }
    for i in 2..=3 {
        t += &format!(
            "[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 40.0\n\
             substructure = \"frame\"\n"
        );
    }
    t += "[[load]]\nnode = 3\ndof = \"x\"\nsine = { amplitude = 500.0, frequency = 2.0 }\n";
    // Δt = 2⁻⁹ s: the times of a run and of a fresh build started at its state are exact.
    t += &format!(
        "[analysis]\nintegrator = \"{integrator}\"\ntime_step = 0.001953125\nduration = 2.0\n{}",
        if partitioned { "subcycles = 2\n" } else { "" }
    );
    t += updating;
    Model::from_toml(&t, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// Partition and slot of element `name` in the numerical partition.
fn slot_of(integ: &dyn TimeIntegrator, name: &str) -> (usize, usize) {
    for (k, p) in integ.partitions().iter().enumerate() {
        if p.physical.is_none() && !p.state.physical {
            if let Some(s) = p.state.slots.iter().position(|s| s.name() == name) {
                return (k, s);
            }
        }
    }
    panic!("no numerical element `{name}`")
}

fn largest_difference(a: &[f64], b: &[f64]) -> (f64, f64) {
    let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    (diff, scale)
}

/// Run `integrator` with k3 = `k0` for `n` steps, change it to `k1` (with or without the swap
/// of the operators built for it), then step `m` more; and a fresh integrator built with
/// `k1`, started from the first one's state after the `n` steps. Returns the worst difference
/// of the states relative to their size over the `m` steps, and whether `H` (PG-α) or the
/// response changed.
fn after_change(
    integrator: &str,
    bouc_wen: bool,
    parameter: &str,
    (k0, k1): (f64, f64),
    refactorize: bool,
) -> f64 {
    let (n, m) = (200, 300);
    let mut a = Simulation::new(chain(integrator, k0, bouc_wen, "")).expect("builds");
    let (k, s) = slot_of(a.integrator.as_ref(), "k3");
    // As `OnlineUpdating` does at start-up: the receiver's own copy, then the refactorizer.
    a.integrator
        .set_element_parameter(k, s, parameter, k0)
        .expect("own copy");
    let mut refactorizer = a
        .integrator
        .refactorizer(k, &[s], &[parameter_static(parameter)])
        .expect("refactorizer");
    for _ in 0..n {
        a.step().expect("steps");
    }
    a.integrator
        .set_element_parameter(k, s, parameter, k1)
        .expect("new value");
    let h_before = a.integrator.interface().map(|i| i.h.clone());
    if refactorize {
        let mut ops = refactorizer
            .build(n, &[k1])
            .expect("builds")
            .expect("the tangent changed");
        let swaps = count(|| a.integrator.swap_operators(&mut ops).expect("swaps"));
        assert_eq!(swaps, 0, "the swap allocated or freed");
        assert_eq!(ops.step(), n);
    }
    let mut b = Simulation::new(chain(integrator, k1, bouc_wen, "")).expect("builds");
    b.integrator
        .set_element_parameter(k, s, parameter, k1)
        .expect("own copy");
    if let (Some(before), Some(iface)) = (&h_before, a.integrator.interface()) {
        let fresh = &b.integrator.interface().expect("pg-alpha").h;
        if refactorize {
            assert_eq!(&iface.h, fresh, "H after the swap is the fresh build's");
            assert_ne!(before, fresh, "H of the new stiffness differs");
        } else {
            assert_eq!(&iface.h, before, "H kept without refactorization");
        }
    }
    let mut x = vec![0.0; a.integrator.state_len()];
    a.integrator.export_state(&mut x);
    b.integrator.import_state(&x);
    b.integrator.set_time(a.integrator.time());
    let mut y = vec![0.0; x.len()];
    let mut worst: f64 = 0.0;
    for _ in 0..m {
        a.step().expect("steps");
        b.step().expect("steps");
        a.integrator.export_state(&mut x);
        b.integrator.export_state(&mut y);
        let (d, scale) = largest_difference(&x, &y);
        worst = worst.max(d / scale);
    }
    worst
}

fn parameter_static(p: &str) -> &'static str {
    match p {
        "k" => "k",
        "A" => "A",
        "gamma" => "gamma",
        other => panic!("{other}"),
    }
}

#[test]
fn after_a_refactorization_the_partition_steps_as_a_fresh_build_with_the_new_value() {
    let cases = [
        ("pg-alpha", false, "k", (5.0e4, 3.2e4)),
        ("mg-alpha", false, "k", (5.0e4, 3.2e4)),
        ("pg-alpha", true, "A", (5.0e4, 3.2e4)),
        ("mg-alpha", true, "A", (5.0e4, 3.2e4)),
    ];
    let mut found = Vec::new();
    for (integrator, bouc_wen, parameter, values) in cases {
        let with = after_change(integrator, bouc_wen, parameter, values, true);
        let without = after_change(integrator, bouc_wen, parameter, values, false);
        println!(
            "{integrator}, {}: refactorized {with:e}, kept {without:e}",
            if bouc_wen { "Bouc-Wen A" } else { "spring k" }
        );
        found.push((integrator, parameter, with, without));
    }
    for (integrator, parameter, with, without) in found {
        assert!(
            with <= 1e-12,
            "{integrator} {parameter}: refactorized run differs from the fresh build by {with:e}"
        );
        // MG-α solves the Bouc–Wen chain to convergence (modified Newton with D): an old D
        // only slows the iteration, the converged steps differ within its tolerance. In every
        // other case the old D (and PG-α's ℚ, H) give a different response.
        let bound = if (integrator, parameter) == ("mg-alpha", "A") {
            f64::MIN_POSITIVE
        } else {
            1e-6
        };
        assert!(
            without >= bound,
            "{integrator} {parameter}: without refactorization the run should differ from the \
             fresh build (it uses the old D), found {without:e}"
        );
    }
}

#[test]
fn a_parameter_outside_the_zero_state_tangent_needs_no_refactorization() {
    // Bouc–Wen with n = 1: γ does not enter the tangent at the zero state.
    let sim = Simulation::new(chain("pg-alpha", 5.0e4, true, "")).expect("builds");
    let (k, s) = slot_of(sim.integrator.as_ref(), "k3");
    let mut r = sim
        .integrator
        .refactorizer(k, &[s], &["gamma"])
        .expect("refactorizer");
    assert!(r.build(1, &[35.0]).expect("builds").is_none());
    let mut r = sim
        .integrator
        .refactorizer(k, &[s], &["A"])
        .expect("refactorizer");
    assert!(r.build(1, &[4.0e4]).expect("builds").is_some());
    assert!(
        r.build(2, &[4.0e4]).expect("builds").is_none(),
        "the same value twice"
    );
    // A value the element refuses is an error, not a panic.
    assert!(r.build(3, &[-1.0]).is_err());
}

// ---- Through `[updating]` (MG-α, two independent oscillators, as in updating_online.rs) ----

fn columns(k_b: f64, updating: &str) -> Model {
    let t = common::two_columns_text("mg-alpha", "0.0078125", "4.0", k_b, updating);
    Model::from_toml(&t, "columns.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn updating(refactorize: Option<&str>) -> String {
    let mut u = common::TWO_COLUMNS_UPDATING.to_string();
    if let Some(r) = refactorize {
        u += &format!("refactorize = \"{r}\"\n");
    }
    u
}

/// The receiver's current stiffness.
fn receiver_k(sim: &Simulation) -> f64 {
    let (k, s) = slot_of(sim.integrator.as_ref(), "col_b");
    sim.integrator.partitions()[k].state.slots[s]
        .element
        .parameters()
        .iter()
        .find(|p| p.0 == "k")
        .expect("k")
        .1
}

/// Step `sim` to step `n`; then, for `steps` steps, compare each step with one step of a fresh
/// build (no `[updating]`) with the receiver's current stiffness, started from `sim`'s state.
fn one_step_against_fresh_builds(sim: &mut Simulation, n: u64, steps: u64) -> f64 {
    while sim.integrator.steps_taken() < n {
        sim.step().expect("steps");
    }
    let mut worst: f64 = 0.0;
    let mut x = vec![0.0; sim.integrator.state_len()];
    let mut y = vec![0.0; x.len()];
    for _ in 0..steps {
        let k_now = receiver_k(sim);
        let mut fresh = Simulation::new(columns(k_now, "")).expect("builds");
        let (k, s) = slot_of(fresh.integrator.as_ref(), "col_b");
        fresh
            .integrator
            .set_element_parameter(k, s, "k", k_now)
            .expect("own copy");
        sim.integrator.export_state(&mut x);
        fresh.integrator.import_state(&x);
        fresh.integrator.set_time(sim.integrator.time());
        sim.step().expect("steps");
        fresh.step().expect("steps");
        sim.integrator.export_state(&mut x);
        fresh.integrator.export_state(&mut y);
        let (d, scale) = largest_difference(&x, &y);
        worst = worst.max(d / scale);
    }
    worst
}

#[test]
fn updating_with_refactorization_steps_as_fresh_builds_and_without_it_keeps_its_bits() {
    // (b) `never` and no key give the same bits (the documented behaviour unchanged).
    let run = |refactorize: Option<&str>| -> (Vec<f64>, Simulation) {
        let mut sim = Simulation::new(columns(1.4e4, &updating(refactorize))).expect("builds");
        let mut x = vec![0.0; sim.integrator.state_len()];
        let mut all = Vec::new();
        for _ in 0..sim.n_steps() {
            sim.step().expect("steps");
            sim.integrator.export_state(&mut x);
            all.extend_from_slice(&x);
        }
        (all, sim)
    };
    let (plain, _) = run(None);
    let (never, never_sim) = run(Some("never"));
    assert!(plain == never, "refactorize = \"never\" changed the bits");
    assert!(never_sim
        .updating()
        .expect("updating")
        .refactorization()
        .is_none());
    let (on, on_sim) = run(Some("on_update"));
    let u = on_sim.updating().expect("updating");
    let r = u.refactorization().expect("on_update").clone();
    let summary = u.summary();
    println!("{r:?}; applied {}", summary.applied);
    // Every applied estimate was built for at the same step: swapped, or (the same value as
    // before) nothing to swap.
    assert_eq!(r.swaps + r.unchanged, summary.applied);
    assert_eq!(r.builds, summary.applied);
    assert!(r.swaps > summary.applied / 2);
    assert_eq!((r.misses, r.late), (0, 0));
    assert!(r.off.is_none());
    assert!(summary.applied > 300);
    let (d, scale) = largest_difference(&on, &never);
    assert!(d > 1e-6 * scale, "refactorization changed nothing");

    // (a) Each step after an applied estimate equals a fresh build with the receiver's
    // stiffness at that time (to round-off); without refactorization it does not.
    let mut on = Simulation::new(columns(1.4e4, &updating(Some("on_update")))).expect("builds");
    let with = one_step_against_fresh_builds(&mut on, 100, 20);
    let mut never = Simulation::new(columns(1.4e4, &updating(Some("never")))).expect("builds");
    let without = one_step_against_fresh_builds(&mut never, 100, 20);
    println!("one step against fresh builds: refactorized {with:e}, kept {without:e}");
    assert!(with <= 1e-13, "{with:e}");
    assert!(without >= 1e-8, "{without:e}");
}

#[test]
fn a_panic_in_the_build_turns_refactorization_off_not_the_run() {
    let mut sim = Simulation::new(columns(1.4e4, &updating(Some("on_update")))).expect("builds");
    sim.updating_mut()
        .expect("updating")
        .refactorizer_mut()
        .expect("inline refactorizer")
        .inject_panic_at(150);
    for _ in 0..sim.n_steps() {
        sim.step().expect("the run goes on");
    }
    let u = sim.updating().expect("updating");
    let r = u.refactorization().expect("on_update");
    let summary = u.summary();
    let (why, t) = r.off.clone().expect("turned off");
    assert!(why.contains("injected panic"), "{why}");
    // The estimate of update 150 is applied after step 151.
    assert!((t - 151.0 * 0.0078125).abs() < 1e-9, "{t}");
    assert_eq!(
        r.builds, 150,
        "updates 1..=150 built (the last one failed), none after"
    );
    assert_eq!(r.swaps + r.unchanged, 149);
    assert_eq!(summary.state.name(), "active", "updating itself goes on");
    assert_eq!(summary.applied, sim.n_steps() - 1);
}

#[test]
fn refactorize_is_read_and_bad_values_name_the_field() {
    let m = columns(1.4e4, &updating(Some("on_update")));
    assert_eq!(
        m.updating.as_ref().expect("updating").refactorize,
        hybridsim::model::updating::Refactorize::OnUpdate
    );
    let m = columns(1.4e4, &updating(None));
    assert_eq!(
        m.updating.as_ref().expect("updating").refactorize,
        hybridsim::model::updating::Refactorize::Never
    );
    for bad in ["\"always\"", "true", "1"] {
        let t = updating(None) + &format!("refactorize = {bad}\n");
        let text = format!(
            "title = \"x\"\n[[node]]\nid = 1\ndofs = [\"x\"]\n[[node]]\nid = 2\ndofs = [\"x\"]\n\
             [[element]]\ntype = \"spring\"\nname = \"col_a\"\nnodes = [1]\ndof = \"x\"\nk = 1e4\n\
             [[element]]\ntype = \"spring\"\nname = \"col_b\"\nnodes = [2]\ndof = \"x\"\nk = 1e4\n\
             [[element]]\ntype = \"mass\"\nname = \"m\"\nnode = 1\nmass = 1.0\n\
             [[element]]\ntype = \"mass\"\nname = \"m2\"\nnode = 2\nmass = 1.0\n\
             [analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.01\nduration = 1.0\n{t}"
        );
        let e = Model::from_toml(&text, "bad.toml", &NoFiles)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("updating.refactorize") && e.contains("on_update") && e.contains("bad.toml"),
            "{e}"
        );
    }
}
