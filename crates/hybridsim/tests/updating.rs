//! Online model updating (issue 14): the unscented Kalman filter against filterpy, its
//! allocation-free update, and synthetic identifications of a Bouc-Wen pier and of a spring
//! whose stiffness degrades during the run.

mod common;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

use common::counting::count;
use hybridsim::elements::{BoucWen, DofRef, ElementDriver, Spring};
use hybridsim::updating::{
    ElementModel, Identification, IdentificationSettings, SigmaPoints, StepKinematics,
    UnscentedKalmanFilter,
};
use nalgebra::DMatrix;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use std::process::Command;

// ---------------------------------------------------------------------------------------------
// The filter against filterpy (scripts/ukf_reference.py)
// ---------------------------------------------------------------------------------------------

const DT: f64 = 0.01;
const SUBSTEPS: usize = 10;

/// The script's Bouc-Wen oscillator, `x = [u, v, r, A]` (numpy's sign: sgn(0) = 0).
fn rhs(x: &[f64; 4], t: f64) -> [f64; 4] {
    let [_, v, r, a] = *x;
    let f = (6.0 * t).sin();
    let sg = {
        let p = v * r;
        if p > 0.0 {
            1.0
        } else if p < 0.0 {
            -1.0
        } else {
            0.0
        }
    };
    [v, f - r, (a - (3.5 * sg + 60.0) * r.abs()) * v, 0.0]
}

fn propagate(x: &mut [f64], t0: f64) {
    let h = DT / SUBSTEPS as f64;
    let mut y = [x[0], x[1], x[2], x[3]];
    let add =
        |y: &[f64; 4], k: &[f64; 4], c: f64| std::array::from_fn::<f64, 4, _>(|i| y[i] + c * k[i]);
    for i in 0..SUBSTEPS {
        let t = t0 + i as f64 * h;
        let k1 = rhs(&y, t);
        let k2 = rhs(&add(&y, &k1, h / 2.0), t + h / 2.0);
        let k3 = rhs(&add(&y, &k2, h / 2.0), t + h / 2.0);
        let k4 = rhs(&add(&y, &k3, h), t + h);
        for j in 0..4 {
            y[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
    x.copy_from_slice(&y);
}

fn diagonal(d: &[f64]) -> DMatrix<f64> {
    DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(d))
}

struct Case {
    alpha: f64,
    beta: f64,
    kappa: f64,
    z: Vec<[f64; 2]>,
    x: Vec<Vec<f64>>,
    p: Vec<Vec<f64>>,
}

fn parse_reference(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let tag = it.next().unwrap_or("");
        if tag == "case" {
            let _name = it.next();
            let v: Vec<f64> = it.map(|s| s.parse().unwrap()).collect();
            cases.push(Case {
                alpha: v[0],
                beta: v[1],
                kappa: v[2],
                z: Vec::new(),
                x: Vec::new(),
                p: Vec::new(),
            });
            continue;
        }
        let _step = it.next();
        let v: Vec<f64> = it.map(|s| s.parse().unwrap()).collect();
        let c = cases.last_mut().expect("a case line first");
        match tag {
            "z" => c.z.push([v[0], v[1]]),
            "x" => c.x.push(v),
            "p" => c.p.push(v),
            _ => panic!("unexpected line `{line}`"),
        }
    }
    cases
}

/// Python with filterpy, or `None` (with a notice) on a developer machine without it. In CI
/// (`CI` set) a missing filterpy fails the test.
fn filterpy_reference(steps: usize) -> Option<String> {
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0");
    let have = Command::new("python3")
        .args(["-c", "import filterpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            !ci,
            "CI: python3 with filterpy is required (pip install filterpy)"
        );
        eprintln!("skipped: python3 with filterpy not found (pip install filterpy)");
        return None;
    }
    let script = common::root().join("scripts/ukf_reference.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(["--steps", &steps.to_string()])
        .output()
        .expect("run scripts/ukf_reference.py");
    assert!(
        out.status.success(),
        "ukf_reference.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// The filter equals filterpy's `UnscentedKalmanFilter` with `MerweScaledSigmaPoints` on the
/// Bouc-Wen oscillator identification, step by step, to round-off (≤ 1e-10 of each history's
/// largest magnitude), with the paper's `L + κ = 3` weights and with a scaled transform.
#[test]
fn ukf_equals_filterpy_to_round_off() {
    let steps = 200;
    let Some(text) = filterpy_reference(steps) else {
        return;
    };
    let cases = parse_reference(&text);
    assert_eq!(cases.len(), 2);
    for (ci, case) in cases.iter().enumerate() {
        assert_eq!(case.x.len(), steps);
        let points = if ci == 0 {
            assert_eq!((case.alpha, case.beta, case.kappa), (1.0, 0.0, -1.0));
            SigmaPoints::Paper
        } else {
            SigmaPoints::Scaled {
                alpha: case.alpha,
                beta: case.beta,
                kappa: case.kappa,
            }
        };
        let mut f = UnscentedKalmanFilter::new(
            &[0.0, 0.0, 0.0, 60.0],
            diagonal(&[1e-8, 1e-8, 1e-8, 400.0]),
            diagonal(&[1e-10, 1e-10, 1e-10, 1e-4]),
            diagonal(&[1e-8, 1e-6]),
            &[0, 2],
            points,
        )
        .unwrap();
        let mut xs = Vec::new();
        let mut ps = Vec::new();
        for n in 0..steps {
            let t0 = n as f64 * DT;
            let trip = f.step(
                |x| {
                    propagate(x, t0);
                    true
                },
                &case.z[n],
            );
            assert_eq!(trip, None, "case {ci} step {n}");
            xs.push(f.estimate().as_slice().to_vec());
            // filterpy prints P row by row; P is symmetric.
            ps.push(f.covariance().transpose().as_slice().to_vec());
        }
        let compare = |ours: &[Vec<f64>], theirs: &[Vec<f64>], what: &str| {
            let width = theirs[0].len();
            let mut worst = 0.0f64;
            for j in 0..width {
                let scale = theirs.iter().map(|r| r[j].abs()).fold(0.0, f64::max);
                for n in 0..steps {
                    let e = (ours[n][j] - theirs[n][j]).abs() / scale.max(f64::MIN_POSITIVE);
                    worst = worst.max(e);
                    assert!(
                        e <= 1e-10,
                        "case {ci} {what}[{j}] step {}: {} vs filterpy {} (relative {e:.2e})",
                        n + 1,
                        ours[n][j],
                        theirs[n][j]
                    );
                }
            }
            eprintln!("case {ci}: largest relative difference of {what}: {worst:.2e}");
        };
        compare(&xs, &case.x, "x");
        compare(&ps, &case.p, "P");
        // The identification itself worked: A → 100.
        let a = xs[steps - 1][3];
        assert!((a - 100.0).abs() < 0.5, "case {ci}: A = {a}");
    }
}

// ---------------------------------------------------------------------------------------------
// Identification of library elements
// ---------------------------------------------------------------------------------------------

/// Ground-motion-like displacement history: a sine of growing amplitude.
fn history(t: f64, amplitude: f64, duration: f64, hz: f64) -> (f64, f64) {
    let w = 2.0 * std::f64::consts::PI * hz;
    let a = amplitude * t / duration;
    let da = amplitude / duration;
    (
        a * (w * t).sin(),
        da * (w * t).sin() + a * w * (w * t).cos(),
    )
}

fn pier(a: f64) -> BoucWen {
    BoucWen::new(vec![DofRef::new(1, "x")], a, 3.5, 60.0, 1.0).unwrap()
}

/// The measured force of a Bouc-Wen pier under the history, computed by the element driver
/// (an integration independent of the identification model's), with seeded Gaussian noise.
fn pier_force(
    a: f64,
    steps: usize,
    dt: f64,
    amp: f64,
    noise: f64,
) -> (Vec<StepKinematics>, Vec<f64>) {
    let duration = steps as f64 * dt;
    let mut drv = ElementDriver::new(Box::new(pier(a)), &[0.0, 0.0]).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(14);
    let normal = Normal::new(0.0, noise).unwrap();
    let (mut kin, mut force) = (Vec::new(), Vec::new());
    let mut prev = history(0.0, amp, duration, 1.0);
    for n in 0..steps {
        let t = (n + 1) as f64 * dt;
        let (u, v) = history(t, amp, duration, 1.0);
        drv.set_trial(dt, &[u], &[v]).unwrap();
        drv.commit();
        kin.push(StepKinematics {
            dt,
            displacement: [prev.0, u],
            velocity: [prev.1, v],
        });
        force.push(drv.force()[0] + normal.sample(&mut rng));
        prev = (u, v);
    }
    (kin, force)
}

fn settings(prior: &[f64], sd: &[f64], walk: &[f64], force_sd: f64) -> IdentificationSettings {
    IdentificationSettings {
        prior_mean: prior.to_vec(),
        prior_sd: sd.to_vec(),
        parameter_noise_sd: walk.to_vec(),
        state_noise_sd: force_sd * 1e-2,
        measurement_sd: force_sd,
        bounds: prior.iter().map(|&m| (m * 0.05, m * 20.0)).collect(),
        sigma_points: SigmaPoints::Scaled {
            alpha: 1.0,
            beta: 2.0,
            kappa: 0.0,
        },
    }
}

/// A Bouc-Wen pier (A = 2e7 N/m, β = 3.5 /m, γ = 60 /m; ultimate force 315 kN) driven 2 s at
/// 1 Hz up to 30 mm, force noise 1% of the ultimate force: from a prior 40% off (σ 50%), the
/// estimate of A ends within 1% of the truth and its 3σ band covers the truth at the end and
/// over the whole second half. The same with A and γ identified together: within 3% each.
#[test]
fn bouc_wen_pier_identification_converges_and_its_band_covers_the_truth() {
    let (a_true, gamma_true) = (2.0e7, 60.0);
    let (steps, dt) = (512, 1.0 / 256.0);
    let noise = 0.01 * a_true / 63.5;
    let (kin, force) = pier_force(a_true, steps, dt, 0.03, noise);

    let model = ElementModel::new(Box::new(pier(1.0)), &["A"], 10).unwrap();
    let s = settings(&[0.6 * a_true], &[0.5 * a_true], &[0.0], noise);
    let mut id = Identification::new(model, &s).unwrap();
    let mut covered = 0;
    for n in 0..steps {
        assert_eq!(id.update(&kin[n], force[n]), None, "step {n}");
        if n >= steps / 2 && (id.parameter(0) - a_true).abs() <= 3.0 * id.parameter_sd(0) {
            covered += 1;
        }
    }
    let (a, sd) = (id.parameter(0), id.parameter_sd(0));
    eprintln!(
        "A = {a:.6e} ± {sd:.3e} (true {a_true:e}); covered {covered} of {}",
        steps / 2
    );
    assert!((a - a_true).abs() < 0.01 * a_true, "A = {a}");
    assert!((a - a_true).abs() <= 3.0 * sd, "A = {a} ± {sd}");
    assert!(covered >= steps / 2 * 9 / 10, "covered {covered}");

    let model = ElementModel::new(Box::new(pier(1.0)), &["A", "gamma"], 10).unwrap();
    let s = settings(
        &[0.6 * a_true, 40.0],
        &[0.5 * a_true, 30.0],
        &[0.0, 0.0],
        noise,
    );
    let mut id = Identification::new(model, &s).unwrap();
    for n in 0..steps {
        assert_eq!(id.update(&kin[n], force[n]), None, "step {n}");
    }
    for (i, truth) in [a_true, gamma_true].into_iter().enumerate() {
        let (x, sd) = (id.parameter(i), id.parameter_sd(i));
        eprintln!("parameter {i} = {x:.6e} ± {sd:.3e} (true {truth:e})");
        assert!((x - truth).abs() < 0.03 * truth, "parameter {i} = {x}");
        assert!((x - truth).abs() <= 3.0 * sd, "parameter {i} = {x} ± {sd}");
    }
}

/// A spring whose stiffness degrades linearly from 1e6 to 7e5 N/m over 4 s (force noise 1% of
/// the peak force): with a random walk sized to the drift, the estimate tracks the stiffness
/// within 2% over the second half and its 3σ band covers the truth on at least 90% of those steps.
#[test]
fn a_degrading_stiffness_is_tracked() {
    let (k0, k1) = (1.0e6, 0.7e6);
    let (steps, dt) = (1024, 1.0 / 256.0);
    let duration = steps as f64 * dt;
    let amp = 0.02;
    let noise = 0.01 * k0 * amp;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    let normal = Normal::new(0.0, noise).unwrap();
    let spring = Spring::new(vec![DofRef::new(1, "x")], 1.0);
    let model = ElementModel::new(Box::new(spring), &["k"], 1).unwrap();
    let drift = (k0 - k1) / steps as f64;
    let s = settings(&[0.8 * k0], &[0.5 * k0], &[3.0 * drift], noise);
    let mut id = Identification::new(model, &s).unwrap();
    let mut prev = (0.0, 0.0);
    let (mut covered, mut worst) = (0, 0.0f64);
    for n in 0..steps {
        let t = (n + 1) as f64 * dt;
        let k = k0 + (k1 - k0) * t / duration;
        let (u, v) = {
            let w = 2.0 * std::f64::consts::PI * 2.0;
            (amp * (w * t).sin(), amp * w * (w * t).cos())
        };
        let kin = StepKinematics {
            dt,
            displacement: [prev.0, u],
            velocity: [prev.1, v],
        };
        prev = (u, v);
        assert_eq!(id.update(&kin, k * u + normal.sample(&mut rng)), None);
        if n >= steps / 2 {
            let e = (id.parameter(0) - k).abs();
            worst = worst.max(e / k);
            if e <= 3.0 * id.parameter_sd(0) {
                covered += 1;
            }
        }
    }
    eprintln!(
        "worst relative tracking error {worst:.3e}; covered {covered} of {}",
        steps / 2
    );
    assert!(worst < 0.02, "{worst}");
    assert!(covered >= steps / 2 * 9 / 10, "covered {covered}");
}

/// An update step (2L + 1 sigma points through the Bouc-Wen model, gain, Joseph update) does
/// not allocate.
#[test]
fn an_update_does_not_allocate() {
    let (kin, force) = pier_force(2.0e7, 64, 1.0 / 256.0, 0.03, 3e3);
    let model = ElementModel::new(Box::new(pier(1.0)), &["A", "gamma"], 10).unwrap();
    let s = settings(&[1.5e7, 50.0], &[5e6, 20.0], &[1e4, 0.1], 3e3);
    let mut id = Identification::new(model, &s).unwrap();
    id.update(&kin[0], force[0]);
    let mut n = 1;
    let allocations = count(|| {
        while n < 64 {
            id.update(&kin[n], force[n]);
            n += 1;
        }
    });
    assert_eq!(id.trip(), None);
    assert_eq!(allocations, 0);
}

/// Bad settings are refused with the setting's name; a parameter the element rejects trips
/// the filter (not the caller).
#[test]
fn bad_settings_and_rejected_parameters() {
    let model = || ElementModel::new(Box::new(pier(1.0)), &["A"], 4).unwrap();
    let mut s = settings(&[1e7], &[1e6], &[0.0], 1e3);
    s.bounds = vec![(2e7, 3e7)];
    let e = Identification::new(model(), &s).err().unwrap();
    assert!(e.contains("bounds"), "{e}");
    let e = ElementModel::new(Box::new(pier(1.0)), &["stiffness"], 4)
        .err()
        .unwrap();
    assert!(
        e.contains("no parameter `stiffness`") && e.contains("A"),
        "{e}"
    );

    // Bounds that let A reach a value the element rejects (A ≤ 0): the transition fails.
    let mut s = settings(&[1e3], &[1e7], &[0.0], 1e3);
    s.bounds = vec![(-1e9, 1e9)];
    let mut id = Identification::new(model(), &s).unwrap();
    let kin = StepKinematics {
        dt: 0.01,
        displacement: [0.0, 1e-3],
        velocity: [0.0, 0.1],
    };
    let trip = id.update(&kin, 10.0);
    assert!(trip.is_some());
    assert_eq!(id.parameter(0), 1e3);
}

// ---------------------------------------------------------------------------------------------
// `[updating]` in the model file
// ---------------------------------------------------------------------------------------------

fn pier_model_text(updating: &str) -> String {
    let path = common::root().join("examples/bouc_wen_pier.toml");
    let text = std::fs::read_to_string(path).unwrap();
    format!("{text}\n[updating]\n{updating}\n")
}

fn load(text: &str) -> Result<hybridsim::Model, String> {
    hybridsim::Model::from_toml(
        text,
        "pier.toml",
        &common::Folder(common::root().join("examples")),
    )
    .map_err(|e| e.to_string())
}

/// A complete `[updating]` table is read into the model with its defaults; the identification
/// it describes can be built and run.
#[test]
fn updating_table_is_read() {
    let model = load(&pier_model_text(
        "identify = \"pier\"\nparameters = [\"A\", \"gamma\"]\nprior_mean = [3e7, 50.0]\n\
         prior_sd = [2e7, 20.0]\nstate_noise_sd = 10.0\nmeasurement_sd = 5e3\n\
         bounds = [[1e6, 1e9], [1.0, 500.0]]\nperiod = 2\nsigma_points = \"scaled\"\nalpha = 0.5\n\
         freeze_above_pga = 4.905\n",
    ))
    .unwrap();
    let u = model.updating.as_ref().expect("[updating]");
    assert_eq!(&*model.elements[u.identify].name, "pier");
    assert_eq!(u.parameters, ["A", "gamma"]);
    assert_eq!(u.settings.prior_mean, [3e7, 50.0]);
    assert_eq!(u.settings.parameter_noise_sd, [0.0, 0.0]);
    assert_eq!(u.settings.bounds, [(1e6, 1e9), (1.0, 500.0)]);
    assert_eq!(u.period, 2);
    assert_eq!(u.substeps, 10);
    assert_eq!(u.freeze_above_pga, Some(4.905));
    assert!(!u.freeze_at_bound);
    assert_eq!(
        u.settings.sigma_points,
        SigmaPoints::Scaled {
            alpha: 0.5,
            beta: 2.0,
            kappa: 0.0
        }
    );
    let id = u.identification(&model.elements).unwrap();
    assert_eq!(id.parameter(0), 3e7);
    assert_eq!(id.parameter(1), 50.0);
    assert_eq!(u.freeze_rule().above_pga, Some(4.905));

    // Defaults: the prior mean is the element's own value, bounds a factor 100 either side.
    let model = load(&pier_model_text(
        "identify = \"pier\"\nparameters = [\"A\"]\nprior_sd = [1e7]\nstate_noise_sd = 1.0\n\
         measurement_sd = 1e3\n",
    ))
    .unwrap();
    let u = model.updating.unwrap();
    assert_eq!(u.settings.prior_mean, [5e7]);
    assert_eq!(u.settings.bounds, [(5e5, 5e9)]);
    assert_eq!(u.settings.sigma_points, SigmaPoints::Paper);
}

/// Each problem is reported at its field.
#[test]
fn updating_errors_name_the_field() {
    let base = "prior_sd = [1e7]\nstate_noise_sd = 1.0\nmeasurement_sd = 1e3\n";
    for (extra, field, phrase) in [
        (
            "identify = \"pile\"\nparameters = [\"A\"]\n",
            "updating.identify",
            "no element is named `pile`",
        ),
        (
            "identify = \"pier\"\nparameters = [\"k\"]\n",
            "updating.parameters",
            "no parameter `k`",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nfilter = \"ukf\"\n",
            "updating.filter",
            "unknown key",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nbounds = [[-1.0, 1e9]]\n",
            "updating.bounds",
            "refused by the element",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nbounds = [[1e8, 1e9]]\n",
            "updating.bounds",
            "contain the prior mean",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nreceivers = [\"support\"]\n",
            "updating.receivers",
            "`support`",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nperiod = 0\n",
            "updating.period",
            "integer in 1..=",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nalpha = 0.1\n",
            "updating.alpha",
            "scaled",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nsigma_points = \"scaled\"\nalpha = 2.0\n",
            "updating.alpha",
            "(0, 1]",
        ),
        (
            "identify = \"pier\"\nparameters = [\"A\"]\nfreeze_above_pga = -1.0\n",
            "updating.freeze_above_pga",
            "must be > 0",
        ),
    ] {
        let e = load(&pier_model_text(&format!("{extra}{base}"))).unwrap_err();
        assert!(
            e.contains("pier.toml") && e.contains(field) && e.contains(phrase),
            "expected `{field}`: {phrase}; got {e}"
        );
    }
    let e = load(&pier_model_text(
        "identify = \"pier\"\nparameters = [\"A\"]\n",
    ))
    .unwrap_err();
    assert!(
        e.contains("updating.prior_sd") && e.contains("missing"),
        "{e}"
    );
}

/// The freeze rules: above the PGA limit, or at a bound, updating stops and the estimate stays.
#[test]
fn freeze_rules_keep_the_estimate() {
    use hybridsim::updating::{FreezeRule, Frozen};
    let (kin, force) = pier_force(2.0e7, 64, 1.0 / 256.0, 0.03, 3e3);
    let model = || ElementModel::new(Box::new(pier(1.0)), &["A"], 4).unwrap();
    let mut id = Identification::new(model(), &settings(&[1.5e7], &[5e6], &[0.0], 3e3)).unwrap();
    id.set_freeze_rule(FreezeRule {
        above_pga: Some(4.9),
        at_bound: false,
    });
    id.observe_ground_acceleration(-4.0);
    id.update(&kin[0], force[0]);
    assert!(!id.is_frozen());
    id.observe_ground_acceleration(-5.0);
    assert_eq!(id.frozen(), Some(Frozen::GroundAcceleration));
    let a = id.parameter(0);
    for n in 1..64 {
        id.update(&kin[n], force[n]);
    }
    assert_eq!(id.parameter(0), a);
    assert_eq!(id.filter().steps(), 1);

    // A bound below the truth: the estimate reaches it and updating freezes there.
    let mut s = settings(&[1.5e7], &[5e6], &[0.0], 3e3);
    s.bounds = vec![(1e7, 1.6e7)];
    let mut id = Identification::new(model(), &s).unwrap();
    id.set_freeze_rule(FreezeRule {
        above_pga: None,
        at_bound: true,
    });
    for n in 0..64 {
        id.update(&kin[n], force[n]);
    }
    assert_eq!(id.frozen(), Some(Frozen::AtBound(0)));
    assert_eq!(id.parameter(0), 1.6e7);
}
