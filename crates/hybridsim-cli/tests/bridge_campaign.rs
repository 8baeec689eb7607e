//! The bridge campaign in short (scripts/bridge/campaign.sh runs it whole): the as-built and
//! isolated bridges of Abbiati et al. (2019, 2020) on the virtual lab under the same record; the
//! isolation (D-CSB, LRB and T-CSB pairs) must lower Pier 1's peak displacement, every column
//! must be finite, and the bridge with one D-CSB tested on the lab must agree with the same
//! bridge with every bearing numerical.

mod common;

use common::{col, hybridsim, read_csv, root, scratch};
use std::path::{Path, PathBuf};

/// `examples/NAME` for a 4 s run under El Centro (absolute path) or, without the records, a
/// synthetic record at the same PGA; written to `dir`.
fn short_copy(name: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples").join(name)).unwrap();
    let record = "record = \"../../shared/data/ground-motions/ElCentro1940_NS_PEER_IELC180.AT2\"";
    assert!(text.contains(record) && text.contains("duration = 10.0"));
    let motion = match common::ground_motion_folder() {
        Some(d) => format!(
            "record = \"{}\"",
            d.join("ElCentro1940_NS_PEER_IELC180.AT2").display()
        ),
        None => "synthetic = { seed = 2015, duration = 4.0, pga = 0.35 }".to_string(),
    };
    let mut text = text
        .replace(record, &motion)
        .replace("duration = 10.0", "duration = 4.0");
    if !motion.starts_with("record") {
        text = text.replace("pga = 0.35\n", "");
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `model` into `out`; the header and rows of its results.
fn run(model: &Path, out: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let status = hybridsim()
        .args(["run", "-q"])
        .arg(model)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap();
    assert!(status.success(), "{}", model.display());
    let (header, rows) = read_csv(&out.join("results.csv"));
    assert!(
        rows.iter().flatten().all(|x| x.is_finite()),
        "{}: a non-finite value",
        model.display()
    );
    (header, rows)
}

fn peak(rows: &[Vec<f64>], f: impl Fn(&[f64]) -> f64) -> f64 {
    rows.iter().map(|r| f(r).abs()).fold(0.0, f64::max)
}

/// Peak |u| of `column` over the run of `model` into `out` (see [`run`]).
fn peak_pier_displacement(model: &Path, out: &Path, column: &str) -> f64 {
    let (header, rows) = run(model, out);
    let c = col(&header, column);
    peak(&rows, |r| r[c])
}

#[test]
fn isolation_lowers_the_tested_pier_displacement() {
    let dir = scratch("bridge");
    let ab = short_copy("bridge_ab.toml", &dir);
    let iso = short_copy("bridge_iso.toml", &dir);
    let u_ab = peak_pier_displacement(&ab, &dir.join("ab"), "u.pier.6.y[m]");
    let u_iso = peak_pier_displacement(&iso, &dir.join("iso"), "u.pier.106.y[m]");
    assert!(u_ab > 0.0 && u_iso > 0.0);
    assert!(
        u_iso < 0.5 * u_ab,
        "ISO pier peak {u_iso} m is not well below AB's {u_ab} m"
    );
}

/// The all-numerical twin of `examples/bridge_iso_tested.toml` (and of
/// `bridge_iso_pier_dcsb_tested.toml`): the tested bearing pair over Pier 1 (and Pier 1) moved
/// into the numerical model (same laws, same masses), no lab.
fn all_numerical(tested: &str) -> String {
    let mut text = tested.to_string();
    for table in ["[substructure.bearing]", "[substructure.pier]"] {
        let Some(start) = text.find(table) else {
            continue;
        };
        let end = start + text[start..].find("\n\n").unwrap();
        text = format!("{}{}", &text[..start], &text[end..]);
    }
    // One numerical model, integrated by the monolithic generalized-alpha scheme with the same
    // rho_inf and step.
    text = text
        .replace("substructure = \"bearing\"", "substructure = \"bridge\"")
        .replace("substructure = \"pier\"", "substructure = \"bridge\"")
        .replace("split = { bridge = 0.5, bearing = 0.5 }\n", "")
        .replace("integrator = \"pg-alpha\"", "integrator = \"mg-alpha\"");
    // PG-α's keys (the subcycles, the multiplier predictor) do not apply to MG-α.
    text = text
        .lines()
        .filter(|l| !l.starts_with("subcycles") && !l.starts_with("multiplier_predictor"))
        .map(|l| format!("{l}\n"))
        .collect();
    let lab = text.find("[lab]").unwrap();
    text.truncate(lab);
    text
}

/// `text` with the coarse step Δt^N divided by 4 (and the output every 4 times as many steps,
/// so that rows fall at the same times), and ss by 4: the physical step Δt^P and the
/// controller tick Δt^C stay those of the example (1/1024 s of wall clock), as in a lab whose
/// controller rate is fixed.
fn quarter_step(text: &str) -> String {
    let (dt, every, ss) = (
        "time_step = 0.0009765625",
        "[output]\nevery = 8\n",
        "subcycles = 256 ",
    );
    // (The all-numerical twin has no ss.)
    assert!(text.contains(dt) && text.contains(every));
    assert!(text.contains(ss) || !text.contains("pg-alpha"));
    text.replace(dt, "time_step = 0.000244140625")
        .replace(every, "[output]\nevery = 32\n")
        .replace(ss, "subcycles = 64 ")
}

/// A tested bridge example (shortened, `short_copy`) and its three twins, written to `dir`:
/// the same bridge all numerical (`all_numerical`), and both at a quarter of the coarse step
/// (`quarter_step`).
struct Variants {
    text: String,
    tested: PathBuf,
    numerical: PathBuf,
    tested_fine: PathBuf,
    numerical_fine: PathBuf,
}

fn variants(example: &str, dir: &Path) -> Variants {
    let tested = short_copy(example, dir);
    let text = std::fs::read_to_string(&tested).unwrap();
    let write = |name: &str, t: String| {
        let p = dir.join(name);
        std::fs::write(&p, t).unwrap();
        p
    };
    Variants {
        numerical: write("numerical.toml", all_numerical(&text)),
        tested_fine: write("tested_fine.toml", quarter_step(&text)),
        numerical_fine: write("numerical_fine.toml", quarter_step(&all_numerical(&text))),
        tested,
        text,
    }
}

/// The tested D-CSB against its all-numerical twin (the same bridge with the bearing pair over
/// Pier 1 numerical, integrated monolithically by MG-α with the converged nonlinear solve).
///
/// The example runs the papers' ss = λ = 256 with `multiplier_predictor = "previous"` and the
/// sliding-stiffness estimate (docs/bridge.md, "ss = λ"); measured at 0.35 g El Centro, 4 s:
/// peak errors (bearing, pier) 0.021 %, 0.060 % at Δt and 0.003 %, 0.006 % at Δt/4 (ss = 64),
/// the 10 ms lag 0.036 %, 0.048 %. Before (ss = 4, the published split, the initial-stiffness
/// estimate), as follows.
///
/// Where the difference came from (issue 18; measured at 0.35 g El Centro, 4 s): the twin is
/// converged in Δt (its pier peak moves by 0.2 % from Δt = 1/1024 s to Δt/16), so the
/// difference is the tested run's own error, and that error is first order in Δt: pier peak
/// +5.9 %, +2.4 %, +1.0 % at Δt, Δt/2, Δt/4 (bearing +1.6 %, +1.4 %, +0.8 %). PG-α commands
/// the specimen along the *free* path of its substeps, which lacks the share
/// `(j/ss) Λ_{n+1}` of the interface force; the link update then moves the physical
/// partition onto the coupled path by `ℚ^P Λ_{n+1}`, which is exact by superposition for a
/// linear specimen but not for a stick-slip bearing, whose slip state stays that of the free
/// path. The gap grows as `Λ Δt² / m^P`: here up to 0.2 mm per coarse step on 1 t interface
/// plates against the bearing's 1 mm yield displacement. Under the former single correction
/// (`nonlinear_solver = "corrections"`) the twin had an error of its own (pier +3.3 % at Δt)
/// that happened to cancel the tested run's, hence the 0.25 % agreement then.
#[test]
fn the_tested_dcsb_agrees_with_the_all_numerical_iso_bridge() {
    let dir = scratch("bridge-tested");
    let Variants {
        text,
        tested,
        numerical,
        tested_fine,
        numerical_fine,
    } = variants("bridge_iso_tested.toml", &dir);
    // The same run with a first-order actuator lag of 10 ms (wall clock): 39 µs of simulation
    // time at lambda = 256.
    let lagged = dir.join("lagged.toml");
    std::fs::write(
        &lagged,
        text.replace(
            "capacity = { stroke = 0.25",
            "dynamics = { kind = \"first_order\", tau = 0.010 }\ncapacity = { stroke = 0.25",
        ),
    )
    .unwrap();
    let (hn, rn) = run(&numerical, &dir.join("numerical"));
    let (ht, rt) = run(&tested, &dir.join("tested"));
    let (hl, rl) = run(&lagged, &dir.join("lagged"));
    let (hnf, rnf) = run(&numerical_fine, &dir.join("numerical_fine"));
    let (htf, rtf) = run(&tested_fine, &dir.join("tested_fine"));
    for rows in [&rt, &rl, &rnf, &rtf] {
        assert_eq!(rn.len(), rows.len());
    }
    let bearing = |h: &[String]| {
        let (a, b) = (col(h, "u.bridge.6.y[m]"), col(h, "u.bridge.106.y[m]"));
        move |r: &[f64]| r[a] - r[b]
    };
    let pier = |h: &[String]| {
        let c = col(h, "u.bridge.106.y[m]");
        move |r: &[f64]| r[c]
    };
    // Peaks of (bearing, pier) and the largest history differences relative to the peaks.
    let peaks = |h: &[String], rows: &[Vec<f64>]| (peak(rows, bearing(h)), peak(rows, pier(h)));
    let history = |ha: &[String], ra: &[Vec<f64>], hb: &[String], rb: &[Vec<f64>]| {
        let (da, pa, db, pb) = (bearing(ha), pier(ha), bearing(hb), pier(hb));
        let (sd, sp) = peaks(ha, ra);
        ra.iter().zip(rb).fold((0.0f64, 0.0f64), |(d, p), (a, b)| {
            (
                d.max((da(a) - db(b)).abs() / sd),
                p.max((pa(a) - pb(b)).abs() / sp),
            )
        })
    };
    let error = |x: (f64, f64), reference: (f64, f64)| {
        (
            (x.0 - reference.0).abs() / reference.0,
            (x.1 - reference.1).abs() / reference.1,
        )
    };
    let (num, num_fine) = (peaks(&hn, &rn), peaks(&hnf, &rnf));
    assert!(num.0 > 1e-3, "the bearing hardly moves: {} m", num.0);
    let twin = error(num, num_fine);
    let coarse = error(peaks(&ht, &rt), num);
    let fine = error(peaks(&htf, &rtf), num_fine);
    let lag = error(peaks(&hl, &rl), peaks(&ht, &rt));
    let h_coarse = history(&hn, &rn, &ht, &rt);
    let h_fine = history(&hnf, &rnf, &htf, &rtf);
    println!(
        "all-numerical peaks: bearing {:.4e} m, pier {:.4e} m (Δt/4 vs Δt: {:.2e}, {:.2e}); \
         tested D-CSB, ideal actuator, peak errors (bearing, pier): Δt {:.2e}, {:.2e}; Δt/4 \
         {:.2e}, {:.2e}; largest history differences of the peaks: Δt {:.2e}, {:.2e}; Δt/4 \
         {:.2e}, {:.2e}; 10 ms lag against the ideal actuator: {:.2e}, {:.2e}",
        num.0,
        num.1,
        twin.0,
        twin.1,
        coarse.0,
        coarse.1,
        fine.0,
        fine.1,
        h_coarse.0,
        h_coarse.1,
        h_fine.0,
        h_fine.1,
        lag.0,
        lag.1
    );
    // The reference is converged: what remains is the tested run's error.
    assert!(
        twin.0 < 0.005 && twin.1 < 0.005,
        "twin, Δt vs Δt/4: {twin:?}"
    );
    // The tested run's error is the physical partition's first-order error (see above): it
    // falls with Δt, and at Δt/4 the peaks agree within 1.5 %.
    assert!(
        coarse.0 < 0.03 && coarse.1 < 0.08,
        "ideal actuator, Δt, peaks: {coarse:?}"
    );
    if common::ground_motion_folder().is_some() {
        assert!(
            fine.0 < 0.015 && fine.1 < 0.015,
            "ideal actuator, Δt/4, peaks: {fine:?}"
        );
        assert!(
            fine.1 < 0.5 * coarse.1,
            "the pier's error does not fall with Δt: {coarse:?} -> {fine:?}"
        );
    } else {
        // The synthetic motion (no records): the bearing's peak agrees within 0.4 %, but the
        // pier's peak falls in a stick phase of the bearings and its error converges slowly
        // and changes sign (measured +8.0 %, -7.2 %, -3.1 % at Δt, Δt/4, Δt/16).
        assert!(
            fine.0 < 0.015 && fine.1 < 0.08,
            "ideal actuator, Δt/4, peaks: {fine:?}"
        );
    }
    assert!(
        h_fine.0 < 0.5 * h_coarse.0.max(0.02) && h_fine.1 < 0.5 * h_coarse.1.max(0.02),
        "histories: Δt {h_coarse:?}, Δt/4 {h_fine:?}"
    );
    // 39 µs of simulated lag changes the peaks by little against the ideal actuator.
    assert!(lag.0 < 0.002 && lag.1 < 0.002, "10 ms lag, peaks: {lag:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_isolation_variant_lowers_the_pier_displacement() {
    let dir = scratch("bridge-variants");
    let ab = short_copy("bridge_ab.toml", &dir);
    let u_ab = peak_pier_displacement(&ab, &dir.join("ab"), "u.pier.6.y[m]");
    for name in [
        "bridge_iso_tested.toml",
        "bridge_iso_lrb.toml",
        "bridge_iso_tcsb.toml",
    ] {
        let model = short_copy(name, &dir);
        let out = dir.join(name.trim_end_matches(".toml"));
        let (h, rows) = run(&model, &out);
        let (deck, pier) = (col(&h, "u.bridge.6.y[m]"), col(&h, "u.bridge.106.y[m]"));
        let u_pier = peak(&rows, |r| r[pier]);
        let u_bearing = peak(&rows, |r| r[deck] - r[pier]);
        println!("{name}: pier {u_pier:.4e} m, bearing {u_bearing:.4e} m (AB pier {u_ab:.4e} m)");
        assert!(u_pier > 0.0);
        assert!(
            u_pier < 0.5 * u_ab,
            "{name}: pier peak {u_pier} m is not well below AB's {u_ab} m"
        );
        // The isolation works by the bearing's deformation: it moves more than the pier.
        assert!(
            u_bearing > u_pier,
            "{name}: bearing {u_bearing} m, pier {u_pier} m"
        );
    }
}

/// Pier 1 (1:2 specimen) and one D-CSB over it tested at once: two physical substructures on
/// one virtual lab, one actuator each, sharing node 106, the pier's actuator with its own
/// scales. It runs under `run` and `realtime --pacing fast` (the same rows) and agrees with the
/// all-numerical bridge: at Δt = 1/1024 s the peaks within 5 % (bearing) and 6 % (pier), at
/// Δt/4 within 1.5 %. Measured with the records at the example's ss = 256 and the
/// `previous` multiplier predictor: 0.008 %, 0.086 % at Δt, 0.001 %, 0.011 % at Δt/4 (before,
/// at ss = 4 with the published split: -1.9 %, +4.1 % and 0.08 %, 0.90 %, the physical
/// partitions' first-order error of the tested D-CSB test above).
#[test]
fn pier_and_dcsb_tested_at_once_agree_with_the_all_numerical_bridge() {
    let dir = scratch("bridge-two-tested");
    let Variants {
        tested,
        numerical,
        tested_fine,
        numerical_fine,
        ..
    } = variants("bridge_iso_pier_dcsb_tested.toml", &dir);
    let (hn, rn) = run(&numerical, &dir.join("numerical"));
    let (ht, rt) = run(&tested, &dir.join("tested"));
    let (hnf, rnf) = run(&numerical_fine, &dir.join("numerical_fine"));
    let (htf, rtf) = run(&tested_fine, &dir.join("tested_fine"));
    let rt_out = dir.join("realtime");
    let status = hybridsim()
        .args(["realtime", "--pacing", "fast", "-o"])
        .arg(&rt_out)
        .arg(&tested)
        .status()
        .unwrap();
    assert!(status.success());
    let (hr, rr) = read_csv(&rt_out.join("results.csv"));
    assert_eq!(hr, ht);
    assert_eq!(rr, rt, "realtime --pacing fast differs from run");
    let run_json = common::json(&dir.join("tested").join("run.json"));
    assert_eq!(
        run_json["lab"]["actuator_scales"]["pier"]["force_scale"],
        serde_json::json!(4.0),
        "{}",
        run_json["lab"]
    );
    let peaks = |h: &[String], rows: &[Vec<f64>]| {
        let (a, b) = (col(h, "u.bridge.6.y[m]"), col(h, "u.bridge.106.y[m]"));
        (peak(rows, |r| r[a] - r[b]), peak(rows, |r| r[b]))
    };
    let error = |x: (f64, f64), reference: (f64, f64)| {
        (
            (x.0 - reference.0).abs() / reference.0,
            (x.1 - reference.1).abs() / reference.1,
        )
    };
    let coarse = error(peaks(&ht, &rt), peaks(&hn, &rn));
    let fine = error(peaks(&htf, &rtf), peaks(&hnf, &rnf));
    println!("pier + D-CSB tested, peak errors (bearing, pier): Δt {coarse:?}, Δt/4 {fine:?}");
    // Measured with the records 0.008 %, 0.086 % (ss = 256, `previous`); at ss = 4 with the
    // published split -1.9 %, +4.1 %, and with the synthetic motion 3.7 %, 2.3 %.
    assert!(coarse.0 < 0.05 && coarse.1 < 0.06, "Δt: {coarse:?}");
    // Without the records (a synthetic motion) the pier's peak falls in a stick phase of the
    // bearings and converges more slowly (see the tested D-CSB test).
    let pier_fine = if common::ground_motion_folder().is_some() {
        0.015
    } else {
        0.08
    };
    assert!(fine.0 < 0.015 && fine.1 < pier_fine, "Δt/4: {fine:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The papers' ss = λ (Δt^C = Δt^N = 1/1024 s; ss = 256 at λ = 256) under the example's own
/// safety limits and 2 t interface plates: Pier 1 and one D-CSB tested at once run to the end
/// with no safety event, and each actuator's largest command step per controller tick stays
/// below its velocity limit × Δt^C. With the published split of the interface force
/// (`multiplier_predictor = "none"`) the link update moves the bearing's command by up to
/// 0.2 mm in one tick, and the same run stops on the velocity limit at t = 0.24 s.
#[test]
fn the_bridge_runs_at_ss_equal_to_lambda_within_its_velocity_limits() {
    let dir = scratch("bridge-ss-lambda");
    let model = short_copy("bridge_iso_pier_dcsb_tested.toml", &dir);
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(text.contains("time_scale = 256.0") && text.contains("subcycles = 256 "));
    let predictor = "multiplier_predictor = \"previous\"";
    assert!(text.contains(predictor));
    let text = text.replace("duration = 4.0", "duration = 2.0");
    std::fs::write(&model, &text).unwrap();
    let out = dir.join("previous");
    run(&model, &out);
    let run_json = common::json(&out.join("run.json"));
    assert_eq!(run_json["status"], "completed", "{}", run_json["safety"]);
    let tick = run_json["time_scale"]["dt_C_wall"].as_f64().unwrap();
    assert_eq!(tick, 1.0 / 1024.0);
    let mut checked = 0;
    for s in run_json["safety"].as_array().unwrap() {
        assert!(s["event"].is_null(), "{s}");
        let jumps = s["largest_command_jump"].as_array().unwrap();
        let limits = s["velocity_limits"].as_array().unwrap();
        for (jump, limit) in jumps.iter().zip(limits) {
            let (jump, limit) = (jump.as_f64().unwrap(), limit.as_f64().unwrap());
            println!(
                "{}: largest command step {jump:.3e} m per tick, limit {:.3e} m",
                s["substructure"],
                limit * tick
            );
            assert!(jump > 0.0 && jump < limit * tick, "{s}");
            checked += 1;
        }
    }
    assert_eq!(checked, 2, "{}", run_json["safety"]);
    // The published split trips the velocity limit (through the safety layer: the run fails).
    let published = dir.join("published.toml");
    std::fs::write(
        &published,
        text.replace(predictor, "multiplier_predictor = \"none\""),
    )
    .unwrap();
    let out = dir.join("published");
    let status = hybridsim()
        .args(["run", "-q"])
        .arg(&published)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(!status.success());
    let run_json = common::json(&out.join("run.json"));
    assert_eq!(
        run_json["safety_event"]["kind"], "velocity_limit",
        "{run_json}"
    );
    assert!(run_json["time_reached"].as_f64().unwrap() < 0.5);
    let _ = std::fs::remove_dir_all(&dir);
}
