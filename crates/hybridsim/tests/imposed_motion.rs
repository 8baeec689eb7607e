//! Imposed motions (`[[imposed_motion]]`), multi-support excitation with the LLM integrator
//! (Hovmand et al. 2022, eq 3c; ALGORITHMS.md A7, E33) and malformed connectivity.
mod common;
use common::*;
use hybridsim::integrators::TimeIntegrator;
use hybridsim::model::imposed_motion::{
    ImposedMotion, MotionHistory, MotionQuantity, PiecewiseCubic,
};
use hybridsim::model::NoFiles;
use hybridsim::Model;
use nalgebra::{DMatrix, DVector};

fn motion(history: MotionHistory) -> ImposedMotion {
    ImposedMotion {
        name: "test".into(),
        dof: hybridsim::elements::DofRef::new(1, "x"),
        history,
        description: String::new(),
        entry: 0,
    }
}

#[test]
fn kinematics_are_consistent_derivatives() {
    let cases = [
        MotionQuantity::Displacement,
        MotionQuantity::Velocity,
        MotionQuantity::Acceleration,
    ];
    for q in cases {
        let m = motion(MotionHistory::Sine {
            quantity: q,
            amplitude: 0.3,
            omega: 2.0,
            phase: 0.4,
        });
        let h = 1e-5;
        let mut worst: f64 = 0.0;
        for k in 0..50 {
            let t = 0.1 * k as f64;
            let [d, v, a] = m.kinematics(t);
            let dv = (m.displacement(t + h) - m.displacement(t - h)) / (2.0 * h);
            let da = (m.velocity(t + h) - m.velocity(t - h)) / (2.0 * h);
            worst = worst.max((dv - v).abs()).max((da - a).abs());
            let _ = d;
        }
        println!("sine {q:?}: worst central-difference mismatch {worst:.2e}");
        assert!(worst < 1e-8);
        if q != MotionQuantity::Displacement {
            // Velocity and acceleration histories start at rest at the origin.
            let [d0, v0, _] = m.kinematics(0.0);
            assert!(d0.abs() < 1e-15);
            if q == MotionQuantity::Acceleration {
                assert!(v0.abs() < 1e-15);
            }
        }
    }
    // Piecewise linear accelerations are integrated exactly: a = t on [0, 2] gives
    // v = t²/2, d = t³/6.
    let pc = PiecewiseCubic::from_accelerations(&[0.0, 0.5, 2.0], &[0.0, 0.5, 2.0]);
    for t in [0.1, 0.5, 1.3, 1.999] {
        let [d, v, a] = pc.evaluate(t);
        assert!((a - t).abs() < 1e-14 && (v - t * t / 2.0).abs() < 1e-14);
        assert!((d - t * t * t / 6.0).abs() < 1e-14, "{t}: {d}");
    }
    // After the last sample the motion goes on at constant velocity.
    let [d, v, a] = pc.evaluate(3.0);
    assert_eq!(a, 0.0);
    assert!((v - 2.0).abs() < 1e-14 && (d - (8.0 / 6.0 + 2.0)).abs() < 1e-14);
    // Velocity samples: linear velocity, quadratic displacement.
    let pc = PiecewiseCubic::from_velocities(&[0.0, 1.0], &[0.0, 2.0]);
    let [d, v, a] = pc.evaluate(0.5);
    assert!((v - 1.0).abs() < 1e-15 && (a - 2.0).abs() < 1e-15 && (d - 0.25).abs() < 1e-15);
    // Displacement samples: a natural cubic spline through every sample, reproducing a
    // straight line exactly.
    let t = [0.0, 0.3, 1.0, 1.5, 2.5];
    let x = [0.0, 0.02, -0.01, 0.04, 0.0];
    let pc = PiecewiseCubic::from_displacements(&t, &x);
    for (ti, xi) in t.iter().zip(x) {
        assert!((pc.evaluate(*ti)[0] - xi).abs() < 1e-15);
    }
    let line = PiecewiseCubic::from_displacements(&t, &t.map(|s| 2.0 * s - 1.0));
    let [d, v, a] = line.evaluate(1.234);
    assert!((d - 1.468).abs() < 1e-14 && (v - 2.0).abs() < 1e-13 && a.abs() < 1e-12);
}

fn multi_support(solver: &str, dt: f64) -> Model {
    example_with("multi_support.toml", |t| {
        set(t, "analysis", "basic_solver", solver);
        set(t, "analysis", "time_step", dt);
        if solver == "trapezoidal" {
            t["analysis"].as_table_mut().unwrap().remove("rho_inf");
        }
    })
}

/// Monolithic trapezoid of the two-span chain by constraint elimination: free DOFs u2, u4;
/// the supports u1, u3, u5 follow the given discrete motion (u_s, v_s at every step).
struct Reference {
    m: DMatrix<f64>,
    c: DMatrix<f64>,
    k: DMatrix<f64>,
    cs: DMatrix<f64>,
    ks: DMatrix<f64>,
}

impl Reference {
    fn new(beta: f64) -> Self {
        let (k1, k2, k3, k4) = (4000.0, 4000.0, 3000.0, 3000.0);
        let k = DMatrix::from_row_slice(2, 2, &[k1 + k2, 0.0, 0.0, k3 + k4]);
        let ks = DMatrix::from_row_slice(2, 3, &[-k1, -k2, 0.0, 0.0, -k3, -k4]);
        Self {
            m: DMatrix::from_diagonal(&DVector::from_vec(vec![20.0, 15.0])),
            c: &k * beta,
            cs: &ks * beta,
            k,
            ks,
        }
    }

    fn run(&self, dt: f64, us: &[DVector<f64>], vs: &[DVector<f64>]) -> Vec<DVector<f64>> {
        let load = |k: usize| -(&self.ks * &us[k]) - &self.cs * &vs[k];
        let mut u = DVector::zeros(2);
        let mut v = DVector::zeros(2);
        let mut a = self.m.clone().lu().solve(&load(0)).unwrap();
        let eff = (&self.m + &self.c * (dt / 2.0) + &self.k * (dt * dt / 4.0)).lu();
        let mut out = vec![u.clone()];
        for k in 1..us.len() {
            let rhs = load(k)
                - &self.c * (&v + &a * (dt / 2.0))
                - &self.k * (&u + &v * dt + &a * (dt * dt / 4.0));
            let a1 = eff.solve(&rhs).unwrap();
            let v1 = &v + (&a + &a1) * (dt / 2.0);
            u += (&v + &v1) * (dt / 2.0);
            v = v1;
            a = a1;
            out.push(u.clone());
        }
        out
    }
}

fn copy_uv(integ: &dyn TimeIntegrator, node: i64) -> (f64, f64) {
    for (p, part) in integ.partitions().iter().enumerate() {
        if let Some(i) = part.state.dofs.iter().position(|d| d.node == node) {
            let n = part.state.n_dofs();
            return (integ.state(p)[i], integ.state(p)[n + i]);
        }
    }
    panic!("node {node}")
}

#[test]
fn multi_support_matches_monolithic_constraint_elimination_to_round_off() {
    let dt = 0.005;
    let model = multi_support("trapezoidal", dt);
    let beta = match model.rayleigh {
        Some(hybridsim::model::Rayleigh::Coefficients { beta, .. }) => beta,
        _ => panic!("beta"),
    };
    let motions = model.imposed_motions.clone();
    let mut sim = hybridsim::Simulation::new(model).unwrap();
    let cols = sim.columns().to_vec();
    let drift_cols: Vec<usize> = (0..cols.len())
        .filter(|c| cols[*c].name.starts_with("drift."))
        .collect();
    assert_eq!(drift_cols.len(), 3);
    let mut row = vec![0.0; cols.len()];
    let n = sim.n_steps() as usize;
    let (mut us, mut vs, mut free) = (Vec::new(), Vec::new(), Vec::new());
    let mut worst_drift: f64 = 0.0;
    for k in 0..=n {
        if k > 0 {
            sim.step().unwrap();
        }
        let integ = sim.integrator.as_ref();
        let s: Vec<(f64, f64)> = [1, 3, 5].iter().map(|nd| copy_uv(integ, *nd)).collect();
        us.push(DVector::from_iterator(3, s.iter().map(|x| x.0)));
        vs.push(DVector::from_iterator(3, s.iter().map(|x| x.1)));
        free.push(DVector::from_vec(vec![
            copy_uv(integ, 2).0,
            copy_uv(integ, 4).0,
        ]));
        // Every support copy moves at the prescribed velocity.
        let t = integ.time();
        for (j, m) in motions.iter().enumerate() {
            assert!((s[j].1 - m.velocity(t)).abs() < 1e-12, "{t} {j}");
        }
        sim.record(&mut row);
        for c in &drift_cols {
            worst_drift = worst_drift.max(row[*c].abs());
        }
    }
    let reference = Reference::new(beta).run(dt, &us, &vs);
    let mut worst: f64 = 0.0;
    let mut scale: f64 = 0.0;
    for (a, b) in free.iter().zip(&reference) {
        worst = worst.max((a - b).amax());
        scale = scale.max(b.amax());
    }
    println!(
        "multi-support LLM-trapezoid vs monolithic constraint elimination: max |Δu| = {worst:.3e} (max |u| = {scale:.3e}); max support drift {worst_drift:.3e}"
    );
    assert!(worst < 1e-13 * scale.max(1.0) * 100.0, "{worst}");
    assert!(worst_drift > 0.0 && worst_drift < 1e-4);
}

#[test]
fn support_drift_is_second_order_in_the_time_step() {
    let mut drifts = Vec::new();
    for dt in [0.01, 0.005, 0.0025] {
        let mut sim = hybridsim::Simulation::new(multi_support("generalized-alpha", dt)).unwrap();
        let cols = sim.columns().to_vec();
        let c = cols
            .iter()
            .position(|c| c.name == "drift.1.x")
            .expect("drift column");
        let mut row = vec![0.0; cols.len()];
        let mut worst: f64 = 0.0;
        for _ in 0..sim.n_steps() {
            sim.step().unwrap();
            sim.record(&mut row);
            worst = worst.max(row[c].abs());
        }
        drifts.push(worst);
    }
    let s = slopes(&drifts);
    println!("support 1 drift (sine displacement): max |drift| {drifts:?}, slopes {s:?}");
    assert!(s.iter().all(|x| (x - 2.0).abs() < 0.1), "{s:?}");
}

#[test]
fn accelerogram_support_motion_from_a_real_record() {
    let Some(dir) = ground_motions_dir() else {
        println!("SKIPPED: ground-motion records not found (set HYBRIDSIM_GROUND_MOTIONS)");
        return;
    };
    let path = dir.join("ElCentro1940_NS_PEER_IELC180.AT2");
    let text = std::fs::read_to_string(root().join("examples/multi_support.toml")).unwrap();
    let mut table: toml::Table = text.parse().unwrap();
    let entries = table["imposed_motion"].as_array_mut().unwrap();
    let mut rec = toml::Table::new();
    rec.insert("node".into(), 5.into());
    rec.insert("dof".into(), "x".into());
    rec.insert("record".into(), path.display().to_string().into());
    rec.insert("pga".into(), 0.2.into());
    entries[2] = toml::Value::Table(rec);
    set(&mut table, "analysis", "duration", 2.0);
    let m = Model::from_toml(
        &toml::to_string(&table).unwrap(),
        "ms.toml",
        &Folder(dir.clone()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let motion = m.imposed_motions[2].clone();
    // The support acceleration follows the record (g × 9.80665 m/s², kN-m-s units: m/s²).
    let peak = (0..4000)
        .map(|k| motion.acceleration(k as f64 * 0.005).abs())
        .fold(0.0, f64::max);
    println!(
        "El Centro support: peak acceleration {peak:.4} m/s² (0.2 g = {:.4})",
        0.2 * 9.80665
    );
    assert!((peak - 0.2 * 9.80665).abs() < 1e-9);
    let sim = run(m);
    assert!(sim.integrator.time() > 1.99);
}

fn ground_motions_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("HYBRIDSIM_GROUND_MOTIONS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data/ground-motions"));
    dir.is_dir().then_some(dir)
}

/// A small LLM model with `extra` appended, expected to fail.
fn error_of(body: &str) -> String {
    let text = format!(
        r#"
[[node]]
id = 1
dofs = ["x"]
fixed = ["x"]
[[node]]
id = 2
dofs = ["x"]
[[node]]
id = 3
dofs = ["x"]
[[element]]
type = "spring"
name = "a"
nodes = [1, 2]
dof = "x"
k = 10.0
[[element]]
type = "spring"
name = "b"
nodes = [2, 3]
dof = "x"
k = 10.0
{body}
[analysis]
integrator = "llm"
time_step = 0.01
duration = 0.1
"#
    );
    match Model::from_toml(&text, "bad.toml", &NoFiles) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const MASSES: &str = r#"
[[element]]
type = "mass"
name = "m2"
node = 2
mass = 1.0
[[element]]
type = "mass"
name = "m3"
node = 3
mass = 1.0
"#;

#[test]
fn malformed_connectivity_gives_clear_errors() {
    let cases: Vec<(String, &str, &str)> = vec![
        // A node carrying a mass but connected by no element.
        (
            format!(
                "{MASSES}\n[[node]]\nid = 4\ndofs = [\"x\"]\n[[element]]\ntype = \"mass\"\nname = \"m4\"\nnode = 4\nmass = 1.0\n"
            ),
            "bad.toml: element[4]",
            "node 4 dof x is a dangling node DOF",
        ),
        // Over-constrained: the same DOF driven twice.
        (
            format!(
                "{MASSES}\n[[imposed_motion]]\nnode = 3\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n[[imposed_motion]]\nnode = 3\ndof = \"x\"\npoints = [[0.0, 0.0], [1.0, 0.0]]\n"
            ),
            "imposed_motion[1].dof",
            "over-constrained: imposed_motion[0] already drives it",
        ),
        // Imposed motion on an unknown node, an unknown DOF, a fixed DOF.
        (
            format!("{MASSES}\n[[imposed_motion]]\nnode = 9\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n"),
            "imposed_motion[0].node",
            "unknown node 9",
        ),
        (
            format!("{MASSES}\n[[imposed_motion]]\nnode = 3\ndof = \"y\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n"),
            "imposed_motion[0].dof",
            "node 3 has no DOF `y`",
        ),
        (
            format!("{MASSES}\n[[imposed_motion]]\nnode = 1\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n"),
            "imposed_motion[0].dof",
            "node 1 dof x is fixed",
        ),
        // Massless partition: element b gets no mass at all (node 2's mass given to a only).
        (
            "[[element]]\ntype = \"mass\"\nname = \"m2\"\nnode = 2\nmass = 1.0\nsplit = { a = 1.0 }\n".to_string(),
            "element[1]",
            "`b` is a massless partition",
        ),
        // A free copy without mass.
        (
            "[[element]]\ntype = \"mass\"\nname = \"m3\"\nnode = 3\nmass = 1.0\n[[element]]\ntype = \"mass\"\nname = \"m2\"\nnode = 2\nmass = 1.0\nsplit = { a = 1.0 }\n".to_string(),
            "element[1]",
            "`b` gets no mass at node 2 dof x",
        ),
        // Split naming an unknown element.
        (
            format!("[[element]]\ntype = \"mass\"\nname = \"m2\"\nnode = 2\nmass = 1.0\nsplit = {{ zz = 1.0 }}\n{}", &MASSES[MASSES.find("[[element]]\ntype = \"mass\"\nname = \"m3\"").unwrap()..]),
            "element[2].split.zz",
            "neither an element nor a substructure",
        ),
        // Mass-proportional damping and a uniform ground motion in absolute coordinates.
        (
            format!("{MASSES}\n[damping]\nalpha = 0.1\n[[imposed_motion]]\nnode = 3\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n"),
            "damping.alpha",
            "mass-proportional damping would damp the rigid-body motion",
        ),
        (
            format!("{MASSES}\n[[ground_motion]]\ndirection = \"x\"\nsynthetic = {{ seed = 1, duration = 1.0, pga = 0.1 }}\n[[imposed_motion]]\nnode = 3\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n"),
            "ground_motion[0]",
            "cannot be combined with imposed motions",
        ),
        // Two histories at once, and no history.
        (
            format!("{MASSES}\n[[imposed_motion]]\nnode = 3\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\npoints = [[0.0, 0.0], [1.0, 0.0]]\n"),
            "imposed_motion[0]",
            "give exactly one of `sine`, `points`, `file`, `record`",
        ),
        (
            format!("{MASSES}\n[[imposed_motion]]\nnode = 3\ndof = \"x\"\nquantity = \"jerk\"\npoints = [[0.0, 0.0], [1.0, 0.0]]\n"),
            "imposed_motion[0].quantity",
            "must be \"displacement\", \"velocity\" or \"acceleration\"",
        ),
    ];
    for (body, field, reason) in cases {
        let e = error_of(&body);
        println!("{e}");
        assert!(
            e.contains(field) && e.contains(reason),
            "expected `{field}` / `{reason}` in:\n{e}"
        );
    }
    // Imposed motions need the llm integrator.
    let text =
        "[[node]]\nid = 1\ndofs = [\"x\"]\n[[element]]\ntype = \"mass\"\nnode = 1\nmass = 1.0\n\
         [[imposed_motion]]\nnode = 1\ndof = \"x\"\nsine = { amplitude = 0.1, frequency = 1.0 }\n\
         [analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.01\nduration = 0.1\n";
    let e = Model::from_toml(text, "bad.toml", &NoFiles)
        .unwrap_err()
        .to_string();
    println!("{e}");
    assert!(e.contains(
        "bad.toml: imposed_motion: imposed motions need the element-level partitioned integrator"
    ));
    // The trapezoidal basic solver is ρ∞ = 1; unknown basic solvers are named.
    for (analysis, field, reason) in [
        (
            "rho_inf = 0.5",
            "analysis.rho_inf",
            "the trapezoidal basic solver is ρ∞ = 1",
        ),
        (
            "basic_solver = \"euler\"",
            "analysis.basic_solver",
            "found `euler`",
        ),
    ] {
        let text = format!(
            "[[node]]\nid = 1\ndofs = [\"x\"]\n[[element]]\ntype = \"spring\"\nnodes = [1]\ndof = \"x\"\nk = 1.0\n\
             [[element]]\ntype = \"mass\"\nnode = 1\nmass = 1.0\n\
             [analysis]\nintegrator = \"llm\"\n{analysis}\ntime_step = 0.01\nduration = 0.1\n"
        );
        let e = Model::from_toml(&text, "bad.toml", &NoFiles)
            .unwrap_err()
            .to_string();
        println!("{e}");
        assert!(e.contains(field) && e.contains(reason), "{e}");
    }
}

/// The one evaluator shared by the model file, `cyclic` and a specimen drive: the ramped
/// cycles are consistent derivatives, `from_samples` validates with clear errors, `peaks`
/// bounds the history for actuator limit checks.
#[test]
fn motion_history_constructors_and_peaks() {
    // Ramped cycles A (t/T) sin(ωt): derivatives by central differences, continuous at T.
    let h = MotionHistory::ramped_sine(0.2, 0.5, 8.0);
    let e = 1e-5;
    let mut worst: f64 = 0.0;
    for k in 1..100 {
        let t = 0.0913 * k as f64;
        let [_, v, a] = h.kinematics(t);
        let dv = (h.kinematics(t + e)[0] - h.kinematics(t - e)[0]) / (2.0 * e);
        let da = (h.kinematics(t + e)[1] - h.kinematics(t - e)[1]) / (2.0 * e);
        worst = worst.max((dv - v).abs()).max((da - a).abs());
    }
    println!("ramped sine: worst central-difference mismatch {worst:.2e}");
    assert!(worst < 1e-7);
    assert_eq!(h.kinematics(-1.0), [0.0; 3]);
    assert_eq!(h.end_time(), Some(8.0));
    // At t = T − 1/(2f) a ramped peak is −A (T − 1/(2f))/T (sin 7.5π = −1).
    assert!((h.kinematics(7.5)[0] + 0.2 * 7.5 / 8.0).abs() < 1e-12);
    // The displacement sine shorthand equals the model file's sine.
    let s = MotionHistory::sine(0.05, 0.5);
    let m = motion(MotionHistory::Sine {
        quantity: MotionQuantity::Displacement,
        amplitude: 0.05,
        omega: std::f64::consts::PI,
        phase: 0.0,
    });
    for t in [0.0, 0.3, 1.7] {
        assert_eq!(s.kinematics(t), m.kinematics(t));
    }
    // Peaks: |d| ≤ A, |v| ≤ Aω, |a| ≤ Aω², attained to O(dt²).
    let w = std::f64::consts::PI;
    let [pd, pv, pa] = s.peaks(0.0, 4.0, 1e-3);
    assert!((pd - 0.05).abs() < 1e-9 && (pv - 0.05 * w).abs() < 1e-9);
    assert!((pa - 0.05 * w * w).abs() < 1e-8);
    // Sampled histories: validated, with the offending sample named.
    let cases: [(&[f64], &[f64], &str); 4] = [
        (&[0.0], &[0.0], "needs at least two samples"),
        (&[0.0, 1.0, 1.0], &[0.0, 1.0, 2.0], "sample 3: 1 after 1"),
        (
            &[0.0, 1.0],
            &[0.0, f64::NAN],
            "sample 2: value is not finite",
        ),
        (&[0.0, 1.0], &[0.0], "2 times but 1 values"),
    ];
    for (t, x, msg) in cases {
        let err = MotionHistory::from_samples(MotionQuantity::Displacement, t, x).unwrap_err();
        assert!(err.contains(msg), "{err}");
    }
    let pts = MotionHistory::from_samples(
        MotionQuantity::Displacement,
        &[0.0, 1.0, 2.0],
        &[0.0, 0.01, 0.0],
    )
    .unwrap();
    assert_eq!(pts.span(), Some((0.0, 2.0)));
    assert_eq!(pts.end_time(), Some(2.0));
    assert!((pts.peaks(0.0, 2.0, 0.5)[0] - 0.01).abs() < 1e-15);
    assert_eq!(MotionHistory::sine(1.0, 1.0).end_time(), None);
}

/// `[[imposed_motion]]` entries are found by `name` (or their default `imposed_motion[i]`, or
/// the index); names must be unique.
#[test]
fn imposed_motions_are_found_by_name() {
    use hybridsim::model::imposed_motion::find;
    let m = example_with("multi_support.toml", |t| {
        let ims = t.get_mut("imposed_motion").unwrap().as_array_mut().unwrap();
        ims[0]
            .as_table_mut()
            .unwrap()
            .insert("name".into(), "left".into());
    });
    let left = find(&m.imposed_motions, "left");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].dof, hybridsim::elements::DofRef::new(1, "x"));
    assert_eq!(find(&m.imposed_motions, "0")[0].name, "left");
    let right = find(&m.imposed_motions, "imposed_motion[2]");
    assert_eq!(right.len(), 1);
    assert_eq!(right[0].dof.node, 5);
    assert!(find(&m.imposed_motions, "nope").is_empty());
    let err = error_of(&format!(
        "{MASSES}\n[[imposed_motion]]\nname = \"s\"\nnode = 3\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n\
         [[imposed_motion]]\nname = \"s\"\nnode = 2\ndof = \"x\"\nsine = {{ amplitude = 0.1, frequency = 1.0 }}\n"
    ));
    assert!(
        err.contains("imposed_motion[1].name")
            && err.contains("`s` is already the name of imposed_motion[0]"),
        "{err}"
    );
}

/// The summary's modes are those of the model with the imposed DOFs restrained: for the
/// two-span chain, free DOFs u2 (m = 20, k = 4000 + 4000) and u4 (m = 15, k = 3000 + 3000), both
/// ω = 20 rad/s, and stiffness-proportional damping β = 0.002 gives ζ = βω/2 = 0.02 — no
/// rigid-body mode, no NaN damping.
#[test]
fn summary_modes_restrain_the_imposed_dofs() {
    let sim = hybridsim::Simulation::new(example_with("multi_support.toml", |_| {})).unwrap();
    let s = sim.summary();
    println!("{s}");
    assert!(
        s.contains("modes of the linearized coupled model (2 DOFs, the 3 imposed-motion DOF(s) restrained as fixed)"),
        "{s}"
    );
    let rows: Vec<Vec<f64>> = s
        .lines()
        .skip_while(|l| !l.contains("damping ratio"))
        .skip(1)
        .map(|l| {
            l.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect::<Vec<f64>>()
        })
        .take_while(|r| r.len() == 4)
        .collect();
    assert_eq!(rows.len(), 2, "{s}");
    for r in rows {
        assert!((r[1] - 20.0).abs() < 1e-5, "ω = {}", r[1]);
        assert!((r[3] - 0.02).abs() < 1e-5, "ζ = {}", r[3]);
    }
}
