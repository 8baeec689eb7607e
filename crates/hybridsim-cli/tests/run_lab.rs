//! `hybridsim run` on a model with a `[lab]` (the quick start): the controller-rate `lab.csv`,
//! the safety state, time scale, seeds and tracking indicators in `run.json`; and a safety
//! stop through `run` (stroke breach) with every completed step and tick on disk.

mod common;
use common::*;

#[test]
fn run_quickstart_writes_controller_rate_lab_records_and_indicators() {
    let dir = scratch("quickstart");
    let out = hybridsim()
        .args(["run", "examples/quickstart.toml", "--quiet", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    assert!(stdout.contains("time scale: dt_N"), "{stdout}");
    let (header, rows) = read_csv(&dir.join("lab.csv"));
    for name in [
        "time[s]",
        "wall_time[s]",
        "desired.storey1[m]",
        "compensated.storey1[m]",
        "measured.storey1[m]",
        "force.storey1[kN]",
        "safety.storey1[-]",
    ] {
        col(&header, name);
    }
    // One row at rest, the bumpless start (a hold of 16 ticks, one approach command, 16
    // settling ticks, all at t = 0), then one per controller tick: 4000 steps × ss = 5,
    // Δt^C = Δt^P = 1 ms.
    let approach = 2 * 16 + 1;
    assert_eq!(rows.len(), 1 + approach + 20_000);
    let t = col(&header, "time[s]");
    let w = col(&header, "wall_time[s]");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), header.len());
        // The lab clock runs from the first tick of the bumpless start.
        assert!(
            (r[w] - k as f64 * 1e-3).abs() < 1e-9,
            "row {k}: wall {}",
            r[w]
        );
        let k = k.saturating_sub(approach);
        assert!(
            (r[t] - k as f64 * 1e-3).abs() < 1e-9,
            "row {k}: t = {}",
            r[t]
        );
        assert_eq!(r[col(&header, "safety.storey1[-]")], 0.0);
    }
    // The compensated command differs from the desired one (delay compensation) and the
    // measured displacement follows the desired one closely.
    let (d, c, m) = (
        col(&header, "desired.storey1[m]"),
        col(&header, "compensated.storey1[m]"),
        col(&header, "measured.storey1[m]"),
    );
    let peak = rows.iter().map(|r| r[d].abs()).fold(0.0, f64::max);
    assert!(peak > 1e-3);
    assert!(rows.iter().any(|r| (r[c] - r[d]).abs() > 1e-6 * peak));
    let err = rows.iter().map(|r| (r[m] - r[d]).abs()).fold(0.0, f64::max);
    assert!(
        err < 0.05 * peak,
        "peak tracking error {err} vs peak {peak}"
    );

    // The noise-free columns of the virtual lab: NaN during the bumpless start, then the
    // achieved displacement (no displacement noise or ADC here: equal to the measured one)
    // and the force before the load cell's 0.5 kN RMS noise.
    let (xt, f, ft) = (
        col(&header, "achieved_true.storey1[m]"),
        col(&header, "force.storey1[kN]"),
        col(&header, "force_true.storey1[kN]"),
    );
    for r in &rows[..1 + approach] {
        assert!(r[xt].is_nan() && r[ft].is_nan());
    }
    let test = &rows[1 + approach..];
    assert!(test.iter().all(|r| r[xt] == r[m]));
    let n = test.len() as f64;
    let noise_rms = (test.iter().map(|r| (r[f] - r[ft]).powi(2)).sum::<f64>() / n).sqrt();
    assert!(
        (noise_rms - 0.5).abs() < 0.05,
        "measured − noise-free force: RMS {noise_rms} kN, declared 0.5 kN"
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "completed");
    assert_eq!(json["steps_completed"], 4000);
    assert_eq!(json["random_seeds"][0]["seed"], 2026);
    assert_eq!(json["random_seeds"][1]["seed"], 2027);
    let ts = &json["time_scale"];
    assert_eq!(ts["dt_N"], 0.005);
    assert_eq!(ts["subcycles"], 5);
    assert_eq!(ts["lambda"], 1.0);
    assert_eq!(ts["dt_P"], 0.001);
    assert_eq!(ts["dt_C_wall"], 0.001);
    assert_eq!(ts["dt_S_wall"], 0.005);
    assert_eq!(json["safety"][0]["state"], "armed");
    assert!(json["safety"][0]["event"].is_null());
    // The 17 commands of the bumpless start (one approach command, 16 settling) and one per
    // tick; the lab rows as counted above.
    assert_eq!(json["safety"][0]["commands_sent"], 17 + 20_000);
    assert!(json["safety_event"].is_null());
    assert_eq!(json["lab"]["lab_rows_written"][0], 1 + approach + 20_000);
    let ind = &json["indicators"][0];
    assert_eq!(ind["actuator"], "storey1");
    for key in [
        "delay_seconds",
        "nrms_tracking_error",
        "peak_tracking_error",
        "energy_error",
        "energy_input",
        "energy_throughput",
        "normalized_energy_error",
    ] {
        assert!(ind[key].as_f64().unwrap().is_finite(), "{key}");
    }
    // Compensated 4 ms delay: tracking within a few per cent, no residual delay.
    assert!(ind["nrms_tracking_error"].as_f64().unwrap() < 0.03);
    assert!(ind["delay_seconds"].as_f64().unwrap() < 0.002);
    assert!(ind["normalized_energy_error"].as_f64().unwrap().abs() < 0.05);
    assert!(dir.join("synchronization.png").exists());
}

#[test]
fn run_stops_on_a_stroke_breach_with_the_event_in_run_json() {
    let dir = scratch("stroke");
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    // A stroke far below the response: the first command beyond it is refused.
    let text = text.replace(
        "displacement = 0.25      # stroke, m",
        "displacement = 0.002",
    );
    assert!(text.contains("displacement = 0.002"));
    let model = dir.join("model_in.toml");
    std::fs::write(&model, text).unwrap();
    let out = hybridsim()
        .args(["run", "--quiet", "-o"])
        .arg(dir.join("out"))
        .arg(&model)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("displacement_limit"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/run.json")).unwrap()).unwrap();
    // A safety stop ends `run` as it ends `realtime`: "stopped" (was "failed" before the one
    // trip policy of hybridsim::runner).
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["safety"][0]["state"], "tripped");
    assert_eq!(json["safety_event"]["kind"], "displacement_limit");
    let max_sent = json["safety"][0]["max_command_sent"][0].as_f64().unwrap();
    assert!(
        max_sent <= 0.002,
        "a command beyond the stroke left: {max_sent}"
    );
    let steps = json["steps_completed"].as_u64().unwrap();
    // Every completed step and every tick up to the event is on disk.
    let (_, rows) = read_csv(&dir.join("out/results.csv"));
    // (every = 2, and the row of the last completed step whatever `every` is.)
    assert_eq!(rows.len() as u64, 1 + steps.div_ceil(2));
    let (header, lab) = read_csv(&dir.join("out/lab.csv"));
    let sent = json["safety"][0]["commands_sent"].as_u64().unwrap();
    // The rest row, the 16 rows of the hold before the bumpless start (nothing sent), one
    // per accepted command and the row of the refused one.
    assert_eq!(lab.len() as u64, sent + 2 + 16);
    assert_eq!(lab.last().unwrap()[col(&header, "safety.storey1[-]")], 1.0);
}
