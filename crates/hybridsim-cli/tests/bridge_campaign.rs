//! The bridge campaign in short (scripts/bridge/campaign.sh runs it whole): the as-built and
//! isolated bridges of Abbiati et al. (2019, 2020) on the virtual lab under the same record; the
//! isolation (D-CSB, LRB and T-CSB pairs) must lower Pier 1's peak displacement, every column
//! must be finite, and the bridge with one D-CSB tested on the lab must agree with the same
//! bridge with every bearing numerical.

mod common;

use common::{col, hybridsim, read_csv, root, scratch};
use std::path::Path;

/// `examples/NAME` for a 4 s run under El Centro (absolute path) or, without the records, a
/// synthetic record at the same PGA; written to `dir`.
fn short_copy(name: &str, dir: &Path) -> std::path::PathBuf {
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

fn peak_pier_displacement(model: &Path, out: &Path, column: &str) -> f64 {
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
    let c = col(&header, column);
    rows.iter().map(|r| r[c].abs()).fold(0.0, f64::max)
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

/// The all-numerical twin of `examples/bridge_iso_tested.toml`: the bearing pair over Pier 1
/// moved into the numerical model (same law, same masses), no lab.
fn all_numerical(tested: &str) -> String {
    let start = tested.find("[substructure.bearing]").unwrap();
    let end = start + tested[start..].find("\n\n").unwrap();
    let mut text = format!("{}{}", &tested[..start], &tested[end..]);
    // One numerical model, integrated by the monolithic generalized-alpha scheme with the same
    // rho_inf and step.
    text = text
        .replace("substructure = \"bearing\"", "substructure = \"bridge\"")
        .replace("split = { bridge = 0.5, bearing = 0.5 }\n", "")
        .replace("integrator = \"pg-alpha\"", "integrator = \"mg-alpha\"")
        .replace("subcycles = 4\n", "");
    let lab = text.find("[lab]").unwrap();
    text.truncate(lab);
    text
}

#[test]
fn the_tested_dcsb_agrees_with_the_all_numerical_iso_bridge() {
    let dir = scratch("bridge-tested");
    let tested = short_copy("bridge_iso_tested.toml", &dir);
    let text = std::fs::read_to_string(&tested).unwrap();
    let numerical = dir.join("numerical.toml");
    std::fs::write(&numerical, all_numerical(&text)).unwrap();
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
    assert_eq!(rn.len(), rt.len());
    assert_eq!(rn.len(), rl.len());
    let bearing = |h: &[String], deck: &str, pier: &str| {
        let (a, b) = (col(h, deck), col(h, pier));
        move |r: &[f64]| r[a] - r[b]
    };
    let d_num = bearing(&hn, "u.bridge.6.y[m]", "u.bridge.106.y[m]");
    let d_tested = bearing(&ht, "u.bridge.6.y[m]", "u.bridge.106.y[m]");
    let d_lagged = bearing(&hl, "u.bridge.6.y[m]", "u.bridge.106.y[m]");
    let pier = |h: &[String]| {
        let c = col(h, "u.bridge.106.y[m]");
        move |r: &[f64]| r[c]
    };
    let (p_num, p_tested, p_lagged) = (pier(&hn), pier(&ht), pier(&hl));
    let scale_d = peak(&rn, d_num);
    let scale_p = peak(&rn, p_num);
    assert!(scale_d > 1e-3, "the bearing hardly moves: {scale_d} m");
    // Largest difference over the history, relative to the numerical peak.
    let diff = |rows_a: &[Vec<f64>],
                fa: &dyn Fn(&[f64]) -> f64,
                rows_b: &[Vec<f64>],
                fb: &dyn Fn(&[f64]) -> f64| {
        rows_a
            .iter()
            .zip(rows_b)
            .map(|(a, b)| (fa(a) - fb(b)).abs())
            .fold(0.0, f64::max)
    };
    let peak_error = |rows: &[Vec<f64>], f: &dyn Fn(&[f64]) -> f64, reference: f64| {
        (peak(rows, f) - reference).abs() / reference
    };
    let e_d = peak_error(&rt, &d_tested, scale_d);
    let e_p = peak_error(&rt, &p_tested, scale_p);
    let e_d_lag = peak_error(&rl, &d_lagged, scale_d);
    let e_p_lag = peak_error(&rl, &p_lagged, scale_p);
    let h_d = diff(&rn, &d_num, &rt, &d_tested) / scale_d;
    let h_p = diff(&rn, &p_num, &rt, &p_tested) / scale_p;
    println!(
        "all-numerical peaks: bearing {scale_d:.4e} m, pier {scale_p:.4e} m; tested D-CSB, ideal \
         actuator: peak errors bearing {e_d:.2e}, pier {e_p:.2e}, largest history differences \
         {h_d:.2e}, {h_p:.2e} of the peaks; 10 ms lag: peak errors {e_d_lag:.2e}, {e_p_lag:.2e}"
    );
    // The partitioned test (PG-alpha, ss = 4) against the monolithic all-numerical model: the
    // stick-slip of the bearings shifts by a step or so, hence the looser history bound.
    // Since the converged solve of nonlinear partitions became the default (issue 17), the
    // pier's peak differs by 5.9 % (it was 0.25 % when both sides made one correction).
    assert!(
        e_d < 0.08 && e_p < 0.08,
        "ideal actuator, peaks: {e_d}, {e_p}"
    );
    assert!(
        h_d < 0.15 && h_p < 0.25,
        "ideal actuator, histories: {h_d}, {h_p}"
    );
    assert!(
        e_d_lag < 0.08 && e_p_lag < 0.08,
        "10 ms lag, peaks: {e_d_lag}, {e_p_lag}"
    );
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
