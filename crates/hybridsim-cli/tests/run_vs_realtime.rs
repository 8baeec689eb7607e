//! `hybridsim run` and `hybridsim realtime --pacing fast` are the same run loop
//! (`hybridsim::runner`), for PG-α with the phases on several threads, for the other
//! lab-driving schemes (explicit-rths, FOM, OSM, partitioned LSRT2) on the single-step
//! runner: for every example with a `[lab]` they write byte-identical `results.csv` and
//! `lab.csv`.

mod common;
use common::*;

#[test]
fn run_and_realtime_fast_write_identical_files_for_every_lab_example() {
    let examples = root().join("examples");
    let mut labs: Vec<_> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            // Labs on the network need their peer (tested with it elsewhere). Every
            // lab-driving scheme runs on `realtime` (PG-α threaded, the others on the
            // single-step runner).
            text.lines().any(|l| l.trim() == "[lab]")
                && !text.lines().any(|l| {
                    ["udp", "tcp", "opensees"]
                        .iter()
                        .any(|t| l.trim() == format!("transfer = \"{t}\""))
                })
        })
        .collect();
    labs.sort();
    assert!(labs.len() >= 4, "{labs:?}");
    for model in &labs {
        let name = model.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = scratch(&format!("run-vs-rt-{name}"));
        // The bridge examples at ss = λ run 1 s (see `example_for_every_example_test`).
        let model = &example_for_every_example_test(model, &dir.join("shortened"));
        let run = hybridsim()
            .args(["run", "--quiet", "-o"])
            .arg(dir.join("run"))
            .arg(model)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let rt = hybridsim()
            .args(["realtime", "--pacing", "fast", "-o"])
            .arg(dir.join("rt"))
            .arg(model)
            .output()
            .unwrap();
        assert!(
            rt.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&rt.stderr)
        );
        for file in ["results.csv", "lab.csv"] {
            let a = std::fs::read(dir.join("run").join(file)).unwrap();
            let b = std::fs::read(dir.join("rt").join(file)).unwrap();
            println!("{name}: {file}: {} bytes each", a.len());
            assert!(a.len() > 1000, "{name}: {file} is nearly empty");
            assert!(a == b, "{name}: {file} differs between run and realtime");
        }
    }
}
