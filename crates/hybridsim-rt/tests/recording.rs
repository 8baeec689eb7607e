//! What the threaded runner records (issue 20, recording large models in real time): a
//! `[output]` selection (`nodes`, `dofs`, `elements = [names]`) records the full recording's
//! columns of its choice with the same bits, and keeps the interface and the physical
//! substructure's columns; `every = k` writes in its rows the bits `every = 1` writes at those
//! steps, also the row of a stop between two rows (the energies, taken from a copy of the state
//! only when a row is made, include the Bouc-Wen storeys' absorbed energy, an integral carried
//! by the state); and a run with a selection allocates nothing in its loop threads.
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::Model;
use hybridsim_rt::{run, RunOptions, RunOutcome, RunStatus};
use std::sync::atomic::Ordering;

mod common;
use common::counting::{mark, LOOP_ALLOCATIONS};

/// A shear chain of `n` storeys: storey 1 (spring and dashpot behind an actuator with a 4 ms
/// delay and force noise, half of the first mass) is the physical substructure on the virtual
/// laboratory; the others are numerical springs, every fourth one a Bouc-Wen storey, with
/// dashpots and 50 t masses; PG-α with 4 controller ticks a step. `output` is the `[output]`
/// table's body, `stroke` the actuator's displacement limit.
fn chain(n: usize, duration: f64, output: &str, stroke: f64) -> Model {
    let mut t = String::from("title = \"recorded chain\"\n");
    for i in 1..=n {
        t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
    }
    t += "[substructure.frame]\n[substructure.first_storey]\nphysical = true\n\
          estimate = { dofs = [[1, \"x\"]], stiffness = [[40000.0]], damping = [[60.0]] }\n";
    t += "[[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = 60.0\n\
          split = { frame = 0.5, first_storey = 0.5 }\n\
          [[element]]\ntype = \"spring\"\nname = \"column1\"\nnodes = [1]\ndof = \"x\"\n\
          k = 40000.0\nsubstructure = \"first_storey\"\n\
          [[element]]\ntype = \"dashpot\"\nname = \"column1_damping\"\nnodes = [1]\ndof = \"x\"\n\
          c = 60.0\nsubstructure = \"first_storey\"\n";
    for i in 2..=n {
        let nodes = format!("[{}, {i}]", i - 1);
        if i % 4 == 3 {
            t += &format!(
                "[[element]]\ntype = \"bouc_wen\"\nname = \"column{i}\"\nnodes = {nodes}\n\
                 dof = \"x\"\nA = 4.0e4\nbeta = 3.5\ngamma = 60.0\nn = 1.0\n\
                 substructure = \"frame\"\n"
            );
        } else {
            t += &format!(
                "[[element]]\ntype = \"spring\"\nname = \"column{i}\"\nnodes = {nodes}\n\
                 dof = \"x\"\nk = 40000.0\nsubstructure = \"frame\"\n"
            );
        }
        t += &format!(
            "[[element]]\ntype = \"dashpot\"\nname = \"damper{i}\"\nnodes = {nodes}\n\
             dof = \"x\"\nc = 60.0\nsubstructure = \"frame\"\n\
             [[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n\
             substructure = \"frame\"\n"
        );
    }
    t += &format!(
        "[units]\nlength = \"m\"\nforce = \"kN\"\ntime = \"s\"\n\
         [[ground_motion]]\ndirection = \"x\"\n\
         synthetic = {{ seed = 2026, duration = {duration}, pga = 0.3 }}\n\
         [analysis]\nintegrator = \"pg-alpha\"\nrho_inf = 0.9\ntime_step = 0.004\n\
         subcycles = 4\nduration = {duration}\n\
         [output]\n{output}\n\
         [lab]\nregime = \"real-time\"\ntime_scale = 1.0\nseed = 2027\n\
         [[lab.actuator]]\nname = \"storey1\"\ndofs = [[1, \"x\"]]\n\
         capacity = {{ stroke = 0.3, velocity = 2.5, force = 6000.0 }}\n\
         dynamics = {{ kind = \"delay\", delay = 0.004 }}\nnoise = {{ force_rms = 0.5 }}\n\
         compensation = {{ delay = {{ order = 1, estimate = 0.004 }} }}\n\
         [safety]\non_trip = \"hold\"\n\
         [safety.actuator.storey1]\ndisplacement = {stroke}\nvelocity = 2.0\nforce = 5000.0\n\
         increment = 0.002\n\
         [safety.divergence]\ndisplacement = 0.2\nforce = 20000.0\n"
    );
    Model::from_toml(&t, "recorded_chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn fast(model: &Model) -> RunOutcome {
    run(
        model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            keep_rows: true,
            ..Default::default()
        },
    )
    .unwrap()
}

/// The column names without their units.
fn names(out: &RunOutcome) -> Vec<String> {
    out.columns
        .iter()
        .map(|c| c.split('[').next().unwrap().to_string())
        .collect()
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn a_selection_records_the_full_recordings_columns_with_the_same_bits() {
    let full = fast(&chain(12, 2.0, "every = 1", 0.25));
    let selected = fast(&chain(
        12,
        2.0,
        "every = 1\nnodes = [3, 7, 12]\ndofs = [\"x\"]\nelements = [\"column3\", \"column4\"]",
        0.25,
    ));
    assert_eq!(full.status, RunStatus::Completed);
    assert_eq!(selected.status, RunStatus::Completed);
    let (all, some) = (names(&full), names(&selected));
    println!(
        "full: {} columns, selection: {} columns: {some:?}",
        all.len(),
        some.len()
    );
    // The selected nodes' columns, the interface (node 1, in both substructures), the
    // physical substructure's measured force and channels, Λ and the gaps, the energies.
    for want in [
        "time",
        "u.frame.3.x",
        "v.frame.7.x",
        "a_abs.frame.12.x",
        "u.frame.1.x",
        "u.first_storey.1.x",
        "measured.first_storey.1.x",
        "lambda.1.x",
        "gap_u.1.x",
        "force.column3.2.x",
        "state.column3.e",
        "dissipated.column3",
        "force.column4.3.x",
        "energy.frame",
        "energy.first_storey",
    ] {
        assert!(some.iter().any(|n| n == want), "{want} missing: {some:?}");
    }
    for gone in [
        "u.frame.2.x",
        "v.frame.11.x",
        "force.column5.4.x",
        "state.column7.e",
    ] {
        assert!(
            all.iter().any(|n| n == gone),
            "{gone} not in the full recording"
        );
        assert!(!some.iter().any(|n| n == gone), "{gone} recorded: {some:?}");
    }
    // Every selected column is the full recording's column, bit for bit, in the same order.
    let index: Vec<usize> = some
        .iter()
        .map(|n| all.iter().position(|a| a == n).unwrap())
        .collect();
    assert!(index.windows(2).all(|w| w[0] < w[1]), "order changed");
    for (k, &j) in index.iter().enumerate() {
        assert_eq!(
            selected.columns[k], full.columns[j],
            "header of {}",
            some[k]
        );
    }
    assert_eq!(selected.rows.len(), full.rows.len());
    for (r, (s, f)) in selected.rows.iter().zip(&full.rows).enumerate() {
        let picked: Vec<f64> = index.iter().map(|&j| f[j]).collect();
        assert!(same_bits(s, &picked), "row {r} differs");
    }
}

#[test]
fn every_k_writes_the_bits_of_every_one_at_its_steps_also_at_a_stop_between_rows() {
    let every_one = fast(&chain(12, 2.0, "every = 1", 0.25));
    let every_seven = fast(&chain(12, 2.0, "every = 7", 0.25));
    assert_eq!(every_one.status, RunStatus::Completed);
    assert_eq!(every_seven.columns, every_one.columns);
    let n = every_one.steps as usize;
    let steps: Vec<usize> = (0..=n).filter(|s| s % 7 == 0 || *s == n).collect();
    assert_eq!(every_seven.rows.len(), steps.len());
    let energy = names(&every_one)
        .iter()
        .position(|c| c == "energy.frame")
        .unwrap();
    for (row, &s) in every_seven.rows.iter().zip(&steps) {
        assert!(same_bits(row, &every_one.rows[s]), "step {s} differs");
    }
    // The energies are not constant (the Bouc-Wen storeys absorb energy).
    let e_end = every_one.rows[n][energy];
    println!("{} steps; energy.frame at the end {e_end:.6e}", n);
    assert!(e_end.is_finite() && e_end != every_one.rows[0][energy]);

    // A stroke limit that trips the run between two rows of `every = 7`: the row of the last
    // completed step is made from the copy taken after it, energies included, and has the bits
    // the `every = 1` run wrote for that step.
    let stopped_one = fast(&chain(12, 2.0, "every = 1", 0.004));
    let stopped_seven = fast(&chain(12, 2.0, "every = 7", 0.004));
    assert!(matches!(stopped_one.status, RunStatus::Stopped(_)));
    assert!(matches!(stopped_seven.status, RunStatus::Stopped(_)));
    assert_eq!(stopped_one.steps, stopped_seven.steps);
    let s = stopped_seven.steps as usize;
    println!("stopped after {s} steps");
    assert_ne!(
        s % 7,
        0,
        "the stop must fall between two rows to test anything"
    );
    let last = stopped_seven.rows.last().unwrap();
    let reference = &stopped_one.rows[s];
    assert_eq!(last[0].to_bits(), reference[0].to_bits());
    assert!(same_bits(last, reference), "the stop row differs");
}

#[test]
fn a_run_with_a_selection_allocates_nothing_in_its_loop_threads() {
    let model = chain(
        40,
        8.0,
        "every = 1\nnodes = [5, 20, 40]\nelements = [\"column3\"]",
        0.25,
    );
    assert!(model.analysis.n_steps() >= 2000);
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(
        &model,
        &RunOptions {
            pacing: Some(Pacing::Fast),
            loop_marker: Some(mark),
            ..Default::default()
        },
    )
    .unwrap();
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    println!("{} steps with a selection: {n} allocations", out.steps);
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(n, 0);
}
