//! `hybridsim report`: the self-contained HTML report of a results folder.
//!
//! - a quickstart run (virtual lab, synthetic earthquake): every section and every figure is in
//!   the file, each figure an inline SVG with drawn curves, and nothing is fetched from outside;
//! - a run without lab or ground motion: the lab and motion sections say so in a sentence;
//! - missing or damaged folders: errors name the file;
//! - headless Chromium (when installed; required with `CI` set) renders every figure with a
//!   non-zero size and logs no console error; the screenshot is left in the scratch folder.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run(model: &str, out: &Path) {
    ok(&hybridsim()
        .args(["run", model, "--quiet", "-o"])
        .arg(out)
        .output()
        .unwrap());
}

fn report(dir: &Path, html: &Path) -> std::process::Output {
    hybridsim()
        .arg("report")
        .arg(dir)
        .arg("-o")
        .arg(html)
        .output()
        .unwrap()
}

/// The `<svg>…</svg>` inside `<figure … id="fig-ID">`.
fn figure_svg<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"fig-{id}\""))
        .unwrap_or_else(|| panic!("figure {id} missing"));
    let rest = &html[start..];
    let end = rest.find("</figure>").expect("figure not closed");
    let fig = &rest[..end];
    let s = fig
        .find("<svg")
        .unwrap_or_else(|| panic!("figure {id} has no svg"));
    let e = fig
        .rfind("</svg>")
        .unwrap_or_else(|| panic!("figure {id}: svg not closed"));
    &fig[s..e]
}

const QUICKSTART_FIGURES: [&str; 7] = [
    "motion",
    "spectrum",
    "displacements",
    "specimen_loop",
    "energy",
    "lab_tracking",
    "synchronization",
];

fn quickstart_report(name: &str) -> (std::path::PathBuf, String) {
    let dir = scratch(name);
    let out = dir.join("run");
    run("examples/quickstart.toml", &out);
    let html_path = dir.join("report.html");
    let stdout = ok(&report(&out, &html_path));
    assert!(stdout.contains("report.html"), "{stdout}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    (html_path, html)
}

#[test]
fn quickstart_report_has_every_section_and_figure() {
    let (_, html) = quickstart_report("quickstart");
    assert!(html.starts_with("<!DOCTYPE html>"));
    for id in [
        "metadata",
        "motion",
        "spectrum",
        "histories",
        "specimen",
        "energy",
        "tracking",
        "peaks",
        "safety",
        "ending",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "section {id} missing"
        );
    }
    for id in QUICKSTART_FIGURES {
        let svg = figure_svg(&html, id);
        assert!(svg.contains("viewBox"), "figure {id}: no viewBox");
        // Drawn curves: plotters writes each line as a polyline with many points.
        let longest = svg
            .split("<polyline")
            .skip(1)
            .map(|p| {
                p.split("points=\"")
                    .nth(1)
                    .map_or(0, |q| q.find('"').unwrap_or(0))
            })
            .max()
            .unwrap_or(0);
        assert!(
            longest > 200,
            "figure {id}: no drawn curve ({longest} chars)"
        );
    }
    // The specimen loop beside its noise-free twin.
    let loop_svg = figure_svg(&html, "specimen_loop");
    assert!(loop_svg.contains("measured") && loop_svg.contains("noise-free"));
    // The synchronization plot's reference line and the spectrum's axes.
    assert!(figure_svg(&html, "synchronization").contains("perfect tracking"));
    let spectrum = figure_svg(&html, "spectrum");
    assert!(spectrum.contains("period T [s]") && spectrum.contains("pseudo-acceleration"));
    // Metadata, indicators, peaks, safety and ending from run.json / results.csv.
    for needle in [
        "Quick start: three-storey frame",
        "pg-alpha",
        "0.005 s",
        "synthetic Kanai-Tajimi record",
        "ground motion x: 2026",
        "first_storey.virtual_lab.noise: 2027",
        "id=\"indicators\"",
        "storey1",
        "id=\"peak-table\"",
        "<code>u.frame.3.x</code>",
        "id=\"safety-table\"",
        "armed",
        "Status: <strong>completed</strong>",
        "4000 of 4000",
    ] {
        assert!(html.contains(needle), "`{needle}` missing from the report");
    }
    // Self-contained: no external reference of any kind.
    for bad in [
        "<script src",
        "<link ",
        "http://",
        "https://",
        "<img src=\"http",
        "@import",
    ] {
        let hits: Vec<_> = html.match_indices(bad).map(|(i, _)| i).collect();
        // The SVG namespace URI is not a fetch.
        let real = hits
            .iter()
            .filter(|&&i| !html[i..].starts_with("http://www.w3.org/"))
            .count();
        assert_eq!(real, 0, "the report references `{bad}`");
    }
}

/// The peak of `u.frame.3.x` in the table is the largest |value| of the column in results.csv
/// (an independent read of the file).
#[test]
fn peak_table_matches_the_results() {
    let dir = scratch("peaks");
    let out = dir.join("run");
    run("examples/quickstart.toml", &out);
    let html_path = dir.join("r.html");
    ok(&report(&out, &html_path));
    let html = std::fs::read_to_string(&html_path).unwrap();
    let (h, rows) = read_csv(&out.join("results.csv"));
    let c = col(&h, "u.frame.3.x[m]");
    let peak = rows.iter().map(|r| r[c].abs()).fold(0.0, f64::max);
    let row_start = html.find("<tr><td><code>u.frame.3.x</code>").unwrap();
    let row = &html[row_start..row_start + html[row_start..].find("</tr>").unwrap()];
    let cells: Vec<&str> = row
        .split("<td>")
        .skip(1)
        .map(|c| c.trim_end_matches("</td>"))
        .collect();
    let shown: f64 = cells[4].parse().unwrap();
    assert!(
        (shown - peak).abs() <= 1e-3 * peak,
        "peak {shown} in the report, {peak} in results.csv"
    );
}

#[test]
fn report_without_lab_or_motion_says_so() {
    let dir = scratch("no-lab");
    let out = dir.join("run");
    run("examples/llm_split_mass.toml", &out);
    let html_path = dir.join("report.html");
    ok(&report(&out, &html_path));
    let html = std::fs::read_to_string(&html_path).unwrap();
    for needle in [
        "This run has no ground motion",
        "No input motion, hence no response spectrum",
        "This run has no physical substructure (no lab.csv)",
        "No actuators in this run",
        "No safety layer in this run",
        "<section id=\"peaks\">",
    ] {
        assert!(html.contains(needle), "`{needle}` missing");
    }
    assert!(html.contains("id=\"fig-displacements\""));
    assert!(!html.contains("id=\"fig-specimen_loop\""));
}

#[test]
fn missing_or_damaged_folders_are_named() {
    let dir = scratch("errors");
    let err = |out: std::process::Output| {
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let html = dir.join("r.html");
    let e = err(report(&dir.join("absent"), &html));
    assert!(
        e.contains("absent") && e.contains("no such results folder"),
        "{e}"
    );

    let out = dir.join("run");
    run("examples/quickstart.toml", &out);
    let json = std::fs::read_to_string(out.join("run.json")).unwrap();

    // run.json is padded with blanks (the heartbeat rewrites it in place): cut inside the JSON.
    std::fs::write(out.join("run.json"), &json.trim_end()[..200]).unwrap();
    let e = err(report(&out, &html));
    assert!(
        e.contains("run.json") && e.contains("not valid JSON"),
        "{e}"
    );

    std::fs::remove_file(out.join("run.json")).unwrap();
    let e = err(report(&out, &html));
    assert!(e.contains("run.json"), "{e}");

    std::fs::write(out.join("run.json"), &json).unwrap();
    std::fs::rename(out.join("lab.csv"), dir.join("lab.csv")).unwrap();
    let e = err(report(&out, &html));
    assert!(e.contains("lab.csv") && e.contains("missing"), "{e}");
    std::fs::rename(dir.join("lab.csv"), out.join("lab.csv")).unwrap();

    std::fs::write(
        out.join("ground_motion.x.csv"),
        "time[s],a_g.x[m/s^2]\n0,zz\n",
    )
    .unwrap();
    let e = err(report(&out, &html));
    assert!(e.contains("ground_motion.x.csv"), "{e}");

    std::fs::remove_file(out.join("results.csv")).unwrap();
    let e = err(report(&out, &html));
    assert!(e.contains("results.csv") && e.contains("missing"), "{e}");
    assert!(!html.exists(), "no report is written for a damaged folder");
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn headless_chromium_renders_every_figure() {
    if !["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|b| has(b))
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is required with CI set (apt-get install chromium)"
        );
        eprintln!("SKIPPED: chromium not found (apt-get install chromium)");
        return;
    }
    let (html_path, html) = quickstart_report("browser");
    let shot = html_path.with_file_name("report.png");
    let check = Command::new("python3")
        .arg(root().join("scripts/report/report_check.py"))
        .arg(&html_path)
        .arg("--screenshot")
        .arg(&shot)
        .args(["--timeout", "120"])
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "browser check: {}\n{seen}",
        String::from_utf8_lossy(&check.stderr)
    );
    println!("screenshot: {}", shot.display());
    let seen: serde_json::Value = serde_json::from_str(seen.trim()).unwrap();
    let figures = seen["figures"].as_array().unwrap();
    let in_file = html.matches("<figure class=\"figure\"").count();
    assert_eq!(figures.len(), in_file, "{seen}");
    for id in QUICKSTART_FIGURES {
        let f = figures
            .iter()
            .find(|f| f["id"] == format!("fig-{id}"))
            .unwrap_or_else(|| panic!("figure {id} not in the page: {seen}"));
        assert!(f["width"].as_f64().unwrap() > 300.0, "{f}");
        assert!(f["height"].as_f64().unwrap() > 150.0, "{f}");
        assert!(f["texts"].as_u64().unwrap() > 5, "{f}");
    }
    assert_eq!(seen["console_errors"].as_array().unwrap().len(), 0);
    assert_eq!(seen["requests"].as_array().unwrap().len(), 0);
    assert!(std::fs::metadata(&shot).unwrap().len() > 50_000);
}
