//! The live console in a real browser: Debian's `chromium --headless`, driven over the
//! DevTools protocol by `scripts/console/browser_check.py`, opens the console of a running
//! virtual-lab test (realtime pacing, so that it runs long enough), sees the plots update,
//! presses stop and confirms; the run ends stopped by the operator with a ramp-down in
//! lab.csv and every completed step on disk. Without chromium the test is SKIPPED, and fails
//! when `CI` is set (`.ci/run` installs it). The screenshot of the page mid-test is left in
//! the scratch folder (its path is printed).

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn chromium() -> bool {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|b| has(b))
}

#[test]
fn headless_chromium_watches_and_stops_a_running_test() {
    if !chromium() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is required with CI set (apt-get install chromium)"
        );
        eprintln!("SKIPPED: chromium not found (apt-get install chromium)");
        return;
    }
    let dir = scratch("console-browser");
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let text = text
        .replace("duration = 20.0\n", "duration = 300.0\n")
        .replace("duration = 20.0, pga", "duration = 300.0, pga")
        .replace(
            "on_trip = \"hold\"",
            "on_trip = \"ramp_down\"\nramp_rate = 0.005\nmax_overruns = 1000000000",
        );
    assert!(text.contains("ramp_rate") && text.contains("duration = 300.0, pga"));
    let model = dir.join("paced.toml");
    std::fs::write(&model, text).unwrap();
    let out = dir.join("out");
    // As root the runner's threads get SCHED_FIFO and, on a small machine, take most of its
    // cores: the browser would hardly run. Without CAP_SYS_NICE (setpriv) the same paced run
    // goes on SCHED_OTHER (--allow-soft-realtime), sharing the machine with the browser.
    let mut cmd = if has("setpriv") {
        let mut c = Command::new("setpriv");
        c.args(["--bounding-set", "-sys_nice"])
            .arg(env!("CARGO_BIN_EXE_hybridsim"))
            .current_dir(root());
        c
    } else {
        hybridsim()
    };
    let mut child = cmd
        .args([
            "realtime",
            "--pacing",
            "realtime",
            "--allow-soft-realtime",
            // A loaded machine without SCHED_FIFO may stall a worker past the default
            // watchdog (10 Δt^S); this test is about the console, not the scheduler.
            "--watchdog",
            "10",
            "--console",
            "127.0.0.1:0",
            "--console-linger",
            "3",
            "-o",
        ])
        .arg(&out)
        .arg(&model)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("hybridsim ended before printing the console address")
            .unwrap();
        if let Some(u) = line.strip_prefix("console: ") {
            break u.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let shot = dir.join("console.png");
    let check = Command::new("python3")
        .arg(root().join("scripts/console/browser_check.py"))
        .arg(&url)
        .arg("--screenshot")
        .arg(&shot)
        .args(["--timeout", "150"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    let errors = String::from_utf8_lossy(&check.stderr);
    if !check.status.success() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("browser check: {errors}");
    }
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the run did not end within 120 s; browser: {report} {errors}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    println!("browser saw: {report}");
    println!("screenshot: {}", shot.display());
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    let seen: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    assert!(seen["canvases"].as_u64().unwrap() >= 4, "{seen}");
    assert!(
        seen["armed_message"].as_str().unwrap().contains("Confirm"),
        "{seen}"
    );
    assert_eq!(seen["final_status"], "stopped: operator_abort", "{seen}");
    assert!(!status.success());
    check_safety_stop(&out, 101..60_000);
}
