//! The bridge campaign in short (scripts/bridge/campaign.sh runs it whole): the as-built and
//! isolated bridges of Abbiati et al. (2020) on the virtual lab under the same record; the
//! isolation must lower the tested pier's peak displacement, and every column must be finite.

mod common;

use common::{col, hybridsim, read_csv, root, scratch};
use std::path::Path;

/// `examples/NAME` for a 4 s run under El Centro (absolute path) or, without the records, a
/// synthetic record at the same PGA; written to `dir`.
fn short_copy(name: &str, dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("examples").join(name)).unwrap();
    let record = "record = \"../../shared/data/ground-motions/ElCentro1940_NS_PEER_IELC180.AT2\"";
    assert!(text.contains(record) && text.contains("duration = 10.0"));
    let motion = match common::ground_motion_folder() {
        Some(d) => format!(
            "record = \"{}\"",
            d.join("ElCentro1940_NS_PEER_IELC180.AT2").display()
        ),
        None => "synthetic = { seed = 2015, duration = 4.0, pga = 0.35 }".to_string(),
    };
    let mut text = text
        .replace(record, &motion)
        .replace("duration = 10.0", "duration = 4.0");
    if !motion.starts_with("record") {
        text = text.replace("pga = 0.35\n", "");
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn peak_pier_displacement(model: &Path, out: &Path, column: &str) -> f64 {
    let status = hybridsim()
        .args(["run", "-q"])
        .arg(model)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap();
    assert!(status.success(), "{}", model.display());
    let (header, rows) = read_csv(&out.join("results.csv"));
    assert!(
        rows.iter().flatten().all(|x| x.is_finite()),
        "{}: a non-finite value",
        model.display()
    );
    let c = col(&header, column);
    rows.iter().map(|r| r[c].abs()).fold(0.0, f64::max)
}

#[test]
fn isolation_lowers_the_tested_pier_displacement() {
    let dir = scratch("bridge");
    let ab = short_copy("bridge_ab.toml", &dir);
    let iso = short_copy("bridge_iso.toml", &dir);
    let u_ab = peak_pier_displacement(&ab, &dir.join("ab"), "u.pier.6.y[m]");
    let u_iso = peak_pier_displacement(&iso, &dir.join("iso"), "u.pier.106.y[m]");
    assert!(u_ab > 0.0 && u_iso > 0.0);
    assert!(
        u_iso < 0.5 * u_ab,
        "ISO pier peak {u_iso} m is not well below AB's {u_ab} m"
    );
}
