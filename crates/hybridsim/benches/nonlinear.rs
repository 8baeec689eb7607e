//! Per-step cost of the converged nonlinear solve (issue 17, `analysis.nonlinear_solver =
//! "converged"`, the default) against the single fixed-D correction it replaced
//! (`"corrections"`) and against Newton's method with the current tangent (`"newton"`, the
//! matrix re-assembled and re-factored every iteration), on MG-α at Δt = 1 ms: the six-storey bilinear shear building of
//! `tests/hysteretic_accuracy.rs` (`mostaghel` storeys, mass-proportional damping) and the
//! Bouc-Wen SDOF, under a seeded synthetic motion (1 g, so that the storeys yield). One
//! measured iteration is the first 2000 steps (2 s of strong motion) of a fresh simulation
//! built outside the timed region (`cargo bench -p hybridsim --bench nonlinear`; `-- --quick`
//! for a short run).
//!
//! Group `pg_alpha_link`: PG-α's step on `examples/bridge_iso.toml` (a synthetic motion, Rayleigh
//! damping on the current tangent of the bearings) with the link operator built once on the
//! initial tangent (`analysis.link_tangent = "initial"`, the published link) and rebuilt every step
//! on the current tangent (`"current"`: one assembly and band factorization of `M + c ∂R/∂Y`
//! at the free state, one solve per interface DOF, `H` re-factored), 1000 steps from a fresh
//! simulation per iteration.
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use hybridsim::model::NoFiles;
use hybridsim::{Model, Simulation};
use std::hint::black_box;
use std::time::Duration;

const STEPS: usize = 2000;

fn shear6(solver: &str) -> Model {
    let g = 9.80665;
    let masses = [2.0e5; 6];
    let k = [3.0e8, 2.8e8, 2.6e8, 2.3e8, 2.0e8, 1.6e8];
    let mut text = String::from("title = \"six-storey bilinear\"\n[units]\nlength = \"m\"\nforce = \"N\"\ntime = \"s\"\n[substructure.frame]\n");
    for i in 1..=6 {
        text += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = {:e}\nsubstructure = \"frame\"\n", masses[i - 1]);
    }
    for i in 1..=6 {
        let fy = 0.2 * g * masses[i - 1..].iter().sum::<f64>();
        let nodes = if i == 1 {
            "[1]".to_string()
        } else {
            format!("[{i}, {}]", i - 1)
        };
        text += &format!(
            "[[element]]\ntype = \"mostaghel\"\nname = \"s{i}\"\nnodes = {nodes}\ndof = \"x\"\nk = {:e}\nalpha = 0.03\ndelta = {:e}\nsubstructure = \"frame\"\n",
            k[i - 1],
            fy / k[i - 1]
        );
    }
    finish(text, 0.5, solver)
}

fn bouc_wen(solver: &str) -> Model {
    let m = 1.0e5;
    let a = 4.0 * std::f64::consts::PI.powi(2) * m / 0.25;
    let text = format!("title = \"Bouc-Wen SDOF\"\n[units]\nlength = \"m\"\nforce = \"N\"\ntime = \"s\"\n[substructure.frame]\n[[node]]\nid = 1\ndofs = [\"x\"]\n[[element]]\ntype = \"mass\"\nname = \"m\"\nnode = 1\nmass = {m:e}\nsubstructure = \"frame\"\n[[element]]\ntype = \"bouc_wen\"\nname = \"s\"\nnodes = [1]\ndof = \"x\"\nA = {a:e}\nbeta = 3.5\ngamma = 60.0\nn = 1.0\nsubstructure = \"frame\"\n");
    finish(text, 0.0, solver)
}

fn finish(mut text: String, alpha: f64, solver: &str) -> Model {
    text += &format!("[damping]\nalpha = {alpha}\nbeta = 0.0\n[[ground_motion]]\ndirection = \"x\"\nsynthetic = {{ seed = 17, duration = 10.0, pga = 1.0 }}\n[analysis]\nintegrator = \"mg-alpha\"\nrho_inf = 1.0\ntime_step = 0.001\nduration = 10.0\nnonlinear_solver = \"{solver}\"\n");
    Model::from_toml(&text, "bench.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("nonlinear_step");
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(20);
    for (name, build) in [
        ("shear6", shear6 as fn(&str) -> Model),
        ("bouc_wen", bouc_wen),
    ] {
        for solver in ["corrections", "converged", "newton"] {
            let model = build(solver);
            // Iterations per step of the converged solve, for the report.
            let mut sim = Simulation::new(model.clone()).expect("simulation");
            for _ in 0..STEPS {
                sim.step().expect("step");
            }
            if let Some(r) = sim.integrator.nonlinear_solve() {
                eprintln!(
                    "{name}/{solver}: {:.2} corrections per step over {STEPS} steps, {} unconverged",
                    r.iterations as f64 / r.solves as f64,
                    r.unconverged_steps
                );
            }
            group.bench_function(format!("{name}/{solver}/{STEPS}_steps"), |b| {
                b.iter_batched(
                    || Simulation::new(model.clone()).expect("simulation"),
                    |mut sim| {
                        for _ in 0..STEPS {
                            sim.step().expect("step");
                        }
                        black_box(sim)
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

/// `examples/bridge_iso.toml` over 6 s of a synthetic motion, Rayleigh damping on the current
/// tangent of its bilinear bearings, `analysis.link_tangent = link`.
fn bridge_iso(link: &str) -> Model {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(root.join("bridge_iso.toml")).expect("bridge_iso.toml");
    let mut t: toml::Table = text.parse().expect("toml");
    let section = |t: &mut toml::Table, name: &str| -> toml::Table {
        t.get(name)
            .and_then(|v| v.as_table())
            .cloned()
            .unwrap_or_default()
    };
    let mut analysis = section(&mut t, "analysis");
    analysis.insert("duration".into(), 6.0.into());
    analysis.insert("link_tangent".into(), link.into());
    t.insert("analysis".into(), analysis.into());
    let mut damping = section(&mut t, "damping");
    damping.insert("stiffness".into(), "current".into());
    t.insert("damping".into(), damping.into());
    let gm: toml::Table = "direction = 'y'\nsynthetic = { seed = 7, duration = 6.0, pga = 0.35 }"
        .parse()
        .expect("toml");
    t.insert("ground_motion".into(), vec![toml::Value::Table(gm)].into());
    for e in t["element"].as_array_mut().expect("elements") {
        let e = e.as_table_mut().expect("element");
        if e["type"].as_str() == Some("mostaghel") {
            e.insert("rayleigh".into(), true.into());
        }
    }
    let text = toml::to_string(&t).expect("toml");
    Model::from_toml(&text, "bridge_iso.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn bench_link(c: &mut Criterion) {
    const BRIDGE_STEPS: usize = 1000;
    let mut group = c.benchmark_group("pg_alpha_link");
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(20);
    for link in ["initial", "current"] {
        let model = bridge_iso(link);
        let mut sim = Simulation::new(model.clone()).expect("simulation");
        for _ in 0..BRIDGE_STEPS {
            sim.step().expect("step");
        }
        if let Some(r) = sim.integrator.nonlinear_solve() {
            eprintln!(
                "bridge_iso/{link}: {:.3} iterations per step over {BRIDGE_STEPS} steps, {} link operators built",
                r.iterations as f64 / r.solves as f64,
                r.link_builds
            );
        }
        group.bench_function(format!("bridge_iso/{link}/{BRIDGE_STEPS}_steps"), |b| {
            b.iter_batched(
                || Simulation::new(model.clone()).expect("simulation"),
                |mut sim| {
                    for _ in 0..BRIDGE_STEPS {
                        sim.step().expect("step");
                    }
                    black_box(sim)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_link);
criterion_main!(benches);
