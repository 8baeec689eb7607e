//! PG-α checks of Abbiati et al. (2019), §2.2 on the split-mass benchmark (ALGORITHMS.md A2,
//! B1, E8–E13).
mod common;
use common::*;
use nalgebra::{DMatrix, DVector};

/// Exact displacements [u1, u2] of the assembled split-mass model at `t` (modal solution).
fn exact(variant: u8, t: f64) -> [f64; 2] {
    let (m1, m2, m3, k1, k2) = match variant {
        1 => (4e3, 4e3, 9e3, 4e5, 5e5),
        _ => (4e3, 4e3, 9.0, 4e5, 5e5),
    };
    let m = DMatrix::from_row_slice(2, 2, &[m1 + m2, 0.0, 0.0, m3]);
    let k = DMatrix::from_row_slice(2, 2, &[k1 + k2, -k2, -k2, k2]);
    let modes = hybridsim::modal::modes(&m, &k).unwrap();
    let u0 = DVector::from_vec(vec![0.0, 0.01]);
    // q0 = Φᵀ M u0 for mass-normalized Φ.
    let q0 = modes.shapes.transpose() * &m * u0;
    let mut u = DVector::zeros(2);
    for i in 0..2 {
        u += modes.shapes.column(i) * (q0[i] * (modes.omega[i] * t).cos());
    }
    [u[0], u[1]]
}

fn split_mass(
    variant: u8,
    rho: f64,
    ss: i64,
    dt: f64,
    duration: f64,
    start: &str,
) -> hybridsim::Model {
    let file = if variant == 1 {
        "split_mass_v1.toml"
    } else {
        "split_mass_v2.toml"
    };
    example_with(file, |t| {
        set(t, "analysis", "rho_inf", rho);
        set(t, "analysis", "subcycles", ss);
        set(t, "analysis", "time_step", dt);
        set(t, "analysis", "duration", duration);
        set(t, "analysis", "start", start);
    })
}

/// Max-norm error over every displacement copy at the end of the run.
fn error(sim: &hybridsim::Simulation, variant: u8) -> f64 {
    let ex = exact(variant, sim.integrator.time());
    let integ = sim.integrator.as_ref();
    let mut e: f64 = 0.0;
    for u in displacement_copies(integ, 1, "x") {
        e = e.max((u - ex[0]).abs());
    }
    for u in displacement_copies(integ, 2, "x") {
        e = e.max((u - ex[1]).abs());
    }
    e
}

fn finest_slope(rho: f64, ss: i64, start: &str) -> (Vec<f64>, Vec<f64>) {
    let dts = [1e-3, 5e-4, 2.5e-4, 1.25e-4];
    let errors: Vec<f64> = dts
        .iter()
        .map(|dt| error(&run(split_mass(1, rho, ss, *dt, 0.01, start)), 1))
        .collect();
    let s = slopes(&errors);
    (errors, s)
}

#[test]
fn consistent_start_multiplier_is_2500_newton() {
    let sim = hybridsim::Simulation::new(split_mass(1, 1.0, 1, 1e-3, 0.01, "consistent")).unwrap();
    let l0 = sim.integrator.initial_multipliers()[0];
    assert!((l0 - 2500.0).abs() < 1e-9, "Λ0 = {l0}");
}

#[test]
fn second_order_on_variant_1_for_every_rho_and_subcycling() {
    for rho in [1.0, 0.9, 0.5, 0.2] {
        for ss in [1, 2, 5, 10] {
            let (errors, s) = finest_slope(rho, ss, "consistent");
            println!("rho_inf = {rho}, ss = {ss}: errors {errors:?}, slopes {s:.4?}");
            let last = *s.last().unwrap();
            assert!(
                (last - 2.0).abs() <= 0.05,
                "rho_inf = {rho}, ss = {ss}: slope {last}"
            );
        }
    }
}

#[test]
fn a_zero_multiplier_start_loses_the_order() {
    // ALGORITHMS.md E11: Λ0 = 0 with non-zero initial conditions gives pre-asymptotic slopes.
    let mut worst: f64 = 0.0;
    for ss in [2, 5, 10] {
        let (_, s) = finest_slope(0.9, ss, "zero");
        let last = *s.last().unwrap();
        println!("zero start, rho_inf = 0.9, ss = {ss}: slopes {s:.4?}");
        worst = worst.max((last - 2.0).abs());
    }
    assert!(worst > 0.05, "the zero start should fail the slope-2 test");
}

#[test]
fn without_subcycling_partitioned_equals_monolithic() {
    for rho in [1.0, 0.5] {
        let dt = 1e-3;
        let mut pg =
            hybridsim::Simulation::new(split_mass(1, rho, 1, dt, 1.0, "consistent")).unwrap();
        let mono = example_with("split_mass_v1.toml", |t| {
            set(t, "analysis", "integrator", "mg-alpha");
            set(t, "analysis", "rho_inf", rho);
            set(t, "analysis", "subcycles", 1i64);
            set(t, "analysis", "time_step", dt);
            set(t, "analysis", "duration", 1.0);
        });
        let mut mg = hybridsim::Simulation::new(mono).unwrap();
        let mut maxdiff: f64 = 0.0;
        let mut scale: f64 = 0.0;
        for _ in 0..1000 {
            pg.step().unwrap();
            mg.step().unwrap();
            let m = mg.integrator.state(0); // [u1, u2, v1, v2]
            for u in displacement_copies(pg.integrator.as_ref(), 1, "x") {
                maxdiff = maxdiff.max((u - m[0]).abs());
            }
            for u in displacement_copies(pg.integrator.as_ref(), 2, "x") {
                maxdiff = maxdiff.max((u - m[1]).abs());
            }
            scale = scale.max(m[1].abs());
        }
        println!("rho_inf = {rho}: max |PG-α(ss=1) − MG-α| = {maxdiff:.3e} (scale {scale:.3e})");
        assert!(maxdiff <= 1e-13, "{maxdiff}");
    }
}

fn energies(rho: f64, ss: i64, duration: f64) -> Vec<f64> {
    let mut sim =
        hybridsim::Simulation::new(split_mass(2, rho, ss, 1e-3, duration, "consistent")).unwrap();
    let n = sim.n_steps();
    let mut out = Vec::with_capacity(n as usize + 1);
    let total = |s: &mut hybridsim::Simulation| {
        s.integrator.energy(0).unwrap() + s.integrator.energy(1).unwrap()
    };
    out.push(total(&mut sim));
    for _ in 0..n {
        sim.step().unwrap();
        out.push(total(&mut sim));
    }
    out
}

#[test]
fn variant_2_energy_is_conserved_at_rho_one() {
    let e = energies(1.0, 1, 20.0);
    let e0 = e[0];
    assert!((e0 - 25.0).abs() < 1e-9, "E0 = {e0}");
    let drift = e.iter().map(|x| (x - e0).abs()).fold(0.0, f64::max) / e0;
    println!("ss = 1: max relative energy drift over 20 s: {drift:.3e}");
    assert!(drift <= 1e-10);

    let e = energies(1.0, 10, 20.0);
    let e0 = e[0];
    let dev = e.iter().map(|x| (x - e0).abs()).fold(0.0, f64::max) / e0;
    let per = 2000; // 2 s at Δt = 1e-3
    let first: f64 = e[..per].iter().sum::<f64>() / per as f64;
    let last: f64 = e[e.len() - per..].iter().sum::<f64>() / per as f64;
    let trend = (last - first).abs() / e0;
    println!(
        "ss = 10: max |E − E0|/E0 = {dev:.3e}, |mean(last 2 s) − mean(first 2 s)|/E0 = {trend:.3e}"
    );
    assert!(dev <= 1e-7);
    assert!(trend <= 1e-9);
}

#[test]
fn variant_2_energy_decays_for_rho_below_one() {
    for ss in [1, 10] {
        let e = energies(0.5, ss, 2.0);
        let loss = 1.0 - e.last().unwrap() / e[0];
        println!(
            "rho_inf = 0.5, ss = {ss}: energy lost in 2 s: {:.2} %",
            100.0 * loss
        );
        assert!(loss > 0.01);
        // Never gains energy beyond round-off.
        assert!(e.iter().all(|x| *x <= e[0] * (1.0 + 1e-9)));
    }
}
