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

/// The quick start with a servo controller (PID feedback, lead/lag feedforward), blocks on
/// the target, command, error and measurement, and the adaptive time series compensator:
/// its steps allocate nothing either (the ATS window fills and is re-identified inside the
/// counted steps).
#[test]
fn a_controller_and_ats_lab_steps_without_allocating() {
    let m = example_with("quickstart.toml", |t| {
        set(t, "analysis", "duration", 4.0);
        let a = t["lab"]["actuator"].as_array_mut().unwrap()[0]
            .as_table_mut()
            .unwrap();
        let edit: toml::Table = toml::from_str(
            "dynamics = { kind = 'first_order', tau = 0.005 }\n\
             compensation = { adaptive = { window = 200, update_every = 5 } }\n\
             [controller]\n\
             feedback = [{ kind = 'pid', kp = 2.0, ki = 20.0, kd = 0.0005, derivative_time_constant = 0.002, min = -1.0, max = 1.0 }]\n\
             feedforward = [{ kind = 'lead_lag', gain = 0.3, zero = 50.0, pole = 200.0 }]\n\
             [signals]\n\
             target = [{ kind = 'rate_limit', rate = 1.5 }]\n\
             command = [{ kind = 'quantizer', resolution = 1e-7, range = 0.3 }]\n\
             error = [{ kind = 'saturation', min = -0.05, max = 0.05 }]\n\
             measurement = [{ kind = 'quantizer', resolution = 1e-7, range = 0.3 }]\n",
        )
        .unwrap();
        for (k, v) in edit {
            a.insert(k, v);
        }
    });
    let mut sim = hybridsim::Simulation::new(m).unwrap();
    let mut row = vec![0.0; sim.columns().len()];
    sim.step().unwrap();
    sim.record(&mut row);
    let steps = count(|| {
        for _ in 0..500 {
            sim.step().unwrap();
        }
    });
    println!("controller + ATS lab: {steps} allocations in 500 steps");
    assert_eq!(steps, 0, "the controller + ATS lab step allocates");
    let mut updates = 0.0;
    sim.integrator.for_each_lab(&mut |_, lab| {
        for (k, v) in lab.safety_summary().compensation_statistics {
            if k.ends_with("ats_updates") {
                updates = v;
            }
        }
    });
    assert!(updates > 100.0, "the ATS identified {updates} times");
}

/// The recorder's capture of a lab step (taken by the run loop after every step that has no
/// row due) and the row made from it allocate nothing, with the element, provider and energy
/// channels on.
#[test]
fn capturing_a_row_and_making_it_later_do_not_allocate() {
    let mut m = example_with("quickstart.toml", |t| {
        set(t, "analysis", "duration", 1.0);
    });
    m.output.elements = true;
    m.output.energy = true;
    let mut integ = hybridsim::integrators::build(&m).unwrap();
    let mut recorder = hybridsim::output::Recorder::new(&m, integ.as_ref());
    let mut row = vec![0.0; recorder.n_columns()];
    integ.step().unwrap();
    recorder.capture(integ.as_mut());
    recorder.record_captured(integ.as_ref(), &mut row);
    let n = count(|| {
        for _ in 0..50 {
            integ.step().unwrap();
            recorder.capture(integ.as_mut());
            recorder.record_captured(integ.as_ref(), &mut row);
        }
    });
    let steps = count(|| {
        for _ in 0..50 {
            integ.step().unwrap();
        }
    });
    println!("{n} allocations in 50 steps with capture and captured row, {steps} in 50 steps");
    assert_eq!(n, 0, "capturing or making the captured row allocates");
}
