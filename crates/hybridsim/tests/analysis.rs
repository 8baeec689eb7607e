//! Algorithm analysis (issue 6): amplification matrices built numerically from the flat
//! state of any scheme, against the closed forms of Abbiati et al. (2019, eqs 15–18, 22;
//! ALGORITHMS.md A1, A2, E7, E16), constraint-drift modes, lab inputs, convergence
//! slopes and energy.
mod common;
use common::*;
use hybridsim::analysis::spectral::{amplification_at, log_sweep};
use hybridsim::analysis::{
    convergence, energy_history, spectral_sweep, ConvergenceOptions, DelayLine, FrequencyReference,
    Reference, RootKind, SpectralOptions,
};
use hybridsim::integrators::AlphaParameters;
use nalgebra::DMatrix;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;
use common::counting::count as allocations;

/// The SDOF IVP of Abbiati et al. (2019), eq 19: ü + ω²u = 0 (m = 1, k = ω²), u(0) = 1.
fn sdof(omega: f64, rho: f64, integrator: &str) -> hybridsim::Model {
    model(&format!(
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
k = {k}

[analysis]
integrator = "{integrator}"
rho_inf = {rho}
time_step = 0.01
duration = 1.0
"#,
        k = omega * omega
    ))
}

/// The closed form 𝔸 = −𝕄⁻¹ℕ of Abbiati et al. (2019), eqs 15–16 for the SDOF oscillator (m = 1),
/// written out independently of the library: 𝕐 = [u, v, u̇, v̇, V_u, V_v].
fn closed_form(omega: f64, rho: f64, dt: f64) -> DMatrix<f64> {
    let am = (3.0 - rho) / (2.0 * (1.0 + rho));
    let af = 1.0 / (1.0 + rho);
    let g = 0.5 + am - af;
    let w2 = omega * omega;
    #[rustfmt::skip]
    let mm = DMatrix::from_row_slice(6, 6, &[
        // K Y + M Ẏ = F
        0.0, -1.0, 1.0, 0.0, 0.0, 0.0,
        w2, 0.0, 0.0, 1.0, 0.0, 0.0,
        // Y_{n+1} − γΔt V_{n+1} ...
        1.0, 0.0, 0.0, 0.0, -g * dt, 0.0,
        0.0, 1.0, 0.0, 0.0, 0.0, -g * dt,
        // −α_f Ẏ_{n+1} + α_m V_{n+1} ...
        0.0, 0.0, -af, 0.0, am, 0.0,
        0.0, 0.0, 0.0, -af, 0.0, am,
    ]);
    #[rustfmt::skip]
    let nn = DMatrix::from_row_slice(6, 6, &[
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        -1.0, 0.0, 0.0, 0.0, -dt * (1.0 - g), 0.0,
        0.0, -1.0, 0.0, 0.0, 0.0, -dt * (1.0 - g),
        0.0, 0.0, -(1.0 - af), 0.0, 1.0 - am, 0.0,
        0.0, 0.0, 0.0, -(1.0 - af), 0.0, 1.0 - am,
    ]);
    -mm.lu().solve(&nn).unwrap()
}

#[test]
fn mg_alpha_numerical_amplification_equals_the_closed_form() {
    let omega = 2.0;
    let mut worst: f64 = 0.0;
    for rho in [1.0, 0.9, 0.5, 0.2, 0.0] {
        let m = sdof(omega, rho, "mg-alpha");
        for big_omega in [1e-3, 0.1, 1.0, 10.0, 1e3] {
            let dt = big_omega / omega;
            let a = amplification_at(&m, dt, &SpectralOptions::default()).unwrap();
            let c = closed_form(omega, rho, dt);
            let err = (&a - &c).amax() / c.amax();
            worst = worst.max(err);
            assert!(
                err < 1e-13,
                "rho_inf = {rho}, Ω = {big_omega}: relative difference {err:e}\n{a}\n{c}"
            );
        }
    }
    println!("MG-α: numerical vs closed-form 𝔸, worst relative difference {worst:.2e}");
}

#[test]
fn mg_alpha_spectral_properties() {
    let omegas = log_sweep(1e-2, 1e5, 36);
    for (rho, rho_at_1e5) in [
        (1.0, 1.0),
        (0.9, 0.9013),
        (0.5, 0.5021),
        (0.2, 0.2019),
        (0.0, 0.0022),
    ] {
        let m = sdof(3.0, rho, "mg-alpha");
        let opts = SpectralOptions {
            omegas: omegas.clone(),
            ..Default::default()
        };
        let r = spectral_sweep(&m, &opts).unwrap();
        assert_eq!(r.state_len, 6);
        assert!(r.stable(), "rho_inf = {rho}: max ρ {}", r.max_rho());
        let last = r.points.last().unwrap();
        println!(
            "rho_inf = {rho}: ρ(Ω = 1e5) = {:.4}, max ρ = {:.15}",
            last.rho,
            r.max_rho()
        );
        assert!(
            (last.rho - rho_at_1e5).abs() < 2e-4,
            "ρ(1e5) = {}",
            last.rho
        );
        for p in &r.points {
            assert_eq!(p.drift_modes, 0, "a monolithic scheme has no drift mode");
            if rho == 1.0 {
                // ρ∞ = 1: the principal pair lies on the unit circle (trapezoidal rule).
                for mr in &p.modal {
                    assert!(
                        (mr.lambda.norm() - 1.0).abs() < 1e-12,
                        "Ω = {}: |λ| = {}",
                        p.omega,
                        mr.lambda.norm()
                    );
                }
            }
        }
        // Spurious root → (α_m − 1)/α_m as Ω → 0 (ALGORITHMS.md A1).
        let first = &r.points[0];
        let spurious = AlphaParameters::new(rho).spurious_root();
        assert!(
            first
                .roots
                .iter()
                .any(|(l, k)| *k == RootKind::Other && (l.re - spurious).abs() < 1e-3),
            "rho_inf = {rho}: no spurious root near {spurious}: {:?}",
            first.roots
        );
        // Ω̄/Ω → 1 and ζ̄ → 0 as Ω → 0; for ρ∞ < 1 damping grows with Ω
        // (Abbiati et al. 2019, Fig 3).
        let m0 = &first.modal[0];
        assert!((m0.omega_bar / m0.omega - 1.0).abs() < 1e-4);
        assert!(m0.zeta_bar.abs() < 1e-5);
    }
    // ALGORITHMS.md E7: at Ω = 0.1, ρ∞ = 0.5 the principal root gives Ω̄ = 0.099889 and
    // ζ̄ = 9.2e-6 (eq 22 with eq 18 corrected).
    let m = sdof(1.0, 0.5, "mg-alpha");
    let r = spectral_sweep(
        &m,
        &SpectralOptions {
            omegas: vec![0.1],
            ..Default::default()
        },
    )
    .unwrap();
    let pr = r.points[0].modal[0];
    println!(
        "E7 check: Ω̄ = {:.6}, ζ̄ = {:.3e}, frequency error (Ω̄−Ω)/Ω̄ = {:.3e}",
        pr.omega_bar, pr.zeta_bar, pr.frequency_error
    );
    assert!((pr.omega_bar - 0.099889).abs() < 1e-6);
    assert!((pr.zeta_bar - 9.2e-6).abs() < 0.1e-6);
    assert!(pr.frequency_error < 0.0);
}

fn split_mass_v1(rho: f64, ss: i64) -> hybridsim::Model {
    example_with("split_mass_v1.toml", |t| {
        set(t, "analysis", "rho_inf", rho);
        set(t, "analysis", "subcycles", ss);
    })
}

#[test]
fn pg_alpha_split_mass_is_stable_with_one_drift_mode() {
    for rho in [1.0, 0.5] {
        for ss in [1, 10] {
            let m = split_mass_v1(rho, ss);
            let opts = SpectralOptions {
                omegas: log_sweep(1e-2, 1e3, 31),
                ..Default::default()
            };
            let r = spectral_sweep(&m, &opts).unwrap();
            assert_eq!(r.state_len, 12 + 6 + 1, "[Y;Ẏ;V] of both partitions and Λ");
            let last = r.points.last().unwrap();
            println!(
                "PG-α rho_inf = {rho}, ss = {ss}: max ρ = {:.15}, max ρ without drift = {:.6}, \
                 ρ without drift at Ω = 1e3: {:.4}, drift |λ−1| ≤ {:.1e}",
                r.max_rho(),
                r.max_rho_without_drift(),
                last.rho_without_drift,
                r.points
                    .iter()
                    .map(|p| p.drift_deviation)
                    .fold(0.0, f64::max)
            );
            assert!(r.max_rho() <= 1.0 + 1e-10, "ρ = {}", r.max_rho());
            assert!(r.stable());
            for p in &r.points {
                assert_eq!(p.drift_modes, 1, "Ω = {}: one interface DOF", p.omega);
                assert!(
                    p.drift_deviation < 1e-9,
                    "drift eigenvalue {}",
                    p.drift_deviation
                );
            }
            if rho < 1.0 {
                // Without the drift mode the ρ∞ trend is visible (Abbiati et al. 2019, Fig 2).
                assert!(last.rho_without_drift < 0.75, "{}", last.rho_without_drift);
            }
        }
    }
}

#[test]
fn half_estimated_stiffness_is_unstable() {
    let m = split_mass_v1(1.0, 1);
    let modes = hybridsim::analysis::spectral::mode_omegas(&m).unwrap();
    let ps = (4e5f64 / 4e3).sqrt();
    let mut at_one = Vec::new();
    for (label, reference) in [
        ("mode 1", FrequencyReference::Mode(1)),
        ("mode 2", FrequencyReference::Mode(2)),
        ("PS alone sqrt(k1/m1)", FrequencyReference::Omega(ps)),
    ] {
        let opts = SpectralOptions {
            omegas: vec![0.1, 1.0, 10.0],
            reference,
            estimate_ratio: Some(0.5),
            ..Default::default()
        };
        let r = spectral_sweep(&m, &opts).unwrap();
        let p1 = &r.points[1];
        println!(
            "estimate = 0.5 × true, ss = 1, rho_inf = 1, Ω = 1 for {label} (ω = {:.4}): ρ = {:.6}, \
             without drift {:.6}, stable = {}",
            r.reference_omega, p1.rho, p1.rho_without_drift, p1.stable
        );
        at_one.push(p1.rho);
        assert!(!r.stable(), "{label}: must be flagged unstable");
    }
    println!("modes: {modes:?}");
    // The issue's ρ ≈ 1.024 at Ω = 1 holds for Ω = ω2 Δt, ω2 = 12.226 rad/s the second (highest)
    // mode of the coupled model; Ω = ω1 Δt gives 1.084 and Ω = √(k1/m1) Δt gives 1.033.
    assert!((at_one[1] - 1.0243).abs() < 1e-4, "ρ = {}", at_one[1]);
    assert!((at_one[0] - 1.0841).abs() < 1e-4, "ρ = {}", at_one[0]);
    // The exact estimate is stable at the same points.
    let exact = spectral_sweep(
        &m,
        &SpectralOptions {
            omegas: vec![0.1, 1.0, 10.0],
            estimate_ratio: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(exact.stable());
}

#[test]
fn loop_delay_enters_the_state_and_destabilizes() {
    let m = split_mass_v1(1.0, 10);
    let base = spectral_sweep(
        &m,
        &SpectralOptions {
            omegas: vec![0.5],
            ..Default::default()
        },
    )
    .unwrap();
    for ticks in [1usize, 3] {
        let r = spectral_sweep(
            &m,
            &SpectralOptions {
                omegas: vec![0.5],
                delay_ticks: ticks,
                ..Default::default()
            },
        )
        .unwrap();
        println!(
            "delay {ticks} tick(s) of Δt^P: ρ = {:.6} (no delay {:.6}), state length {}",
            r.points[0].rho, base.points[0].rho, r.state_len
        );
        assert_eq!(r.state_len, base.state_len + ticks, "one DOF per tick");
        // A delayed restoring force feeds energy in: negative damping on an undamped model.
        assert!(!r.stable());
        assert_eq!(r.points[0].drift_modes, 1);
    }
    // A zero delay is the plain scheme.
    let zero = spectral_sweep(
        &m,
        &SpectralOptions {
            omegas: vec![0.5],
            delay_ticks: 0,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(zero.points[0].rho, base.points[0].rho);
    // The delay needs a physical substructure.
    let mono = example_with("split_mass_v1.toml", |t| {
        set(t, "analysis", "integrator", "mg-alpha");
        set(t, "analysis", "subcycles", 1i64);
    });
    let e = spectral_sweep(
        &mono,
        &SpectralOptions {
            omegas: vec![0.5],
            delay_ticks: 2,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("delay") && e.contains("split_mass_v1.toml"),
        "{e}"
    );
}

#[test]
fn delay_line_is_a_fifo_and_does_not_allocate() {
    let line = DelayLine::new(3, 2);
    line.fill(&[1.0, -1.0]);
    let mut out = [0.0; 2];
    let mut got = Vec::with_capacity(5);
    let n = allocations(|| {
        for k in 0..5 {
            let f = [10.0 + k as f64, -(10.0 + k as f64)];
            line.exchange(&f, &mut out);
            got.push(out[0]);
        }
    });
    assert_eq!(got, vec![1.0, 1.0, 1.0, 10.0, 11.0]);
    assert_eq!(n, 0, "the delay line allocates");
    let mut flat = [0.0; 6];
    line.export(&mut flat);
    assert_eq!(flat, [12.0, -12.0, 13.0, -13.0, 14.0, -14.0]);
    line.import(&flat);
    let mut again = [0.0; 6];
    line.export(&mut again);
    assert_eq!(flat, again);
    // Stepping a delayed PG-α allocates nothing.
    let m = split_mass_v1(0.9, 10);
    let opts = SpectralOptions {
        delay_ticks: 2,
        ..Default::default()
    };
    let mut integ = hybridsim::analysis::spectral::build_for_analysis(&m, 1e-3, &opts).unwrap();
    integ.step().unwrap();
    let n = allocations(|| {
        for _ in 0..200 {
            integ.step().unwrap();
        }
    });
    assert_eq!(n, 0, "a delayed step allocates");
}

#[test]
fn nonlinear_model_is_linearized_at_rest_by_the_spectral_analysis() {
    let m = model(
        r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = { x = 0.1 }
[[element]]
type = "mass"
node = 1
mass = 1.0
[[element]]
type = "cubic_spring"
nodes = [1]
dof = "x"
k = 1.0
k3 = 50.0
[analysis]
integrator = "mg-alpha"
time_step = 0.01
duration = 1.0
"#,
    );
    // The spectral analysis studies the tangent at rest (k = 1: Ω = Δt) and says so.
    let s = spectral_sweep(
        &m,
        &SpectralOptions {
            omegas: vec![0.1],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.linearized_elements, vec!["cubic_spring1".to_string()]);
    assert!(
        (s.reference_omega - 1.0).abs() < 1e-12,
        "{}",
        s.reference_omega
    );
    assert!((s.points[0].modal[0].omega_bar - 2.0 * (0.05f64).atan()).abs() < 1e-12);
    // By default the nonlinear partition is solved to convergence: second order.
    let r = convergence(&m, &ConvergenceOptions::halving(0.02, 5, 1.0)).unwrap();
    assert_eq!(r.expected_order, Some(2.0), "{}", r.label);
    assert!(r.label.contains("converged"), "{}", r.label);
    assert!(
        (r.slopes.last().unwrap() - 2.0).abs() < 0.1,
        "{:?}",
        r.slopes
    );
    // With one fixed-D correction the study labels the expected first order (E38).
    let mut m = m;
    m.analysis.nonlinear_tolerance = None;
    let r = convergence(&m, &ConvergenceOptions::halving(0.02, 5, 1.0)).unwrap();
    println!(
        "Duffing MG-α, 1 correction: errors {:?}, slopes {:.3?}, fitted {:.3} — {}",
        r.errors, r.slopes, r.fitted_slope, r.label
    );
    assert!(!r.linear);
    assert_eq!(r.expected_order, Some(1.0));
    assert!(r.label.contains("E38"));
    assert!(
        (r.slopes.last().unwrap() - 1.0).abs() < 0.15,
        "{:?}",
        r.slopes
    );
}

#[test]
fn convergence_is_second_order_for_mg_and_pg_alpha_on_linear_models() {
    for (integrator, ss, rho) in [
        ("mg-alpha", 1i64, 1.0),
        ("mg-alpha", 1, 0.5),
        ("pg-alpha", 1, 0.9),
        ("pg-alpha", 10, 0.5),
    ] {
        let m = example_with("split_mass_v1.toml", |t| {
            set(t, "analysis", "integrator", integrator);
            set(t, "analysis", "subcycles", ss);
            set(t, "analysis", "rho_inf", rho);
        });
        for reference in [Reference::Exact, Reference::Fine] {
            let mut opts = ConvergenceOptions::halving(1e-3, 4, 0.01);
            opts.reference = reference;
            let r = convergence(&m, &opts).unwrap();
            println!(
                "{integrator} ss = {ss} rho_inf = {rho} vs {}: errors {:?}, slopes {:.4?}, fitted {:.4}",
                r.reference,
                r.errors
                    .iter()
                    .map(|e| format!("{:.3e}", e.1))
                    .collect::<Vec<_>>(),
                r.slopes,
                r.fitted_slope
            );
            assert!(r.linear);
            assert_eq!(r.expected_order, Some(2.0));
            assert!(
                (r.slopes.last().unwrap() - 2.0).abs() < 0.05,
                "{:?}",
                r.slopes
            );
            assert!((r.fitted_slope - 2.0).abs() < 0.1);
        }
    }
}

#[test]
fn energy_is_conserved_at_rho_one_and_dissipated_below() {
    for (rho, ss) in [(1.0, 1i64), (1.0, 10), (0.5, 1)] {
        let m = example_with("split_mass_v2.toml", |t| {
            set(t, "analysis", "rho_inf", rho);
            set(t, "analysis", "subcycles", ss);
            set(t, "analysis", "time_step", 1e-3);
            set(t, "analysis", "duration", 2.0);
        });
        let r = energy_history(&m, 10).unwrap();
        println!(
            "energy V2 rho_inf = {rho}, ss = {ss}: E0 = {:.6} J, max |drift| = {:.3e}, final {:.3e}, rate {:.3e}/s",
            r.initial(),
            r.max_relative_drift(),
            r.final_relative_drift(),
            r.drift_rate()
        );
        assert!(
            (r.initial() - 25.0).abs() < 1e-9,
            "E0 = ½ k2 (0.01)² = 25 J"
        );
        assert_eq!(r.partitions.len(), 2);
        if rho == 1.0 && ss == 1 {
            assert!(r.max_relative_drift() < 1e-11);
        } else if rho == 1.0 {
            assert!(r.max_relative_drift() < 1e-6);
        } else {
            assert!(r.final_relative_drift() < -0.05, "ρ∞ < 1 dissipates");
        }
    }
}

/// Issue 17: at ρ∞ = 1 the generalized-α spurious root sits at −1, which is closer to e^{iΩ} than
/// the principal root from Ω ≈ 2.45 on; following the principal root from Ω → 0 keeps the
/// trapezoidal closed form Ω̄ = 2 atan(Ω/2), |λ| = 1, also for a sweep that starts there.
#[test]
fn the_principal_root_is_followed_from_small_omega_past_the_spurious_root() {
    let m = sdof(2.0, 1.0, "mg-alpha");
    for omegas in [log_sweep(1e-2, 3.0, 40), vec![2.5, 3.0], vec![3.0]] {
        let r = spectral_sweep(
            &m,
            &SpectralOptions {
                omegas: omegas.clone(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(r.points.len(), omegas.len());
        for p in &r.points {
            let pr = p.modal[0];
            let exact = 2.0 * (p.omega / 2.0).atan();
            assert!(
                (pr.omega_bar - exact).abs() < 1e-9 && (pr.lambda.norm() - 1.0).abs() < 1e-9,
                "Ω = {}: Ω̄ = {} (trapezoidal {exact}), |λ| = {}",
                p.omega,
                pr.omega_bar,
                pr.lambda.norm()
            );
            assert!(pr.frequency_error < 0.0, "the trapezoidal rule lags");
        }
    }
}

/// Issue 17: imposed-motion DOFs are restrained in the analyses (they follow their prescribed
/// motion, zero in the homogeneous problem): the LLM split-mass example has a positive first
/// frequency and converges at second order against the exact solution.
#[test]
fn imposed_motion_dofs_are_restrained_in_the_spectral_and_convergence_analyses() {
    let m = example_with("llm_split_mass.toml", |_| {});
    let r = spectral_sweep(
        &m,
        &SpectralOptions {
            omegas: vec![0.1, 1.0],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        (r.reference_omega - 1.0).abs() < 1e-12,
        "{}",
        r.reference_omega
    );
    assert!(r.stable());
    let c = convergence(&m, &ConvergenceOptions::halving(0.01, 4, 0.1)).unwrap();
    assert!(
        (c.fitted_slope - 2.0).abs() < 0.05,
        "slope {} ({:?})",
        c.fitted_slope,
        c.errors
    );
}

/// Issue 17: a convergence study of a model at rest is an error that says why, not a relative
/// error of 4e306.
#[test]
fn a_convergence_study_of_a_model_at_rest_is_refused() {
    let mut m = sdof(2.0, 1.0, "mg-alpha");
    m.nodes[0].dofs[0].u0 = 0.0;
    let e = convergence(&m, &ConvergenceOptions::halving(0.01, 3, 0.1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("all zero"), "{e}");
}

/// Issue 17: a bilinear (Mostaghel) storey in SI units — yield displacement 5 mm, forces in N —
/// is nonlinear; the probe of one positive state per amplitude called it linear (every
/// component stayed in one regime), so its convergence reference got one correction.
#[test]
fn a_bilinear_storey_in_si_units_is_not_called_linear() {
    let text = |kind: &str| {
        format!(
            r#"
[[node]]
id = 1
dofs = ["x"]
initial_displacement = {{ x = 0.02 }}
[[element]]
type = "mass"
node = 1
mass = 1.0e4
[[element]]
{kind}
nodes = [1]
dof = "x"
[analysis]
integrator = "mg-alpha"
time_step = 0.001
duration = 1.0
"#
        )
    };
    let bilinear = model(&text(
        "type = \"mostaghel\"\nk = 1.0e7\nalpha = 0.02\ndelta = 0.005",
    ));
    assert!(!hybridsim::analysis::is_linear(&bilinear).unwrap());
    let spring = model(&text("type = \"spring\"\nk = 1.0e7"));
    assert!(hybridsim::analysis::is_linear(&spring).unwrap());
}

/// Issue 17: both analyses work on every example (hysteretic ones through their tangent at
/// rest, labs through their numerical twin, imposed motions restrained), and the linear LLM
/// example converges at second order. `serve_spring.toml` is an element served to a remote
/// client (no mass, nothing moves): it is refused with a message that says so.
#[test]
fn spectral_and_convergence_analyses_work_on_every_example() {
    let dir = common::root().join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert!(names.len() >= 15, "{names:?}");
    let records = common::root().join("../shared/data/ground-motions");
    for name in &names {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        if text.contains("../../shared/data/ground-motions") && !records.is_dir() {
            eprintln!(
                "SKIPPED {name}: no ground-motion records at {}",
                records.display()
            );
            continue;
        }
        let m = example_with(name, |_| {});
        let spectral = spectral_sweep(
            &m,
            &SpectralOptions {
                omegas: vec![0.05, 0.5],
                ..Default::default()
            },
        );
        let dt = m.analysis.time_step;
        let conv = convergence(&m, &ConvergenceOptions::halving(dt, 3, 8.0 * dt));
        if name == "serve_spring.toml" {
            let e = spectral.unwrap_err().to_string();
            assert!(e.contains("serve_spring.toml"), "{e}");
            assert!(conv.unwrap_err().to_string().contains("all zero"));
            continue;
        }
        let s = spectral.unwrap_or_else(|e| panic!("{name}: spectral: {e}"));
        assert!(s.points.iter().all(|p| p.rho.is_finite()), "{name}");
        let c = conv.unwrap_or_else(|e| panic!("{name}: convergence: {e}"));
        assert!(
            c.errors.iter().all(|(_, e)| e.is_finite()),
            "{name}: {:?}",
            c.errors
        );
        if name == "llm_split_mass.toml" {
            assert!((c.fitted_slope - 2.0).abs() < 0.05, "{}", c.fitted_slope);
        }
    }
}
