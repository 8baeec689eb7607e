//! The results writer of `run` with each CSV row's first columns spelled on the stepping
//! thread (issue 20): `results.csv` is the same bytes whatever the share, from none (every
//! number spelled by the writer thread, as before) to the whole row, and with the share
//! adapted to the queue.

use hybridsim_io::{run_to_folder_with, RunOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(example: &str, spelled_on_step: Option<usize>) -> Vec<u8> {
    let name = format!(
        "hybridsim-io-spelled-{}-{}",
        example.trim_end_matches(".toml"),
        spelled_on_step.map_or("adapted".to_string(), |k| k.to_string())
    );
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    let loaded = hybridsim_io::load_model(&root().join("examples").join(example))
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        spelled_on_step,
        ..RunOptions::default()
    };
    let report = run_to_folder_with(
        &loaded,
        &folder,
        &AtomicU64::new(0),
        &AtomicBool::new(false),
        &opts,
    )
    .unwrap_or_else(|e| panic!("{example}: {e}"));
    assert!(report.error.is_none(), "{example}: {:?}", report.error);
    let bytes = std::fs::read(folder.join("results.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&folder);
    bytes
}

#[test]
fn results_csv_is_the_same_bytes_whatever_the_share_spelled_on_the_stepping_thread() {
    for example in [
        "quickstart.toml",
        "fom_01_six_storey.toml",
        "multi_support.toml",
    ] {
        let writer_only = run(example, Some(0));
        let lines = writer_only.iter().filter(|b| **b == b'\n').count();
        let columns = writer_only
            .split(|b| *b == b'\n')
            .next()
            .map_or(0, |h| h.split(|b| *b == b',').count());
        assert!(
            lines > 100 && columns > 3,
            "{example}: {lines} lines, {columns} columns"
        );
        for share in [
            Some(1),
            Some(2),
            Some(columns - 1),
            Some(columns),
            Some(usize::MAX),
            None,
        ] {
            assert!(
                run(example, share) == writer_only,
                "{example}: results.csv differs with {share:?} columns spelled on the stepping thread"
            );
        }
    }
}
