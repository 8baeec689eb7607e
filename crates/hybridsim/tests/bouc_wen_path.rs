//! The Bouc-Wen force along a straight deformation path ([`BoucWen::force_along_path`], the
//! state update of the converged solve, issue 17) against an independent integration of the
//! rate law in many small explicit midpoint steps, across the switch at `r = 0` (unloading
//! through zero and reloading), for `n = 1` (closed form) and `n = 2` (Runge–Kutta).
use hybridsim::elements::{BoucWen, DofRef, ElementLaw};

/// The force along a straight path by many explicit midpoint steps of the rate law
/// `ṙ = (A − [β sgn(r ḋ) + γ]|r|ⁿ) ḋ` with a constant `ḋ`.
fn by_small_steps(e: &BoucWen, r0: f64, delta: f64) -> f64 {
    let steps = 200_000;
    let h = delta / steps as f64;
    let increment = |r: f64| {
        let mut force = [0.0];
        let mut sdot = [0.0, 0.0];
        e.law(&[0.0], &[h], &[r, 0.0], &mut force, &mut sdot);
        sdot[0]
    };
    let mut r = r0;
    for _ in 0..steps {
        let mid = r + 0.5 * increment(r);
        r += increment(mid);
    }
    r
}

#[test]
fn the_path_force_is_the_integral_of_the_law_across_the_switch() {
    let dofs = vec![DofRef::new(1, "x")];
    for (beta, gamma) in [(3.5, 60.0), (40.0, 20.0), (30.0, 30.0)] {
        let e = BoucWen::new(dofs.clone(), 1.6e7, beta, gamma, 1.0).unwrap();
        let ru = e.ultimate_force();
        let dy = ru / e.a;
        for (r0, delta) in [
            (0.0, 3.0 * dy),
            (0.9 * ru, -5.0 * dy), // unloading through r = 0 and reloading
            (-0.5 * ru, 0.2 * dy), // unloading part way
            (0.7 * ru, 0.1 * dy),  // loading
            (-0.99 * ru, 40.0 * dy),
            (0.3 * ru, 0.0),
        ] {
            let path = e.force_along_path(r0, delta);
            let steps = by_small_steps(&e, r0, delta);
            println!("β {beta} γ {gamma} r0 {r0:.4e} Δ {delta:.3e}: {path:.12e} vs {steps:.12e}");
            assert!(
                (path - steps).abs() <= 1e-8 * ru,
                "β {beta} γ {gamma} r0 {r0:.4e} Δ {delta:.3e}: path {path:.10e}, small steps {steps:.10e}"
            );
            assert!(path.abs() <= ru * (1.0 + 1e-12));
        }
    }
    let e = BoucWen::new(dofs, 1.6e7, 3.5e-5, 6.0e-4, 2.0).unwrap();
    let ru = e.ultimate_force();
    let dy = ru / e.a;
    for (r0, delta) in [
        (0.8 * ru, -4.0 * dy),
        (0.0, 2.0 * dy),
        (-0.6 * ru, 0.3 * dy),
    ] {
        let a = e.force_along_path(r0, delta);
        let b = by_small_steps(&e, r0, delta);
        assert!(
            (a - b).abs() <= 1e-7 * ru,
            "n = 2, r0 {r0:.3e} Δ {delta:.3e}: {a:.10e} vs {b:.10e}"
        );
    }
}
