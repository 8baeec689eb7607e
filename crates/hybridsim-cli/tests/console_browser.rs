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

fn chromium() -> bool {
    ["chromium", "chromium-browser", "google-chrome"].iter().any(|b| {
        Command::new("sh")
            .args(["-c", &format!("command -v {b}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
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
        .replace("duration = 20.0\n", "duration = 120.0\n")
        .replace("duration = 20.0, pga", "duration = 120.0, pga")
        .replace(
            "on_trip = \"hold\"",
            "on_trip = \"ramp_down\"\nramp_rate = 0.05\nmax_overruns = 1000000000",
        );
    assert!(text.contains("ramp_rate") && text.contains("duration = 120.0, pga"));
    let model = dir.join("paced.toml");
    std::fs::write(&model, text).unwrap();
    let out = dir.join("out");
    let mut child = hybridsim()
        .args([
            "realtime",
            "--pacing",
            "realtime",
            "--allow-soft-realtime",
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
        .args(["--timeout", "90"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    let errors = String::from_utf8_lossy(&check.stderr);
    let until = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the run did not end within 90 s; browser: {report} {errors}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(check.status.success(), "browser check: {errors}");
    println!("browser saw: {report}");
    println!("screenshot: {}", shot.display());
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    let seen: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    assert!(seen["canvases"].as_u64().unwrap() >= 4, "{seen}");
    assert!(seen["armed_message"].as_str().unwrap().contains("Confirm"), "{seen}");
    assert_eq!(seen["final_status"], "stopped: operator_abort", "{seen}");
    assert!(!status.success());
    let j = json(&out.join("run.json"));
    assert_eq!(j["status"], "stopped", "{j}");
    assert_eq!(j["safety_event"]["kind"], "operator_abort", "{j}");
    let steps = j["steps_completed"].as_u64().unwrap();
    assert!(steps > 100 && steps < 24_000, "{steps}");
    let (_, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(rows.len() as u64, 1 + steps.div_ceil(2));
    let (h, lab) = read_csv(&out.join("lab.csv"));
    let safety = col(&h, "safety.storey1[-]");
    let command = col(&h, "compensated.storey1[m]");
    let ramp: Vec<&Vec<f64>> = lab.iter().filter(|r| r[safety] == 1.0).collect();
    assert!(ramp.len() > 2, "no ramp-down rows in lab.csv");
    assert!(ramp.last().unwrap()[command].abs() < 1e-9);
    assert_eq!(j["safety"][0]["ramp_down"], "completed");
}
