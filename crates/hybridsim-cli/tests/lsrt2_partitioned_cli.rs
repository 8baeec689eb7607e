//! The partitioned Rosenbrock LSRT2 schemes of Bursi et al. (2011) through the `hybridsim`
//! binary: `run` of the split-mass example against the in-process core and the closed form,
//! the Table 1 system on the virtual lab (both schemes) against the closed form, the same lab
//! over the controller link (UDP, loopback) bit-identical to the in-process lab,
//! `realtime --pacing fast` bit-identical to `run`, and the paper's Fig 7 (second order on
//! the split-mass SDoF) by `analyze convergence`.

mod common;

use common::{col, hybridsim, over_link, read_csv, root, scratch, serve_controller};
use hybridsim::model::{Model, NoFiles};
use std::path::{Path, PathBuf};

const SPLIT_MASS: &str = "examples/lsrt2_interfield_split_mass.toml";
const TABLE_1: &str = "examples/lsrt2_table1_virtual_lab.toml";

fn run(model: &Path, out: &Path) {
    let o = hybridsim()
        .arg("run")
        .arg(model)
        .arg("-o")
        .arg(out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        model.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// The Table 1 lab example with the single-rate scheme of §3 (ss = 1).
fn table_1_partitioned() -> String {
    read(TABLE_1)
        .replacen(
            "integrator = \"lsrt2-interfield\"",
            "integrator = \"lsrt2-partitioned\"",
            1,
        )
        .lines()
        .filter(|l| !l.starts_with("coarse =") && !l.starts_with("subcycles ="))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Free vibration of the emulated Table 1 system (M = 2210.9 kg, K = 346310 N/m,
/// C = 555.66 N·s/m) from d(0) = 10 mm, v(0) = 0.
fn table_1_exact(t: f64) -> f64 {
    let (m, k, c) = (1658.2 + 552.7, 306640.0 + 39670.0, 555.66);
    let wn = f64::sqrt(k / m);
    let zeta = c / (2.0 * (k * m).sqrt());
    let wd = wn * (1.0 - zeta * zeta).sqrt();
    0.01 * (-zeta * wn * t).exp() * ((wd * t).cos() + zeta * wn / wd * (wd * t).sin())
}

fn all_finite(rows: &[Vec<f64>], what: &str) {
    assert!(rows.len() > 10, "{what}: {} rows", rows.len());
    for r in rows {
        assert!(r.iter().all(|x| x.is_finite()), "{what}: {r:?}");
    }
}

/// `hybridsim run` of the interfield example: every recorded displacement equals the
/// in-process core's (same bits through the CSV's shortest round-trip format), the interface
/// gap is the measured drift and the end state matches u = cos t + sin t to second-order
/// accuracy.
#[test]
fn the_interfield_example_matches_the_core_and_the_closed_form() {
    let dir = scratch("lsrt2-example");
    run(&root().join(SPLIT_MASS), &dir);
    let (h, rows) = read_csv(&dir.join("results.csv"));
    all_finite(&rows, SPLIT_MASS);
    let (t, ua, ub, gap) = (
        col(&h, "time[s]"),
        col(&h, "u.A.1.x[m]"),
        col(&h, "u.B.1.x[m]"),
        col(&h, "gap_u.1.x[m]"),
    );
    let model = Model::from_toml(&read(SPLIT_MASS), SPLIT_MASS, &NoFiles).unwrap();
    let mut core = hybridsim::integrators::build(&model).unwrap();
    assert_eq!(rows.len(), 401);
    let mut max_gap: f64 = 0.0;
    for (k, r) in rows.iter().enumerate() {
        if k > 0 {
            core.step().unwrap();
        }
        assert_eq!(r[t], core.time(), "row {k}");
        assert_eq!(r[ua], core.state(0)[0], "row {k}: u^A");
        assert_eq!(r[ub], core.state(1)[0], "row {k}: u^B");
        assert!(
            (r[gap].abs() - (r[ua] - r[ub]).abs()).abs() < 1e-15,
            "row {k}: gap {} for u^A − u^B = {}",
            r[gap],
            r[ua] - r[ub]
        );
        max_gap = max_gap.max(r[gap].abs());
    }
    let last = rows.last().unwrap();
    let exact = last[t].cos() + last[t].sin();
    let e = (last[ua] - exact).abs().max((last[ub] - exact).abs());
    println!(
        "t = {}: error {e:.3e}, max |u^A − u^B| {max_gap:.3e}",
        last[t]
    );
    // Second order at Δt_A = 0.04: `analyze convergence` gives 7.7e-3 (state norm) here.
    assert!(e < 1e-2, "error {e} against cos t + sin t");
    // Without projection the interface drifts (O(Δt²), 8e-3 here), but stays bounded.
    assert!(max_gap > 1e-6 && max_gap < 1e-2, "drift {max_gap}");
}

/// The Table 1 system on the virtual lab (ideal actuator, no noise), with the interfield
/// scheme (Δt_A = 16 ms, Δt_B = 2 ms, velocity projection) and the single-rate scheme:
/// finite results, two commands per (sub)step (one per controller tick), a small interface gap, both copies of
/// the interface within 1e-6 m of the in-process core run of the same model with the
/// specimen computed (no lab), and within 5 % of the peak of the closed-form free vibration
/// over 2 s (the schemes' own error at Ω_A = 0.2).
#[test]
fn table_1_on_the_virtual_lab_follows_the_closed_form_with_both_schemes() {
    let dir = scratch("lsrt2-table1");
    for (name, text, max_gap) in [
        ("interfield", read(TABLE_1), 1e-4),
        ("partitioned", table_1_partitioned(), 1e-4),
    ] {
        let model = dir.join(format!("{name}.toml"));
        std::fs::write(&model, &text).unwrap();
        let out = dir.join(name);
        run(&model, &out);
        let (h, rows) = read_csv(&out.join("results.csv"));
        all_finite(&rows, name);
        let (t, un, up, gap) = (
            col(&h, "time[s]"),
            col(&h, "u.numerical.1.x[m]"),
            col(&h, "u.physical.1.x[m]"),
            col(&h, "gap_u.1.x[m]"),
        );
        let numerical = text[..text.find("[lab]").unwrap()]
            .replacen("physical = true\n", "", 1)
            .replacen("estimate = ", "# estimate = ", 1);
        let m = Model::from_toml(&numerical, TABLE_1, &NoFiles).unwrap();
        let mut core = hybridsim::integrators::build(&m).unwrap();
        let (mut err, mut g, mut lab_vs_core): (f64, f64, f64) = (0.0, 0.0, 0.0);
        for (k, r) in rows.iter().enumerate() {
            if k > 0 {
                core.step().unwrap();
            }
            assert!((r[t] - core.time()).abs() < 1e-12);
            let x = table_1_exact(r[t]);
            err = err.max((r[un] - x).abs()).max((r[up] - x).abs());
            g = g.max(r[gap].abs());
            lab_vs_core = lab_vs_core
                .max((r[un] - core.state(0)[0]).abs())
                .max((r[up] - core.state(1)[0]).abs());
        }
        let run_json = common::json(&out.join("run.json"));
        let text = run_json.to_string();
        println!(
            "{name}: {} rows, max error {err:.3e} m, max gap {g:.3e} m, lab against core \
             {lab_vs_core:.3e} m",
            rows.len()
        );
        assert_eq!(rows.len(), 501, "{name}");
        assert!((rows.last().unwrap()[t] - 2.0).abs() < 1e-12);
        assert!(
            lab_vs_core < 1e-6,
            "{name}: lab and core differ by {lab_vs_core} m"
        );
        assert!(err < 5e-4, "{name}: error {err} m against the closed form");
        assert!(g < max_gap, "{name}: interface gap {g} m");
        assert!(text.contains("lsrt2"), "{name}: {text}");
        let (lh, lab) = read_csv(&out.join("lab.csv"));
        assert!(!lh.is_empty());
        // Two commands per (sub)step, one per controller tick: 2·ss per step.
        let per_step = if name == "interfield" { 4 } else { 2 };
        assert!(
            lab.len() >= per_step * 500,
            "{name}: {} lab rows",
            lab.len()
        );
    }
}

/// Both schemes drive the Table 1 lab over the controller link (UDP, loopback) in
/// lock-step: `results.csv` is byte-identical to the in-process lab's.
#[test]
fn over_the_controller_link_both_schemes_are_bit_identical_to_the_in_process_lab() {
    let dir = scratch("lsrt2-network");
    for (name, text) in [
        ("interfield", read(TABLE_1)),
        ("partitioned", table_1_partitioned()),
    ] {
        let local = dir.join(format!("{name}.toml"));
        std::fs::write(&local, &text).unwrap();
        let controller = serve_controller(&local, &[]);
        let net = over_link(&text, "udp", &controller.address, 2.0);
        assert!(net.contains("transfer = \"udp\"") && net.contains("[lab.link]"));
        let net_model = dir.join(format!("{name}-net.toml"));
        std::fs::write(&net_model, net).unwrap();
        run(&net_model, &dir.join(format!("{name}-net")));
        run(&local, &dir.join(format!("{name}-local")));
        let a = std::fs::read(dir.join(format!("{name}-net/results.csv"))).unwrap();
        let b = std::fs::read(dir.join(format!("{name}-local/results.csv"))).unwrap();
        println!("{name}: results.csv {} bytes over the link", a.len());
        assert!(a.len() > 10_000, "{name}");
        assert!(
            a == b,
            "{name}: results over the link differ from the in-process run"
        );
    }
}

/// `hybridsim realtime --pacing fast` runs the single-step runner: byte-identical
/// `results.csv` and `lab.csv` to `hybridsim run` for both schemes on the Table 1 lab.
#[test]
fn realtime_fast_is_bit_identical_to_run_for_both_schemes() {
    let dir = scratch("lsrt2-realtime");
    for (name, text) in [
        ("interfield", read(TABLE_1)),
        ("partitioned", table_1_partitioned()),
    ] {
        let model = dir.join(format!("{name}.toml"));
        std::fs::write(&model, &text).unwrap();
        run(&model, &dir.join(format!("{name}-run")));
        let rt = hybridsim()
            .args(["realtime", "--pacing", "fast", "-o"])
            .arg(dir.join(format!("{name}-rt")))
            .arg(&model)
            .output()
            .unwrap();
        assert!(
            rt.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&rt.stderr)
        );
        for file in ["results.csv", "lab.csv"] {
            let a = std::fs::read(dir.join(format!("{name}-run")).join(file)).unwrap();
            let b = std::fs::read(dir.join(format!("{name}-rt")).join(file)).unwrap();
            assert!(a.len() > 10_000, "{name}: {file}");
            assert!(a == b, "{name}: {file} differs between run and realtime");
        }
    }
}

fn fig7_folder() -> PathBuf {
    let dir = scratch("lsrt2-fig7");
    let o = hybridsim()
        .args(["analyze", "convergence", SPLIT_MASS])
        .args([
            "--dt",
            "0.02",
            "--levels",
            "4",
            "--until",
            "4",
            "--reference",
            "exact",
        ])
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

/// The paper's Fig 7: the global error of the interfield scheme on the split-mass SDoF
/// (d0 = v0 = 1) at t = 4 for Δt = 0.02 … 0.0025 (`analyze convergence`, the command
/// documented in examples/README.md): slopes within 0.05 of 2, and each error equal, to a
/// relative 1e-6, to the larger displacement error of the two interface copies computed here
/// in process against u = cos t + sin t (the paper's Fig 7 plots the state errors against Δt
/// on log axes; its slope is the check).
#[test]
fn fig_7_second_order_by_analyze_convergence() {
    let dir = fig7_folder();
    let (h, rows) = read_csv(&dir.join("convergence.csv"));
    let (dtc, ec, sc) = (col(&h, "dt"), col(&h, "error"), col(&h, "slope_to_next"));
    assert_eq!(rows.len(), 4);
    let base = read(SPLIT_MASS);
    for (k, r) in rows.iter().enumerate() {
        let dt = r[dtc];
        assert!((dt - 0.02 / f64::powi(2.0, k as i32)).abs() < 1e-15);
        if k + 1 < rows.len() {
            assert!((r[sc] - 2.0).abs() < 0.05, "slope {} at Δt = {dt}", r[sc]);
        }
        let text = base.replacen("time_step = 0.01", &format!("time_step = {dt:?}"), 1);
        let model = Model::from_toml(&text, SPLIT_MASS, &NoFiles).unwrap();
        let mut core = hybridsim::integrators::build(&model).unwrap();
        for _ in 0..(4.0 / dt).round() as u64 {
            core.step().unwrap();
        }
        let t = core.time();
        let u = t.cos() + t.sin();
        let (ea, eb) = ((core.state(0)[0] - u).abs(), (core.state(1)[0] - u).abs());
        let e = ea.max(eb);
        println!(
            "Δt = {dt}: analyze {:.6e}, in process |u^A − u| {ea:.6e}, |u^B − u| {eb:.6e}",
            r[ec]
        );
        assert!((t - 4.0).abs() < 1e-9);
        assert!(
            (r[ec] - e).abs() < 1e-6 * e.max(1e-12) || (r[ec] - e).abs() < 1e-12,
            "Δt = {dt}: analyze says {}, in process {e}",
            r[ec]
        );
    }
}
