//! A run whose model text was released after parsing (issue 20: the text is not held through
//! the start-up) copies the model file read again, and refuses a file that changed since.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};

#[test]
fn a_released_text_is_read_again_for_the_copy_and_checked() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-io-released-text");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart.toml");
    let text = std::fs::read_to_string(&source).unwrap();
    let model = dir.join("model.toml");
    std::fs::write(&model, &text).unwrap();
    let mut loaded = hybridsim_io::load_model(&model).expect("quick start loads");
    loaded.release_text();
    assert!(loaded.text.is_empty());
    assert_eq!(loaded.model_text().unwrap(), text);
    let (progress, abort) = (AtomicU64::new(0), AtomicBool::new(false));
    let out = dir.join("run");
    hybridsim_io::run_to_folder(&loaded, &out, &progress, &abort).expect("runs");
    assert_eq!(
        std::fs::read_to_string(out.join("model.toml")).unwrap(),
        text
    );
    // The file edited after it was read: the copy would not be the model that ran.
    std::fs::write(&model, text.replace("quick", "Quick")).unwrap();
    let e = loaded.model_text().unwrap_err().to_string();
    assert!(e.contains("changed after it was read"), "{e}");
    let out2 = dir.join("run2");
    let Err(e) = hybridsim_io::run_to_folder(&loaded, &out2, &progress, &abort) else {
        panic!("a changed model file is refused")
    };
    let e = e.to_string();
    assert!(e.contains("model.toml") && e.contains("changed"), "{e}");
    // The copy is streamed and checked on the way: a refused copy leaves no model.toml.
    assert!(!out2.join("model.toml").exists());
    let copy = dir.join("copy.toml");
    let e = loaded.copy_model_to(&copy).unwrap_err().to_string();
    assert!(e.contains("changed after it was read"), "{e}");
    assert!(!copy.exists());
    std::fs::write(&model, &text).unwrap();
    loaded.copy_model_to(&copy).expect("the file as parsed");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), text);
    std::fs::remove_file(&model).unwrap();
    let e = loaded.model_text().unwrap_err().to_string();
    assert!(e.contains("cannot read the model file again"), "{e}");
    let e = loaded.copy_model_to(&copy).unwrap_err().to_string();
    assert!(
        e.contains("cannot read the model file") && e.contains("again"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A model loaded without its text ([`hybridsim_io::load_model_released`]: the text hashed,
/// parsed and released before the layout is validated) is the one [`hybridsim_io::load_model`]
/// gives with its text released: the same hashes and results folder; a file whose layout is
/// wrong (a DOF without mass: the validation's error) and one whose table is wrong (a
/// reading error) are refused with the same messages.
#[test]
fn a_model_loaded_without_its_text_is_the_one_loaded_with_it() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-io-loaded-released");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart.toml");
    let text = std::fs::read_to_string(&source).unwrap();
    let model = dir.join("model.toml");
    std::fs::write(&model, &text).unwrap();
    let kept = hybridsim_io::load_model(&model).expect("quick start loads");
    let released = hybridsim_io::load_model_released(&model).expect("quick start loads");
    assert!(released.text.is_empty());
    assert_eq!(released.sha256, kept.sha256);
    assert_eq!(released.record_sha256, kept.record_sha256);
    assert_eq!(released.model_text().unwrap(), text);
    let (progress, abort) = (AtomicU64::new(0), AtomicBool::new(false));
    for (loaded, name) in [(&kept, "kept"), (&released, "released")] {
        hybridsim_io::run_to_folder(loaded, &dir.join(name), &progress, &abort).expect("runs");
    }
    for file in ["results.csv", "model.toml"] {
        assert_eq!(
            std::fs::read(dir.join("kept").join(file)).unwrap(),
            std::fs::read(dir.join("released").join(file)).unwrap(),
            "{file}"
        );
    }
    // Errors: the layout's (found by the validation, after the text is released) and a
    // table's (found while reading).
    let massless = r#"
title = "massless"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
[[element]]
type = "mass"
name = "m1"
node = 1
mass = 10.0
[[element]]
type = "spring"
name = "k"
nodes = [1, 2]
dof = "x"
k = 100.0
[analysis]
integrator = "mg-alpha"
time_step = 0.01
duration = 0.1
"#;
    for (bad, needle) in [
        (massless.to_string(), "has no mass"),
        (massless.replace("k = 100.0", "k = \"stiff\""), "element"),
    ] {
        std::fs::write(&model, &bad).unwrap();
        let a = hybridsim_io::load_model(&model).unwrap_err().to_string();
        let b = hybridsim_io::load_model_released(&model)
            .unwrap_err()
            .to_string();
        assert_eq!(a, b);
        assert!(a.contains(needle), "{a}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
