//! Per-step cost of the partitioned Rosenbrock LSRT2 schemes (Bursi et al. 2011) against the
//! monolithic LSRT2 and PG-α on the same models and the same Δt (criterion; `cargo bench -p
//! hybridsim --bench lsrt2`, add `-- --quick` for a short run). One `step()` advances Δt for
//! every scheme (for `lsrt2-interfield` Δt is the exchange step, the coarse subdomain's
//! processes are interleaved), so the means compare the cost per simulated second.
mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use hybridsim::model::NoFiles;
use hybridsim::Model;
use std::hint::black_box;
use std::time::Duration;

/// `text` with `[analysis]` set to `scheme` (extra keys `key = value` lines), a long duration.
fn with_scheme(text: &str, name: &str, scheme: &[(&str, toml::Value)]) -> Model {
    let mut t: toml::Table = text.parse().expect("model TOML");
    let a = t["analysis"].as_table_mut().expect("analysis table");
    for key in ["integrator", "rho_inf", "subcycles", "lsrt2_gamma"] {
        a.remove(key);
    }
    for (k, v) in scheme {
        a.insert((*k).into(), v.clone());
    }
    a.insert("duration".into(), 1.0e6.into());
    let text = toml::to_string(&t).expect("TOML");
    Model::from_toml(&text, name, &NoFiles).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn schemes() -> Vec<(&'static str, Vec<(&'static str, toml::Value)>)> {
    vec![
        (
            "pg-alpha ss=1",
            vec![
                ("integrator", "pg-alpha".into()),
                ("rho_inf", 0.9.into()),
                ("subcycles", 1.into()),
            ],
        ),
        ("lsrt2", vec![("integrator", "lsrt2".into())]),
        (
            "lsrt2-partitioned",
            vec![("integrator", "lsrt2-partitioned".into())],
        ),
        (
            "lsrt2-interfield ss=2",
            vec![
                ("integrator", "lsrt2-interfield".into()),
                ("subcycles", 2.into()),
            ],
        ),
    ]
}

fn steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("lsrt2");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let split_mass = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/split_mass_v1.toml"),
    )
    .expect("example");
    let models = [
        ("split-mass", split_mass),
        ("bridge linear", common::bridge_text(9, false)),
        ("bridge", common::bridge_text(9, true)),
    ];
    for (model, text) in &models {
        for (scheme, keys) in schemes() {
            let m = with_scheme(text, model, &keys);
            let mut sim = hybridsim::Simulation::new(m).unwrap_or_else(|e| panic!("{e}"));
            for _ in 0..100 {
                sim.step().unwrap();
            }
            group.bench_function(format!("{model}/{scheme}"), |b| {
                b.iter(|| {
                    sim.step().unwrap();
                    black_box(sim.integrator.state(0)[0]);
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
