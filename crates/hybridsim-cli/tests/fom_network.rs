//! The full-operator method over a network transfer system: `hybridsim controller` serves the
//! virtual lab of `examples/fom_01_six_storey.toml` (a synthetic record, 2 s) on the controller
//! link (UDP, 127.0.0.1) and `hybridsim run` tests the first storey through it; in lock-step
//! the results are bit-identical to the in-process run.

mod common;

use common::{hybridsim, over_link, scratch, serve_controller};
use std::path::Path;

fn model() -> String {
    let text =
        std::fs::read_to_string(common::root().join("examples/fom_01_six_storey.toml")).unwrap();
    let start = text.find("[[ground_motion]]").unwrap();
    let end = text.find("[analysis]").unwrap();
    let synthetic = "[[ground_motion]]\ndirection = \"x\"\n\
                     synthetic = { seed = 15, duration = 2.0, pga = 1.0 }\n\n";
    let t = format!("{}{synthetic}{}", &text[..start], &text[end..]);
    t.replacen("duration = 20.0", "duration = 2.0", 1)
}

fn run(model: &Path, out: &Path) {
    let o = hybridsim()
        .arg("run")
        .arg(model)
        .arg("-o")
        .arg(out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn fom_over_the_controller_link_is_bit_identical_to_the_in_process_run() {
    let dir = scratch("fom_network");
    let text = model();
    let local = dir.join("local.toml");
    std::fs::write(&local, &text).unwrap();
    let controller = serve_controller(&local, &[]);
    let net = over_link(&text, "udp", &controller.address, 2.0);
    let net_model = dir.join("net.toml");
    std::fs::write(&net_model, net).unwrap();
    run(&net_model, &dir.join("net"));
    run(&local, &dir.join("local"));
    let a = std::fs::read(dir.join("net/results.csv")).unwrap();
    let b = std::fs::read(dir.join("local/results.csv")).unwrap();
    assert!(!a.is_empty());
    assert_eq!(a, b, "results over the link differ from the in-process run");
    let run_json = std::fs::read_to_string(dir.join("net/run.json")).unwrap();
    assert!(run_json.contains("\"fom\""), "{run_json}");
}
