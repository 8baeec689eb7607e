//! A model file or a record that is not a regular file — a device such as `/dev/zero`, a
//! FIFO — is refused with an error naming it, never read until memory runs out or forever.

use hybridsim_io::load_model;
use std::path::Path;

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hybridsim-io-special-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn devices_and_fifos_are_refused_as_model_files() {
    let dir = scratch("model");
    let pipe = dir.join("model.toml");
    fifo(&pipe);
    for path in [Path::new("/dev/zero"), pipe.as_path()] {
        let err = load_model(path).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
}

#[test]
fn devices_and_fifos_are_refused_as_records() {
    let dir = scratch("record");
    let pipe = dir.join("record.AT2");
    fifo(&pipe);
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart.toml"),
    )
    .unwrap();
    for record in ["/dev/zero", pipe.to_str().unwrap()] {
        let text = base.replace(
            "synthetic = { seed = 2026, duration = 20.0, pga = 0.3 }",
            &format!("record = \"{record}\""),
        );
        assert!(text.contains(record));
        let model = dir.join("model.toml.in");
        std::fs::write(&model, text).unwrap();
        let err = load_model(&model).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert!(err.contains(record), "{err}");
    }
}
