//! Stiffness-proportional Rayleigh damping of hysteretic elements (issue 17): `[damping]
//! stiffness = "initial" | "committed" | "current"` chooses the stiffness `K` of the force
//! `β K v` of an element with `rayleigh = true` — `K_0`, the tangent of the state the step
//! started from, or the tangent of the current state — as OpenSees's `rayleigh αM βK βK_init
//! βK_comm` does.
//!
//! - The force uses the reduced tangent `b E` while a Steel01 spring yields (`committed` and
//!   `current`), `E` under `initial`; `committed` keeps the tangent of the step's start.
//! - A yielding SDOF under a sine force (MG-α; PG-α with an elastic specimen spring beside it)
//!   agrees with OpenSees (openseespy, Newmark average
//!   acceleration = MG-α with ρ∞ = 1, full Newton, same step) for each choice, closer to the
//!   reference of its own choice than to the other choices' (references written by
//!   `scripts/opensees/rayleigh_reference.py` into `tests/data/opensees-rayleigh`).
//! - Bad values are refused with the field and the reason; `check` prints the choice.
mod common;
use common::*;
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::model::NoFiles;

const MASS: f64 = 1000.0;
const B: f64 = 0.05;

fn e() -> f64 {
    4.0 * std::f64::consts::PI.powi(2) * MASS
}
fn fy() -> f64 {
    0.02 * e()
}
fn k_parallel() -> f64 {
    0.1 * e()
}
fn beta() -> f64 {
    0.1 / (2.0 * std::f64::consts::PI)
}

/// The SDOF of `scripts/opensees/rayleigh_reference.py` (same parameters, same load), with
/// `[damping] stiffness = stiffness` (`None`: the key left out) and `analysis` extra keys.
fn sdof_text(stiffness: Option<&str>, integrator: &str, analysis: &str) -> String {
    let (e, fy, beta) = (e(), fy(), beta());
    let f0 = 1.5 * fy;
    let key = stiffness.map_or(String::new(), |s| format!("stiffness = \"{s}\"\n"));
    // PG-α: the SDOF with an elastic spring `k_p` beside the Steel01 one, as two
    // substructures sharing node 1, half of the mass in each: the Steel01 spring numerical, the
    // elastic one the (virtual) specimen of a physical substructure.
    let masses = if integrator == "pg-alpha" {
        let half = 0.5 * MASS;
        let kp = k_parallel();
        format!(
            "[substructure.side]\nphysical = true\nestimate = {{ dofs = [[1, \"x\"]], stiffness = [[{kp:?}]] }}\n\
             [[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = {half:?}\nsubstructure = \"frame\"\n\
             [[element]]\ntype = \"mass\"\nname = \"m2\"\nnode = 1\nmass = {half:?}\nsubstructure = \"side\"\n\
             [[element]]\ntype = \"spring\"\nname = \"kp\"\nnodes = [1]\ndof = \"x\"\nk = {kp:?}\nrole = \"specimen\"\nsubstructure = \"side\"\n"
        )
    } else {
        format!(
                "[[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = {MASS:?}\nsubstructure = \"frame\"\n"
            )
    };
    format!(
        "title = \"Steel01 SDOF, Rayleigh on the tangent\"\n\
         [units]\nlength = \"m\"\nforce = \"N\"\ntime = \"s\"\n\
         [substructure.frame]\n\
         [[node]]\nid = 1\ndofs = [\"x\"]\n\
         {masses}\
         [[element]]\ntype = \"steel01\"\nname = \"s1\"\nnodes = [1]\ndof = \"x\"\nE = {e:?}\nFy = {fy:?}\nb = {B:?}\nrayleigh = true\nsubstructure = \"frame\"\n\
         [[load]]\nnode = 1\ndof = \"x\"\nsine = {{ amplitude = {f0:?}, frequency = 0.75, start = 0.0, end = 4.0 }}\n\
         [damping]\nbeta = {beta:?}\n{key}\
         [analysis]\nintegrator = \"{integrator}\"\nrho_inf = 1.0\ntime_step = 0.001\nduration = 6.0\n{analysis}\n\
         [output]\nevery = 10\nenergy = false\n"
    )
}

/// A state of the SDOF partition: displacement `u`, velocity `v`, Steel01 force `r`.
fn state(size: usize, u: f64, v: f64, r: f64) -> Vec<f64> {
    let mut y = vec![0.0; size];
    y[0] = u;
    y[1] = v;
    y[2] = r;
    y
}

/// While the spring yields (force on the upper bound, loading), `committed` (after the step
/// start is committed there) and `current` damp with `β b E`, `initial` with `β E`; while it
/// unloads elastically `current` returns to `β E` and `committed` keeps the tangent of the
/// step's start. Checked on the force of the damping term alone and on the residual.
#[test]
fn yielding_uses_the_reduced_tangent() {
    let (e, fy, beta) = (e(), fy(), beta());
    let dy = fy / e;
    // On the upper bound at d = 3 dy: r = b E d + (1 − b) Fy.
    let (d, v) = (3.0 * dy, 0.05);
    let r_bound = B * e * d + (1.0 - B) * fy;
    let force = |choice: Option<&str>, commit_at: Option<(f64, f64, f64)>, at: (f64, f64, f64)| {
        let m = model(&sdof_text(choice, "mg-alpha", ""));
        let mut parts = build_partitions(&m, Grouping::Partitioned).unwrap();
        let p = &mut parts[0];
        let size = p.state.size();
        let slot = p.state.slots.iter().position(|s| s.name() == "s1").unwrap();
        if let Some((u, v, r)) = commit_at {
            p.state
                .commit_tangent_rayleigh(&state(size, u, v, r), &mut p.ws);
        }
        let y = state(size, at.0, at.1, at.2);
        let mut f = [0.0];
        let tangent = p.state.tangent_rayleigh_force(slot, &y, &mut f, &mut p.ws);
        // The residual's momentum row: the spring's force plus every damping term.
        let mut res = vec![0.0; size];
        p.state.residual(&y, &mut res, &mut p.ws);
        (tangent.then_some(f[0]), res[1] - at.2)
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
    let yielding = (d, v, r_bound);

    // initial: no state-dependent term, the Rayleigh element damps with β E.
    let (t, damping) = force(None, None, yielding);
    assert_eq!(t, None);
    assert!(close(damping, beta * e * v), "initial: {damping}");
    let (t, damping) = force(Some("initial"), None, yielding);
    assert_eq!(t, None);
    assert!(
        close(damping, beta * e * v),
        "initial (explicit): {damping}"
    );

    // current: β b E v while yielding.
    let (t, damping) = force(Some("current"), None, yielding);
    let t = t.expect("current has a tangent term");
    assert!(close(t, beta * B * e * v), "current, yielding: {t}");
    assert!(
        close(damping, beta * B * e * v),
        "current residual: {damping}"
    );
    // current, unloading from the bound (v < 0): elastic, β E v.
    let (t, _) = force(Some("current"), None, (d, -v, r_bound));
    assert!(
        close(t.unwrap(), -beta * e * v),
        "current, unloading: {t:?}"
    );

    // committed: at rest the initial stiffness; committed on the yielding state, β b E v even
    // at an (elastic) unloading trial state; committed elastic, β E v at a yielding trial.
    let (t, _) = force(Some("committed"), None, yielding);
    assert!(close(t.unwrap(), beta * e * v), "committed at rest: {t:?}");
    let (t, damping) = force(Some("committed"), Some(yielding), yielding);
    assert!(
        close(t.unwrap(), beta * B * e * v),
        "committed, yielding: {t:?}"
    );
    assert!(
        close(damping, beta * B * e * v),
        "committed residual: {damping}"
    );
    let (t, _) = force(Some("committed"), Some(yielding), (d, -v, r_bound));
    assert!(
        close(t.unwrap(), -beta * B * e * v),
        "committed keeps the step start's tangent: {t:?}"
    );
    let (t, _) = force(Some("committed"), Some((d, -v, r_bound)), yielding);
    assert!(close(t.unwrap(), beta * e * v), "committed elastic: {t:?}");
}

/// The reference CSV of one choice: `(time, u, force)` rows, after checking that its header
/// line carries this test's parameters.
fn reference(stem: &str, kp: f64, choice: &str) -> Vec<[f64; 3]> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../tests/data/opensees-rayleigh/{stem}_{choice}.csv"
    ));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let params = lines.next().unwrap();
    for (k, v) in [
        ("mass", MASS),
        ("kp", kp),
        ("E", e()),
        ("Fy", fy()),
        ("b", B),
        ("beta", beta()),
    ] {
        assert!(
            params.contains(&format!(" {k}={v:?} ")) || params.contains(&format!("# {k}={v:?} ")),
            "{}: `{k}` is not {v:?} in `{params}`",
            path.display()
        );
    }
    assert_eq!(lines.next(), Some("time[s],u[m],force[N]"));
    lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

/// Our `(time, u, spring force)` every 10 steps for `choice`.
fn ours(choice: &str, integrator: &str, analysis: &str) -> Vec<[f64; 3]> {
    let mut sim =
        hybridsim::Simulation::new(model(&sdof_text(Some(choice), integrator, analysis))).unwrap();
    let names: Vec<String> = sim.columns().iter().map(|c| c.name.clone()).collect();
    let col = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("no column {n} in {names:?}"))
    };
    let (iu, ir) = (col("u.frame.1.x"), col("force.s1.1.x"));
    let mut row = vec![0.0; names.len()];
    let mut out = vec![[0.0, 0.0, 0.0]];
    for k in 1..=6000 {
        sim.step().unwrap();
        if k % 10 == 0 {
            sim.record(&mut row);
            out.push([k as f64 * 0.001, row[iu], row[ir]]);
        }
    }
    out
}

/// Node 1's displacement every 10 ms over 6 s of the SDOF of [`sdof_text`] (Rayleigh on the
/// `choice` stiffness) integrated by `integrator` at `dt`, with `analysis` added to its
/// `[analysis]` table.
fn u_history(choice: &str, integrator: &str, analysis: &str, dt: f64) -> Vec<f64> {
    let text = sdof_text(Some(choice), "pg-alpha", analysis)
        .replace(
            "integrator = \"pg-alpha\"",
            &format!("integrator = \"{integrator}\""),
        )
        .replace("time_step = 0.001", &format!("time_step = {dt:e}"));
    let mut sim = hybridsim::Simulation::new(model(&text)).unwrap();
    let iu = sim
        .columns()
        .iter()
        .position(|c| c.name.starts_with("u.") && c.name.ends_with(".1.x"))
        .expect("a displacement column of node 1");
    let mut row = vec![0.0; sim.columns().len()];
    let every = (0.01 / dt).round() as usize;
    let mut out = Vec::new();
    for k in 1..=(6.0 / dt).round() as usize {
        sim.step().unwrap();
        if k % every == 0 {
            sim.record(&mut row);
            out.push(row[iu]);
        }
    }
    out
}

/// Largest difference of displacement and of force over the history, relative to the
/// reference's peaks.
fn difference(a: &[[f64; 3]], b: &[[f64; 3]]) -> (f64, f64) {
    assert_eq!(a.len(), b.len());
    let peak = |i: usize| b.iter().fold(0.0f64, |m, r| m.max(r[i].abs()));
    let max = |i: usize| {
        a.iter()
            .zip(b)
            .fold(0.0f64, |m, (x, y)| m.max((x[i] - y[i]).abs()))
    };
    (max(1) / peak(1), max(2) / peak(2))
}

/// Measured (Δt = 1 ms; max |Δu| / peak |u|, max |Δr| / peak |r|):
/// - MG-α, converged solve: own choice 1.7e-12 (initial), 3.0e-6 (committed), 9.6e-7
///   (current), |Δr| ≤ 8.6e-6; the other choices' references are ≥ 8.4e-4 (committed vs
///   current) and ≥ 0.24 (initial vs the tangent ones) away.
/// - PG-α with `analysis.link_tangent = "initial"` (the SDOF beside an elastic specimen spring
///   `k_p`, half the mass in each substructure): own choice 6.0e-6 (initial), 2.2e-4 (committed, current), |Δr| ≤ 5.5e-4;
///   committed and current are 7.7e-4 and 9.6e-4 from each other's reference, ≥ 0.26 from
///   initial's. The link update's operator is built with `β K_0` in `J0`.
/// - PG-α with `analysis.link_tangent = "current"` (the link operator and `H` rebuilt every
///   step with the current tangent; the default for committed and current): own choice 1.8e-8 (initial), 2.3e-6 (committed), 5.4e-7
///   (current), |Δr| ≤ 1.2e-5 — MG-α's agreement.
/// - MG-α with three fixed corrections (no return mapping): every choice within 1.5e-2 of its
///   own reference, ≥ 0.24 between initial and the tangent ones.
#[test]
fn agrees_with_opensees_for_each_choice() {
    let choices = ["initial", "committed", "current"];
    let sdof: Vec<_> = choices
        .iter()
        .map(|c| reference("steel01_sdof", 0.0, c))
        .collect();
    let parallel: Vec<_> = choices
        .iter()
        .map(|c| reference("steel01_sdof_parallel", k_parallel(), c))
        .collect();
    for (integrator, analysis) in [
        ("mg-alpha", ""),
        ("pg-alpha", "link_tangent = \"initial\""),
        ("pg-alpha", "link_tangent = \"current\""),
        // The default: the current-tangent link for committed and current, initial for initial.
        ("pg-alpha", ""),
        (
            "mg-alpha",
            "nonlinear_solver = \"corrections\"\ncorrections = 3",
        ),
    ] {
        // Tolerances on the distance to the own reference; `resolves`: closer to the own
        // reference than half the distance to every other choice's (the converged MG-α and
        // PG-α), else only initial against the tangent ones (the fixed corrections do not
        // resolve committed from current).
        let (own_u, own_r, resolves) = match (integrator, analysis) {
            ("mg-alpha", "") => (1e-5, 3e-5, true),
            ("pg-alpha", a) if a.contains("initial") => (1e-3, 2e-3, true),
            ("pg-alpha", _) => (1e-5, 3e-5, true),
            _ => (3e-2, 4e-2, false),
        };
        let refs = if integrator == "pg-alpha" {
            &parallel
        } else {
            &sdof
        };
        for (i, c) in choices.iter().enumerate() {
            let mine = ours(c, integrator, analysis);
            let own = difference(&mine, &refs[i]).0;
            for (j, other) in choices.iter().enumerate() {
                let (du, df) = difference(&mine, &refs[j]);
                println!(
                    "{integrator} {analysis:?} {c:9} vs OpenSees {other:9}: max |Δu| {du:.3e}, max |Δr| {df:.3e}"
                );
                let what = format!("{integrator} {analysis:?}: {c} vs OpenSees {other}");
                if i == j {
                    assert!(du < own_u && df < own_r, "{what}: {du:e} {df:e}");
                } else if resolves {
                    assert!(own < 0.5 * du, "{what}: {du:e}, own {own:e}");
                } else if i == 0 || j == 0 {
                    assert!(du > 0.1 && df > 0.1, "{what}: {du:e} {df:e}");
                }
            }
        }
    }
}

/// Where PG-α's gap to OpenSees under `committed`/`current` comes from (issue 17): PG-α of
/// the parallel SDOF against MG-α of the same model (one substructure; MG-α agrees with
/// OpenSees to ≤ 3e-6), at Δt = 1, 0.5 and 0.25 ms. Under `initial` the gap is second order
/// in Δt (measured 5.96e-6, 1.49e-6, 3.72e-7 of the peak); under `committed` and `current`
/// first order (2.22e-4, 1.10e-4, 5.4e-5; 2.23e-4, 1.10e-4, 3.2e-5) and the same with
/// `nonlinear_solver = "newton"`, so not the free solve's: the link update `𝕐 = 𝕐^free + ℚΛ`
/// corrects the velocity by `ℚ_V Λ` with `ℚ` built with `β K_0` in `J0`, while the
/// numerical partition's damping force is `β K_t v`; the mismatch `β (K_t − K_0) ℚ_V Λ` is a
/// velocity-level (first-order) inconsistency, where the Steel01 force's own mismatch
/// (`(K_t − K_0) ℚ_Y Λ`, repaired by the reprojection) is displacement-level (second order).
#[test]
fn pg_alpha_gap_is_the_link_update_first_order_in_the_step() {
    let history = |choice: &str, integrator: &str, dt: f64| {
        // The published link, built once on the initial tangent (the default is the current
        // tangent's for committed and current).
        let link = if integrator == "pg-alpha" {
            "link_tangent = \"initial\""
        } else {
            ""
        };
        u_history(choice, integrator, link, dt)
    };
    for choice in ["initial", "committed", "current"] {
        let gap = |dt: f64| {
            let (pg, mg) = (
                history(choice, "pg-alpha", dt),
                history(choice, "mg-alpha", dt),
            );
            let peak = mg.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            pg.iter()
                .zip(&mg)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
                / peak
        };
        let (coarse, fine) = (gap(1e-3), gap(5e-4));
        let ratio = coarse / fine;
        println!(
            "{choice}: PG-α − MG-α {coarse:.3e} at 1 ms, {fine:.3e} at 0.5 ms, ratio {ratio:.2}"
        );
        if choice == "initial" {
            assert!(coarse < 1e-5 && ratio > 3.5, "second order: {ratio}");
        } else {
            assert!(
                coarse > 1e-4 && (1.7..2.5).contains(&ratio),
                "first order: {ratio}"
            );
        }
    }
}

/// A bad value names the field and the choices; `committed`/`current` with an integrator
/// that does not evaluate them is refused; `check` prints the choice.
#[test]
fn bad_values_are_refused_and_check_prints_the_choice() {
    let err = hybridsim::Model::from_toml(
        &sdof_text(Some("tangent"), "mg-alpha", ""),
        "test.toml",
        &NoFiles,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("test.toml") && err.contains("damping.stiffness") && err.contains("tangent"),
        "{err}"
    );
    assert!(
        err.contains("\"committed\"") && err.contains("\"current\""),
        "{err}"
    );
    let err = hybridsim::Model::from_toml(
        &sdof_text(Some("current"), "lsrt2", ""),
        "test.toml",
        &NoFiles,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("damping.stiffness") && err.contains("lsrt2"),
        "{err}"
    );
    for choice in ["initial", "committed", "current"] {
        let sim =
            hybridsim::Simulation::new(model(&sdof_text(Some(choice), "mg-alpha", ""))).unwrap();
        let summary = sim.summary();
        assert!(
            summary.contains(&format!(
                "Rayleigh stiffness of the 1 hysteretic element(s): {choice}"
            )),
            "{summary}"
        );
    }
}

/// The fix of the gap above (issue 17): `analysis.link_tangent = "current"` builds the
/// numerical partition's link operator `ℚ` and the Steklov–Poincaré operator `H` every step
/// from the current tangent at the free end state (`β K_t` in the velocity columns, the
/// consistent tangent of the yielding Steel01 spring), so that the link update corrects the
/// velocity with the damping the residual applies.
///
/// - At the same step, PG-α with the option is MG-α (the specimen is linear and its estimate
///   exact, so both solve the same step equations) to the converged solve's tolerance: at
///   most 1e-6 of the peak at Δt = 2, 1, 0.5, 0.25 ms for every choice (measured ≤ 1.8e-8 at
///   1 ms; 9.5e-7 for `current` at 2 ms, where the tangent's branch can switch between the
///   free and the linked state), where without it the gap is first order (2.2e-4 at 1 ms, the
///   test above). With `multiplier_predictor = "previous"` (the link adds `ℚ ΔΛ`) the gap at
///   1 ms is round-off: 8.7e-15 / 1.4e-14 / 1.3e-14.
/// - Against MG-α at a fine step (Δt/32 of 1 ms), the option's error equals MG-α's own to 1 %
///   at every step. That error is itself first order for `committed` and `current` (measured
///   1.9e-3 / 8.8e-4 / 5.5e-4 / 2.2e-4 and 5.0e-4 / 2.6e-4 / 1.5e-4 / 6.9e-5 at 2 / 1 / 0.5 /
///   0.25 ms, MG-α and PG-α alike): the committed tangent lags a step behind and the current
///   one jumps by `β (1 − b) E v` inside a step at yield and unloading, so the damping force
///   is discontinuous along the path — a property of the law (OpenSees's too, which MG-α
///   matches at the same step), not of the partitioning. Under `initial`, second order
///   (3.3e-5 / 5.1e-6 / 1.1e-6 / 3.7e-7).
#[test]
fn the_current_tangent_link_puts_pg_alpha_on_mg_alpha() {
    let distance = |a: &[f64], b: &[f64]| {
        let peak = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        a.iter()
            .zip(b)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
            / peak
    };
    let sci = |v: &[f64]| {
        v.iter()
            .map(|e| format!("{e:.3e}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    const CURRENT: &str = "link_tangent = \"current\"";
    let steps = [2e-3, 1e-3, 5e-4, 2.5e-4];
    for choice in ["initial", "committed", "current"] {
        let reference = u_history(choice, "mg-alpha", "", 1e-3 / 32.0);
        let mg: Vec<_> = steps
            .iter()
            .map(|&dt| u_history(choice, "mg-alpha", "", dt))
            .collect();
        let pg: Vec<_> = steps
            .iter()
            .map(|&dt| u_history(choice, "pg-alpha", CURRENT, dt))
            .collect();
        // The same with the free solutions carrying Λ_n (the link adds ℚ ΔΛ).
        let previous = u_history(
            choice,
            "pg-alpha",
            &format!("{CURRENT}\nmultiplier_predictor = \"previous\""),
            1e-3,
        );
        let gap = distance(&previous, &mg[1]);
        println!("{choice:9}: multiplier_predictor = previous, PG-α − MG-α at 1 ms {gap:.3e}");
        assert!(gap <= 1e-6, "{choice}, previous: {gap:e}");
        let same_step: Vec<f64> = pg.iter().zip(&mg).map(|(p, m)| distance(p, m)).collect();
        let mg_errors: Vec<f64> = mg.iter().map(|u| distance(u, &reference)).collect();
        let pg_errors: Vec<f64> = pg.iter().map(|u| distance(u, &reference)).collect();
        println!(
            "{choice:9}: at 2 / 1 / 0.5 / 0.25 ms, PG-α (current link) − MG-α {}; against MG-α \
             at Δt/32: MG-α {}, PG-α {}",
            sci(&same_step),
            sci(&mg_errors),
            sci(&pg_errors)
        );
        for (k, gap) in same_step.iter().enumerate() {
            assert!(*gap <= 1e-6, "{choice}, Δt = {}: {gap:e}", steps[k]);
            let ratio = pg_errors[k] / mg_errors[k];
            assert!(
                (ratio - 1.0).abs() <= 0.01,
                "{choice}, Δt = {}: {ratio}",
                steps[k]
            );
        }
    }
}

/// `analysis.link_tangent`: a bad value, another integrator and the fixed corrections are
/// refused naming the file and the field; `check`'s summary prints the choice (and says when
/// a linear numerical substructure makes it moot).
#[test]
fn link_tangent_is_checked_and_printed() {
    let refused = |integrator: &str, analysis: &str, words: &[&str]| {
        let err = hybridsim::Model::from_toml(
            &sdof_text(Some("current"), integrator, analysis),
            "test.toml",
            &NoFiles,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("test.toml") && err.contains("analysis.link_tangent"),
            "{err}"
        );
        for w in words {
            assert!(err.contains(w), "`{w}` not in {err}");
        }
    };
    refused(
        "pg-alpha",
        "link_tangent = \"tangent\"",
        &["\"initial\"", "\"current\"", "tangent"],
    );
    refused(
        "mg-alpha",
        "link_tangent = \"current\"",
        &["pg-alpha", "mg-alpha"],
    );
    refused(
        "pg-alpha",
        "link_tangent = \"current\"\nnonlinear_solver = \"corrections\"",
        &["corrections"],
    );
    let summary = |text: &str| hybridsim::Simulation::new(model(text)).unwrap().summary();
    let s = summary(&sdof_text(
        Some("current"),
        "pg-alpha",
        "link_tangent = \"current\"",
    ));
    assert!(
        s.contains("link_tangent = current") && !s.contains("no effect"),
        "{s}"
    );
    let s = summary(&sdof_text(Some("initial"), "pg-alpha", ""));
    assert!(!s.contains("link_tangent"), "{s}");
    // A linear numerical substructure: the Steel01 spring replaced by an elastic one.
    let linear = sdof_text(None, "pg-alpha", "link_tangent = \"current\"")
        .replace("type = \"steel01\"", "type = \"spring\"")
        .replace("rayleigh = true\n", "")
        .replace(
            &format!("E = {:?}\nFy = {:?}\nb = {B:?}\n", e(), fy()),
            &format!("k = {:?}\n", e()),
        );
    let s = summary(&linear);
    assert!(
        s.contains("link_tangent = current") && s.contains("no effect"),
        "{s}"
    );
}

/// Without the key, PG-α links with the current tangent where the Rayleigh damping takes the
/// tangent (`committed`, `current`) and the solve converges, and with the initial one
/// otherwise (`initial`; the fixed `corrections`, which have no converged free state): the
/// default run is, bit for bit, the run with the key written out, and `check` says which.
#[test]
fn pg_alpha_links_with_the_current_tangent_by_default_under_tangent_rayleigh() {
    let history = |choice: &str, analysis: &str| {
        let mut sim =
            hybridsim::Simulation::new(model(&sdof_text(Some(choice), "pg-alpha", analysis)))
                .unwrap();
        let summary = sim.summary();
        let mut row = vec![0.0; sim.columns().len()];
        let mut out = Vec::new();
        for _ in 0..2000 {
            sim.step().unwrap();
            sim.record(&mut row);
            out.extend(row.iter().map(|x| x.to_bits()));
        }
        (out, summary)
    };
    for (choice, link) in [
        ("initial", "initial"),
        ("committed", "current"),
        ("current", "current"),
    ] {
        let (default, summary) = history(choice, "");
        let (written, _) = history(choice, &format!("link_tangent = \"{link}\""));
        let (other, _) = history(
            choice,
            if link == "current" {
                "link_tangent = \"initial\""
            } else {
                "link_tangent = \"current\""
            },
        );
        assert!(
            default == written,
            "{choice}: the default is not link_tangent = {link}"
        );
        if choice != "initial" {
            assert!(default != other, "{choice}: both links give the same run");
        }
        assert_eq!(
            summary.contains("link_tangent = current"),
            link == "current",
            "{choice}: {summary}"
        );
    }
    // The fixed corrections keep the published link, without an error.
    let corrections = "nonlinear_solver = \"corrections\"\ncorrections = 3";
    let (default, summary) = history("committed", corrections);
    let (initial, _) = history(
        "committed",
        &format!("{corrections}\nlink_tangent = \"initial\""),
    );
    assert!(
        default == initial && !summary.contains("link_tangent"),
        "{summary}"
    );
}
