//! `hybridsim plot`: figures of a `run` folder and of a `cyclic` folder, as valid PNG and SVG.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn hybridsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hybridsim"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("run hybridsim")
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_images(dir: &Path, stems: &[&str]) {
    for stem in stems {
        let png = std::fs::read(dir.join(format!("{stem}.png")))
            .unwrap_or_else(|e| panic!("{stem}.png: {e}"));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png magic bytes");
        assert!(png.len() > 20_000, "{stem}.png is only {} bytes", png.len());
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg")))
            .unwrap_or_else(|e| panic!("{stem}.svg: {e}"));
        assert!(svg.contains("<svg"), "{stem}.svg is not SVG");
        assert!(svg.len() > 10_000, "{stem}.svg is only {} bytes", svg.len());
        assert!(
            svg.contains("time [s]") || svg.contains("deformation ["),
            "{stem}.svg axis labels"
        );
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hybridsim-plot-cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn plots_a_quickstart_run() {
    let dir = scratch("quickstart");
    let d = dir.to_str().unwrap();
    ok(&hybridsim(&[
        "run",
        "examples/quickstart.toml",
        "--quiet",
        "-o",
        d,
    ]));
    let plots = dir.join("figures");
    let out = hybridsim(&["plot", d, "-o", plots.to_str().unwrap()]);
    ok(&out);
    check_images(
        &plots,
        &[
            "displacements",
            "interface",
            "energy",
            "hysteresis",
            "element_energy",
        ],
    );
    let svg = std::fs::read_to_string(plots.join("displacements.svg")).unwrap();
    assert!(svg.contains("substructure first_storey") && svg.contains("substructure frame"));
    assert!(svg.contains("displacement [m]"));
    let svg = std::fs::read_to_string(plots.join("interface.svg")).unwrap();
    assert!(
        svg.contains("Λ [kN]"),
        "interface forces labelled with their unit"
    );
    let svg = std::fs::read_to_string(plots.join("hysteresis.svg")).unwrap();
    assert!(svg.contains("force [kN]") && svg.contains("deformation [m]"));
    // Default output folder: RESULTS_DIR/plots.
    ok(&hybridsim(&["plot", d]));
    assert!(dir.join("plots/energy.png").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plots_a_cyclic_run() {
    let dir = scratch("cyclic");
    let d = dir.to_str().unwrap();
    ok(&hybridsim(&[
        "cyclic",
        "tests/data/opensees/bouc_wen_sdof_dt1000us.toml",
        "-e",
        "s1",
        "--history",
        "ramp",
        "-a",
        "0.05",
        "-c",
        "3",
        "-o",
        d,
    ]));
    ok(&hybridsim(&["plot", d]));
    check_images(
        &dir.join("plots"),
        &["element_histories", "hysteresis", "element_energy"],
    );
    let svg = std::fs::read_to_string(dir.join("plots/element_energy.svg")).unwrap();
    assert!(svg.contains("state.s1.dissipated") && svg.contains("energy [N*m]"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_folders_are_reported() {
    let out = hybridsim(&["plot", "no/such/results"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no/such/results") && err.contains("no such results folder"),
        "{err}"
    );

    let dir = scratch("empty");
    std::fs::create_dir_all(&dir).unwrap();
    let out = hybridsim(&["plot", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("results.csv") && err.contains("missing"),
        "{err}"
    );

    std::fs::write(
        dir.join("results.csv"),
        "time[s],u.a.1.x[m]\n0,0\n0.1,oops\n",
    )
    .unwrap();
    let out = hybridsim(&["plot", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 3") && err.contains("u.a.1.x") && err.contains("oops"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
