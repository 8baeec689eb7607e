//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (examples are addressed from there).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `hybridsim` binary under test, run from the workspace root.
pub fn hybridsim() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hybridsim"));
    c.current_dir(root());
    c
}

/// The folder of the shared ground-motion records beside the repository
/// (`HYBRIDSIM_GROUND_MOTIONS` overrides it), when it holds the El Centro record.
pub fn ground_motion_folder() -> Option<PathBuf> {
    let dir = std::env::var_os("HYBRIDSIM_GROUND_MOTIONS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data/ground-motions"));
    dir.join("ElCentro1940_NS_PEER_IELC180.AT2")
        .exists()
        .then_some(dir)
}

/// [`ground_motion_folder`], or None after a notice that the test is skipped.
pub fn ground_motions() -> Option<PathBuf> {
    let found = ground_motion_folder();
    if found.is_none() {
        eprintln!(
            "SKIPPED: no ground-motion records at {} (set HYBRIDSIM_GROUND_MOTIONS)",
            root().join("../shared/data/ground-motions").display()
        );
    }
    found
}

/// A fresh, empty scratch folder unique to this test binary, process and `name`.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hybridsim-{}-{name}", env!("CARGO_CRATE_NAME")));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Header and numeric rows of a results CSV.
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse::<f64>().unwrap()).collect())
        .collect();
    (header, rows)
}

/// A JSON file (run.json, summaries), or a panic naming the file.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// Index of the column `name` (with its `[unit]`), or a panic listing the header.
pub fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column `{name}` in {header:?}"))
}

/// Let the child write no file beyond `bytes` (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored): a
/// write past it fails with `EFBIG` after a partial write, as on a full disk — a real write
/// error without root or a small file system.
pub fn limit_file_size(c: &mut Command, bytes: u64) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        c.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
}

/// The lines of a lab.csv without its noise-free columns (`achieved_true.…`, `force_true.…`);
/// with `nan`, a panic unless those columns are all NaN.
pub fn lab_without_noise_free(p: &Path, nan: bool) -> Vec<String> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let truth: Vec<bool> = header
        .iter()
        .map(|h| h.starts_with("achieved_true.") || h.starts_with("force_true."))
        .collect();
    assert!(
        truth.iter().any(|t| *t),
        "{}: no noise-free column",
        p.display()
    );
    std::iter::once(lines_without(&header, &truth))
        .chain(lines.map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            if nan {
                for (c, t) in cells.iter().zip(&truth) {
                    assert!(!t || *c == "NaN", "{}: `{c}` over a link", p.display());
                }
            }
            lines_without(&cells, &truth)
        }))
        .collect()
}

fn lines_without(cells: &[&str], drop: &[bool]) -> String {
    cells
        .iter()
        .zip(drop)
        .filter(|(_, d)| !**d)
        .map(|(c, _)| *c)
        .collect::<Vec<_>>()
        .join(",")
}

/// A `hybridsim controller` process serving a model's virtual lab on 127.0.0.1; killed and
/// reaped when dropped, whatever the test does.
pub struct Controller {
    child: std::process::Child,
    /// The address it listens on (`127.0.0.1:PORT`).
    pub address: String,
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `hybridsim controller MODEL --once --idle-timeout 20 --address 127.0.0.1:0` with
/// `options`; returns once it says where it listens. Its stdout is drained on a thread, since a
/// controller whose stdout is closed would fail on its next line.
pub fn serve_controller(model: &Path, options: &[&str]) -> Controller {
    use std::io::{BufRead, BufReader};
    let mut child = hybridsim()
        .arg("controller")
        .arg(model)
        .args(["--once", "--idle-timeout", "20", "--address", "127.0.0.1:0"])
        .args(options)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let address = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("controller's first line: {first:?}"))
        .to_string();
    Controller { child, address }
}

/// `text` (a model with a `[lab]` and a `[safety]` table) tested through the controller link
/// `transfer` (`udp` or `tcp`) at `address`, reply timeout `timeout` s.
pub fn over_link(text: &str, transfer: &str, address: &str, timeout: f64) -> String {
    assert!(text.contains("[lab]\n") && text.contains("[safety]\n"));
    text.replacen("[lab]\n", &format!("[lab]\ntransfer = \"{transfer}\"\n"), 1)
        .replacen(
            "[safety]\n",
            &format!("[lab.link]\naddress = \"{address}\"\ntimeout = {timeout}\n\n[safety]\n"),
            1,
        )
}

/// `model` as the tests over every example run it: the file itself, or, for an example that
/// commands its lab at more than 10⁶ controller ticks — the bridge examples at the papers'
/// ss = λ = 256 tick 2.6 million times in their 10 s and write about 420 MB of lab.csv — a copy
/// in `dir` shortened to 1 s (its relative paths, e.g. the record's, made absolute).
pub fn example_for_every_example_test(model: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(model).unwrap();
    let Ok(table) = text.parse::<toml::Table>() else {
        return model.to_path_buf();
    };
    let analysis = table.get("analysis").and_then(|a| a.as_table());
    let number = |key: &str| {
        analysis
            .and_then(|a| a.get(key))
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
    };
    let (Some(duration), Some(dt)) = (number("duration"), number("time_step")) else {
        return model.to_path_buf();
    };
    let ticks = duration / dt * number("subcycles").unwrap_or(1.0);
    if !table.contains_key("lab") || ticks <= 1.0e6 {
        return model.to_path_buf();
    }
    let folder = model.parent().unwrap().canonicalize().unwrap();
    let shortened = text
        .lines()
        .map(|l| {
            if l.starts_with("duration = ") {
                "duration = 1.0".to_string()
            } else if l.trim_start().starts_with("record = \"../") {
                l.replacen("\"../", &format!("\"{}/../", folder.display()), 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(model.file_name().unwrap());
    std::fs::write(&path, shortened).unwrap();
    path
}

/// A console test's run stopped by the operator (the quick start's lab, `storey1`, a row every
/// second step): run.json says so, with a completed step count in `steps`; lab.csv ends with a
/// paced ramp (safety state 1, the command moving to rest); every completed step is in
/// results.csv.
pub fn check_safety_stop(out: &Path, steps_range: std::ops::Range<u64>) {
    let j = json(&out.join("run.json"));
    assert_eq!(j["status"], "stopped", "{j}");
    assert_eq!(j["safety_event"]["kind"], "operator_abort", "{j}");
    let steps = j["steps_completed"].as_u64().unwrap();
    assert!(
        steps_range.contains(&steps),
        "{steps} steps, expected {steps_range:?}"
    );
    let (_, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(rows.len() as u64, 1 + steps.div_ceil(2));
    assert_eq!(j["last_step_on_disk"].as_u64(), Some(steps), "{j}");
    let (h, lab) = read_csv(&out.join("lab.csv"));
    let safety = col(&h, "safety.storey1[-]");
    let command = col(&h, "compensated.storey1[m]");
    let ramp: Vec<&Vec<f64>> = lab.iter().filter(|r| r[safety] == 1.0).collect();
    // The trip's row, then the paced ramp: one command per tick, each a step of at most
    // ramp_rate·Δt^C = 0.005 m/s × 1 ms towards rest, as many as the distance needs.
    assert!(ramp.len() >= 2, "no ramp-down in lab.csv");
    let (start, step) = (ramp[0][command], 5e-6);
    let commands = ramp.len() - 1;
    assert_eq!(
        j["safety"][0]["ramp_commands"].as_u64(),
        Some(commands as u64)
    );
    let needed = (start.abs() / step).ceil() as usize;
    assert!(
        commands.abs_diff(needed) <= 1,
        "{commands} ramp commands from {start} m"
    );
    let mut previous = start;
    for r in &ramp[1..] {
        let c = r[command];
        assert!(c.abs() <= previous.abs() && (c - previous).abs() <= step * (1.0 + 1e-9));
        previous = c;
    }
    assert_eq!(previous, 0.0, "the ramp did not reach rest");
    assert_eq!(j["safety"][0]["ramp_down"], "completed");
    println!("stopped after {steps} steps; {commands} ramp commands from {start:.4e} m to rest");
}
