//! Every column of every example's results is a number (issue 18): `hybridsim run` on each model
//! file in `examples/` gives finite values in every row of `results.csv` and of each lab table,
//! except the virtual lab's noise-free `achieved_true.*`/`force_true.*` columns during the
//! bumpless start (documented as `NaN` there: no noise-free value is defined before the test
//! clock starts).

mod common;
use common::{hybridsim, root, scratch};
use std::path::Path;

/// Examples that need a peer process on the network (run by their own tests).
const NEEDS_PEER: [&str; 2] = ["multisite_split_mass", "two_process_udp"];

fn uses_record(model: &Path) -> bool {
    std::fs::read_to_string(model).unwrap().lines().any(|l| {
        let l = l.trim_start();
        !l.starts_with('#') && l.starts_with("record") && l.contains(".AT2")
    })
}

/// The non-finite cells of a CSV file: `(column, first row, count)` per column.
fn non_finite(path: &Path, allow_start_nan: bool) -> Vec<(String, usize, usize)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let mut bad: Vec<(String, usize, usize)> = Vec::new();
    for (row, line) in lines.enumerate() {
        for (c, cell) in line.split(',').enumerate() {
            if cell.parse::<f64>().is_ok_and(f64::is_finite) {
                continue;
            }
            let name = header[c];
            let noise_free = name.starts_with("achieved_true.") || name.starts_with("force_true.");
            if allow_start_nan && noise_free && cell == "NaN" {
                continue;
            }
            match bad.iter_mut().find(|b| b.0 == name) {
                Some(b) => b.2 += 1,
                None => bad.push((name.to_string(), row + 1, 1)),
            }
        }
    }
    bad
}

/// In a lab table, the noise-free columns are `NaN` only in a leading block of rows (the
/// bumpless start), never once the test runs.
fn noise_free_nan_only_at_start(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cols: Vec<usize> = (0..header.len())
        .filter(|&c| {
            header[c].starts_with("achieved_true.") || header[c].starts_with("force_true.")
        })
        .collect();
    let mut started = vec![false; header.len()];
    for (row, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        for &c in &cols {
            let finite = cells[c].parse::<f64>().is_ok_and(f64::is_finite);
            assert!(
                finite || !started[c],
                "{}: column {} is NaN at data row {} after finite values",
                path.display(),
                header[c],
                row + 1
            );
            started[c] |= finite;
        }
    }
}

#[test]
fn every_column_of_every_example_is_finite() {
    let records = common::ground_motion_folder().is_some();
    let mut examples: Vec<_> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 20, "found {} examples", examples.len());
    let out = scratch("examples");
    let mut problems = Vec::new();
    let mut ran = 0;
    for model in &examples {
        let name = model.file_stem().unwrap().to_str().unwrap().to_string();
        if NEEDS_PEER.contains(&name.as_str()) {
            continue;
        }
        if !records && uses_record(model) {
            eprintln!("SKIPPED {name}: no ground-motion records beside the repository");
            continue;
        }
        let folder = out.join(&name);
        // The bridge examples at ss = λ run 1 s (see `example_for_every_example_test`).
        let model = &common::example_for_every_example_test(model, &out.join("shortened"));
        let run = hybridsim()
            .args(["run", "--quiet", "-o"])
            .arg(&folder)
            .arg(model)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        ran += 1;
        let mut tables: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        tables.sort();
        assert!(tables.iter().any(|p| p.ends_with("results.csv")), "{name}");
        for table in &tables {
            let file = table.file_name().unwrap().to_str().unwrap();
            let lab = file == "lab.csv" || (file.starts_with("lab.") && file.ends_with(".csv"));
            if lab {
                noise_free_nan_only_at_start(table);
            }
            for (column, row, count) in non_finite(table, lab) {
                problems.push(format!(
                    "{name}/{file}: {column}: {count} non-finite value(s), the first at data row {row}"
                ));
            }
        }
    }
    assert!(ran >= 15, "ran {ran} examples");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
