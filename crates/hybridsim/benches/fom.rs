//! Per-step cost of the full-operator method (Hung and El-Tawil 2009) with each tangent
//! update, of operator splitting (Nakashima et al. 1990) and of monolithic generalized-α on
//! `examples/fom_01_six_storey.toml` (6 DOFs, 6 bilinear storeys, a seeded synthetic record at
//! 1 g of 10 s (as the tests) instead of the El Centro file; each simulation is started again after 9 s, outside
//! the timed region, so that every measured step is in strong motion), measured in the same run so that the ratios compare like
//! with like (`cargo bench -p hybridsim --bench fom`; `-- --quick` for a short run).
//!
//! Two groups: `fom_step/stand-in` without `[lab]` (the first storey through the numerical
//! stand-in, the only setting MG-α also runs) and `fom_step/virtual-lab` with the example's
//! virtual lab (actuator, ADC, safety checks every tick).
use criterion::{criterion_group, criterion_main, Criterion};
use hybridsim::model::NoFiles;
use hybridsim::Model;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

/// The example with the synthetic record, a long duration, `integrator` and `update`.
fn model(integrator: &str, update: Option<&str>, lab: bool) -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fom_01_six_storey.toml");
    let mut t: toml::Table = std::fs::read_to_string(path)
        .expect("example")
        .parse()
        .expect("TOML");
    t.insert(
        "ground_motion".into(),
        toml::Value::Array(vec![toml::Value::Table(
            "direction = \"x\"\nsynthetic = { seed = 15, duration = 10.0, pga = 1.0 }"
                .parse()
                .expect("TOML"),
        )]),
    );
    if !lab {
        t.remove("lab");
        t.remove("safety");
    }
    let a = t["analysis"].as_table_mut().expect("analysis");
    a.insert("integrator".into(), integrator.into());
    a.insert("duration".into(), 1.0e6.into());
    a.remove("estimator");
    if let Some(u) = update {
        a.insert(
            "estimator".into(),
            toml::Value::Table(format!("update = \"{u}\"").parse().expect("TOML")),
        );
    }
    let text = toml::to_string(&t).expect("TOML");
    Model::from_toml(&text, "fom_01_six_storey.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

fn cases(lab: bool) -> Vec<(String, Model)> {
    let mut v = Vec::new();
    if !lab {
        v.push(("mg-alpha".to_string(), model("mg-alpha", None, false)));
    }
    v.push(("osm".to_string(), model("osm", None, lab)));
    for u in ["none", "bfgs", "dfp", "broyden", "broyden-family", "sr1"] {
        v.push((format!("fom-{u}"), model("fom", Some(u), lab)));
    }
    v
}

/// A simulation stepped in timed batches and started again (untimed) every [`RESTART`] steps.
struct Stepper {
    model: Model,
    sim: hybridsim::Simulation,
    count: usize,
}

/// Steps before a restart: 9 s of the 10 s record.
const RESTART: usize = 1800;

impl Stepper {
    fn new(model: Model) -> Self {
        let sim = hybridsim::Simulation::new(model.clone()).unwrap_or_else(|e| panic!("{e}"));
        let mut s = Self {
            model,
            sim,
            count: 0,
        };
        s.restart();
        s
    }

    fn restart(&mut self) {
        self.sim = hybridsim::Simulation::new(self.model.clone()).unwrap_or_else(|e| panic!("{e}"));
        // Past the start and into the record's strong motion.
        for _ in 0..400 {
            self.sim.step().unwrap();
        }
        self.count = 400;
    }

    /// Time `n` steps (restarts excluded).
    fn run(&mut self, n: u64) -> Duration {
        let mut total = Duration::ZERO;
        let mut left = n as usize;
        while left > 0 {
            if self.count >= RESTART {
                self.restart();
            }
            let batch = left.min(RESTART - self.count);
            let t0 = std::time::Instant::now();
            for _ in 0..batch {
                self.sim.step().unwrap();
            }
            black_box(self.sim.integrator.state(0)[0]);
            total += t0.elapsed();
            self.count += batch;
            left -= batch;
        }
        total
    }
}

fn steps(c: &mut Criterion) {
    for (label, lab) in [("stand-in", false), ("virtual-lab", true)] {
        let mut group = c.benchmark_group(format!("fom_step/{label}"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        for (name, m) in cases(lab) {
            let mut stepper = Stepper::new(m);
            group.bench_function(name.as_str(), |b| b.iter_custom(|iters| stepper.run(iters)));
        }
        group.finish();
    }
    interleaved_ratios();
}

/// The ratios to OSM, robust to a loaded machine: every case stepped in turn, 1000 steps at a
/// time, 40 rounds, the fastest round of each case kept (printed to standard error).
fn interleaved_ratios() {
    for (label, lab) in [("stand-in", false), ("virtual-lab", true)] {
        let mut cases: Vec<(String, Stepper)> = cases(lab)
            .into_iter()
            .map(|(n, m)| (n, Stepper::new(m)))
            .collect();
        let mut best = vec![f64::INFINITY; cases.len()];
        for _ in 0..40 {
            for (i, (_, stepper)) in cases.iter_mut().enumerate() {
                let t = stepper.run(1000).as_secs_f64() * 1e3;
                best[i] = best[i].min(t);
            }
        }
        let osm = cases.iter().position(|(n, _)| n == "osm").expect("osm");
        eprintln!("fastest of 40 interleaved rounds of 1000 steps, {label}:");
        for (i, (n, _)) in cases.iter().enumerate() {
            eprintln!(
                "  {n:<20} {:>7.3} µs per step   {:>5.2} × OSM",
                best[i],
                best[i] / best[osm]
            );
        }
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
