//! `hybridsim realtime --inject-fault TASK:KIND:AT` (hidden test hook): the fault matrix can
//! drive a panic or a stall of each task of the threaded runner through the CLI.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn hybridsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hybridsim"))
}

#[test]
fn inject_fault_drives_a_panic_and_a_stall_through_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = root.join("examples/quickstart.toml");
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-inject");
    for (fault, status, kind) in [
        ("physical:panic:20", "stopped", "task_panic"),
        ("numerical:stall=30:20", "stopped", "watchdog"),
    ] {
        let dir = base.join(fault.replace([':', '='], "_"));
        let _ = std::fs::remove_dir_all(&dir);
        let t0 = Instant::now();
        let out = hybridsim()
            .args(["realtime", "--pacing", "fast", "--duration", "1.0"])
            .arg("--inject-fault")
            .arg(fault)
            .arg("-o")
            .arg(&dir)
            .arg(&model)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!("{fault}: {:?} in {:?}\n{stderr}", out.status, t0.elapsed());
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        // The numerical stall ends by the fast watchdog (10 s), not by the 30 s stall.
        assert!(t0.elapsed() < Duration::from_secs(25), "{:?}", t0.elapsed());
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(json["status"], status, "{fault}");
        assert_eq!(json["safety_event"]["kind"], kind, "{fault}");
        assert_eq!(json["steps_completed"], 20, "{fault}");
    }
    let bad = hybridsim()
        .args(["realtime", "--inject-fault", "link:panic:3"])
        .arg(&model)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        stderr.contains("--inject-fault") && stderr.contains("link"),
        "{stderr}"
    );
    let help = hybridsim().args(["realtime", "--help"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("inject-fault"));
    let _ = std::fs::remove_dir_all(&base);
}
