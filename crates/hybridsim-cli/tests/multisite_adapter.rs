//! Multi-site hybrid simulation against the real OpenSees `adapter` element (openseespy, driven
//! by `scripts/opensees/adapter_site.py`): `examples/multisite_split_mass.toml` run with
//! `transfer = "opensees"` — the specimen spring k1 modelled at the OpenSees site — against the
//! same file run in one process (`transfer = "virtual"`, an ideal noise-free actuator: the same
//! laboratory pipeline, ticks and bumpless start, so the two runs differ by the transfer system
//! alone).
//!
//! The adapter element couples its node to the commanded displacement through a penalty spring
//! kb, so the site's spring is loaded to `d kb / (k + kb)` and its force is off by the relative
//! error ε = k / (k + kb). Through the 2-DOF structure (highest circular frequency ω_max, run
//! length T) a stiffness error ε changes the response by about ε of its peak (the static
//! part) plus a phase drift: the frequencies shift by less than ε/2, which accumulates to
//! ε/2 · ω_max T. The test allows ε (1 + ω_max T) — twice the drift — plus the round-off of
//! the site's force, which is computed as `kb (d − db)` and so loses about log10(kb/k) digits
//! (≈ kb/k · 1e-15 relative), and requires at least ε/10 (the site's force was used). Run
//! with kb/k = 1e6 and 1e3 (measured: 1.05e-6 and 1.05e-3, about 1.05 ε, for bounds 1.3e-5
//! and 1.3e-2).
//!
//! Skipped with a printed notice when openseespy is not importable, except under CI (env `CI`
//! set), where that is a failure. Every subprocess has a deadline and is killed at the end.

mod common;

use common::{col, json, read_csv, root, scratch};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const K1: f64 = 4.0e5;

fn openseespy_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import openseespy.opensees"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var_os("CI").is_some() {
            panic!("openseespy is not importable under CI (pip install openseespy)");
        }
        // Straight to the process's stderr: the test harness keeps `eprintln!` of a passing
        // test to itself.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: openseespy is not importable (pip install openseespy)"
        );
    }
    ok
}

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether something listens on TCP `port` (any address), from /proc/net/tcp{,6}: a probe
/// by connecting would be taken by the adapter element as its one client.
fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|text| {
            text.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "0A"
            })
        })
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start the OpenSees site (spring `k`, penalty `kb`) on a free port and wait until it
/// listens. Its stderr goes to `dir/site-PORT.log`.
fn start_site(dir: &Path, k: f64, kb: f64, max_seconds: f64) -> (Killed, u16) {
    let port = free_port();
    let log = std::fs::File::create(dir.join(format!("site-{port}.log"))).unwrap();
    let child = Command::new("python3")
        .arg(root().join("scripts/opensees/adapter_site.py"))
        .args(["--port", &port.to_string()])
        .args(["--k", &k.to_string(), "--kb", &kb.to_string()])
        .args(["--max-seconds", &max_seconds.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start python3");
    let mut site = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !listening(port) {
        if let Ok(Some(status)) = site.0.try_wait() {
            panic!(
                "the OpenSees site ended before listening ({status}):\n{}",
                std::fs::read_to_string(dir.join(format!("site-{port}.log"))).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "the OpenSees site never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (site, port)
}

/// The example with the site's port, or its single-process twin (`transfer = "virtual"`,
/// no [lab.link]); `duration` replaces the run length when given.
fn model(dir: &Path, name: &str, port: Option<u16>, duration: Option<f64>) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/multisite_split_mass.toml")).unwrap();
    let mut out = String::new();
    let mut in_link = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_link = t.starts_with("[lab.link]");
            if in_link && port.is_none() {
                continue;
            }
        }
        if in_link && port.is_none() {
            continue;
        }
        let line = match (port, t) {
            (None, t) if t.starts_with("transfer = ") => "transfer = \"virtual\"".to_string(),
            (Some(p), t) if t.starts_with("address = ") => format!("address = \"127.0.0.1:{p}\""),
            (_, t) if t.starts_with("duration = ") && duration.is_some() => {
                format!("duration = {}", duration.unwrap())
            }
            _ => line.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, out).unwrap();
    path
}

/// Start `hybridsim run MODEL -o OUT`.
fn spawn_run(model: &Path, out: &Path) -> Killed {
    Killed(
        Command::new(env!("CARGO_BIN_EXE_hybridsim"))
            .current_dir(root())
            .arg("run")
            .arg(model)
            .args(["--quiet", "-o"])
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hybridsim"),
    )
}

/// Wait for `child` up to `limit`; its exit status and output. A hang fails the test.
fn finish(mut child: Killed, limit: Duration) -> (std::process::ExitStatus, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut text = String::new();
            use std::io::Read;
            if let Some(o) = child.0.stdout.as_mut() {
                let _ = o.read_to_string(&mut text);
            }
            if let Some(e) = child.0.stderr.as_mut() {
                let _ = e.read_to_string(&mut text);
            }
            return (status, text);
        }
        assert!(
            Instant::now() < deadline,
            "hybridsim did not finish within {limit:?} (a hang)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait for the site to end by itself (the client's 99 ends the OpenSees process).
fn site_ends(site: &mut Killed, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(s)) = site.0.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Circular frequencies of the split-mass structure with m1 + m2 at node 1 (8000 kg), k1 to
/// the ground, k2 to node 2 (m3 = 9000 kg): the largest.
fn omega_max() -> f64 {
    let (m1, m2) = (8.0e3, 9.0e3);
    let (k1, k2) = (K1, 5.0e5);
    // det(K − ω² M) = 0 for K = [[k1 + k2, −k2], [−k2, k2]], M = diag(m1, m2).
    let a = m1 * m2;
    let b = -((k1 + k2) * m2 + k2 * m1);
    let c = (k1 + k2) * k2 - k2 * k2;
    let w2 = (-b + (b * b - 4.0 * a * c).sqrt()) / (2.0 * a);
    w2.sqrt()
}

/// Max |a − b| over the displacement columns, relative to the peak |b| of each column.
fn max_relative_difference(a: &Path, b: &Path) -> (f64, Vec<String>) {
    let (ha, ra) = read_csv(a);
    let (hb, rb) = read_csv(b);
    assert_eq!(ha, hb, "the two runs have different columns");
    assert_eq!(ra.len(), rb.len(), "the two runs have different lengths");
    let cols: Vec<String> = ha.iter().filter(|h| h.starts_with("u.")).cloned().collect();
    assert!(!cols.is_empty(), "no displacement column in {ha:?}");
    let mut worst = 0.0f64;
    for name in &cols {
        let j = col(&ha, name);
        let peak = rb.iter().fold(0.0f64, |m, r| m.max(r[j].abs()));
        let diff = ra
            .iter()
            .zip(&rb)
            .fold(0.0f64, |m, (x, y)| m.max((x[j] - y[j]).abs()));
        worst = worst.max(diff / peak);
    }
    (worst, cols)
}

#[test]
fn the_adapter_site_matches_the_single_process_run() {
    if !openseespy_available() {
        return;
    }
    let dir = scratch("adapter-agreement");
    let virtual_out = dir.join("virtual");
    let (status, text) = finish(
        spawn_run(&model(&dir, "virtual", None, None), &virtual_out),
        Duration::from_secs(120),
    );
    assert!(status.success(), "single-process run failed:\n{text}");
    let duration = 1.0;
    for ratio in [1.0e6, 1.0e3] {
        let kb = ratio * K1;
        let (mut site, port) = start_site(&dir, K1, kb, 300.0);
        let out = dir.join(format!("opensees-{ratio:e}"));
        let started = Instant::now();
        let (status, text) = finish(
            spawn_run(&model(&dir, "opensees", Some(port), None), &out),
            Duration::from_secs(300),
        );
        let wall = started.elapsed().as_secs_f64();
        assert!(status.success(), "multi-site run failed:\n{text}");
        let run = json(&out.join("run.json"));
        assert_eq!(run["status"], "completed", "{run:#}");
        // The site ends by itself on the client's 99 (OpenSees exits with −1 = 255).
        let ended = site_ends(&mut site, Duration::from_secs(10));
        assert!(
            ended.is_some(),
            "the OpenSees site did not end after the run (no 99 received?)"
        );
        assert_eq!(run["lab"]["transfer"], "opensees", "{run:#}");
        let link = &run["safety"][0]["link"];
        // Every tick one reply: 1000 steps × 10 substeps, plus the start.
        let replies = link["replies"].as_f64().unwrap_or(0.0);
        assert!(replies >= 10_000.0, "{link}");
        assert_eq!(link["missing_replies"], 0.0, "{link}");
        eprintln!(
            "kb/k = {ratio:e}: {replies} replies, latency p50 {} ms, p99 {} ms, max {} ms",
            link["latency_p50_ms"], link["latency_p99_ms"], link["latency_max_ms"]
        );
        let eps = K1 / (K1 + kb);
        let bound = eps * (1.0 + omega_max() * duration) + ratio * 1e-15;
        let (diff, cols) =
            max_relative_difference(&out.join("results.csv"), &virtual_out.join("results.csv"));
        eprintln!(
            "kb/k = {ratio:e}: ε = k/(k+kb) = {eps:.3e}; max relative difference over {cols:?} = \
             {diff:.3e} (bound {bound:.3e}); run took {wall:.2} s"
        );
        assert!(
            diff <= bound,
            "difference {diff:e} beyond the bound {bound:e}"
        );
        // The difference is the penalty spring's, not noise: it is of the order of ε (and
        // scales with it from one kb to the other).
        assert!(
            diff >= 0.1 * eps,
            "difference {diff:e} far below ε = {eps:e}: was the site's force used?"
        );
    }
}

#[test]
fn a_site_that_dies_mid_run_ends_the_run_with_every_step_on_disk() {
    if !openseespy_available() {
        return;
    }
    let dir = scratch("adapter-dies");
    let (site, port) = start_site(&dir, K1, 1.0e6 * K1, 300.0);
    // Long enough that the site is killed mid-run (600 000 ticks).
    let out = dir.join("run");
    let run = spawn_run(&model(&dir, "dies", Some(port), Some(60.0)), &out);
    // Wait until steps are on disk, then kill the site.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let steps = std::fs::read_to_string(out.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["steps_completed"].as_u64())
            .unwrap_or(0);
        if steps >= 20 {
            break;
        }
        assert!(Instant::now() < deadline, "the run made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed_at = Instant::now();
    drop(site);
    let (status, text) = finish(run, Duration::from_secs(60));
    let took = killed_at.elapsed().as_secs_f64();
    eprintln!("the run ended {took:.2} s after the site was killed ({status})\n{text}");
    let rj = json(&out.join("run.json"));
    assert!(!status.success(), "a safety stop must fail the command");
    assert_eq!(rj["status"], "stopped", "{rj:#}");
    let safety = &rj["safety"][0];
    let kind = safety["event"]["kind"].as_str().unwrap_or_default();
    assert!(
        kind == "link_lost" || kind == "link_timeout",
        "the event is the link's: {safety:#}"
    );
    let fault = safety["transfer_fault"].as_str().unwrap_or_default();
    assert!(fault.contains(&port.to_string()), "names the site: {fault}");
    eprintln!("event {kind}: {fault}");
    // Nothing beyond the limits.
    let sent = safety["max_command_sent"][0].as_f64().unwrap();
    let limit = safety["displacement_limits"][0].as_f64().unwrap();
    assert!(sent <= limit, "{sent} > {limit}");
    // Every completed step on disk: the last row is the last completed step.
    let steps = rj["steps_completed"].as_u64().expect("steps_completed");
    assert!(
        (20..60_000).contains(&steps),
        "stopped mid-run: {steps} steps"
    );
    assert_eq!(rj["last_step_on_disk"].as_u64(), Some(steps), "{rj:#}");
    let (header, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(
        rj["rows_on_disk"].as_u64(),
        Some(rows.len() as u64),
        "{rj:#}"
    );
    let t = col(&header, "time[s]");
    let reached = rj["time_reached"].as_f64().unwrap();
    let last = rows.last().unwrap()[t];
    assert!(
        (last - reached).abs() < 1e-9,
        "last row at t = {last}, last completed step {steps} at t = {reached}"
    );
    assert!(took < 30.0, "no hang: {took} s");
}

#[test]
fn run_and_realtime_over_the_adapter_write_identical_results() {
    if !openseespy_available() {
        return;
    }
    let dir = scratch("adapter-realtime");
    let mut outputs = Vec::new();
    for runner in [
        &["run", "--quiet"][..],
        &["realtime", "--pacing", "fast"][..],
    ] {
        let (mut site, port) = start_site(&dir, K1, 1.0e6 * K1, 300.0);
        let out = dir.join(runner[0]);
        let child = Killed(
            Command::new(env!("CARGO_BIN_EXE_hybridsim"))
                .current_dir(root())
                .args(runner)
                .arg(model(&dir, runner[0], Some(port), Some(0.3)))
                .arg("-o")
                .arg(&out)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start hybridsim"),
        );
        let (status, text) = finish(child, Duration::from_secs(120));
        assert!(status.success(), "{runner:?}: {text}");
        assert!(
            site_ends(&mut site, Duration::from_secs(10)).is_some(),
            "{runner:?}: the site did not end"
        );
        outputs.push(out);
    }
    for file in ["results.csv", "lab.csv"] {
        let a = std::fs::read(outputs[0].join(file)).unwrap();
        let b = std::fs::read(outputs[1].join(file)).unwrap();
        assert!(a.len() > 1000, "{file} is nearly empty");
        assert!(
            a == b,
            "{file} differs between run and realtime over the adapter"
        );
    }
}
