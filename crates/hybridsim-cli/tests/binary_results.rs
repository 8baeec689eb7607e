//! `[output] format = "binary"` (`results.bin`): the same columns and values as results.csv bit
//! for bit, `hybridsim convert` back to the same CSV text, a partial last row ignored and
//! reported, whole rows only after a full disk, `plot` and `report` on a binary folder, and a
//! bad value named by file and field.

mod common;
use common::*;
use hybridsim_plot::results::ResultsTable;
use std::path::{Path, PathBuf};

/// The quick-start model with `[output]` lines `extra` (and `every = 1`) in `dir`.
fn quickstart_with(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/quickstart.toml")).unwrap();
    let text = text.replace(
        "[output]\nevery = 2\n",
        &format!("[output]\nevery = 1\n{extra}\n"),
    );
    assert!(text.contains(extra));
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn run(model: &Path, out: &Path) -> std::process::Output {
    hybridsim()
        .args(["run", "-q", "--overwrite"])
        .arg(model)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

/// The CSV run and the binary run of one model; the folders.
fn both_runs(dir: &Path) -> (PathBuf, PathBuf) {
    let csv = dir.join("csv");
    let bin = dir.join("bin");
    ok(&run(&quickstart_with(dir, "csv", "format = \"csv\""), &csv));
    ok(&run(
        &quickstart_with(dir, "bin", "format = \"binary\""),
        &bin,
    ));
    (csv, bin)
}

#[test]
fn a_binary_run_holds_the_csv_values_bit_for_bit_and_converts_to_the_same_text() {
    let dir = scratch("round-trip");
    let (csv, bin) = both_runs(&dir);
    assert!(!bin.join("results.csv").exists());
    assert_eq!(
        json(&bin.join("run.json"))["files"]["results"],
        "results.bin"
    );
    let a = ResultsTable::read(&csv.join("results.csv")).unwrap();
    let b = ResultsTable::read(&bin.join("results.bin")).unwrap();
    assert_eq!(a.names, b.names);
    assert_eq!(a.units, b.units);
    assert_eq!(a.rows(), 4001);
    assert_eq!(b.rows(), a.rows());
    assert_eq!(
        json(&bin.join("run.json"))["rows_on_disk"].as_u64(),
        Some(b.rows() as u64)
    );
    for (c, (x, y)) in a.columns.iter().zip(&b.columns).enumerate() {
        for (k, (x, y)) in x.iter().zip(y).enumerate() {
            assert_eq!(x.to_bits(), y.to_bits(), "{} row {k}", a.names[c]);
        }
    }
    // `convert` writes the very text of the CSV run.
    let converted = dir.join("converted.csv");
    let out = hybridsim()
        .arg("convert")
        .arg(&bin)
        .arg("-o")
        .arg(&converted)
        .output()
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("wrote 4001 rows"), "{text}");
    assert!(
        std::fs::read(&converted).unwrap() == std::fs::read(csv.join("results.csv")).unwrap(),
        "converted.csv differs from the CSV run's results.csv"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_partial_last_row_is_ignored_and_reported_by_every_reader() {
    let dir = scratch("partial");
    let bin = dir.join("bin");
    ok(&run(
        &quickstart_with(&dir, "bin", "format = \"binary\""),
        &bin,
    ));
    let file = bin.join("results.bin");
    let whole = ResultsTable::read(&file).unwrap();
    let len = std::fs::metadata(&file).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(len - 5).unwrap();
    drop(f);
    let (cut, note) = ResultsTable::read_noting(&file).unwrap();
    assert_eq!(cut.rows(), whole.rows() - 1);
    let note = note.expect("a note on the partial row");
    assert!(
        note.contains("results.bin") && note.contains("partial row"),
        "{note}"
    );
    for args in [vec!["plot"], vec!["report"]] {
        let out = hybridsim().args(&args).arg(&bin).output().unwrap();
        let text = ok(&out);
        assert!(
            text.contains("partial row") && text.contains("ignored"),
            "{args:?}: {text}"
        );
    }
    assert!(bin.join("plots/displacements.png").is_file());
    assert!(bin.join("report.html").is_file());
    let out = hybridsim()
        .arg("convert")
        .arg(&file)
        .arg("-o")
        .arg(dir.join("cut.csv"))
        .output()
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("partial row"), "{text}");
    let (_, rows) = read_csv(&dir.join("cut.csv"));
    assert_eq!(rows.len(), cut.rows());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_disk_leaves_whole_binary_rows_and_the_count_in_run_json() {
    let dir = scratch("full-disk");
    let model = quickstart_with(&dir, "bin", "format = \"binary\"");
    let out = dir.join("bin");
    let mut c = hybridsim();
    c.args(["run", "-q", "--overwrite"])
        .arg(&model)
        .arg("-o")
        .arg(&out);
    limit_file_size(&mut c, 300_000);
    let o = c.output().unwrap();
    assert!(!o.status.success(), "the run should stop on the full disk");
    let bytes = std::fs::read(out.join("results.bin")).unwrap();
    let table = hybridsim_plot::binary::parse(&bytes, Path::new("results.bin")).unwrap();
    assert_eq!(table.partial_row_bytes, 0, "a partial row on disk");
    assert!(table.table.rows() > 0 && table.table.rows() < 4001);
    let run = json(&out.join("run.json"));
    assert_eq!(
        run["rows_on_disk"].as_u64(),
        Some(table.table.rows() as u64)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_format_is_an_error_naming_the_file_and_field_and_check_prints_the_format() {
    let dir = scratch("bad-format");
    let bad = quickstart_with(&dir, "bad", "format = \"xml\"");
    let out = hybridsim().arg("check").arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("bad.toml") && err.contains("output.format") && err.contains("`xml`"),
        "{err}"
    );
    let good = quickstart_with(&dir, "good", "format = \"binary\"");
    let out = hybridsim().arg("check").arg(&good).output().unwrap();
    let text = ok(&out);
    assert!(text.contains("format binary (results.bin"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn realtime_writes_the_same_rows_in_binary_as_in_csv() {
    let dir = scratch("realtime");
    let short = |name: &str, extra: &str| {
        let p = quickstart_with(&dir, name, extra);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replace("duration = 20.0", "duration = 1.0")).unwrap();
        p
    };
    let csv = dir.join("csv");
    let bin = dir.join("bin");
    for (model, out) in [
        (short("csv", "format = \"csv\""), &csv),
        (short("bin", "format = \"binary\""), &bin),
    ] {
        ok(&hybridsim()
            .args(["realtime", "--pacing", "fast"])
            .arg(&model)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap());
    }
    assert_eq!(
        json(&bin.join("run.json"))["files"]["results"],
        "results.bin"
    );
    let converted = dir.join("converted.csv");
    ok(&hybridsim()
        .arg("convert")
        .arg(bin.join("results.bin"))
        .arg("-o")
        .arg(&converted)
        .output()
        .unwrap());
    assert!(
        std::fs::read(&converted).unwrap() == std::fs::read(csv.join("results.csv")).unwrap(),
        "realtime: converted results.bin differs from results.csv"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
