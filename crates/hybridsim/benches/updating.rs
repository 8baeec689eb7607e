//! Cost of one online-updating step (issue 14): an unscented Kalman filter update of a
//! Bouc-Wen pier identification (2L + 1 sigma points, each propagated over one coarse step by
//! the element's law with 10 Runge–Kutta substeps, then gain and Joseph-form covariance).
//!
//! Also the build of refactorization on request (`[updating] refactorize = "on_update"`) next
//! to one PG-α coarse step of the same model.
//!
//! `cargo bench -p hybridsim --bench updating`. Criterion means for BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, Criterion};
use hybridsim::elements::{BoucWen, DofRef};
use hybridsim::updating::{
    ElementModel, Identification, IdentificationSettings, SigmaPoints, StepKinematics,
};
use std::hint::black_box;

fn identification(parameters: &[&str]) -> Identification<ElementModel> {
    let pier = BoucWen::new(vec![DofRef::new(1, "x")], 2.0e7, 3.5, 60.0, 1.0).unwrap();
    let model = ElementModel::new(Box::new(pier), parameters, 10).unwrap();
    let (mean, sd): (Vec<f64>, Vec<f64>) = parameters
        .iter()
        .map(|p| {
            if *p == "A" {
                (1.5e7, 5e6)
            } else {
                (50.0, 20.0)
            }
        })
        .unzip();
    let settings = IdentificationSettings {
        bounds: mean.iter().map(|m| (m / 100.0, m * 100.0)).collect(),
        parameter_noise_sd: vec![0.0; mean.len()],
        prior_mean: mean,
        prior_sd: sd,
        state_noise_sd: 10.0,
        measurement_sd: 3e3,
        sigma_points: SigmaPoints::Scaled {
            alpha: 1.0,
            beta: 2.0,
            kappa: 0.0,
        },
    };
    Identification::new(model, &settings).unwrap()
}

fn bench(c: &mut Criterion) {
    let dt = 1.0 / 1024.0;
    let w = 2.0 * std::f64::consts::PI;
    for parameters in [&["A"][..], &["A", "gamma"][..]] {
        let name = format!("ukf_update_bouc_wen_{}", parameters.join("_"));
        let mut id = identification(parameters);
        let mut n = 0u64;
        c.bench_function(&name, |b| {
            b.iter(|| {
                let (t0, t1) = (n as f64 * dt, (n + 1) as f64 * dt);
                let kin = StepKinematics {
                    dt,
                    displacement: [0.02 * (w * t0).sin(), 0.02 * (w * t1).sin()],
                    velocity: [0.02 * w * (w * t0).cos(), 0.02 * w * (w * t1).cos()],
                };
                n += 1;
                // A measurement near the model's own prediction keeps the filter running.
                let z = id.force() + 1e3 * (0.7 * n as f64).sin();
                black_box(id.update(black_box(&kin), z));
            })
        });
        assert_eq!(
            id.trip(),
            None,
            "{name}: the filter tripped during the benchmark"
        );
    }
}

/// The online updating of `examples/updating_two_pier_bridge.toml` inside a run: one PG-α coarse
/// step of the virtual laboratory (5 controller ticks) and one `OnlineUpdating::after_step`
/// (A and γ, 10 Runge–Kutta substeps per sigma point, the estimates of the previous update
/// applied to the numerical pier), so that the share of the step is measured on one model.
fn bench_in_run(c: &mut Criterion) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/updating_two_pier_bridge.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let model = hybridsim::Model::from_toml(
        &text,
        "updating_two_pier_bridge.toml",
        &hybridsim::model::NoFiles,
    )
    .unwrap();
    let n_steps = model.analysis.n_steps();
    let fresh = || {
        let mut integ = hybridsim::integrators::build(&model).unwrap();
        let online =
            hybridsim::online_updating::OnlineUpdating::new(&model, integ.as_mut(), n_steps)
                .unwrap()
                .unwrap();
        (integ, online)
    };
    // Steps are taken from a fresh run and restarted before the record ends.
    let (mut integ, mut online) = fresh();
    c.bench_function("two_pier_pg_alpha_step", |b| {
        b.iter(|| {
            if integ.steps_taken() + 1 >= n_steps {
                (integ, online) = fresh();
            }
            integ.step().unwrap();
        })
    });
    let (mut integ, mut online2) = fresh();
    c.bench_function("two_pier_pg_alpha_step_with_updating", |b| {
        b.iter(|| {
            if integ.steps_taken() + 1 >= n_steps {
                (integ, online2) = fresh();
            }
            integ.step().unwrap();
            online2.after_step(integ.as_mut());
        })
    });
    let _ = online.updates();
}

/// An `n`-storey shear chain on PG-α: storey 1 tested (a physical partition without a
/// laboratory, with its estimate), storeys 2..n numerical springs and masses, the middle
/// storey a Bouc–Wen column (the receiver of `[updating] refactorize = "on_update"`).
fn chain(n: usize) -> hybridsim::Model {
    let mut t = String::from("title = \"chain\"\n");
    for i in 1..=n {
        t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
    }
    t += "[substructure.frame]\n[substructure.storey]\nphysical = true\n\
          estimate = { dofs = [[1, \"x\"]], stiffness = [[4.0e7]] }\n\
          [[element]]\ntype = \"mass\"\nname = \"m1\"\nnode = 1\nmass = 4.0e4\n\
          split = { frame = 0.5, storey = 0.5 }\n\
          [[element]]\ntype = \"spring\"\nname = \"k1\"\nnodes = [1]\ndof = \"x\"\n\
          k = 4.0e7\nsubstructure = \"storey\"\n";
    let middle = n / 2 + 1;
    for i in 2..=n {
        if i == middle {
            t += &format!(
                "[[element]]\ntype = \"bouc_wen\"\nname = \"pier\"\nnodes = [{}, {i}]\n\
                 dof = \"x\"\nA = 4.0e7\nbeta = 3.5\ngamma = 60.0\nn = 1.0\n\
                 substructure = \"frame\"\n",
                i - 1
            );
        } else {
            t += &format!(
                "[[element]]\ntype = \"spring\"\nname = \"k{i}\"\nnodes = [{}, {i}]\n\
                 dof = \"x\"\nk = 4.0e7\nsubstructure = \"frame\"\n",
                i - 1
            );
        }
        t += &format!(
            "[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 4.0e4\n\
             substructure = \"frame\"\n"
        );
    }
    t += "[damping]\nalpha = 0.1\nbeta = 0.0\n";
    t += "[[load]]\nnode = 2\ndof = \"x\"\nsine = { amplitude = 1.0e5, frequency = 1.0 }\n";
    t += "[analysis]\nintegrator = \"pg-alpha\"\ntime_step = 0.005\nsubcycles = 5\n\
          duration = 10.0\n";
    hybridsim::Model::from_toml(&t, "chain.toml", &hybridsim::model::NoFiles).unwrap()
}

/// Refactorization on request (`[updating] refactorize = "on_update"`): the build of the
/// receiving partition's new operators (`J0` re-assembled, `D^N` factorized, `ℚ^N`, `H`) for a
/// new value of A, next to one PG-α coarse step of the same model; for the two-pier example
/// (receiver pier B, A and γ) and for shear chains of 100 and 1000 storeys.
fn bench_refactorization(c: &mut Criterion) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/updating_two_pier_bridge.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let example = hybridsim::Model::from_toml(
        &text,
        "updating_two_pier_bridge.toml",
        &hybridsim::model::NoFiles,
    )
    .unwrap();
    let models = [
        ("two_pier", example, "pier_b", &["A", "gamma"][..]),
        ("chain_100", chain(100), "pier", &["A"][..]),
        ("chain_1000", chain(1000), "pier", &["A"][..]),
    ];
    for (name, model, receiver, parameters) in models {
        let mut integ = hybridsim::integrators::build(&model).unwrap();
        let (k, s) = integ
            .partitions()
            .iter()
            .enumerate()
            .find_map(|(k, p)| {
                (!p.state.physical)
                    .then(|| p.state.slots.iter().position(|x| x.name() == receiver))
                    .flatten()
                    .map(|s| (k, s))
            })
            .unwrap();
        let size = integ.partitions()[k].state.size();
        println!("{name}: numerical partition of size {size}");
        let mut r = integ.refactorizer(k, &[s], parameters).unwrap();
        let mut step = 0u64;
        c.bench_function(&format!("refactorization_build_{name}"), |b| {
            b.iter(|| {
                step += 1;
                // A new A every build (so the tangent changes), γ as it is.
                let a = 4.0e7 * (1.0 + 0.1 * ((step % 7) as f64));
                let values = [a, 60.0];
                black_box(r.build(step, &values[..parameters.len()]).unwrap().unwrap());
            })
        });
        let n_steps = model.analysis.n_steps();
        c.bench_function(&format!("refactorization_step_{name}"), |b| {
            b.iter(|| {
                if integ.steps_taken() + 1 >= n_steps {
                    integ = hybridsim::integrators::build(&model).unwrap();
                }
                integ.step().unwrap();
            })
        });
    }
}

criterion_group!(benches, bench, bench_in_run, bench_refactorization);
criterion_main!(benches);
