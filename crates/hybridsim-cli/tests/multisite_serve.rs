//! Two hybridsim sites: `examples/multisite_split_mass.toml` run with its spring k1 served by
//! another hybridsim process (`hybridsim serve`, an element server: `lab.link.peer =
//! "element_server"`, TCP and UDP) gives the same results as the single-process run
//! (`transfer = "virtual"`, an ideal noise-free actuator): the server imposes the trial
//! displacement exactly and answers with the spring's force, so nothing but the transport
//! differs.
//!
//! Every subprocess has a deadline and is killed at the end.

mod common;

use common::{json, lab_without_noise_free, root, scratch};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The served side: the spring k1 of the split-mass benchmark on node 1.
const SERVED: &str = r#"title = "the split-mass benchmark's spring k1, served"
[units]
length = "m"
force = "N"
time = "s"
[[node]]
id = 1
dofs = ["x"]
[substructure.specimen]
[[element]]
type = "spring"
name = "k1"
nodes = [1]
dof = "x"
k = 4.0e5
substructure = "specimen"
[[element]]
type = "mass"
name = "m1"
node = 1
mass = 4.0e3
substructure = "specimen"
[analysis]
integrator = "mg-alpha"
rho_inf = 1.0
time_step = 1.0e-3
duration = 1.0
"#;

/// Start `hybridsim serve` on a free port; returns it and its address.
fn serve(dir: &Path, udp: bool) -> (Killed, String) {
    let model = dir.join("served.toml");
    std::fs::write(&model, SERVED).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_hybridsim"));
    c.args(["serve"])
        .arg(&model)
        .args(["--substructure", "specimen", "--dofs", "1:x", "--port", "0"])
        .args(["--once", "--idle-timeout", "30"]);
    if udp {
        c.arg("--udp");
    }
    let mut child = Killed(
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start hybridsim serve"),
    );
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    // Keep reading: a server whose stdout is closed would fail on its next line.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let address = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("serve's first line: {first:?}"))
        .to_string();
    (child, address)
}

/// The example, over the link to an element server at `address`, or in one process.
fn model(dir: &Path, name: &str, link: Option<(&str, bool)>) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/multisite_split_mass.toml")).unwrap();
    let mut out = String::new();
    let mut in_link = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_link = t.starts_with("[lab.link]");
        }
        let line = match link {
            None if in_link => continue,
            None if t.starts_with("transfer = ") => "transfer = \"virtual\"".to_string(),
            Some((address, _)) if t.starts_with("address = ") => {
                format!("address = \"{address}\"")
            }
            Some((_, udp)) if t.starts_with("peer = ") => format!(
                "peer = \"element_server\"{}",
                if udp { "\nprotocol = \"udp\"" } else { "" }
            ),
            _ => line.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, out).unwrap();
    path
}

/// `hybridsim run MODEL -o OUT` under a deadline; success and stderr.
fn run(model: &Path, out: &Path) -> (bool, String) {
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_hybridsim"))
            .current_dir(root())
            .args(["run", "--quiet"])
            .arg(model)
            .arg("-o")
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hybridsim"),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut err = String::new();
            let _ = child.0.stderr.as_mut().unwrap().read_to_string(&mut err);
            return (status.success(), err);
        }
        assert!(Instant::now() < deadline, "hybridsim run hung");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn two_hybridsim_sites_match_the_single_process_run() {
    let dir = scratch("two-sites");
    let local = dir.join("local");
    let (ok, err) = run(&model(&dir, "local", None), &local);
    assert!(ok, "{err}");
    for udp in [false, true] {
        let (mut server, address) = serve(&dir, udp);
        let name = if udp { "udp" } else { "tcp" };
        let out = dir.join(name);
        let (ok, err) = run(&model(&dir, name, Some((&address, udp))), &out);
        assert!(ok, "{name}: {err}");
        let rj = json(&out.join("run.json"));
        assert_eq!(rj["status"], "completed", "{name}");
        let link = &rj["safety"][0]["link"];
        assert!(link["replies"].as_f64().unwrap() >= 10_000.0, "{link}");
        assert_eq!(link["missing_replies"], 0.0, "{link}");
        eprintln!(
            "{name}: latency p50 {} ms, p99 {} ms",
            link["latency_p50_ms"], link["latency_p99_ms"]
        );
        assert!(
            bytes(&out.join("results.csv")) == bytes(&local.join("results.csv")),
            "{name}: results.csv differs from the single-process run"
        );
        // lab.csv: the same but for the noise-free columns, which only the in-process virtual
        // lab knows (NaN for a served element).
        assert!(
            lab_without_noise_free(&out.join("lab.csv"), true)
                == lab_without_noise_free(&local.join("lab.csv"), false),
            "{name}: lab.csv differs from the single-process run"
        );
        // The server ends its session on the client's 99 (--once: the process ends).
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "{name}: the server did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
