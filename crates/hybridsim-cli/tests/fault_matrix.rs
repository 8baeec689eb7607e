//! The fault matrix of issue 10, through the CLI, on the virtual lab: every fault × {`run`,
//! `realtime`} ends in a safety stop with no command beyond a limit, a paced ramp (or a
//! hold after a second event) in `lab.csv`, every completed step on disk and a run.json whose
//! status and counts match the files.
//!
//! | fault | how it is caused |
//! |---|---|
//! | stuck actuator, frozen sensor, dropout, NaN force, overload during the ramp, a panicking transfer system | `[[lab.fault]]` of the virtual lab |
//! | a panic or a stall of each task of the threaded runner | `realtime --inject-fault` (hidden test hook); `run` has one task, whose panics are the transfer system's (above) or the step's (`hybridsim-io` tests) |
//! | a full disk | `RLIMIT_FSIZE` on the child: writes past 300 kB fail with `EFBIG`, as on a full disk |
//! | a read-only folder | `/proc` refuses new folders even to root: refused before the lab is commanded |
//! | SIGINT, SIGTERM, SIGHUP | `kill` mid-run (SIGTERM and SIGHUP also in `signals.rs`) |
//!
//! Every child is bounded in time and killed if it outlives its bound.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const DT_C: f64 = 0.001;

/// The quick start with a slow ramp-down (5 mm/s), a tight following error (2 mm for 20 ms)
/// and `faults` appended, over `duration` s.
fn model(dir: &Path, name: &str, duration: f64, faults: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let mut t = text
        .replace(
            "\nduration = 20.0\n",
            &format!("\nduration = {duration:?}\n"),
        )
        .replace(
            "on_trip = \"hold\"",
            "on_trip = \"ramp_down\"\nramp_rate = 0.005",
        )
        .replace(
            "increment = 0.002        # m per controller tick (2 m/s × 1 ms)",
            "increment = 0.002\nfollowing_error = 0.002\nfollowing_time = 0.02",
        );
    assert!(t.contains("ramp_rate") && t.contains("following_error"));
    assert!(t.contains(&format!("\nduration = {duration:?}\n")));
    t.push_str(faults);
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, t).unwrap();
    path
}

fn fault(kind: &str, at: f64, extra: &str) -> String {
    format!("\n[[lab.fault]]\nactuator = \"storey1\"\nat = {at:?}\nkind = \"{kind}\"\n{extra}")
}

/// Run `cmd` to its end within `bound` (killed otherwise).
fn output_within(mut cmd: Command, bound: Duration) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(child, bound)
}

fn wait_bounded(mut child: Child, bound: Duration) -> Output {
    let until = Instant::now() + bound;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {bound:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn command(which: &str, out: &Path, model: &Path, extra: &[&str]) -> Command {
    let mut c = hybridsim();
    c.arg(which);
    if which == "run" {
        c.arg("--quiet");
    } else {
        c.args(["--pacing", "fast"]);
    }
    c.args(extra).arg("-o").arg(out).arg(model);
    c
}

/// What every stopped case must show.
struct Expect<'a> {
    kinds: &'a [&'a str],
    /// `completed`, `held`, or any.
    ramp: Option<&'a str>,
    /// The second event, when the ramp must have been held by one.
    second: Option<&'a str>,
    /// Whether the files hold every completed step and the ramp (false on a full disk: the
    /// rows up to the failure, as counted in run.json; the ramp is in run.json only).
    every_step: bool,
}

fn check(case: &str, out: &Output, folder: &Path, e: &Expect) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{case}: exit {}", out.status);
    assert!(
        !stderr.contains("panicked at") || case.contains("panic"),
        "{case}: {stderr}"
    );
    let j = json(&folder.join("run.json"));
    assert_eq!(j["status"], "stopped", "{case}: {j}\n{stderr}");
    let kind = j["safety_event"]["kind"].as_str().unwrap_or("none");
    assert!(
        e.kinds.contains(&kind),
        "{case}: event {kind}, expected {:?}",
        e.kinds
    );
    let s = &j["safety"][0];
    assert_eq!(s["state"], "tripped", "{case}");
    let limit = s["displacement_limits"][0].as_f64().unwrap();
    let max_sent = s["max_command_sent"][0].as_f64().unwrap();
    assert!(max_sent <= limit, "{case}: {max_sent} sent beyond {limit}");
    if let Some(ramp) = e.ramp {
        assert_eq!(s["ramp_down"], ramp, "{case}: {s}");
    }
    if let Some(second) = e.second {
        assert_eq!(s["second_event"]["kind"], second, "{case}: {s}");
    }
    // Files against run.json (`run` writes rows_on_disk, `realtime` rows_written).
    let count = |a: &str, b: &str| j[a].as_u64().or_else(|| j[b].as_u64()).unwrap();
    let (_, results) = read_csv(&folder.join("results.csv"));
    assert_eq!(
        results.len() as u64,
        count("rows_on_disk", "rows_written"),
        "{case}: results.csv against run.json"
    );
    let lab_count = j["lab_rows_on_disk"][0]
        .as_u64()
        .or_else(|| j["lab_rows_written"].as_u64())
        .unwrap();
    let (header, lab) = read_csv(&folder.join("lab.csv"));
    assert_eq!(
        lab.len() as u64,
        lab_count,
        "{case}: lab.csv against run.json"
    );
    let steps = j["steps_completed"].as_u64().unwrap();
    if e.every_step {
        // every = 2: the initial row, one per two steps, and the last completed step.
        assert_eq!(
            results.len() as u64,
            1 + steps.div_ceil(2),
            "{case}: every completed step on disk"
        );
    }
    // The ramp in lab.csv: one command per controller tick after the trip, within the
    // ramp rate and the limits.
    let (wall, safety, command) = (
        col(&header, "wall_time[s]"),
        col(&header, "safety.storey1[-]"),
        col(&header, "compensated.storey1[m]"),
    );
    if !e.every_step {
        // Nothing more fits on the disk: the ramp is in run.json only.
    } else if let Some(first) = lab.iter().position(|r| r[safety] != 0.0) {
        for w in lab[first..].windows(2) {
            assert!(
                (w[1][wall] - w[0][wall] - DT_C).abs() < 1e-9,
                "{case}: ramp not paced at {} → {}",
                w[0][wall],
                w[1][wall]
            );
            assert!(w[1][command].abs() <= limit);
        }
        for w in lab[first + 1..].windows(2) {
            assert!(
                (w[1][command] - w[0][command]).abs() <= 0.005 * DT_C * (1.0 + 1e-9) + 1e-15,
                "{case}: ramp step {} → {}",
                w[0][command],
                w[1][command]
            );
        }
        if e.ramp == Some("completed") {
            assert!(
                lab.last().unwrap()[command].abs() < 1e-9,
                "{case}: not at rest"
            );
        }
    } else {
        // Stopped before the lab was tripped by a command (a trip from outside is a row).
        panic!("{case}: no tripped row in lab.csv");
    }
    println!(
        "{case}: {kind} after {steps} steps; ramp {} ({} commands), second event {}; {} rows, {} lab rows",
        s["ramp_down"], s["ramp_commands"], s["second_event"]["kind"], results.len(), lab.len()
    );
}

const AT: f64 = 6.0;

#[test]
fn lab_faults_stop_run_and_realtime_with_a_paced_ramp() {
    let dir = scratch("matrix-lab");
    let cases: Vec<(&str, String, Expect)> = vec![
        (
            "stuck_actuator",
            fault("stuck_actuator", AT, ""),
            Expect {
                kinds: &["following_error"],
                ramp: Some("completed"),
                second: None,
                every_step: true,
            },
        ),
        (
            "frozen_sensor",
            fault("frozen_sensor", AT, ""),
            Expect {
                kinds: &["frozen_sensor", "following_error"],
                ramp: Some("completed"),
                second: None,
                every_step: true,
            },
        ),
        (
            "dropout",
            fault("dropout", AT, ""),
            Expect {
                kinds: &["sensor_dropout"],
                ramp: Some("held"),
                second: Some("sensor_dropout"),
                every_step: true,
            },
        ),
        (
            "nan_force",
            fault("nan_force", AT, ""),
            Expect {
                kinds: &["non_finite_measurement"],
                ramp: Some("held"),
                second: Some("non_finite_measurement"),
                every_step: true,
            },
        ),
        (
            "overload_during_ramp",
            fault("stuck_actuator", AT, "") + &fault("overload", AT + 0.06, "force = 6000.0\n"),
            Expect {
                kinds: &["following_error"],
                ramp: Some("held"),
                second: Some("force_limit"),
                every_step: true,
            },
        ),
        (
            "transfer_panic",
            fault("panic", AT, ""),
            Expect {
                kinds: &["transfer_fault"],
                ramp: Some("held"),
                second: Some("transfer_fault"),
                every_step: true,
            },
        ),
    ];
    for (name, faults, expect) in &cases {
        let m = model(&dir, name, 7.0, faults);
        for which in ["run", "realtime"] {
            let folder = dir.join(format!("{name}-{which}"));
            let out = output_within(command(which, &folder, &m, &[]), Duration::from_secs(120));
            check(&format!("{name} × {which}"), &out, &folder, expect);
        }
    }
}

#[test]
fn task_panics_and_stalls_stop_realtime_and_a_stalled_link_only_delays_run() {
    let dir = scratch("matrix-tasks");
    // Long enough that the estimation slot's ring (64 snapshots) stays full for the 0.3 s
    // watchdog before the fast-paced loop ends; the estimation faults come early, while the
    // loop still runs (a fast-paced loop may otherwise finish before the slot reads a late
    // snapshot).
    let m = model(&dir, "tasks", 100.0, "");
    let any: &[&str] = &["task_panic"];
    for (hook, kinds, extra) in [
        ("numerical:panic:600", any, &[][..]),
        ("physical:panic:600", any, &[][..]),
        ("estimation:panic:5", any, &[][..]),
        // A writer that dies is a recording failure.
        ("writer:panic:300", &["writer_overflow"][..], &[][..]),
        // Stalls that come back within the second grace: the watchdog stops the test
        // through the safety layer.
        (
            "numerical:stall=0.45:600",
            &["watchdog"][..],
            &["--watchdog", "0.3"][..],
        ),
        (
            "physical:stall=0.45:600",
            &["watchdog"][..],
            &["--watchdog", "0.3"][..],
        ),
        (
            "estimation:stall=30:5",
            &["watchdog"][..],
            &["--watchdog", "0.3"][..],
        ),
    ] {
        let folder = dir.join(hook.replace([':', '=', '.'], "_"));
        let mut args = vec!["--inject-fault", hook];
        args.extend_from_slice(extra);
        let out = output_within(
            command("realtime", &folder, &m, &args),
            Duration::from_secs(120),
        );
        check(
            &format!("{hook} × realtime"),
            &out,
            &folder,
            &Expect {
                kinds,
                ramp: Some("completed"),
                second: None,
                every_step: !hook.starts_with("writer"),
            },
        );
    }
    // `run` is one task without a wall clock: a link that stalls for a while only delays the
    // simulated test (a panic there is the transfer fault of the lab test above).
    let m = model(
        &dir,
        "stall_run",
        2.0,
        &fault("stall", 1.0, "seconds = 0.3\n"),
    );
    let folder = dir.join("stall-run");
    let out = output_within(command("run", &folder, &m, &[]), Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&folder.join("run.json"))["status"], "completed");
}

#[test]
fn a_full_disk_stops_run_and_realtime_with_whole_rows_on_disk() {
    let dir = scratch("matrix-disk");
    let m = model(&dir, "disk", 20.0, "");
    for which in ["run", "realtime"] {
        let folder = dir.join(format!("disk-{which}"));
        let mut c = command(which, &folder, &m, &[]);
        limit_file_size(&mut c, 300_000);
        let out = output_within(c, Duration::from_secs(120));
        check(
            &format!("full disk × {which}"),
            &out,
            &folder,
            &Expect {
                kinds: &["writer_overflow"],
                ramp: Some("completed"),
                second: None,
                every_step: false,
            },
        );
    }
}

#[test]
fn a_read_only_folder_is_refused_before_the_lab_is_commanded() {
    let dir = scratch("matrix-readonly");
    let m = model(&dir, "ro", 1.0, "");
    for which in ["run", "realtime"] {
        let folder = Path::new("/proc/hybridsim-matrix");
        let out = output_within(command(which, folder, &m, &[]), Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{which}: {err}");
        assert!(err.contains("/proc/hybridsim-matrix"), "{which}: {err}");
        assert!(!err.contains("panicked"), "{which}: {err}");
    }
}

#[test]
fn signals_stop_run_and_realtime_with_a_paced_ramp() {
    let dir = scratch("matrix-signals");
    let m = model(&dir, "long", 4000.0, "");
    for which in ["run", "realtime"] {
        for (signal, name) in [
            (libc::SIGINT, "SIGINT"),
            (libc::SIGTERM, "SIGTERM"),
            (libc::SIGHUP, "SIGHUP"),
        ] {
            let folder = dir.join(format!("{which}-{name}"));
            let mut child = command(which, &folder, &m, &[])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            // Mid-run: once lab.csv holds some data.
            let until = Instant::now() + Duration::from_secs(60);
            while std::fs::metadata(folder.join("lab.csv"))
                .map(|m| m.len())
                .unwrap_or(0)
                < 200_000
            {
                if Instant::now() > until || child.try_wait().unwrap().is_some() {
                    let _ = child.kill();
                    panic!("{which} {name}: no data or ended early");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // SAFETY: a signal to our own child.
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal);
            }
            let out = wait_bounded(child, Duration::from_secs(60));
            check(
                &format!("{name} × {which}"),
                &out,
                &folder,
                &Expect {
                    kinds: &["operator_abort"],
                    ramp: Some("completed"),
                    second: None,
                    every_step: true,
                },
            );
        }
    }
}
