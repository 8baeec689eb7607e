//! The typed physical port: exactly one command per controller tick for every scheme that
//! drives a lab, and a refusal (naming the scheme and the substructure) for every scheme
//! that cannot.

use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::{MgAlpha, PgAlpha, TimeIntegrator};
use hybridsim::model::StartMode;
use hybridsim::{Model, Simulation};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn quickstart(edit: impl Fn(&str) -> String) -> Model {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/quickstart.toml"
    );
    let text = edit(&std::fs::read_to_string(path).unwrap());
    Model::from_toml(&text, "quickstart.toml", &hybridsim::model::NoFiles)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn pg_alpha_commands_the_lab_once_per_controller_tick_with_corrections() {
    for corrections in [1usize, 2, 4] {
        let model = quickstart(|t| {
            t.replace(
                "subcycles = 5 ",
                &format!("corrections = {corrections}\nsubcycles = 5 "),
            )
        });
        assert_eq!(model.analysis.corrections, corrections);
        let a = &model.analysis;
        let mut parts = build_partitions(&model, Grouping::Partitioned).unwrap();
        let commands = Arc::new(AtomicU64::new(0));
        let times = Arc::new(Mutex::new(Vec::new()));
        for p in parts.iter_mut() {
            if let Some(port) = p.physical.as_mut() {
                let (c, t) = (commands.clone(), times.clone());
                // Count the commands and keep the tick times.
                port.intercept(Box::new(move |inner, tick, u, v, f| {
                    c.fetch_add(1, Ordering::Relaxed);
                    t.lock().unwrap().push(tick.time());
                    inner.command(tick, u, v, f)
                }));
            }
        }
        let mut pg = PgAlpha::new(
            parts,
            &hybridsim::integrators::StepSettings::from_analysis(a).start(StartMode::Consistent),
        )
        .unwrap();
        let steps = 200u64;
        for _ in 0..steps {
            pg.step().unwrap();
        }
        let ss = a.subcycles as u64;
        let k = pg.physical().next().unwrap();
        let sent = pg.partitions()[k]
            .lab()
            .unwrap()
            .safety_summary()
            .commands_sent;
        println!(
            "corrections = {corrections}: {} commands through the port, {sent} sent by the lab, {} ticks",
            commands.load(Ordering::Relaxed),
            steps * ss
        );
        assert_eq!(commands.load(Ordering::Relaxed), steps * ss);
        // Plus the bumpless start (already at the model's position: one approach command and
        // the settling ticks).
        let approach = hybridsim::physical::safety::APPROACH_HOLD_TICKS + 1;
        assert_eq!(sent, steps * ss + approach);
        assert_eq!(
            pg.partitions()[k].physical.as_ref().unwrap().commands(),
            steps * ss
        );
        // One tick per Δt^P, strictly increasing: never a second command at the same time.
        let times = times.lock().unwrap();
        let dt_p = a.time_step / a.subcycles as f64;
        for (i, t) in times.iter().enumerate() {
            assert!(
                (t - (i as f64 + 1.0) * dt_p).abs() < 1e-9,
                "tick {i} at {t}"
            );
        }
    }
}

#[test]
fn a_lab_with_a_scheme_that_cannot_drive_it_is_refused() {
    for scheme in ["mg-alpha", "lsrt2", "llm"] {
        let model = quickstart(|t| {
            t.replace(
                "integrator = \"pg-alpha\"",
                &format!("integrator = \"{scheme}\""),
            )
            .replace("subcycles = 5 ", "# subcycles = 5 ")
            .replace(
                "integrator = \"llm\"",
                "integrator = \"llm\"\nbasic_solver = \"generalized-alpha\"",
            )
            // LLM makes each specimen element a partition: keep one specimen element.
            .replace(
                "c = 60.0\nsubstructure = \"first_storey\"",
                "c = 60.0\nsubstructure = \"first_storey\"\nrole = \"numerical\"",
            )
        });
        let err = Simulation::new(model).err().expect("must be refused");
        let msg = err.to_string();
        println!("{scheme}: {msg}");
        assert!(msg.contains("analysis.integrator"), "{msg}");
        assert!(msg.contains(&format!("`{scheme}`")), "{msg}");
        assert!(msg.contains("`first_storey`"), "{msg}");
        assert!(msg.contains("[lab]"), "{msg}");
    }
}

#[test]
fn mg_alpha_refuses_to_iterate_on_a_physical_substructure() {
    // The stand-in specimen behind a port (no lab): MG-α on the physical partition alone.
    let model = quickstart(|t| {
        let cut = t.find("[lab]").unwrap();
        t[..cut].to_string()
    });
    let parts = build_partitions(&model, Grouping::Partitioned).unwrap();
    let physical = parts.into_iter().find(|p| p.physical.is_some()).unwrap();
    let err = MgAlpha::new(
        physical,
        &hybridsim::integrators::StepSettings::new(0.005)
            .rho_inf(0.9)
            .corrections(3),
    )
    .err()
    .expect("corrections on a specimen must be refused");
    println!("{err}");
    assert!(err.contains("first_storey"), "{err}");
    assert!(err.contains("cannot be corrected"), "{err}");
}

#[test]
fn an_open_loop_command_cannot_go_back_in_time() {
    let model = quickstart(|t| t.to_string());
    let mut parts = build_partitions(&model, Grouping::Partitioned).unwrap();
    let port = parts.iter_mut().find_map(|p| p.physical.as_mut()).unwrap();
    port.measure_at_rest(0.0, &[0.0, 0.0]).unwrap();
    port.command_open_loop(1e-3, &[1e-5, 0.0]).unwrap();
    let err = port.command_open_loop(1e-3, &[2e-5, 0.0]).unwrap_err();
    assert!(err.to_string().contains("not later"), "{err}");
    assert_eq!(port.commands(), 1);
}
