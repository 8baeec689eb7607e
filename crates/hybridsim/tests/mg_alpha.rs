//! MG-α checks of Abbiati et al. (2019), §2.1 (ALGORITHMS.md A1, B2).
mod common;
use common::*;
use hybridsim::analysis::spectral::{amplification_matrix, spectral_radius};
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{AlphaParameters, MgAlpha, TimeIntegrator};
use nalgebra::{DMatrix, DVector};

/// ü + ω²u = 0 with ω = 1 (m = k = 1), u(0) = 1.
fn sdof(integrator: &str, rho: f64, dt: f64, duration: f64) -> String {
    format!(
        r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = {{ x = 1.0 }}
[[element]]
type = "mass"
node = 1
mass = 1.0
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 1.0
[analysis]
integrator = "{integrator}"
rho_inf = {rho:?}
time_step = {dt:?}
duration = {duration:?}
"#
    )
}

fn mg(rho: f64, dt: f64) -> MgAlpha {
    let m = model(&sdof("mg-alpha", rho, dt, 2.0 * dt));
    let part = build_partitions(&m, Grouping::Monolithic)
        .unwrap()
        .remove(0);
    MgAlpha::new(
        part,
        &hybridsim::integrators::StepSettings::new(dt).rho_inf(rho),
    )
    .unwrap()
}

#[test]
fn parameters_match_the_table() {
    let table = [
        (1.0, 0.5, 0.5, 0.5),
        (0.9, 0.552632, 0.526316, 0.526316),
        (0.5, 0.833333, 0.666667, 0.666667),
        (0.2, 1.166667, 0.833333, 0.833333),
        (0.0, 1.5, 1.0, 1.0),
    ];
    for (rho, am, af, g) in table {
        let p = AlphaParameters::new(rho);
        assert!(
            (p.alpha_m - am).abs() < 1e-6
                && (p.alpha_f - af).abs() < 1e-6
                && (p.gamma - g).abs() < 1e-6
        );
    }
}

#[test]
fn second_order_on_the_free_oscillator_for_every_rho() {
    let t_end = 10.0; // not a whole number of periods (2π)
    for rho in [1.0, 0.9, 0.5, 0.2, 0.0] {
        let dts = [0.04, 0.02, 0.01, 0.005];
        let errors: Vec<f64> = dts
            .iter()
            .map(|dt| {
                let sim = run(model(&sdof("mg-alpha", rho, *dt, t_end)));
                let u = sim.integrator.state(0)[0];
                assert!((sim.integrator.time() - t_end).abs() < 1e-9);
                (u - t_end.cos()).abs()
            })
            .collect();
        let s = slopes(&errors);
        println!("rho_inf = {rho}: errors {errors:?}, slopes {s:.4?}");
        let last = *s.last().unwrap();
        assert!(
            (last - 2.0).abs() <= 0.05,
            "rho_inf = {rho}: finest slope {last}"
        );
    }
}

#[test]
fn rho_one_is_the_trapezoidal_rule() {
    let dt = 0.1;
    let mut integ = mg(1.0, dt);
    let a = DMatrix::from_row_slice(2, 2, &[0.0, 1.0, -1.0, 0.0]);
    let i = DMatrix::<f64>::identity(2, 2);
    let step = (&i - &a * (dt / 2.0)).try_inverse().unwrap() * (&i + &a * (dt / 2.0));
    let mut y = DVector::from_vec(vec![1.0, 0.0]);
    let mut maxdiff: f64 = 0.0;
    for _ in 0..200 {
        integ.step().unwrap();
        y = &step * y;
        let s = integ.state(0);
        maxdiff = maxdiff.max((s[0] - y[0]).abs()).max((s[1] - y[1]).abs());
    }
    println!("max |MG-α(ρ∞=1) − trapezoid| over 200 steps: {maxdiff:.3e}");
    assert!(maxdiff < 1e-13);
}

#[test]
fn spectral_radius_tends_to_rho_inf_and_never_grows() {
    for rho in [1.0, 0.9, 0.5, 0.2, 0.0] {
        let omegas: Vec<f64> = (0..=40)
            .map(|k| 10f64.powf(-2.0 + 8.0 * k as f64 / 40.0))
            .collect();
        let mut prev = f64::INFINITY;
        for om in &omegas {
            let mut integ = mg(rho, *om);
            let a = amplification_matrix(&mut integ).unwrap();
            let r = spectral_radius(&a);
            assert!(
                r <= prev + 1e-9,
                "rho_inf = {rho}: radius grows at Ω = {om}: {r} > {prev}"
            );
            prev = r;
            if (*om - 1e4).abs() < 1e-6 * 1e4 {
                assert!((r - rho).abs() <= 0.01, "Ω = 1e4: ρ = {r}");
            }
            if (*om - 1e6).abs() < 1e-6 * 1e6 {
                assert!((r - rho).abs() <= 2e-3, "Ω = 1e6: ρ = {r}");
            }
        }
        // Principal pair on the unit circle for ρ∞ = 1.
        if rho == 1.0 {
            let a = amplification_matrix(&mut mg(1.0, 0.5)).unwrap();
            let ev = hybridsim::analysis::spectral::eigenvalues(&a).unwrap();
            let on_circle = ev
                .iter()
                .filter(|z| (z.norm() - 1.0).abs() < 1e-12 && z.im.abs() > 1e-3)
                .count();
            assert_eq!(on_circle, 2);
        }
    }
}

#[test]
fn spurious_root_as_omega_vanishes() {
    for rho in [0.9, 0.5, 0.2, 0.0] {
        let p = AlphaParameters::new(rho);
        let a = amplification_matrix(&mut mg(rho, 1e-4)).unwrap();
        let ev = hybridsim::analysis::spectral::eigenvalues(&a).unwrap();
        let target = p.spurious_root();
        let best = ev
            .iter()
            .map(|z| ((z.re - target).powi(2) + z.im.powi(2)).sqrt())
            .fold(f64::INFINITY, f64::min);
        assert!(
            best < 1e-3,
            "rho_inf = {rho}: no eigenvalue near {target}: {ev:?}"
        );
    }
}

#[test]
fn discrete_frequency_and_damping_of_the_principal_root() {
    // ALGORITHMS.md E7: Ω = 0.1, ρ∞ = 0.5 gives Ω̄ = 0.099889, ζ̄ = 9.2e-6.
    let a = amplification_matrix(&mut mg(0.5, 0.1)).unwrap();
    let ev = hybridsim::analysis::spectral::eigenvalues(&a).unwrap();
    let z = ev
        .iter()
        .filter(|z| z.im > 0.0)
        .max_by(|a, b| a.norm().total_cmp(&b.norm()))
        .unwrap();
    let om_bar = z.arg().abs();
    let zeta = -z.norm().ln() / om_bar;
    assert!((om_bar - 0.099889).abs() < 2e-6, "{om_bar}");
    assert!((zeta - 9.2e-6).abs() < 0.2e-6, "{zeta}");
}

/// A damped linear chain stepped by MG-α folds the coupling product `B ṽ` into its residual,
/// so its steps never read `B` of `D`'s factors: MG-α frees it (issue 20: memory a DOF). A
/// parameter change may move the residual off the folded plan, after which the steps solve
/// with `B`: MG-α builds it again first, from the elements as factored — the entries a fresh
/// factorization of the same partition holds, to the bit — and steps on.
#[test]
fn a_folded_mg_alpha_frees_b_and_builds_it_back_before_a_parameter_change() {
    let n = 400;
    let mut t = String::from(
        "[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 1.0\n\
         [damping]\nalpha = 0.2\nbeta = 0.002\n",
    );
    for i in 1..=n {
        t += &format!(
            "[[node]]\nid = {i}\ndofs = [\"x\"]\n\
             [[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n"
        );
        let nodes = if i == 1 {
            "[1]".to_string()
        } else {
            format!("[{}, {i}]", i - 1)
        };
        t += &format!(
            "[[element]]\ntype = \"spring\"\nname = \"k{i}\"\nnodes = {nodes}\ndof = \"x\"\n\
             k = 40000.0\n"
        );
    }
    t += &format!("[[load]]\nnode = {n}\ndof = \"x\"\nconstant = 10.0\n");
    let m = model(&t);
    let part = build_partitions(&m, Grouping::Monolithic)
        .unwrap()
        .remove(0);
    let settings = hybridsim::integrators::StepSettings::from_analysis(&m.analysis);
    let params = AlphaParameters::new(settings.rho_inf);
    let fresh = hybridsim::integrators::AlphaStepper::factor(&part.state, params, 0.001).unwrap();
    let (start, cols, vals) = fresh.coupling().expect("the reduced path");
    let mut mg = MgAlpha::new(part, &settings).unwrap();
    let d = mg.stepper().factorization();
    assert!(d.is_reduced() && d.coupling_released() && d.coupling().is_none());
    for _ in 0..5 {
        mg.step().unwrap();
    }
    let slot = mg.partitions()[0]
        .state
        .slots
        .iter()
        .position(|s| s.name() == "k7")
        .unwrap();
    mg.set_element_parameter(0, slot, "k", 30000.0).unwrap();
    let d = mg.stepper().factorization();
    assert!(!d.coupling_released());
    let (s2, c2, v2) = d.coupling().expect("B built back");
    assert_eq!((s2, c2), (start, cols));
    assert!(v2.iter().zip(vals).all(|(a, b)| a.to_bits() == b.to_bits()));
    for _ in 0..5 {
        mg.step().unwrap();
    }
    assert!(mg.state(0).iter().all(|x| x.is_finite()));
    assert!(mg.state(0).iter().any(|&x| x != 0.0));
}
