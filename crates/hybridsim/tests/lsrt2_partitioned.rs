//! Partitioned LSRT2 (Bursi et al. 2011, §§3–6; ALGORITHMS.md A4–A6, E20–E22): observed order
//! against the exact solution of the SDoF split-mass model of §5.1, and the interface drift
//! without and with projection.
mod common;
use common::*;

/// The split-mass SDoF of §5.1: m = mA + mB = 1, k = kA + kB = 1, b1 = mA/mB = kB/kA,
/// d(0) = 1, v(0) = 1, so that u(t) = cos t + sin t.
fn split_mass(b1: f64, analysis: &str, dt: f64, duration: f64) -> String {
    let (ma, mb) = (b1 / (1.0 + b1), 1.0 / (1.0 + b1));
    let (ka, kb) = (1.0 / (1.0 + b1), b1 / (1.0 + b1));
    format!(
        r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = {{ x = 1.0 }}
initial_velocity = {{ x = 1.0 }}
[substructure.A]
[substructure.B]
[[element]]
type = "mass"
node = 1
mass = {ma:?}
substructure = "A"
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = {ka:?}
substructure = "A"
[[element]]
type = "mass"
node = 1
mass = {mb:?}
substructure = "B"
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = {kb:?}
substructure = "B"
[analysis]
{analysis}
time_step = {dt:?}
duration = {duration:?}
"#
    )
}

/// Error of both interface copies at the end against cos t + sin t, and the largest
/// interface displacement gap |u^A − u^B| over the run.
fn errors(b1: f64, analysis: &str, dt: f64, t_end: f64) -> (f64, f64) {
    let m = model(&split_mass(b1, analysis, dt, t_end));
    let mut integ = hybridsim::integrators::build(&m).unwrap();
    let n = (t_end / dt).round() as u64;
    let mut drift: f64 = 0.0;
    for _ in 0..n {
        integ.step().unwrap();
        drift = drift.max((integ.state(0)[0] - integ.state(1)[0]).abs());
    }
    let t = integ.time();
    let exact = t.cos() + t.sin();
    let e = (integ.state(0)[0] - exact)
        .abs()
        .max((integ.state(1)[0] - exact).abs());
    (e, drift)
}

const VARIANTS: [&str; 6] = [
    "integrator = \"lsrt2-partitioned\"",
    "integrator = \"lsrt2-partitioned\"\nlsrt2_gamma = \"high\"",
    "integrator = \"lsrt2-partitioned\"\nprojection = \"velocity\"",
    "integrator = \"lsrt2-interfield\"\nsubcycles = 2",
    "integrator = \"lsrt2-interfield\"\nsubcycles = 10",
    "integrator = \"lsrt2-interfield\"\nsubcycles = 2\nprojection = \"displacement-velocity\"",
];

#[test]
fn every_variant_is_second_order_on_the_split_mass_model() {
    for b1 in [0.1, 0.5] {
        for v in VARIANTS {
            let dts = [0.02, 0.01, 0.005, 0.0025];
            let e: Vec<f64> = dts.iter().map(|dt| errors(b1, v, *dt, 4.0).0).collect();
            let s = slopes(&e);
            println!(
                "b1 = {b1}, {}: errors {e:?} slopes {s:.3?}",
                v.replace('\n', ", ")
            );
            assert!(
                (s.last().unwrap() - 2.0).abs() < 0.15,
                "b1 = {b1}, {v}: slopes {s:?}"
            );
        }
    }
}

#[test]
fn projection_removes_the_interface_drift() {
    for scheme in [
        "integrator = \"lsrt2-partitioned\"",
        "integrator = \"lsrt2-interfield\"\nsubcycles = 2",
    ] {
        let dt = 0.01;
        let (_, none) = errors(0.1, scheme, dt, 20.0);
        let (_, vel) = errors(
            0.1,
            &format!("{scheme}\nprojection = \"velocity\""),
            dt,
            20.0,
        );
        let (_, both) = errors(
            0.1,
            &format!("{scheme}\nprojection = \"displacement-velocity\""),
            dt,
            20.0,
        );
        println!(
            "{}: max |uA − uB| over 20 s: none {none:.3e}, velocity {vel:.3e}, \
             displacement-velocity {both:.3e}",
            scheme.replace('\n', ", ")
        );
        assert!(
            none > 1e-5,
            "the drift should be visible without projection"
        );
        assert!(vel < none, "velocity projection should reduce the drift");
        assert!(
            both < 1e-12,
            "displacement-velocity projection leaves {both}"
        );
    }
}
