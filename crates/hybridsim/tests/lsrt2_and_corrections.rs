//! LSRT2 (Bursi et al. 2011, §2; ALGORITHMS.md A3) and the order of the single-correction schemes
//! on a nonlinear model (E38).
mod common;
use common::*;
use hybridsim::analysis::spectral::{amplification_matrix, spectral_radius};
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::Lsrt2;
use hybridsim::model::{LSRT2_GAMMA_HIGH, LSRT2_GAMMA_LOW};

fn sdof(extra_analysis: &str, spring: &str, dt: f64, duration: f64) -> String {
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
nodes = [1]
dof = "x"
{spring}
[analysis]
{extra_analysis}
time_step = {dt:?}
duration = {duration:?}
"#
    )
}

#[test]
fn lsrt2_is_second_order_for_both_gammas() {
    for gamma in ["low", "high"] {
        let dts = [0.04, 0.02, 0.01, 0.005];
        let t_end = 10.0;
        let errors: Vec<f64> = dts
            .iter()
            .map(|dt| {
                let text = sdof(
                    &format!("integrator = \"lsrt2\"\nlsrt2_gamma = \"{gamma}\""),
                    "type = \"spring\"\nk = 1.0",
                    *dt,
                    t_end,
                );
                let sim = run(model(&text));
                (sim.integrator.state(0)[0] - t_end.cos()).abs()
            })
            .collect();
        let s = slopes(&errors);
        println!("LSRT2 gamma {gamma}: errors {errors:?} slopes {s:.4?}");
        assert!((s.last().unwrap() - 2.0).abs() <= 0.05);
    }
}

#[test]
fn lsrt2_is_l_stable() {
    for gamma in [LSRT2_GAMMA_LOW, LSRT2_GAMMA_HIGH] {
        let mut last = f64::INFINITY;
        for om in [1e2, 1e4, 1e6, 1e8] {
            let text = sdof(
                "integrator = \"lsrt2\"",
                "type = \"spring\"\nk = 1.0",
                om,
                2.0 * om,
            );
            let m = model(&text);
            let part = build_partitions(&m, Grouping::Monolithic)
                .unwrap()
                .remove(0);
            let mut integ = Lsrt2::new(
                part,
                &hybridsim::integrators::StepSettings::new(om).lsrt2_gamma(gamma),
            )
            .unwrap();
            let r = spectral_radius(&amplification_matrix(&mut integ).unwrap());
            println!("LSRT2 gamma {gamma:.5}: spectral radius at Ω = {om:e}: {r:.3e}");
            last = r;
        }
        assert!(last < 1e-6, "R(∞) should vanish, found {last}");
        // A-stable along the imaginary axis: never above one.
        for k in 0..60 {
            let om = 10f64.powf(-2.0 + k as f64 * 0.1);
            let text = sdof(
                "integrator = \"lsrt2\"",
                "type = \"spring\"\nk = 1.0",
                om,
                2.0 * om,
            );
            let m = model(&text);
            let part = build_partitions(&m, Grouping::Monolithic)
                .unwrap()
                .remove(0);
            let mut integ = Lsrt2::new(
                part,
                &hybridsim::integrators::StepSettings::new(om).lsrt2_gamma(gamma),
            )
            .unwrap();
            let r = spectral_radius(&amplification_matrix(&mut integ).unwrap());
            assert!(r <= 1.0 + 1e-12, "Ω = {om}: {r}");
        }
    }
}

/// Reference solution of ü + u + u³ = 0, u(0) = 1, by classical Runge–Kutta with a fine step.
fn duffing_reference(t_end: f64) -> f64 {
    let f = |y: [f64; 2]| [y[1], -y[0] - y[0].powi(3)];
    let n = 200_000;
    let h = t_end / n as f64;
    let mut y = [1.0, 0.0];
    for _ in 0..n {
        let k1 = f(y);
        let k2 = f([y[0] + 0.5 * h * k1[0], y[1] + 0.5 * h * k1[1]]);
        let k3 = f([y[0] + 0.5 * h * k2[0], y[1] + 0.5 * h * k2[1]]);
        let k4 = f([y[0] + h * k3[0], y[1] + h * k3[1]]);
        for i in 0..2 {
            y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    y[0]
}

#[test]
fn a_second_correction_restores_second_order_on_a_duffing_oscillator() {
    let t_end = 5.0;
    let reference = duffing_reference(t_end);
    for rho in [1.0, 0.5] {
        let mut finest = Vec::new();
        for corrections in [1i64, 2] {
            let errors: Vec<f64> = [0.02, 0.01, 0.005, 0.0025]
                .iter()
                .map(|dt| {
                    let text = sdof(
                        &format!("integrator = \"mg-alpha\"\nrho_inf = {rho:?}\ncorrections = {corrections}"),
                        "type = \"cubic_spring\"\nk = 1.0\nk3 = 1.0",
                        *dt,
                        t_end,
                    );
                    let sim = run(model(&text));
                    (sim.integrator.state(0)[0] - reference).abs()
                })
                .collect();
            let s = slopes(&errors);
            println!(
                "rho_inf = {rho}, corrections = {corrections}: errors {errors:?} slopes {s:.3?}"
            );
            finest.push(*s.last().unwrap());
        }
        assert!(
            (finest[0] - 1.0).abs() < 0.15,
            "one correction should be first order: {}",
            finest[0]
        );
        assert!(
            (finest[1] - 2.0).abs() < 0.1,
            "two corrections should be second order: {}",
            finest[1]
        );
    }
}
