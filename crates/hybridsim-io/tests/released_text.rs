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
