//! The MG-α step of a large linear partition on two cores (`analysis.threads = 2`, issue 20):
//! its effective matrix in two parts and a separator, part B on a worker thread
//! (`hybridsim::linalg::TwoPartFactors`), against the one-core step.
mod common;
use common::*;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;
use common::counting::count;

use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{MgAlpha, StepSettings, TimeIntegrator};
use hybridsim::Simulation;

/// A moment frame of `storeys × 10 bays` (33 DOFs a floor) shaken at its base for `steps`
/// steps of 1 ms, with `threads`.
fn shaken_frame(storeys: usize, steps: usize, threads: usize) -> hybridsim::Model {
    let mut text = frame(storeys, 10).replace(
        "duration = 0.01\n",
        &format!("duration = {}\nthreads = {threads}\n", steps as f64 * 1e-3),
    );
    text += "[[ground_motion]]\ndirection = \"x\"\nsynthetic = { seed = 11, duration = 5.0, pga = 3.0 }\n";
    model(&text)
}

/// The roof's first node's x displacement after every step.
fn roof_history(sim: &mut Simulation, storeys: usize, steps: usize) -> Vec<f64> {
    let roof = (storeys * 11 + 1) as i64;
    (0..steps)
        .map(|_| {
            sim.step().unwrap();
            displacement_copies(sim.integrator.as_ref(), roof, "x")[0]
        })
        .collect()
}

/// The 990- and 9999-DOF frames (30 and 303 storeys) stepped on two cores agree with the
/// one-core step to round-off (other bits: another order of elimination).
#[test]
fn two_cores_step_the_frame_as_one_core_does_to_round_off() {
    for (storeys, steps) in [(30usize, 1000usize), (303, 40)] {
        let mut one = Simulation::new(shaken_frame(storeys, steps, 1)).unwrap();
        let mut two = Simulation::new(shaken_frame(storeys, steps, 2)).unwrap();
        assert!(one.integrator.solve_parts().is_none());
        let (na, nb, ns) = two
            .integrator
            .solve_parts()
            .expect("the frame's effective matrix in two parts");
        assert_eq!(na + nb + ns, storeys * 33);
        assert!(
            ns <= 2 * 33 && na > storeys * 13 && nb > storeys * 13,
            "{na} {nb} {ns}"
        );
        assert!(two.summary().contains(&format!(
            "threads = 2: the effective matrix in two parts of {na}"
        )));
        // Below about 3000 unknowns, `check` says one thread is faster.
        assert_eq!(
            two.summary().contains("one thread is faster"),
            storeys * 33 < 3000
        );
        let a = roof_history(&mut one, storeys, steps);
        let b = roof_history(&mut two, storeys, steps);
        let peak = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f64, f64::max);
        println!(
            "{} DOFs: peak {peak:e}, largest difference {worst:e} ({:e} of the peak)",
            storeys * 33,
            worst / peak
        );
        assert!(peak > 0.0);
        assert!(worst <= 1e-11 * peak, "{worst:e} of {peak:e}");
    }
}

/// The two-core step's passes over the rows in halves, one on the worker (the predictor, the
/// momentum rows' gather, the corrector), give the bits of the same factor's step with every
/// pass on the stepping thread: 990 DOFs, 400 steps, the whole state after every step.
#[test]
fn the_halves_of_the_two_core_step_give_the_bits_of_its_one_thread_passes() {
    let m = shaken_frame(30, 400, 2);
    let settings = StepSettings::from_analysis(&m.analysis);
    let part = || {
        build_partitions(&m, Grouping::Monolithic)
            .unwrap()
            .remove(0)
    };
    let mut two = MgAlpha::new(part(), &settings).unwrap();
    let mut one = MgAlpha::new(part(), &settings).unwrap();
    one.solve_on_one_thread();
    assert_eq!(
        two.stepper().factorization().parts().map(|p| p.1),
        Some(true)
    );
    assert_eq!(
        one.stepper().factorization().parts().map(|p| p.1),
        Some(false)
    );
    let bits = |s: &hybridsim::integrators::AlphaState| {
        [&s.y, &s.ydot, &s.v]
            .iter()
            .flat_map(|v| v.iter().map(|x| x.to_bits()))
            .collect::<Vec<_>>()
    };
    let mut moved = false;
    for k in 0..400 {
        two.step().unwrap();
        one.step().unwrap();
        assert!(
            bits(two.alpha_state()) == bits(one.alpha_state()),
            "step {k}"
        );
        moved |= two.alpha_state().y.iter().any(|&x| x != 0.0);
    }
    assert!(moved);
}

/// The two-core step allocates nothing on the stepping thread (the worker's loop holds no
/// allocation either: it reads its part and the shared block only).
#[test]
fn the_two_core_step_does_not_allocate() {
    let mut sim = Simulation::new(shaken_frame(30, 600, 2)).unwrap();
    assert!(sim.integrator.solve_parts().is_some());
    let mut row = vec![0.0; sim.columns().len()];
    sim.step().unwrap();
    sim.record(&mut row);
    let steps = count(|| {
        for _ in 0..500 {
            sim.step().unwrap();
        }
    });
    assert_eq!(steps, 0, "the two-core step allocates");
}

/// A panic of the worker thread ends the step in an error (not a hang), and every later
/// step too.
#[test]
fn a_panic_of_the_worker_is_an_error_of_the_step() {
    let m = shaken_frame(30, 100, 2);
    let part = build_partitions(&m, Grouping::Monolithic)
        .unwrap()
        .remove(0);
    let settings = StepSettings::from_analysis(&m.analysis);
    assert_eq!(settings.threads, 2);
    let mut mg = MgAlpha::new(part, &settings).unwrap();
    for _ in 0..5 {
        mg.step().unwrap();
    }
    mg.stepper().factorization().inject_worker_panic();
    // The panic fires in the first command the worker takes up (the stepping thread solves
    // part B itself when the worker has not reached it yet).
    let mut steps = 0;
    let e = loop {
        match mg.step() {
            Ok(()) => steps += 1,
            Err(e) => break e.to_string(),
        }
        assert!(steps < 10_000, "the worker never took a command up");
    };
    assert!(e.contains("worker thread"), "{e}");
    assert!(mg.stepper().factorization().has_failed());
    assert!(mg.step().is_err());
}

/// `analysis.threads` is 1 or 2, for MG-α only; a model the two parts do not fit (a chain)
/// steps on one core.
#[test]
fn threads_is_checked_and_falls_back_to_one_core() {
    for (value, integrator, message) in [
        ("3", "mg-alpha", "must be 1 or 2"),
        ("0", "mg-alpha", "must be 1 or 2"),
        ("2", "pg-alpha", "only used by integrator = \"mg-alpha\""),
    ] {
        let text = frame(3, 2)
            .replace(
                "integrator = \"mg-alpha\"",
                &format!("integrator = \"{integrator}\""),
            )
            .replace(
                "duration = 0.01\n",
                &format!("duration = 0.01\nthreads = {value}\n"),
            );
        let e = hybridsim::Model::from_toml(&text, "t.toml", &hybridsim::model::NoFiles)
            .expect_err(value)
            .to_string();
        assert!(e.contains("analysis.threads") && e.contains(message), "{e}");
    }
    let chain = spring_chain_text("chain", &["type = \"spring\"\nk = 1000.0"; 200], "")
        + "[damping]\nalpha = 0.1\nbeta = 0.001\n[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\nthreads = 2\n";
    let sim = Simulation::new(model(&chain)).unwrap();
    assert!(sim.integrator.solve_parts().is_none());
    assert!(sim.summary().contains("threads = 2: not used"));
}

/// The bits of a whole algorithmic state.
fn state_bits(s: &hybridsim::integrators::AlphaState) -> Vec<u64> {
    [&s.y, &s.ydot, &s.v]
        .iter()
        .flat_map(|v| v.iter().map(|x| x.to_bits()))
        .collect()
}

/// MG-α steps a linear frame in place, in its one state (issue 20: `3 · 2N` values fewer),
/// with the bits of the step into a second state, on one core and on two (the predictor in
/// halves, one on the worker), before and after a parameter change (whose step no longer
/// folds the coupling product: the in-place step of the unfolded path).
#[test]
fn the_in_place_step_gives_the_bits_of_the_step_into_a_second_state() {
    for threads in [1, 2] {
        // The frame with a spring across its first floor's first bay (nodes 12 and 13).
        let mut text = frame(30, 10).replace(
            "duration = 0.01\n",
            &format!("duration = 0.3\nthreads = {threads}\n"),
        );
        text += "[[element]]\ntype = \"spring\"\nname = \"extra\"\nnodes = [12, 13]\n\
                 dof = \"x\"\nk = 1.0e5\n";
        text += "[[ground_motion]]\ndirection = \"x\"\n\
                 synthetic = { seed = 11, duration = 5.0, pga = 3.0 }\n";
        let m = model(&text);
        let settings = StepSettings::from_analysis(&m.analysis);
        let part = || {
            build_partitions(&m, Grouping::Monolithic)
                .unwrap()
                .remove(0)
        };
        let mut in_place = MgAlpha::new(part(), &settings).unwrap();
        let mut two_states = MgAlpha::new(part(), &settings).unwrap();
        assert!(in_place.steps_in_place());
        let size = in_place.alpha_state().y.len();
        // `Y`, `Ẏ`, `V` and `F`, and the record of corrections (20 places).
        assert_eq!(in_place.memory_bytes(), 8 * 4 * size + 8 * 20);
        two_states.keep_second_state();
        assert!(!two_states.steps_in_place());
        assert_eq!(two_states.memory_bytes(), 8 * 7 * size + 8 * 20);
        assert_eq!(
            in_place.stepper().factorization().parts().is_some(),
            threads == 2
        );
        let mut moved = false;
        for k in 0..300 {
            if k == 150 {
                // The spring stiffer: the residual's plan changes, the step no longer folds.
                for mg in [&mut in_place, &mut two_states] {
                    let slot = mg.partitions()[0]
                        .state
                        .slots
                        .iter()
                        .position(|s| s.name() == "extra")
                        .unwrap();
                    mg.set_element_parameter(0, slot, "k", 3.0e5).unwrap();
                }
            }
            in_place.step().unwrap();
            two_states.step().unwrap();
            assert!(
                state_bits(in_place.alpha_state()) == state_bits(two_states.alpha_state()),
                "threads = {threads}, step {k}"
            );
            moved |= in_place.alpha_state().y.iter().any(|&x| x != 0.0);
        }
        assert!(moved);
    }
}

/// A failed step of a linear frame stepped in place (a non-finite value) is an error that
/// leaves the state part-written, as `MgAlpha` documents; stepped into a second state, the
/// state stays the last completed step's (the guarantee the models that can fail and go on
/// keep).
#[test]
fn a_failed_in_place_step_is_an_error_and_a_second_state_keeps_the_last_step() {
    let m = shaken_frame(30, 100, 1);
    let settings = StepSettings::from_analysis(&m.analysis);
    let part = || {
        build_partitions(&m, Grouping::Monolithic)
            .unwrap()
            .remove(0)
    };
    let mut in_place = MgAlpha::new(part(), &settings).unwrap();
    let mut two_states = MgAlpha::new(part(), &settings).unwrap();
    two_states.keep_second_state();
    for mg in [&mut in_place, &mut two_states] {
        for _ in 0..10 {
            mg.step().unwrap();
        }
        let mut flat = vec![0.0; mg.state_len()];
        mg.export_state(&mut flat);
        let n = flat.len() / 3;
        // A non-finite rate of the first DOF: the next end state is not finite.
        flat[n] = f64::NAN;
        mg.import_state(&flat);
    }
    let kept = state_bits(two_states.alpha_state());
    let e = two_states.step().unwrap_err().to_string();
    assert!(e.contains("non-finite"), "{e}");
    assert_eq!(state_bits(two_states.alpha_state()), kept);
    assert_eq!(two_states.steps_taken(), 10);
    let e = in_place.step().unwrap_err().to_string();
    assert!(e.contains("non-finite"), "{e}");
    assert_eq!(in_place.steps_taken(), 10);
    assert!(in_place.alpha_state().y.iter().any(|x| !x.is_finite()));
}
