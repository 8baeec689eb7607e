//! The live console (`--console`) and its replay (`hybridsim console`), over plain HTTP: a
//! browser that connects and never reads, or one that leaves mid-run, changes no bit of the
//! results; the stop control (arm, then confirm, token-guarded) stops the test through the
//! safety layer with a ramp-down in lab.csv and every completed step on disk; a non-loopback
//! address without a token is refused; a finished folder replays. Every wait is bounded.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// The quick start with a longer record and `edit` applied to the text.
fn quickstart(dir: &Path, name: &str, duration: f64, edit: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let d = format!("duration = {duration:.1}\n");
    text = text.replace("duration = 20.0\n", &d);
    text = text.replace(
        "duration = 20.0, pga",
        &format!("duration = {duration:.1}, pga"),
    );
    for (a, b) in edit {
        assert!(text.contains(a), "{a}");
        text = text.replace(a, b);
    }
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// Spawn `hybridsim ARGS`, wait (bounded) for the console's address on standard output, and
/// keep draining its output.
fn spawn(args: &[&str]) -> (Child, SocketAddr, Receiver<String>) {
    let mut child = hybridsim()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            eprintln!("[hybridsim] {line}");
        }
    });
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(a) = line.strip_prefix("console: http://") {
                    let a = a.split('/').next().unwrap();
                    return (child, a.parse().unwrap(), rx);
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no console address within 60 s");
            }
        }
    }
}

fn wait_exit(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("hybridsim did not end within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP request: status and body.
fn http(addr: SocketAddr, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let token = token
        .map(|t| format!("X-Console-Token: {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{token}Content-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (code, body)
}

/// Open the event stream; read until `events` events have come (bounded), then return the
/// text read and the still open connection.
fn read_events(addr: SocketAddr, events: usize) -> (String, TcpStream) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 65536];
    let until = Instant::now() + Duration::from_secs(30);
    while text.matches("\nevent: ").count() + usize::from(text.starts_with("event: ")) < events {
        assert!(Instant::now() < until, "no {events} events within 30 s");
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the event stream closed early: {text}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    (text, s)
}

fn same_file(a: &Path, b: &Path) {
    let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert!(
        x == y,
        "{} and {} differ ({} and {} bytes)",
        a.display(),
        b.display(),
        x.len(),
        y.len()
    );
}

#[test]
fn browsers_that_never_read_or_leave_mid_run_change_no_bit() {
    let dir = scratch("console-bits");
    let model = quickstart(&dir, "long", 300.0, &[]);
    let m = model.to_str().unwrap();
    for command in ["run", "realtime"] {
        let extra: &[&str] = if command == "run" {
            &["--quiet"]
        } else {
            &["--pacing", "fast"]
        };
        let plain = dir.join(format!("{command}-plain"));
        let status = hybridsim()
            .arg(command)
            .args(extra)
            .args(["-o", plain.to_str().unwrap(), m])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{command} without console: {status}");

        let watched = dir.join(format!("{command}-console"));
        let mut args = vec![command];
        args.extend(extra);
        args.extend([
            "-o",
            watched.to_str().unwrap(),
            "--console",
            "127.0.0.1:0",
            "--console-wait",
            "30",
            "--console-linger",
            "0",
            m,
        ]);
        let (mut child, addr, _out) = spawn(&args);
        // A browser that asks for the stream and never reads a byte (the run starts once it
        // is connected)...
        let mut stalled = TcpStream::connect(addr).unwrap();
        write!(stalled, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        // ...and one that reads a few updates, then leaves mid-run.
        let (text, leaving) = read_events(addr, 3);
        assert!(text.contains("event: init"), "{text}");
        assert!(text.contains("event: update"), "{text}");
        let running = child.try_wait().unwrap().is_none();
        drop(leaving);
        let status = wait_exit(&mut child, 300);
        assert!(status.success(), "{command} with console: {status}");
        assert!(running, "{command}: the run ended before the browser left");
        drop(stalled);
        for file in ["results.csv", "lab.csv"] {
            same_file(&plain.join(file), &watched.join(file));
        }
        let j = json(&watched.join("run.json"));
        println!(
            "{command}: {} steps with a stalled and a leaving browser, results bit-identical",
            j["steps_completed"]
        );
    }
}

#[test]
fn stop_control_arms_then_confirms_a_safety_stop_with_a_ramp_down() {
    let dir = scratch("console-stop");
    let model = quickstart(
        &dir,
        "paced",
        60.0,
        &[(
            "on_trip = \"hold\"",
            "on_trip = \"ramp_down\"\nramp_rate = 0.005\nmax_overruns = 1000000000",
        )],
    );
    let out = dir.join("out");
    let (mut child, addr, _rx) = spawn(&[
        "realtime",
        "--pacing",
        "realtime",
        "--allow-soft-realtime",
        "--watchdog",
        "10",
        "-o",
        out.to_str().unwrap(),
        "--console",
        "127.0.0.1:0",
        "--console-token",
        "s3cret",
        "--console-linger",
        "0",
        model.to_str().unwrap(),
    ]);
    // The page and its script are served; the state moves.
    let (code, page) = http(addr, "GET", "/", None);
    assert_eq!(code, 200);
    assert!(page.contains("<canvas") && page.contains("/console.js"));
    let (code, js) = http(addr, "GET", "/console.js", None);
    assert_eq!(code, 200);
    assert!(js.contains("EventSource"));
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, state) = http(addr, "GET", "/api/state", None);
        let v: serde_json::Value = serde_json::from_str(&state).unwrap_or_default();
        // Stop once the response has grown (about 5 s into the record).
        if v["timing"]["steps"].as_u64().unwrap_or(0) > 1000 {
            assert_eq!(v["actuators"][0]["name"], "storey1", "{v}");
            break;
        }
        assert!(Instant::now() < until, "no progress on /api/state: {state}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The controls need the token; a confirmation needs an armed stop and its code.
    let (code, _) = http(addr, "POST", "/api/stop?step=arm", None);
    assert_eq!(code, 403);
    let (code, _) = http(addr, "POST", "/api/stop?step=arm", Some("wrong"));
    assert_eq!(code, 403);
    let (code, body) = http(
        addr,
        "POST",
        "/api/stop?step=confirm&code=1",
        Some("s3cret"),
    );
    assert_eq!(code, 409, "{body}");
    let (code, body) = http(addr, "POST", "/api/stop?step=arm", Some("s3cret"));
    assert_eq!(code, 200, "{body}");
    let armed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let c: u64 = armed["code"].as_str().unwrap().parse().unwrap();
    let (code, _) = http(
        addr,
        "POST",
        &format!("/api/stop?step=confirm&code={}", c ^ 1),
        Some("s3cret"),
    );
    assert_eq!(code, 409);
    assert!(
        child.try_wait().unwrap().is_none(),
        "stopped before confirming"
    );
    let (code, body) = http(
        addr,
        "POST",
        &format!("/api/stop?step=confirm&code={c}"),
        Some("s3cret"),
    );
    assert_eq!(code, 200, "{body}");
    let status = wait_exit(&mut child, 60);
    assert!(!status.success());
    check_safety_stop(&out, 1001..12_000);
}

#[test]
fn a_console_beyond_loopback_needs_a_token() {
    let dir = scratch("console-token");
    let model = quickstart(&dir, "short", 2.0, &[]);
    let out = dir.join("out");
    let o = hybridsim()
        .args(["run", "--quiet", "--console", "0.0.0.0:0", "-o"])
        .arg(&out)
        .arg(&model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--console-token"), "{err}");
    assert!(!out.join("run.json").exists());
    let o = hybridsim()
        .args(["run", "--quiet", "--console", "not-an-address", "-o"])
        .arg(&out)
        .arg(&model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--console: `not-an-address` is not ADDR:PORT"),
        "{err}"
    );
}

#[test]
fn a_finished_folder_replays_on_the_same_page() {
    let dir = scratch("console-replay");
    let model = quickstart(&dir, "short", 4.0, &[]);
    let out = dir.join("out");
    let s = hybridsim()
        .args(["run", "--quiet", "-o"])
        .arg(&out)
        .arg(&model)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(s.success());
    let (mut child, addr, _rx) = spawn(&[
        "console",
        out.to_str().unwrap(),
        "--console",
        "127.0.0.1:0",
        "--speed",
        "2",
        "--exit-after",
        "3",
    ]);
    let (code, page) = http(addr, "GET", "/", None);
    assert_eq!(code, 200);
    assert!(page.contains("hybridsim console"));
    let (text, _s) = read_events(addr, 4);
    let init = text
        .split("event: ")
        .find(|e| e.starts_with("init"))
        .unwrap();
    let data: serde_json::Value =
        serde_json::from_str(init.split_once("data: ").unwrap().1.trim()).unwrap();
    assert_eq!(data["meta"]["mode"], "replay");
    assert_eq!(data["outcome"]["status"], "completed");
    assert_eq!(data["actuators"][0]["name"], "storey1");
    assert_eq!(data["actuators"][0]["unit_force"], "kN");
    let (code, body) = http(addr, "POST", "/api/stop?step=arm", None);
    assert_eq!(code, 409, "{body}");
    // At twice the pace the 4 s record takes 2 s; the last update reaches its end.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, state) = http(addr, "GET", "/api/state", None);
        let v: serde_json::Value = serde_json::from_str(&state).unwrap_or_default();
        if v["time"].as_f64().unwrap_or(0.0) >= 4.0 - 1e-9 {
            let tracking = &v["actuators"][0]["tracking"];
            println!("replay reached t = {}; tracking {tracking}", v["time"]);
            assert!(
                tracking["delay"].as_f64().unwrap().abs() < 0.01,
                "{tracking}"
            );
            assert!(tracking["nrms"].as_f64().unwrap() < 0.2, "{tracking}");
            break;
        }
        assert!(
            Instant::now() < until,
            "the replay did not reach the end: {state}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(wait_exit(&mut child, 60).success());
}
