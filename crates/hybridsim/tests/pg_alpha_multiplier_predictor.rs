//! PG-α's `analysis.multiplier_predictor = "previous"` (issue 18): the free solutions carry
//! `Λ_n` in full and the link solution the increment `Λ_{n+1} − Λ_n`, instead of the published
//! split (Abbiati et al. 2019, eq 30: `(1 − j/ss) Λ_n` free, `(j/ss) Λ_{n+1}` linked). For a
//! linear specimen whose estimate is its stiffness the two are the same coupled step
//! (superposition: the free substeps' map of Λ is then `ℚ^P` itself); on a hysteretic specimen
//! they differ, and the jump of the command at the link update shrinks.
mod common;
use common::*;

/// Every recorded column at every step of `examples/split_mass_v1.toml` (a linear specimen,
/// its estimate the exact stiffness; a free vibration from an initial displacement).
fn rows(predictor: &str, subcycles: i64) -> (Vec<String>, Vec<Vec<f64>>) {
    let model = example_with("split_mass_v1.toml", |t| {
        set(t, "analysis", "multiplier_predictor", predictor);
        set(t, "analysis", "subcycles", subcycles);
    });
    let mut sim = hybridsim::Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = sim.columns().iter().map(|c| c.name.clone()).collect();
    let mut row = vec![0.0; names.len()];
    let mut out = Vec::new();
    for _ in 0..sim.n_steps() {
        sim.step().unwrap();
        sim.record(&mut row);
        out.push(row.clone());
    }
    (names, out)
}

#[test]
fn the_previous_multiplier_gives_the_same_coupled_step_on_a_linear_specimen() {
    for ss in [1, 10, 64] {
        let (names, none) = rows("none", ss);
        let (_, previous) = rows("previous", ss);
        assert_eq!(none.len(), previous.len());
        let mut compared = 0;
        for (j, name) in names.iter().enumerate() {
            // The coupled states and multipliers are compared; the specimen's measured force
            // and its elements' columns are those of the last command, the free path's end,
            // which is what the split changes.
            if !["u.", "v.", "a.", "lambda", "gap"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                continue;
            }
            compared += 1;
            let scale = none.iter().map(|r| r[j].abs()).fold(0.0, f64::max);
            let diff = none
                .iter()
                .zip(&previous)
                .map(|(a, b)| (a[j] - b[j]).abs())
                .fold(0.0, f64::max);
            // Relative to the column's peak, with an absolute floor for the columns that are
            // round-off themselves (the interface gap, ~1e-17 m).
            assert!(
                diff <= 1e-8 * scale + 1e-12,
                "ss = {ss}, {name}: largest difference {diff:e} of {scale:e}"
            );
        }
        assert!(compared >= 5, "{names:?}");
        // The interface force is not zero: the split matters.
        let lambda = names
            .iter()
            .position(|n| n.starts_with("lambda"))
            .unwrap_or_else(|| panic!("no multiplier column in {names:?}"));
        assert!(none.iter().any(|r| r[lambda].abs() > 1.0));
    }
}

#[test]
fn the_multiplier_predictor_is_checked() {
    let text = std::fs::read_to_string(root().join("examples/split_mass_v1.toml")).unwrap();
    let bad = text.replace(
        "rho_inf = 0.9",
        "rho_inf = 0.9\nmultiplier_predictor = \"next\"",
    );
    let err = hybridsim::model::Model::from_toml(&bad, "bad.toml", &hybridsim::model::NoFiles)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bad.toml")
            && err.contains("analysis.multiplier_predictor")
            && err.contains("`next`"),
        "{err}"
    );
    let mg = text
        .replace("integrator = \"pg-alpha\"", "integrator = \"mg-alpha\"")
        .replace("subcycles = 10\n", "")
        .replace(
            "rho_inf = 0.9",
            "rho_inf = 0.9\nmultiplier_predictor = \"previous\"",
        );
    let err = hybridsim::model::Model::from_toml(&mg, "mg.toml", &hybridsim::model::NoFiles)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("analysis.multiplier_predictor") && err.contains("pg-alpha"),
        "{err}"
    );
}
