//! SIGINT, SIGTERM and SIGHUP stop `run` and `realtime` through the safety layer: the lab
//! trips, the run ends with `"status": "stopped"`, an `operator_abort` event and every
//! completed step on disk. Each wait is bounded; the child is killed if it outlives it.

mod common;
use common::*;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// The quick start, long enough that a signal always arrives mid-run.
fn long_quickstart(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let text = text.replace("duration = 20.0\n", "duration = 4000.0\n");
    assert!(text.contains("duration = 4000.0"));
    let path = dir.join("long.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Wait (bounded) until `file` has more than `bytes` bytes.
fn wait_for_data(child: &mut Child, file: &Path, bytes: u64) {
    let until = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(file).map(|m| m.len()).unwrap_or(0) <= bytes {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the signal"
        );
        if Instant::now() > until {
            let _ = child.kill();
            panic!("no data in {} after 60 s", file.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (bounded) for the child to exit.
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the run did not stop within 60 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn signals_stop_run_and_realtime_through_the_safety_layer() {
    let dir = scratch("signals");
    let model = long_quickstart(&dir);
    for (command, signal, name) in [
        ("run", libc::SIGTERM, "SIGTERM"),
        ("run", libc::SIGHUP, "SIGHUP"),
        ("run", libc::SIGINT, "SIGINT"),
        ("realtime", libc::SIGTERM, "SIGTERM"),
        ("realtime", libc::SIGHUP, "SIGHUP"),
    ] {
        let out = dir.join(format!("{command}-{name}"));
        let mut args = vec![command.to_string()];
        if command == "run" {
            args.push("--quiet".into());
        } else {
            args.extend(["--pacing".into(), "fast".into()]);
        }
        let mut child = hybridsim()
            .args(&args)
            .arg("-o")
            .arg(&out)
            .arg(&model)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_data(&mut child, &out.join("lab.csv"), 100_000);
        // SAFETY: sending a signal to our own child process.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let status = wait_exit(&mut child);
        assert!(!status.success(), "{command} {name}: exit {status}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        println!(
            "{command} {name}: {} after {} steps, event {}",
            json["status"], json["steps_completed"], json["safety_event"]["kind"]
        );
        assert_eq!(json["status"], "stopped", "{command} {name}");
        assert_eq!(
            json["safety_event"]["kind"], "operator_abort",
            "{command} {name}"
        );
        let steps = json["steps_completed"].as_u64().unwrap();
        assert!(steps > 0 && steps < 800_000, "{command} {name}: {steps}");
        // Every completed step is on disk (every = 2: the initial row, one per two steps and
        // the row of the last completed step whatever `every` is).
        let (_, rows) = read_csv(&out.join("results.csv"));
        assert_eq!(rows.len() as u64, 1 + steps.div_ceil(2), "{command} {name}");
    }
}
