//! Partitioned LSRT2 (Bursi et al. 2011, §§3–6; ALGORITHMS.md A4–A6, E20–E22): observed order
//! against the exact solution of the SDoF split-mass model of §5.1, and the interface drift
//! without and with projection.
mod common;
use common::*;

/// One node `x` shared by subdomains, each `(name, mass, stiffness, damping)`, with the initial
/// state `(d0, v0)` and `[analysis]` given by `analysis`, `time_step` and `duration`.
fn shared_node_model(
    initial: (f64, f64),
    subdomains: &[(&str, f64, f64, f64)],
    analysis: &str,
    dt: f64,
    duration: f64,
) -> String {
    let (d0, v0) = initial;
    let mut t = format!(
        "[[node]]\nid = 1\ndofs = [\"x\"]\ninitial_displacement = {{ x = {d0:?} }}\n\
         initial_velocity = {{ x = {v0:?} }}\n"
    );
    for (name, ..) in subdomains {
        t += &format!("[substructure.{name}]\n");
    }
    for (name, m, k, c) in subdomains {
        t += &format!(
            "[[element]]\ntype = \"mass\"\nnode = 1\nmass = {m:?}\nsubstructure = \"{name}\"\n\
             [[element]]\ntype = \"spring\"\nnodes = [1]\ndof = \"x\"\nk = {k:?}\n\
             substructure = \"{name}\"\n"
        );
        if *c != 0.0 {
            t += &format!(
                "[[element]]\ntype = \"dashpot\"\nnodes = [1]\ndof = \"x\"\nc = {c:?}\n\
                 substructure = \"{name}\"\n"
            );
        }
    }
    t + &format!("[analysis]\n{analysis}\ntime_step = {dt:?}\nduration = {duration:?}\n")
}

/// The split-mass SDoF of §5.1: m = mA + mB = 1, k = kA + kB = 1, b1 = mA/mB = kB/kA,
/// d(0) = 1, v(0) = 1, so that u(t) = cos t + sin t.
fn split_mass(b1: f64, analysis: &str, dt: f64, duration: f64) -> String {
    let (ma, mb) = (b1 / (1.0 + b1), 1.0 / (1.0 + b1));
    let (ka, kb) = (1.0 / (1.0 + b1), b1 / (1.0 + b1));
    shared_node_model(
        (1.0, 1.0),
        &[("A", ma, ka, 0.0), ("B", mb, kb, 0.0)],
        analysis,
        dt,
        duration,
    )
}

/// Errors at halved time steps, their slopes printed under `label` and the last slope
/// required within `tolerance` of 2.
fn assert_second_order(label: &str, dts: &[f64], error: impl Fn(f64) -> f64, tolerance: f64) {
    let e: Vec<f64> = dts.iter().map(|dt| error(*dt)).collect();
    let s = slopes(&e);
    println!("{label}: errors {e:?} slopes {s:.3?}");
    assert!(
        (s.last().unwrap() - 2.0).abs() < tolerance,
        "{label}: slopes {s:?}"
    );
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
            assert_second_order(
                &format!("b1 = {b1}, {}", v.replace('\n', ", ")),
                &[0.02, 0.01, 0.005, 0.0025],
                |dt| errors(b1, v, dt, 4.0).0,
                0.15,
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

/// The interfield cycle's amplification matrix over eq 34's state (14 for the SDoF), built
/// numerically from export/import_state: the paper's census (§5.1) of 10 non-zero eigenvalues,
/// one of them exactly unit (the drift mode), and 4 zero.
#[test]
fn interfield_amplification_matrix_has_the_papers_eigenvalue_census() {
    use hybridsim::analysis::spectral::{amplification_matrix, eigenvalues};
    for b1 in [0.1, 0.5] {
        for om_a in [0.1, 1.0, 3.0] {
            // Ω = ω Δt_A with Δt_A = 4Δt and ω = 1.
            let dt = om_a / 4.0;
            let m = model(&split_mass(
                b1,
                "integrator = \"lsrt2-interfield\"\nsubcycles = 10",
                dt,
                dt,
            ));
            let mut integ = hybridsim::integrators::build(&m).unwrap();
            assert_eq!(integ.state_len(), 14);
            let a = amplification_matrix(integ.as_mut()).unwrap();
            let ev = eigenvalues(&a).unwrap();
            let nonzero = ev.iter().filter(|l| l.norm() > 1e-7).count();
            let unit = ev.iter().filter(|l| (l.norm() - 1.0).abs() < 1e-7).count();
            let rho = ev.iter().map(|l| l.norm()).fold(0.0, f64::max);
            println!("b1 = {b1}, Ω_A = {om_a}: ρ = {rho:.6}, non-zero {nonzero}, unit {unit}");
            assert_eq!(nonzero, 10);
            assert!(unit >= 1);
        }
    }
}

/// The 2-DoF split system of Table 1 (translational row; ALGORITHMS.md E24 for the rotational
/// row's typo, so one DOF per subdomain pair is used), Δt_A = 16 ms (Δt = 4 ms), Δt_B = 2 ms
/// (ss = 2): observed order 2 against the exact free vibration, every variant.
#[test]
fn table_1_translational_system_is_second_order() {
    let (mn, kn, cn, mp, kp): (f64, f64, f64, f64, f64) =
        (1658.2, 306640.0, 555.66, 552.7, 39670.0);
    let text = |analysis: &str, dt: f64| {
        shared_node_model(
            (0.01, 0.0),
            &[("numerical", mn, kn, cn), ("physical", mp, kp, 0.0)],
            analysis,
            dt,
            0.512,
        )
    };
    // Exact damped free vibration of the emulated system.
    let (m, k, c) = (mn + mp, kn + kp, cn);
    let wn = (k / m).sqrt();
    let zeta = c / (2.0 * (k * m).sqrt());
    let wd = wn * (1.0 - zeta * zeta).sqrt();
    let exact =
        |t: f64| 0.01 * (-zeta * wn * t).exp() * ((wd * t).cos() + zeta * wn / wd * (wd * t).sin());
    for v in [
        "integrator = \"lsrt2-partitioned\"",
        "integrator = \"lsrt2-interfield\"\nsubcycles = 2",
        "integrator = \"lsrt2-interfield\"\nsubcycles = 2\nprojection = \"velocity\"",
    ] {
        assert_second_order(
            &format!("Table 1, {}", v.replace('\n', ", ")),
            &[0.004, 0.002, 0.001, 0.0005],
            |dt| {
                let mdl = model(&text(v, dt));
                let mut integ = hybridsim::integrators::build(&mdl).unwrap();
                for _ in 0..(0.512 / dt).round() as u64 {
                    integ.step().unwrap();
                }
                (integ.state(0)[0] - exact(integ.time())).abs()
            },
            0.2,
        );
    }
}

/// The quickstart's virtual lab driven by both partitioned LSRT2 schemes through the
/// physical port: two commands per (sub)step, one per controller tick (Δt^C = 1 ms), the run
/// completes armed and tracks the pg-alpha run of the same model.
#[test]
fn both_schemes_drive_the_virtual_lab_one_command_per_tick() {
    let reference = {
        let m = example_with("quickstart.toml", |t| set(t, "analysis", "duration", 2.0));
        let sim = run(m);
        sim.integrator.state(0)[0]
    };
    for (integrator, dt, ss) in [
        ("lsrt2-partitioned", 0.002, 1),
        ("lsrt2-interfield", 0.004, 2),
    ] {
        let m = example_with("quickstart.toml", |t| {
            set(t, "analysis", "integrator", integrator);
            set(t, "analysis", "duration", 2.0);
            set(t, "analysis", "time_step", dt);
            set(t, "analysis", "subcycles", ss as i64);
            t["analysis"].as_table_mut().unwrap().remove("rho_inf");
        });
        let mut sim = run(m);
        let steps = sim.integrator.steps_taken();
        let mut commands = 0;
        let mut armed = false;
        sim.integrator.for_each_lab(&mut |_, lab| {
            let s = lab.safety_summary();
            commands = s.commands_sent;
            armed = s.armed;
        });
        let u = sim.integrator.state(0)[0];
        println!(
            "{integrator}: {steps} steps, {commands} commands, armed {armed}, u = {u:.6e} \
             (pg-alpha {reference:.6e})"
        );
        assert!(armed);
        assert!(commands >= 2 * ss as u64 * steps - 2 * ss as u64);
        assert!((u - reference).abs() < 0.05 * reference.abs().max(1e-3));
    }
}

/// The numbered example of the paper's §5.1 parses and runs.
#[test]
fn the_interfield_example_runs() {
    let m = example_with("lsrt2_interfield_split_mass.toml", |_| {});
    let sim = run(m);
    let t = sim.integrator.time();
    assert!((sim.integrator.state(1)[0] - (t.cos() + t.sin())).abs() < 2e-2);
}

/// `analyze spectral`'s sweep runs on the interfield scheme (Fig 6 of the paper): the
/// spectral radius over Ω for b1 = 0.1, ss = 10, γ = 1 − √2/2, printed for the docs; the
/// drift mode (unit eigenvalue) is found at every Ω.
#[test]
fn spectral_sweep_of_the_interfield_scheme() {
    use hybridsim::analysis::spectral::{log_sweep, spectral_sweep, SpectralOptions};
    for (gamma, ss) in [("low", 10), ("high", 10), ("low", 2), ("high", 2)] {
        let m = example_with("lsrt2_interfield_split_mass.toml", |t| {
            set(t, "analysis", "subcycles", ss as i64);
            set(t, "analysis", "lsrt2_gamma", gamma);
        });
        let opts = SpectralOptions {
            // Ω = ωΔt; the paper's Ω_A = 4ωΔt from 0.01 to 1000.
            omegas: log_sweep(0.0025, 250.0, 41),
            ..SpectralOptions::default()
        };
        let r = spectral_sweep(&m, &opts).unwrap();
        let bad: Vec<f64> = r
            .points
            .iter()
            .filter(|p| p.rho_without_drift > 1.0 + 1e-6)
            .map(|p| 4.0 * p.omega)
            .collect();
        println!(
            "γ {gamma}, ss = {ss}: max ρ {:.4}, without the drift mode {:.4}, > 1 + 1e-6 at \
             Ω_A = 4ωΔt in {:?}",
            r.max_rho(),
            r.max_rho_without_drift(),
            bad.first().zip(bad.last())
        );
        assert!(r.points.iter().all(|p| p.drift_modes >= 1 || p.rho < 1.0));
    }
}

/// Bad keys of the partitioned LSRT2 schemes are errors naming the file, the field and why.
#[test]
fn bad_keys_name_the_field() {
    use hybridsim::model::Model;
    let cases = [
        (
            "integrator = \"lsrt2-partitioned\"\nprojection = \"position\"",
            "analysis.projection",
        ),
        (
            "integrator = \"lsrt2-partitioned\"\nsubcycles = 2",
            "analysis.subcycles",
        ),
        (
            "integrator = \"lsrt2-interfield\"\ncoarse = \"C\"",
            "analysis.coarse",
        ),
        (
            "integrator = \"lsrt2-partitioned\"\ncoarse = \"A\"",
            "analysis.coarse",
        ),
        (
            "integrator = \"pg-alpha\"\nprojection = \"velocity\"",
            "analysis.projection",
        ),
        (
            "integrator = \"lsrt2-interfield\"\nstart = \"zero\"",
            "analysis.start",
        ),
    ];
    for (analysis, field) in cases {
        let text = split_mass(0.1, analysis, 0.01, 1.0);
        let e = Model::from_toml(&text, "m.toml", &hybridsim::model::NoFiles)
            .err()
            .unwrap_or_else(|| panic!("{analysis}: accepted"))
            .to_string();
        println!("{e}");
        assert!(e.contains("m.toml") && e.contains(field), "{analysis}: {e}");
    }
}
