//! The `run` side of issue 10: results folders are never overwritten silently, run.json is a
//! journal that a killed process leaves truthful, a safety event at rest is a stopped run with
//! a results folder, an unwritable folder is a clear error, and realtime pacing without
//! real-time scheduling needs `--allow-soft-realtime`. Every wait is bounded; a child that
//! outlives its wait is killed.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The quick start with `from` replaced by `to` (which must then occur in the text).
fn quickstart_with(dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "`{from}` not in the quick start");
        text = text.replace(from, to);
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every line of a CSV file after the header: whole rows of the header's width only.
fn whole_rows(path: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{}: ends in a partial row",
        path.display()
    );
    rows_of(path, &text)
}

/// The whole rows of a CSV file that a SIGKILL may have cut: Linux stops a write to a regular
/// file at a page boundary when a fatal signal arrives, so the last write (a buffer of whole
/// rows) can end mid-row on disk; nothing in the process can prevent that. The rows before the
/// cut are whole, and run.json counts only those (`rows_on_disk`). Returns the whole rows and
/// whether a partial last line was dropped.
fn rows_before_a_kill(path: &Path) -> (Vec<Vec<f64>>, bool) {
    let text = std::fs::read_to_string(path).unwrap();
    match text.rfind('\n') {
        Some(end) if end + 1 < text.len() => (rows_of(path, &text[..=end]), true),
        _ => (rows_of(path, &text), false),
    }
}

/// The rows of the CSV `text` (of `path`) after its header, each of the header's width.
fn rows_of(path: &Path, text: &str) -> Vec<Vec<f64>> {
    let mut lines = text.lines();
    let width = lines.next().expect("a header").split(',').count();
    lines
        .enumerate()
        .map(|(i, l)| {
            let r: Vec<f64> = l
                .split(',')
                .map(|x| {
                    x.parse()
                        .unwrap_or_else(|e| panic!("{} row {i}: `{x}`: {e}", path.display()))
                })
                .collect();
            assert_eq!(r.len(), width, "{} row {i}", path.display());
            r
        })
        .collect()
}

/// Seconds since the epoch of an ISO 8601 UTC timestamp `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn parse_utc(s: &str) -> f64 {
    let n = |a: usize, b: usize| -> i64 { s[a..b].parse().unwrap_or_else(|e| panic!("{s}: {e}")) };
    assert!(s.len() == 24 && s.ends_with('Z'), "{s}");
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    // Days from the civil date (proleptic Gregorian).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19)) as f64 + n(20, 23) as f64 * 1e-3
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the child did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_existing_results_folder_is_refused_unless_overwrite_and_a_failed_start_touches_nothing() {
    let dir = scratch("overwrite");
    let model = quickstart_with(
        &dir,
        "short.toml",
        &[("duration = 20.0\n", "duration = 1.0\n")],
    );
    let out_dir = dir.join("out");
    let run = |extra: &[&str], model: &Path| {
        hybridsim()
            .args(["run", "--quiet", "-o"])
            .arg(&out_dir)
            .args(extra)
            .arg(model)
            .output()
            .unwrap()
    };
    let first = run(&[], &model);
    assert!(first.status.success(), "{}", stderr(&first));
    let results = std::fs::read(out_dir.join("results.csv")).unwrap();

    // A second run into the same folder is refused, naming the folder; nothing changes.
    std::fs::write(out_dir.join("stale.csv"), "from an older run\n").unwrap();
    let again = run(&[], &model);
    let err = stderr(&again);
    assert!(!again.status.success(), "overwritten silently: {err}");
    assert!(err.contains(&out_dir.display().to_string()), "{err}");
    assert!(
        err.contains("not empty") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read(out_dir.join("results.csv")).unwrap(), results);

    // A failed start (a bad model) with --overwrite does not touch the folder either.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[node]]\nid = 1\ndofs = [\"q\"]\n").unwrap();
    let failed = run(&["--overwrite"], &bad);
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    assert!(out_dir.join("stale.csv").exists());
    assert_eq!(std::fs::read(out_dir.join("results.csv")).unwrap(), results);

    // --overwrite clears the previous run's folder first: no stale file survives.
    let over = run(&["--overwrite"], &model);
    assert!(over.status.success(), "{}", stderr(&over));
    assert!(!out_dir.join("stale.csv").exists());
    assert_eq!(json(&out_dir.join("run.json"))["status"], "completed");

    // A folder that is not a results folder is never cleared, even with --overwrite.
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let out = hybridsim()
        .args(["run", "--quiet", "--overwrite", "-o"])
        .arg(&mine)
        .arg(&model)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no run.json"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);

    // `realtime` and `cyclic` refuse a non-empty folder too.
    let out = hybridsim()
        .args(["realtime", "--pacing", "fast", "-o"])
        .arg(&out_dir)
        .arg(&model)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    let cyclic_dir = dir.join("cyclic");
    let cyclic = |extra: &[&str]| {
        hybridsim()
            .args([
                "cyclic",
                "examples/mostaghel_dcsb.toml",
                "--element",
                "dcsb",
                "--amplitude",
                "0.05",
                "--frequency",
                "0.5",
                "--cycles",
                "1",
                "-o",
            ])
            .arg(&cyclic_dir)
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(cyclic(&[]).status.success());
    let out = cyclic(&[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    assert!(cyclic(&["--overwrite"]).status.success());
}

#[test]
fn a_killed_run_leaves_a_run_json_with_a_recent_heartbeat_and_the_last_step_on_disk() {
    let dir = scratch("kill9");
    let model = quickstart_with(
        &dir,
        "long.toml",
        &[("duration = 20.0\n", "duration = 4000.0\n")],
    );
    let out_dir = dir.join("out");
    let mut child = hybridsim()
        .args(["run", "--quiet", "-o"])
        .arg(&out_dir)
        .arg(&model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) for a heartbeat with steps, then a little more, then SIGKILL.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let beat = std::fs::read_to_string(out_dir.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        if beat.is_some_and(|j| j["steps_completed"].as_u64().unwrap_or(0) > 0) {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        if Instant::now() > until {
            let _ = child.kill();
            panic!("no heartbeat in run.json within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1100));
    child.kill().unwrap(); // SIGKILL
    let status = wait_exit(&mut child, Duration::from_secs(10));
    assert!(!status.success());
    let killed_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    let j = json(&out_dir.join("run.json"));
    println!(
        "killed: status {}, heartbeat {}, steps {}, rows on disk {}, last step on disk {}, lab rows {}",
        j["status"],
        j["heartbeat"],
        j["steps_completed"],
        j["rows_on_disk"],
        j["last_step_on_disk"],
        j["lab_rows_on_disk"]
    );
    assert_eq!(j["status"], "running");
    let beat = parse_utc(j["heartbeat"].as_str().expect("a heartbeat"));
    // Two heartbeats a second apart: the last one is at most about a second old.
    assert!(
        killed_at - beat < 5.0 && killed_at - beat > -1.0,
        "heartbeat {} s before the kill",
        killed_at - beat
    );
    let steps = j["steps_completed"].as_u64().unwrap();
    let last = j["last_step_on_disk"]
        .as_u64()
        .expect("a last step on disk");
    assert!(last <= steps && last > 0, "{last} of {steps}");
    // The files hold at least as many whole rows as run.json says (past a partial last line
    // the kill may have left), and the row of the last step on disk is there (every = 2: row
    // k is step 2k).
    let (rows, cut) = rows_before_a_kill(&out_dir.join("results.csv"));
    let on_disk = j["rows_on_disk"].as_u64().unwrap();
    assert!(
        rows.len() as u64 >= on_disk && on_disk > 1,
        "{} < {on_disk}",
        rows.len()
    );
    let row = &rows[(last / 2) as usize];
    assert!(
        (row[0] - last as f64 * 0.005).abs() < 1e-9,
        "{} at step {last}",
        row[0]
    );
    let (lab, lab_cut) = rows_before_a_kill(&out_dir.join("lab.csv"));
    let lab_on_disk = j["lab_rows_on_disk"][0].as_u64().unwrap();
    assert!(lab.len() as u64 >= lab_on_disk && lab_on_disk > 1);
    println!("partial last line dropped: results.csv {cut}, lab.csv {lab_cut}");
}

#[test]
fn a_safety_event_at_rest_stops_the_run_with_a_results_folder() {
    let dir = scratch("at_rest");
    // A force limit below the load cell's noise at rest: the check at rest trips.
    let model = quickstart_with(
        &dir,
        "rest.toml",
        &[("force = 5000.0           # kN", "force = 0.01")],
    );
    let out_dir = dir.join("out");
    let out = hybridsim()
        .args(["run", "--quiet", "-o"])
        .arg(&out_dir)
        .arg(&model)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !err.contains("analysis"),
        "reported as a model-file error: {err}"
    );
    assert!(err.contains("force_limit"), "{err}");
    let j = json(&out_dir.join("run.json"));
    assert_eq!(j["status"], "stopped");
    assert_eq!(j["steps_completed"], 0);
    assert_eq!(j["safety_event"]["kind"], "force_limit");
    assert_eq!(j["safety_event"]["tick"], 0);
    assert_eq!(j["safety"][0]["state"], "tripped");
    assert_eq!(j["safety"][0]["commands_sent"], 0);
    let (_, rows) = read_csv(&out_dir.join("results.csv"));
    assert_eq!(rows.len(), 1, "the initial state");
    assert!(out_dir.join("lab.csv").exists());
    // `realtime` stops the same way.
    let rt_dir = dir.join("rt");
    let out = hybridsim()
        .args(["realtime", "--pacing", "fast", "-o"])
        .arg(&rt_dir)
        .arg(&model)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&rt_dir.join("run.json"));
    assert_eq!(j["status"], "stopped");
    assert_eq!(j["steps_completed"], 0);
    assert_eq!(j["safety_event"]["kind"], "force_limit");
    // `check` reports the same event instead of accepting the file.
    let out = hybridsim().arg("check").arg(&model).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tripped at rest"), "{}", stderr(&out));
}

#[test]
fn a_safety_event_at_rest_keeps_the_at_rest_record_in_lab_csv() {
    let dir = scratch("at_rest_record");
    let model = quickstart_with(
        &dir,
        "rest.toml",
        &[("force = 5000.0           # kN", "force = 0.01")],
    );
    let out_dir = dir.join("out");
    let out = hybridsim()
        .args(["run", "--quiet", "-o"])
        .arg(&out_dir)
        .arg(&model)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (header, lab) = read_csv(&out_dir.join("lab.csv"));
    let rest = &lab[0];
    assert_eq!(
        rest[col(&header, "time[s]")],
        0.0,
        "the first row is the record at rest"
    );
    assert_eq!(rest[col(&header, "safety.storey1[-]")], 1.0);
    assert!(rest[col(&header, "force.storey1[kN]")].abs() > 0.01);
}

#[test]
fn an_unwritable_results_folder_is_a_clear_error() {
    let dir = scratch("readonly");
    let model = quickstart_with(
        &dir,
        "short.toml",
        &[("duration = 20.0\n", "duration = 0.1\n")],
    );
    // /proc refuses new folders even to root (chmod does not stop root).
    for folder in ["/proc/hybridsim-results", "/proc/self/hybridsim-results"] {
        let out = hybridsim()
            .args(["run", "--quiet", "-o", folder])
            .arg(&model)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(folder), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_stop_keeps_the_row_of_the_last_completed_step_whatever_every_is() {
    let dir = scratch("every4");
    // A stroke far below the response, and a results row every 4 steps: the stroke is breached
    // in step 366, so the last completed step (365) falls between two rows.
    let model = quickstart_with(
        &dir,
        "every4.toml",
        &[
            (
                "displacement = 0.25      # stroke, m",
                "displacement = 0.0021",
            ),
            ("every = 2\n", "every = 4\n"),
        ],
    );
    let out_dir = dir.join("out");
    let out = hybridsim()
        .args(["run", "--quiet", "-o"])
        .arg(&out_dir)
        .arg(&model)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out_dir.join("run.json"));
    assert_eq!(j["status"], "stopped");
    let steps = j["steps_completed"].as_u64().unwrap();
    assert_ne!(
        steps % 4,
        0,
        "the stop must fall between two rows to test anything"
    );
    let (_, rows) = read_csv(&out_dir.join("results.csv"));
    let last = rows.last().unwrap()[0];
    println!("stopped after {steps} steps; last row at t = {last}");
    assert!(
        (last - steps as f64 * 0.005).abs() < 1e-9,
        "the last row is at t = {last}, the last completed step at t = {}",
        steps as f64 * 0.005
    );
}

#[test]
fn realtime_pacing_without_real_time_scheduling_needs_allow_soft_realtime() {
    let dir = scratch("soft_rt");
    let model = quickstart_with(
        &dir,
        "short.toml",
        &[("duration = 20.0\n", "duration = 0.5\n")],
    );
    // The child may not get SCHED_FIFO: no CAP_SYS_NICE (root) and RLIMIT_RTPRIO = 0.
    let realtime = |out_dir: &Path, extra: &[&str]| {
        let mut c = hybridsim();
        c.args(["realtime", "--pacing", "realtime", "-o"])
            .arg(out_dir)
            .args(extra)
            .arg(&model);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            c.pre_exec(|| {
                libc::prctl(libc::PR_CAPBSET_DROP, 23 /* CAP_SYS_NICE */, 0, 0, 0);
                let zero = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_RTPRIO, &zero);
                Ok(())
            });
        }
        c.output().unwrap()
    };
    let refused_dir = dir.join("refused");
    let out = realtime(&refused_dir, &[]);
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "ran without real-time scheduling: {err}"
    );
    assert!(err.contains("--allow-soft-realtime"), "{err}");
    // The refused start leaves no files behind.
    let left = std::fs::read_dir(&refused_dir)
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "files left by the refused start");

    let soft_dir = dir.join("soft");
    let out = realtime(&soft_dir, &["--allow-soft-realtime"]);
    let err = stderr(&out);
    assert!(err.contains("without real-time scheduling"), "{err}");
    let j = json(&soft_dir.join("run.json"));
    assert_eq!(j["soft_realtime"], true);
    // Deadlines may be missed on ordinary scheduling (a debug build misses many): the run
    // either completes or is stopped by the overrun limit through the safety layer.
    match j["status"].as_str() {
        Some("completed") => assert!(out.status.success(), "{err}"),
        Some("stopped") => assert_eq!(j["safety_event"]["kind"], "deadline_overruns", "{err}"),
        other => panic!("status {other:?}: {err}"),
    }
}

#[test]
fn a_write_error_stops_run_with_whole_rows_on_disk_and_a_truthful_run_json() {
    // A real write error without root: the child may not grow a file beyond 300 kB
    // (RLIMIT_FSIZE; writes past it fail with EFBIG after a partial write, as on a full disk).
    // lab.csv (the larger file) hits it first, mid-run.
    let dir = scratch("fsize");
    let out_dir = dir.join("out");
    let mut c = hybridsim();
    c.args(["run", "--quiet", "-o"])
        .arg(&out_dir)
        .arg("examples/quickstart.toml");
    limit_file_size(&mut c, 300_000);
    let out = c.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let j = json(&out_dir.join("run.json"));
    println!(
        "status {}, steps {}, rows on disk {} (last step {}), lab rows {}, error {}",
        j["status"],
        j["steps_completed"],
        j["rows_on_disk"],
        j["last_step_on_disk"],
        j["lab_rows_on_disk"],
        j["error"]
    );
    assert_eq!(j["status"], "stopped");
    assert_eq!(j["safety_event"]["kind"], "writer_overflow");
    assert_eq!(j["safety"][0]["state"], "tripped");
    let error = j["error"].as_str().unwrap();
    assert!(error.contains("lab.csv"), "{error}");
    let steps = j["steps_completed"].as_u64().unwrap();
    assert!(steps > 0 && steps < 4000, "{steps}");
    // Whole rows only, as many as run.json says; the last one is the last step on disk.
    let rows = whole_rows(&out_dir.join("results.csv"));
    assert_eq!(rows.len() as u64, j["rows_on_disk"].as_u64().unwrap());
    let last = j["last_step_on_disk"].as_u64().unwrap();
    // (every = 2: rows at steps 0, 2, 4, …, plus the row of the last completed step when
    // the stop fell between two of them.)
    assert_eq!(rows.len() as u64, 1 + last.div_ceil(2));
    assert!((rows.last().unwrap()[0] - last as f64 * 0.005).abs() < 1e-9);
    let lab = whole_rows(&out_dir.join("lab.csv"));
    assert_eq!(lab.len() as u64, j["lab_rows_on_disk"][0].as_u64().unwrap());
    assert!(std::fs::metadata(out_dir.join("lab.csv")).unwrap().len() <= 300_000);
}
