//! The full-operator method and operator splitting (`integrator = "fom"` / `"osm"`): the
//! undamped SDOF study of Hung and El-Tawil (2009) with a wrong stiffness estimate, orders of
//! accuracy on a linear model against the closed form, an inelastic SDOF against a fine-step
//! reference, and the errors of models that cannot use the schemes.
mod common;
use common::*;

/// Undamped SDOF, m = k = 1 (ω = 1), d0 = 1: the mass numerical, the spring the specimen
/// (numerical stand-in), with the estimate `ratio × k`.
fn sdof(integrator: &str, dt: f64, duration: f64, ratio: f64, extra: &str) -> String {
    format!(
        r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = {{ x = 1.0 }}

[substructure.specimen]
physical = true
estimate = {{ dofs = [[1, "x"]], stiffness = [[{ratio}]] }}

[[element]]
type = "mass"
node = 1
mass = 1.0
substructure = "specimen"

[[element]]
type = "spring"
name = "k"
nodes = [1]
dof = "x"
k = 1.0
substructure = "specimen"

[analysis]
integrator = "{integrator}"
time_step = {dt}
duration = {duration}
{extra}
"#
    )
}

/// Displacements of node 1 after every step.
fn history(text: &str) -> Vec<f64> {
    let m = model(text);
    let mut integ = hybridsim::integrators::build(&m).unwrap_or_else(|e| panic!("{e}"));
    let n = m.analysis.n_steps();
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        integ.step().unwrap();
        out.push(integ.state(0)[0]);
    }
    out
}

fn peak(x: &[f64]) -> f64 {
    x.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// The paper's span: 50 s (ALGORITHMS.md B7). With the corrector the amplitude stays 1 within
/// 1 % below and 6 % above (Ω = 0.1 with ratio 10 grows to 1.054: the corrector is slightly
/// unstable when the stiffness is overestimated, ρ = 1.000109 per step, ALGORITHMS.md E39); without it, an underestimated stiffness (ratio 0.1) makes it grow and an
/// overestimated one (ratio 10) makes it decay.
#[test]
fn sdof_study_with_and_without_the_corrector() {
    for omega in [0.02, 0.1] {
        let steps_per_cycle = (2.0 * std::f64::consts::PI / omega).ceil() as usize;
        for ratio in [0.1, 10.0] {
            let with = history(&sdof(
                "fom",
                omega,
                50.0,
                ratio,
                "[analysis.estimator]\nupdate = \"none\"",
            ));
            let amp = peak(&with);
            assert!(
                (0.99..=1.06).contains(&amp),
                "corrector, Ω = {omega}, ratio {ratio}: peak {amp}"
            );
            let last = peak(&with[with.len() - steps_per_cycle..]);
            assert!(
                last > 0.95,
                "corrector, Ω = {omega}, ratio {ratio}: last {last}"
            );
            let without = history(&sdof(
                "fom",
                omega,
                50.0,
                ratio,
                "[analysis.estimator]\nupdate = \"none\"\ncorrector = false",
            ));
            let last = peak(&without[without.len() - steps_per_cycle..]);
            eprintln!("Ω = {omega}, ratio {ratio}: with corrector peak {amp:.5}, without: last-cycle amplitude {last:.5}");
            if ratio < 1.0 {
                assert!(
                    last > 1.3,
                    "no corrector, Ω = {omega}, ratio {ratio}: {last}"
                );
            } else {
                assert!(
                    last < 0.2,
                    "no corrector, Ω = {omega}, ratio {ratio}: {last}"
                );
            }
        }
    }
}

/// With the exact estimate both schemes are Newmark's average acceleration rule: second order
/// against the closed form cos t at t = 1.
#[test]
fn second_order_with_the_exact_stiffness() {
    for (integrator, extra) in [
        ("fom", "[analysis.estimator]\nupdate = \"none\""),
        ("fom", "[analysis.estimator]\nupdate = \"bfgs\""),
        ("osm", ""),
    ] {
        let errors: Vec<f64> = [0.1, 0.05, 0.025, 0.0125]
            .iter()
            .map(|dt| {
                let h = history(&sdof(integrator, *dt, 1.0, 1.0, extra));
                (h.last().unwrap() - 1.0f64.cos()).abs()
            })
            .collect();
        let s = slopes(&errors);
        eprintln!("{integrator} {extra:?}: errors {errors:?}, slopes {s:?}");
        assert!(
            s.iter().all(|p| (*p - 2.0).abs() < 0.1),
            "{integrator}: {s:?}"
        );
    }
}

/// With a wrong estimate (ratio 2) both stay second order on a linear model (measured slopes
/// 1.95–2.00): the error of the linearization is O(Δt²) per step times the acceleration change.
#[test]
fn order_with_a_wrong_estimate() {
    for integrator in ["fom", "osm"] {
        let extra = if integrator == "fom" {
            "[analysis.estimator]\nupdate = \"none\""
        } else {
            ""
        };
        let errors: Vec<f64> = [0.1, 0.05, 0.025, 0.0125]
            .iter()
            .map(|dt| {
                let h = history(&sdof(integrator, *dt, 1.0, 2.0, extra));
                (h.last().unwrap() - 1.0f64.cos()).abs()
            })
            .collect();
        let s = slopes(&errors);
        eprintln!("{integrator}, estimate ratio 2: errors {errors:?}, slopes {s:?}");
        assert!(s.iter().all(|p| *p > 1.8), "{integrator}: {s:?}");
    }
}

#[test]
fn errors_name_the_field() {
    let bad = |extra: &str, integrator: &str, field: &str| {
        let text = sdof(integrator, 0.01, 1.0, 1.0, extra);
        let e = hybridsim::Model::from_toml(&text, "bad.toml", &hybridsim::model::NoFiles)
            .err()
            .unwrap_or_else(|| panic!("accepted {extra}"))
            .to_string();
        assert!(e.contains("bad.toml") && e.contains(field), "{e}");
    };
    bad(
        "[analysis.estimator]\nupdate = \"newton\"",
        "fom",
        "analysis.estimator.update",
    );
    bad(
        "[analysis.estimator]\nupdate = \"broyden-family\"\npsi = 1.5",
        "fom",
        "analysis.estimator.psi",
    );
    bad(
        "[analysis.estimator]\npsi = 0.3",
        "fom",
        "analysis.estimator.psi",
    );
    bad(
        "[analysis.estimator]\nthreshold = -1.0",
        "fom",
        "analysis.estimator.threshold",
    );
    bad(
        "[analysis.estimator]\nlinearize = \"x\"",
        "fom",
        "analysis.estimator.linearize",
    );
    bad(
        "[analysis.estimator]\ni_modification = true",
        "fom",
        "analysis.estimator.i_modification",
    );
    bad(
        "[analysis.estimator]\nupdate = \"sr1\"",
        "osm",
        "analysis.estimator.update",
    );
    bad(
        "[analysis.estimator]\nupdate = \"sr1\"",
        "mg-alpha",
        "analysis.estimator",
    );
    bad("rho_inf = 0.3", "osm", "analysis.rho_inf");
    bad("rho_inf = 0.8", "fom", "analysis.rho_inf");
}

/// An inelastic SDOF: a 1 t mass on a bilinear (Mostaghel) specimen, k = 4e5 N/m, 2 % post-
/// yield ratio, yield at 5 mm, under a seeded synthetic record scaled to PGA = 1 g.
fn inelastic(integrator: &str, dt: f64, extra: &str) -> String {
    format!(
        r#"
[[node]]
id = 1
dofs = ["x"]

[substructure.specimen]
physical = true
estimate = {{ dofs = [[1, "x"]], stiffness = [[4.0e5]] }}

[[element]]
type = "mass"
node = 1
mass = 1000.0
substructure = "specimen"

[[element]]
type = "mostaghel"
name = "storey"
nodes = [1]
dof = "x"
k = 4.0e5
alpha = 0.02
delta = 0.005
substructure = "specimen"

[[ground_motion]]
direction = "x"
synthetic = {{ seed = 15, duration = 8.0, pga = 1.0 }}

[analysis]
integrator = "{integrator}"
time_step = {dt}
duration = 8.0
{extra}
"#
    )
}

/// `(d, r)` after every step: the displacement of node 1 and the specimen force, read from
/// the force column of the recorded specimen channel through a monolithic state (mg-alpha:
/// the element's `r` state) or the FOM/OSM partition (the force measured at the predictor).
fn displacements(text: &str) -> Vec<f64> {
    history(text)
}

/// Cumulative energy error E_c (Hung and El-Tawil 2009, eq 18) against a fine-step reference:
/// `Σ_j |r_j^ref (d_j − d_j^ref)|`, the library's [`hybridsim::analysis::cumulative_energy_error`].
fn cumulative_energy_error(d: &[f64], d_ref: &[f64], r_ref: &[f64]) -> f64 {
    hybridsim::analysis::cumulative_energy_error(d, d_ref, r_ref).unwrap_or_else(|e| panic!("{e}"))
}

/// FOM with every tangent update beats OSM (initial stiffness) on E_c; all reported.
#[test]
fn inelastic_sdof_energy_error_fom_beats_osm() {
    let dt = 0.01;
    let sub = 20;
    // Reference: the monolithic trapezoidal rule at Δt/20, sampled at Δt.
    let m = model(&inelastic("mg-alpha", dt / sub as f64, ""));
    let mut integ = hybridsim::integrators::build(&m).unwrap();
    let (mut d_ref, mut r_ref) = (Vec::new(), Vec::new());
    for k in 1..=m.analysis.n_steps() {
        integ.step().unwrap();
        if k % sub == 0 {
            d_ref.push(integ.state(0)[0]);
            r_ref.push(integ.state(0)[2]); // the Mostaghel element's force state `r`
        }
    }
    let peak_ref = peak(&d_ref);
    assert!(peak_ref > 0.01, "the reference yields: peak {peak_ref}");
    let osm = displacements(&inelastic("osm", dt, ""));
    let e_osm = cumulative_energy_error(&osm, &d_ref, &r_ref);
    eprintln!("reference peak {peak_ref:.5} m; OSM E_c = {e_osm:.4e} J");
    for update in ["none", "bfgs", "dfp", "broyden", "broyden-family", "sr1"] {
        let fom = displacements(&inelastic(
            "fom",
            dt,
            &format!("[analysis.estimator]\nupdate = \"{update}\"\nthreshold = 1e-6"),
        ));
        let e = cumulative_energy_error(&fom, &d_ref, &r_ref);
        eprintln!(
            "FOM {update}: E_c = {e:.4e} J, E_c/E_c(OSM) = {:.4}",
            e / e_osm
        );
        assert!(e < e_osm, "FOM {update}: {e} ≥ OSM {e_osm}");
    }
}

/// `examples/fom_01_six_storey.toml` with a seeded synthetic record at PGA = 1 g (no file
/// needed), `duration` s, and `edit` applied.
fn six_storey(duration: f64, edit: impl FnOnce(&mut toml::Table)) -> hybridsim::Model {
    example_with("fom_01_six_storey.toml", |t| {
        t.insert(
            "ground_motion".into(),
            toml::Value::Array(vec![toml::Value::Table(
                "direction = \"x\"\nsynthetic = { seed = 15, duration = 10.0, pga = 1.0 }"
                    .parse()
                    .unwrap(),
            )]),
        );
        set(t, "analysis", "duration", duration);
        edit(t);
    })
}

/// Node-1 displacement after every step.
fn run_node1(m: &hybridsim::Model) -> Vec<f64> {
    let mut integ = hybridsim::integrators::build(m).unwrap_or_else(|e| panic!("{e}"));
    (0..m.analysis.n_steps())
        .map(|_| {
            integ.step().unwrap_or_else(|e| panic!("{e}"));
            integ.state(0)[0]
        })
        .collect()
}

fn set_integrator(t: &mut toml::Table, integrator: &str, update: Option<&str>) {
    set(t, "analysis", "integrator", integrator);
    let a = t["analysis"].as_table_mut().unwrap();
    a.remove("estimator");
    if let Some(u) = update {
        a.insert(
            "estimator".into(),
            toml::Value::Table(format!("update = \"{u}\"").parse().unwrap()),
        );
    }
}

fn overshoot(t: &mut toml::Table, amount: f64) {
    let act = t["lab"]["actuator"].as_array_mut().unwrap()[0]
        .as_table_mut()
        .unwrap();
    act.insert(
        "control_error".into(),
        toml::Value::Table(
            format!("kind = \"overshoot\"\namount = {amount:e}")
                .parse()
                .unwrap(),
        ),
    );
}

/// The six-storey building, first storey on the virtual lab: E_c at node 1 against a
/// monolithic trapezoidal reference at Δt/10, for FOM with every update and for OSM, with an
/// exact actuator and with a constant 0.001 in (2.54e-5 m) overshoot.
#[test]
fn six_storey_on_the_virtual_lab_with_overshoot() {
    let duration = 10.0;
    let sub = 10;
    let reference = six_storey(duration, |t| {
        set_integrator(t, "mg-alpha", None);
        t.remove("lab");
        t.remove("safety");
        set(t, "analysis", "time_step", 0.005 / sub as f64);
    });
    let mut integ = hybridsim::integrators::build(&reference).unwrap();
    let (mut d_ref, mut r_ref) = (Vec::new(), Vec::new());
    for k in 1..=reference.analysis.n_steps() {
        integ.step().unwrap();
        if k % sub == 0 {
            d_ref.push(integ.state(0)[0]);
            r_ref.push(integ.state(0)[12]); // storey 1's force state `r`
        }
    }
    eprintln!("reference: peak storey-1 drift {:.4} m", peak(&d_ref));
    let e_c = |integrator: &str, update: Option<&str>, error: f64| {
        let m = six_storey(duration, |t| {
            set_integrator(t, integrator, update);
            if error > 0.0 {
                overshoot(t, error);
            }
        });
        let d = run_node1(&m);
        cumulative_energy_error(&d, &d_ref, &r_ref)
    };
    let osm = e_c("osm", None, 0.0);
    let osm_over = e_c("osm", None, 2.54e-5);
    eprintln!("OSM: E_c = {osm:.4e} J exact actuator, {osm_over:.4e} J with overshoot");
    for update in ["none", "bfgs", "dfp", "broyden", "broyden-family", "sr1"] {
        let fom = e_c("fom", Some(update), 0.0);
        let fom_over = e_c("fom", Some(update), 2.54e-5);
        eprintln!(
            "FOM {update}: E_c = {fom:.4e} J ({:.4} of OSM), with overshoot {fom_over:.4e} J \
             ({:.4} of OSM with overshoot)",
            fom / osm,
            fom_over / osm_over
        );
        assert!(fom < osm && fom_over < osm_over, "FOM {update}");
    }
}

/// Spectral radius of the amplification matrix built numerically through export/import of the
/// state (as `hybridsim analyze spectral` does): FOM with the exact estimate is the trapezoidal
/// rule (ρ = 1); with ratio 10 it is slightly unstable at Ω = 0.1 (ρ ≈ 1.0001, ALGORITHMS.md
/// E39) and 1.19 at Ω = 1; OSM with an overestimated K_I stays ρ ≤ 1.
#[test]
fn spectral_radius_against_the_stiffness_ratio() {
    let rho = |integrator: &str, omega: f64, ratio: f64| {
        let extra = if integrator == "fom" {
            "[analysis.estimator]\nupdate = \"none\""
        } else {
            ""
        };
        let m = model(&sdof(integrator, omega, omega, ratio, extra));
        let mut integ = hybridsim::integrators::build(&m).unwrap();
        let a = hybridsim::analysis::spectral::amplification_matrix(integ.as_mut()).unwrap();
        hybridsim::analysis::spectral::spectral_radius(&a)
    };
    let r = rho("fom", 0.1, 1.0);
    assert!((r - 1.0).abs() < 1e-9, "{r}");
    let r = rho("fom", 0.1, 10.0);
    eprintln!("FOM, ratio 10: ρ(Ω = 0.1) = {r}");
    assert!(r > 1.00005 && r < 1.0002, "{r}");
    let r = rho("fom", 1.0, 10.0);
    eprintln!("FOM, ratio 10: ρ(Ω = 1) = {r}");
    assert!(r > 1.1 && r < 1.3, "{r}");
    let r = rho("fom", 2.0, 0.1);
    assert!(r > 1.5, "FOM, ratio 0.1, Ω = 2: {r}");
    for omega in [0.1, 1.0, 10.0] {
        let r = rho("osm", omega, 10.0);
        assert!(r <= 1.0 + 1e-9, "OSM, ratio 10, Ω = {omega}: {r}");
    }
}

/// The I-modification acts on the virtual lab's measured displacement: with an exact actuator
/// (no ADC error beyond 1 µm) it changes OSM little; with a 0.001 in overshoot it removes
/// `K_I (d^m − d̃)` from the measured force. Both runs complete; the E_c are reported.
#[test]
fn osm_i_modification_uses_the_measured_displacement() {
    let m = |imod: bool, error: f64| {
        six_storey(3.0, |t| {
            set_integrator(t, "osm", None);
            if imod {
                let a = t["analysis"].as_table_mut().unwrap();
                a.insert(
                    "estimator".into(),
                    toml::Value::Table("i_modification = true".parse().unwrap()),
                );
            }
            if error > 0.0 {
                overshoot(t, error);
            }
        })
    };
    let plain = run_node1(&m(false, 2.54e-5));
    let modified = run_node1(&m(true, 2.54e-5));
    let diff = plain
        .iter()
        .zip(&modified)
        .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
    eprintln!("OSM with overshoot: I-modification changes node 1 by up to {diff:.3e} m");
    assert!(diff > 0.0, "the I-modification did nothing");
}

/// The reference of Hung and El-Tawil (2009): the whole six-storey building integrated by an
/// implicit Newmark program (average acceleration, β = 1/4, γ = 1/2) at the *same* time step,
/// Newton iterations to convergence, each storey the exact bilinear law of the example's
/// Mostaghel springs (a spring αk in parallel with (1−α)k in series with a slider at ±δ),
/// mass-proportional damping `C = 0.47 M`; written here independently of the schemes under
/// test (as `scripts/fom/newmark_reference.py`). Returns the node-1 displacement and the
/// storey-1 shear after every step.
fn same_step_newmark(m: &hybridsim::Model) -> (Vec<f64>, Vec<f64>) {
    use nalgebra::{DMatrix, DVector};
    const N: usize = 6;
    let (mass, k, al, dl, a0) = (2.0e4, 4.0e7, 0.05, 0.01, 0.47);
    let dt = m.analysis.time_step;
    let ag = |t: f64| m.ground_motions[0].acceleration.value(t);
    let drifts =
        |u: &DVector<f64>| DVector::from_fn(N, |i, _| u[i] - if i > 0 { u[i - 1] } else { 0.0 });
    // Nodal restoring force, tangent, storey shears and slider-spring deformations at u from
    // the committed (s, d): exact for a straight path from the committed drift.
    let state = |u: &DVector<f64>, s0: &DVector<f64>, d0: &DVector<f64>| {
        let d = drifts(u);
        let mut r = DVector::zeros(N);
        let mut s = DVector::zeros(N);
        let mut kt = DMatrix::zeros(N, N);
        for i in 0..N {
            let trial = s0[i] + d[i] - d0[i];
            s[i] = trial.clamp(-dl, dl);
            r[i] = al * k * d[i] + (1.0 - al) * k * s[i];
            let ki = if trial.abs() < dl { k } else { al * k };
            kt[(i, i)] += ki;
            if i > 0 {
                kt[(i - 1, i - 1)] += ki;
                kt[(i, i - 1)] -= ki;
                kt[(i - 1, i)] -= ki;
            }
        }
        let mut nodal = r.clone();
        for i in 1..N {
            nodal[i - 1] -= r[i];
        }
        (nodal, kt, r, s, d)
    };
    let (beta, gamma) = (0.25, 0.5);
    let mut u = DVector::zeros(N);
    let mut v = DVector::zeros(N);
    let mut s = DVector::zeros(N);
    let mut d_c = DVector::zeros(N);
    let f = |t: f64| DVector::from_element(N, -mass * ag(t));
    let (nodal, ..) = state(&u, &s, &d_c);
    let mut a = (f(0.0) - &v * a0 * mass - nodal) / mass;
    let (mut d1, mut r1) = (Vec::new(), Vec::new());
    let keff_diag = mass / (beta * dt * dt) + a0 * mass * gamma / (beta * dt);
    for j in 1..=m.analysis.n_steps() {
        let t = j as f64 * dt;
        let u_pred = &u + &v * dt + &a * (dt * dt * (0.5 - beta));
        let v_pred = &v + &a * (dt * (1.0 - gamma));
        let mut un = u_pred.clone();
        let mut converged = None;
        for _ in 0..50 {
            let an = (&un - &u_pred) / (beta * dt * dt);
            let vn = &v_pred + &an * (gamma * dt);
            let (nodal, kt, r, s_new, d_new) = state(&un, &s, &d_c);
            let res = f(t) - &an * mass - &vn * (a0 * mass) - &nodal;
            let scale = (an.amax() * mass).max(nodal.amax()).max(1.0);
            if res.amax() <= 1e-10 * scale {
                converged = Some((an, vn, r, s_new, d_new));
                break;
            }
            let keff = kt + DMatrix::identity(N, N) * keff_diag;
            un += keff.lu().solve(&res).unwrap();
        }
        let (an, vn, r, s_new, d_new) = converged.unwrap_or_else(|| panic!("Newton, step {j}"));
        (u, v, a, s, d_c) = (un, vn, an, s_new, d_new);
        d1.push(u[0]);
        r1.push(r[0]);
    }
    (d1, r1)
}

/// The six-storey building with the synthetic record, 10 s, on MG-α without the lab: the
/// model of the same-Δt reference.
fn six_storey_reference_model(time_step: f64) -> hybridsim::Model {
    six_storey(10.0, |t| {
        set_integrator(t, "mg-alpha", None);
        t.remove("lab");
        t.remove("safety");
        set(t, "analysis", "time_step", time_step);
    })
}

/// E_c against the same-Δt implicit Newmark solution of a six-storey run (10 s):
/// `integrator`, its `update`, an overshoot `error` and the I-modification.
fn e_c_same_step(
    reference: &(Vec<f64>, Vec<f64>),
    integrator: &str,
    update: Option<&str>,
    error: f64,
    imod: bool,
) -> f64 {
    let m = six_storey(10.0, |t| {
        set_integrator(t, integrator, update);
        if imod {
            t["analysis"].as_table_mut().unwrap().insert(
                "estimator".into(),
                toml::Value::Table("i_modification = true".parse().unwrap()),
            );
        }
        if error > 0.0 {
            overshoot(t, error);
        }
    });
    cumulative_energy_error(&run_node1(&m), &reference.0, &reference.1)
}

/// E_c against the paper's kind of reference (implicit Newmark at the same Δt): FOM with
/// every update beats OSM by an order of magnitude (measured 0.04–0.21 × OSM), as the paper
/// reports; against a fine-step reference the time-discretization error that FOM, OSM and
/// Newmark at Δt share dominates and FOM gains only 10–13 %
/// (`six_storey_on_the_virtual_lab_with_overshoot`). With the 0.001 in overshoot FOM still
/// beats OSM.
#[test]
fn six_storey_against_the_same_step_newmark_reference() {
    let reference = same_step_newmark(&six_storey_reference_model(0.005));
    // The independent Newmark agrees with hybridsim's monolithic scheme at Δt/10 to the
    // discretization error: peaks within 2 %.
    let fine_d: Vec<f64> = run_node1(&six_storey_reference_model(0.0005))
        .into_iter()
        .skip(9)
        .step_by(10)
        .collect();
    let d_ref = &reference.0;
    assert!(
        (peak(&fine_d) / peak(d_ref) - 1.0).abs() < 0.02,
        "{} {}",
        peak(&fine_d),
        peak(d_ref)
    );
    let osm = e_c_same_step(&reference, "osm", None, 0.0, false);
    let osm_over = e_c_same_step(&reference, "osm", None, 2.54e-5, false);
    eprintln!("same-Δt Newmark reference: OSM E_c = {osm:.4e} J, with overshoot {osm_over:.4e} J");
    for update in ["none", "bfgs", "dfp", "broyden", "broyden-family", "sr1"] {
        let fom = e_c_same_step(&reference, "fom", Some(update), 0.0, false);
        let fom_over = e_c_same_step(&reference, "fom", Some(update), 2.54e-5, false);
        eprintln!(
            "FOM {update}: E_c = {fom:.4e} J ({:.4} of OSM), with overshoot {fom_over:.4e} J \
             ({:.4} of OSM with overshoot)",
            fom / osm,
            fom_over / osm_over
        );
        assert!(fom < 0.3 * osm, "FOM {update}: {fom} vs OSM {osm}");
        assert!(fom_over < osm_over, "FOM {update} with overshoot");
    }
}

/// The paper's Fig 15 (six-storey model, constant 0.001 in overshoot): OSM with the
/// I-modification (Nakashima et al. 1990) deviates from the reference, FOM does not. Here,
/// against the same-Δt Newmark solution, OSM with the I-modification is worse than OSM
/// without it (measured 4.3×: the correction `K_I (d^m − d̃)` uses the initial stiffness while
/// the storey has yielded) and FOM (BFGS) beats both.
#[test]
fn osm_i_modification_against_the_papers_fig_15() {
    let reference = same_step_newmark(&six_storey_reference_model(0.005));
    let osm = e_c_same_step(&reference, "osm", None, 2.54e-5, false);
    let imod = e_c_same_step(&reference, "osm", None, 2.54e-5, true);
    let fom = e_c_same_step(&reference, "fom", Some("bfgs"), 2.54e-5, false);
    eprintln!(
        "0.001 in overshoot, E_c against the same-Δt Newmark solution: OSM {osm:.4e} J, OSM with \
         the I-modification {imod:.4e} J ({:.3} × OSM), FOM BFGS {fom:.4e} J",
        imod / osm
    );
    assert!(imod > 1.5 * osm, "I-modification: {imod} vs {osm}");
    assert!(fom < osm && fom < imod, "FOM {fom}");
}
