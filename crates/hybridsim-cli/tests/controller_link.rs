//! A hybrid test's two halves as two processes, as with real hardware: `hybridsim controller`
//! serves the quick start's virtual lab on the controller link (127.0.0.1), and `hybridsim
//! run` (or `realtime`) tests the physical substructure through it (`lab.transfer = "udp"` or
//! `"tcp"`). In lock-step mode the results are bit-identical to the in-process test. With
//! injected link faults — lost replies, latency beyond the timeout, a frozen sensor, a
//! disconnect — the safety layer trips as documented, no command beyond the limits is sent
//! and every completed step is on disk.
//!
//! Every controller is started with `--once` and an idle timeout, and killed at the end of
//! its test whatever happens.

mod common;

use common::{hybridsim, json, lab_without_noise_free, over_link, scratch, serve_controller};
use std::path::{Path, PathBuf};

/// The quick start, 4 s long.
fn quickstart() -> String {
    let text = std::fs::read_to_string(common::root().join("examples/quickstart.toml")).unwrap();
    let short = text.replacen("duration = 20.0\n", "duration = 4.0\n", 1);
    assert_ne!(short, text, "the quick start's analysis duration moved");
    short
}

/// Write `text` as `name` in `dir`.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `hybridsim ARGS… MODEL -o OUT` (`--quiet` for `run`); returns whether it succeeded and its stderr.
fn run(command: &[&str], model: &Path, out: &Path) -> (bool, String) {
    let o = hybridsim()
        .args(command)
        .arg(model)
        .arg("-o")
        .arg(out)
        .args(if command[0] == "run" {
            &["--quiet"][..]
        } else {
            &[]
        })
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn a_test_through_the_controller_link_is_bit_identical_to_the_in_process_test() {
    let dir = scratch("identical");
    let text = quickstart();
    let local = write(&dir, "local.toml", &text);
    let (ok, err) = run(&["run"], &local, &dir.join("local"));
    assert!(ok, "{err}");
    for (transfer, runner) in [
        ("udp", &["run"][..]),
        ("tcp", &["run"][..]),
        ("udp", &["realtime", "--pacing", "fast"][..]),
    ] {
        let ctl = serve_controller(&local, &[if transfer == "tcp" { "--tcp" } else { "--udp" }]);
        let model = write(
            &dir,
            &format!("{transfer}.toml"),
            &over_link(&text, transfer, &ctl.address, 2.0),
        );
        let out = dir.join(format!("{transfer}-{}", runner[0]));
        let (ok, err) = run(runner, &model, &out);
        assert!(ok, "{transfer} {runner:?}: {err}");
        assert!(
            bytes(&out.join("results.csv")) == bytes(&dir.join("local").join("results.csv")),
            "{transfer} {runner:?}: results.csv differs from the in-process test"
        );
        // lab.csv: identical but for the noise-free columns, which only the in-process
        // virtual lab knows (NaN over a link).
        let (linked, in_process) = (
            lab_without_noise_free(&out.join("lab.csv"), true),
            lab_without_noise_free(&dir.join("local").join("lab.csv"), false),
        );
        assert!(
            linked == in_process,
            "{transfer} {runner:?}: lab.csv differs from the in-process test"
        );
        let rj = json(&out.join("run.json"));
        assert_eq!(rj["status"], "completed", "{transfer} {runner:?}");
        let link = &rj["safety"][0]["link"];
        assert!(link["frames_sent"].as_f64().unwrap() > 4000.0, "{link}");
        assert_eq!(link["missing_replies"], 0.0, "{link}");
        assert!(link["latency_p99_ms"].as_f64().is_some(), "{link}");
    }
}

/// A faulty controller run: the run stops with `event`, sends nothing beyond the limits and
/// leaves every completed step on disk.
fn trips(name: &str, transfer: &str, timeout: f64, options: &[&str], event: &str) {
    let dir = scratch(name);
    let text = quickstart();
    let local = write(&dir, "local.toml", &text);
    let ctl = serve_controller(&local, options);
    let model = write(
        &dir,
        "link.toml",
        &over_link(&text, transfer, &ctl.address, timeout),
    );
    let out = dir.join("out");
    let (ok, err) = run(&["run"], &model, &out);
    assert!(!ok, "{name}: a safety stop must fail the command");
    assert!(out.join("run.json").exists(), "{name}: no run.json: {err}");
    let rj = json(&out.join("run.json"));
    assert_eq!(rj["status"], "stopped", "{name}: {err}");
    let safety = &rj["safety"][0];
    assert_eq!(safety["event"]["kind"], event, "{name}: {safety}");
    // The link's own account names the peer.
    if event.starts_with("link") {
        let fault = safety["transfer_fault"].as_str().unwrap();
        assert!(fault.contains(&ctl.address), "{name}: {fault}");
    }
    // Nothing beyond the limits.
    let sent = safety["max_command_sent"][0].as_f64().unwrap();
    let limit = safety["displacement_limits"][0].as_f64().unwrap();
    assert!(sent <= limit, "{name}: {sent} > {limit}");
    // Every completed step on disk: the last row is the last completed step.
    let steps = rj["steps_completed"].as_u64().unwrap();
    assert!(steps > 10, "{name}: stopped after {steps} steps");
    assert_eq!(rj["last_step_on_disk"].as_u64(), Some(steps), "{name}");
    let (header, rows) = common::read_csv(&out.join("results.csv"));
    let t = common::col(&header, "time[s]");
    let reached = rj["time_reached"].as_f64().unwrap();
    let last = rows.last().unwrap()[t];
    assert!(
        (last - reached).abs() < 1e-9,
        "{name}: last row at t = {last}, last completed step {steps} at t = {reached}"
    );
}

#[test]
fn lost_replies_trip_the_link_timeout() {
    // Lock-step: a lost reply is a reply missing past the timeout.
    trips(
        "loss",
        "udp",
        0.05,
        &["--udp", "--drop", "0.002", "--seed", "7"],
        "link_timeout",
    );
}

#[test]
fn latency_beyond_the_timeout_trips_the_link_timeout() {
    trips(
        "latency",
        "udp",
        0.05,
        &["--udp", "--latency-after", "0.5", "--latency", "0.2"],
        "link_timeout",
    );
}

#[test]
fn a_frozen_sensor_trips_the_frozen_sensor_check() {
    trips(
        "frozen",
        "udp",
        1.0,
        &["--udp", "--freeze-after", "1.0"],
        "frozen_sensor",
    );
}

#[test]
fn a_disconnect_trips_timeout_over_udp_and_lost_link_over_tcp() {
    trips(
        "disconnect-udp",
        "udp",
        0.05,
        &["--udp", "--disconnect-after", "1.0"],
        "link_timeout",
    );
    trips(
        "disconnect-tcp",
        "tcp",
        0.5,
        &["--tcp", "--disconnect-after", "1.0"],
        "link_lost",
    );
}

#[test]
fn a_controller_interlock_trips() {
    trips(
        "interlock",
        "udp",
        1.0,
        &["--udp", "--interlock-after", "1.0"],
        "controller_interlock",
    );
}

#[test]
fn a_run_without_a_controller_is_refused_or_stopped_with_the_peer_named() {
    // Nobody listens at the address: the measurement at rest cannot be made.
    let dir = scratch("nobody");
    let free = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = free.local_addr().unwrap().to_string();
    drop(free);
    let model = write(
        &dir,
        "m.toml",
        &over_link(&quickstart(), "udp", &address, 0.05),
    );
    let (ok, err) = run(&["run"], &model, &dir.join("out"));
    assert!(!ok);
    assert!(err.contains(&address), "{err}");
}

#[test]
fn the_two_process_example_completes_over_the_link() {
    // examples/two_process_udp.toml as the README runs it, on a free port instead of 7400.
    let dir = scratch("example");
    let text =
        std::fs::read_to_string(common::root().join("examples/two_process_udp.toml")).unwrap();
    let ctl = serve_controller(&common::root().join("examples/two_process_udp.toml"), &[]);
    let model = write(
        &dir,
        "example.toml",
        &text.replacen("127.0.0.1:7400", &ctl.address, 1),
    );
    let out = dir.join("out");
    let (ok, err) = run(&["run"], &model, &out);
    assert!(ok, "{err}");
    let rj = json(&out.join("run.json"));
    assert_eq!(rj["status"], "completed");
    assert_eq!(rj["lab"]["transfer"], "udp");
    assert_eq!(rj["safety"][0]["link"]["missing_replies"], 0.0);
}
