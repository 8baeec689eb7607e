//! Issue 17: on PG-α the numerical partition's end state is the free state plus a linear
//! correction `ℚ Λ` built with the initial tangent; without putting the hysteretic states back
//! on their laws afterwards, a yielded bilinear bearing of `examples/bridge_iso.toml` recorded
//! forces far past its yield bound (632 kN against the law's 448 kN at 0.75 g; the bound of a
//! `mostaghel` element is `α k |d| + (1 − α) k δ`). The recorded force of every bearing must
//! stay within that bound at every step (to round-off), with the bearings well into sliding.
mod common;
use common::*;

#[test]
fn bilinear_bearings_stay_on_their_law_after_the_link_update() {
    let model = example_with("bridge_iso.toml", |t| {
        // A synthetic motion instead of the record (no file needed), strong enough to slide.
        let gm: toml::Value = toml::from_str::<toml::Table>(
            "direction = 'y'\nsynthetic = { seed = 2020, duration = 6.0, pga = 0.75 }",
        )
        .unwrap()
        .into();
        t.insert("ground_motion".into(), toml::Value::Array(vec![gm]));
        set(t, "analysis", "duration", 6.0);
    });
    let (k, alpha, delta) = (3.32e8, 0.0035, 0.001);
    let mut sim = hybridsim::Simulation::new(model).unwrap();
    let names: Vec<String> = sim.columns().iter().map(|c| c.name.clone()).collect();
    let col = |n: &str| {
        names
            .iter()
            .position(|c| c == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let bearings: Vec<(usize, usize)> = ["dcsb_a", "dcsb_p1", "dcsb_p2", "dcsb_b"]
        .iter()
        .map(|b| {
            (
                col(&format!("state.{b}.r")),
                col(&format!("deformation.{b}")),
            )
        })
        .collect();
    let mut row = vec![0.0; names.len()];
    let mut worst: f64 = f64::NEG_INFINITY;
    let mut slid: f64 = 0.0;
    for _ in 0..sim.n_steps() {
        sim.step().unwrap();
        sim.record(&mut row);
        for &(r, d) in &bearings {
            let bound = alpha * k * row[d].abs() + (1.0 - alpha) * k * delta;
            worst = worst.max((row[r].abs() - bound) / bound);
            slid = slid.max(row[d].abs() / delta);
        }
    }
    println!(
        "largest excess over the bound {worst:.3e} (relative), largest deformation {slid:.1} δ"
    );
    assert!(
        slid > 20.0,
        "the bearings must slide well past δ ({slid:.1} δ)"
    );
    assert!(
        worst <= 1e-9,
        "a bearing force leaves its law by {worst:.3e} of the bound"
    );
}
