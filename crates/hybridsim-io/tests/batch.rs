//! Batch studies (issue 19): a variant run in a batch, in memory or into a folder, gives the
//! numbers of a single run of the overridden model bit for bit, whatever the number of worker
//! threads; runs in memory equal the rows `run_to_folder` writes.

use hybridsim_io::memory::{run_in_memory, MemoryOptions};
use hybridsim_io::sweep::{self, Override};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};

fn quickstart() -> hybridsim_io::LoadedModel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart.toml");
    hybridsim_io::load_model(&path).expect("quick start loads")
}

fn o(key: &str, value: &str) -> Override {
    Override::parse(&format!("{key}={value}")).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hybridsim-io-batch-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn batch_variants_equal_single_runs_bit_for_bit() {
    let base = quickstart();
    let variants: Vec<Vec<Override>> = (0..4)
        .map(|s| {
            vec![
                o("analysis.duration", "1.0"),
                o("lab.seed", &(100 + s).to_string()),
            ]
        })
        .collect();
    let abort = AtomicBool::new(false);
    let opts = MemoryOptions::default();
    let loaded: Vec<_> = variants
        .iter()
        .map(|v| sweep::variant(&base, v).unwrap())
        .collect();
    for jobs in [1, 2, 3] {
        let batch = sweep::parallel_map(loaded.len(), Some(jobs), |i| {
            run_in_memory(&loaded[i].model, &abort, &opts).unwrap()
        })
        .unwrap();
        for (i, b) in batch.iter().enumerate() {
            let single = run_in_memory(&loaded[i].model, &abort, &opts).unwrap();
            assert_eq!(b.state.status(), "completed");
            assert_eq!(
                bits(&b.data),
                bits(&single.data),
                "variant {i}, {jobs} jobs"
            );
        }
    }
    // The noise seed changes the measured force, so the variants differ.
    let a = run_in_memory(&loaded[0].model, &abort, &opts).unwrap();
    let b = run_in_memory(&loaded[1].model, &abort, &opts).unwrap();
    assert_ne!(bits(&a.data), bits(&b.data));
}

#[test]
fn memory_runs_equal_the_folder_run_and_sweep_folders_equal_single_runs() {
    let base = quickstart();
    let variants: Vec<Vec<Override>> = [0.1, 0.25]
        .iter()
        .map(|pga| {
            vec![
                o("analysis.duration", "0.5"),
                o("ground_motion.0.synthetic.pga", &pga.to_string()),
            ]
        })
        .collect();
    let dir = scratch("sweep");
    let rows = sweep::run_sweep(&base, &variants, &dir, Some(2), &Default::default()).unwrap();
    assert_eq!(rows.len(), 2);
    let abort = AtomicBool::new(false);
    for (r, v) in rows.iter().zip(&variants) {
        assert_eq!(r.status, "completed", "{:?}", r.error);
        let loaded = sweep::variant(&base, v).unwrap();
        // The folder of a single run of the same variant holds the same results.csv text.
        let single = scratch(&format!("single-{}", r.index));
        hybridsim_io::run_to_folder_with(
            &loaded,
            &single,
            &AtomicU64::new(0),
            &abort,
            &Default::default(),
        )
        .unwrap();
        let text = std::fs::read_to_string(r.folder.join("results.csv")).unwrap();
        assert_eq!(
            text,
            std::fs::read_to_string(single.join("results.csv")).unwrap()
        );
        // In memory: the numbers the CSV spells, exactly.
        let mem = run_in_memory(&loaded.model, &abort, &MemoryOptions::default()).unwrap();
        let parsed: Vec<f64> = text
            .lines()
            .skip(1)
            .flat_map(|l| l.split(',').map(|x| x.parse::<f64>().unwrap()))
            .collect();
        assert_eq!(bits(&parsed), bits(&mem.data));
        let header = text.lines().next().unwrap();
        let mem_header: Vec<String> = mem.columns.iter().map(|c| c.header()).collect();
        assert_eq!(header, mem_header.join(","));
        let _ = std::fs::remove_dir_all(&single);
    }
    // The summary: one line per variant, with the swept value and the peaks.
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 3, "{summary}");
    assert!(lines[0].starts_with("variant,folder,analysis.duration,ground_motion.0.synthetic.pga,status,steps,rows,wall_seconds,error,peak_abs.time[s]"), "{}", lines[0]);
    assert!(
        lines[2].starts_with("1,variant-0001,0.5,0.25,completed,100,"),
        "{}",
        lines[2]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_override_names_the_file_and_the_field() {
    let base = quickstart();
    let e = sweep::variant(&base, &[o("analysis.time_step", "-1.0")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("quickstart.toml") && e.contains("analysis.time_step"),
        "{e}"
    );
    let e = sweep::variant(&base, &[o("ground_motion.3.pga", "0.1")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ground_motion.3.pga") && e.contains("index 3"),
        "{e}"
    );
}
