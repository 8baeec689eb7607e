//! A real-time step must not allocate: count heap allocations inside the steps.
mod common;
use common::*;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;
use common::counting::count;

fn loaded(integrator: &str, ss: i64) -> hybridsim::Model {
    example_with("split_mass_v1.toml", |t| {
        set(t, "analysis", "integrator", integrator);
        set(t, "analysis", "subcycles", ss);
        set(t, "analysis", "duration", 1.0);
        set(t, "analysis", "rho_inf", 0.8);
        let gm: toml::Value = toml::from_str::<toml::Table>(
            "direction = 'x'\nsynthetic = { seed = 7, duration = 5.0, pga = 0.3 }",
        )
        .unwrap()
        .into();
        t.insert("ground_motion".into(), toml::Value::Array(vec![gm]));
        let load: toml::Value = toml::from_str::<toml::Table>(
            "node = 2\ndof = 'x'\nsine = { amplitude = 100.0, frequency = 2.0 }",
        )
        .unwrap()
        .into();
        t.insert("load".into(), toml::Value::Array(vec![load]));
    })
}

#[test]
fn steps_and_recording_do_not_allocate() {
    // The counter itself works.
    assert!(
        count(|| {
            std::hint::black_box(vec![1u8; 16]);
        }) >= 1
    );
    for (integrator, ss, corrections) in [
        ("mg-alpha", 1i64, 1i64),
        ("mg-alpha", 1, 3),
        ("pg-alpha", 1, 1),
        ("pg-alpha", 10, 2),
        ("lsrt2", 1, 1),
    ] {
        let mut m = loaded(integrator, ss);
        m.analysis.corrections = corrections as usize;
        let mut sim = hybridsim::Simulation::new(m).unwrap();
        let mut row = vec![0.0; sim.columns().len()];
        // Warm up.
        sim.step().unwrap();
        sim.record(&mut row);
        let steps = count(|| {
            for _ in 0..500 {
                sim.step().unwrap();
            }
        });
        let records = count(|| {
            for _ in 0..50 {
                sim.record(&mut row);
            }
        });
        println!("{integrator} ss={ss} corrections={corrections}: {steps} allocations in 500 steps, {records} in 50 records");
        assert_eq!(steps, 0, "{integrator}: the step allocates");
        assert_eq!(records, 0, "{integrator}: recording allocates");
    }
}
