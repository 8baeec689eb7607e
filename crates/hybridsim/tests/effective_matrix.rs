//! The generalized-α solve through the effective matrix `m + c C + c² K` (the Schur complement
//! of the displacement rows of `D = M + c J0`, Abbiati et al. 2019, eq 12) against the
//! factorization of the whole `D` over `[u; v]`, on a 2D moment frame and a shear chain as
//! the library assembles them (issue 20).
mod common;
use common::*;
use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::linalg::{FactoredMatrix, StateMatrixFactors};

/// A seeded linear congruential sequence in [-1, 1).
fn lcg(seed: &mut u64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// A shear chain of `n` storeys with Rayleigh damping.
fn chain(n: usize) -> String {
    let mut t = String::from("title = \"chain\"\n");
    for i in 1..=n {
        t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
    }
    for i in 1..=n {
        let nodes = if i == 1 {
            "[1]".to_string()
        } else {
            format!("[{}, {i}]", i - 1)
        };
        t += &format!(
            "[[element]]\ntype = \"spring\"\nname = \"k{i}\"\nnodes = {nodes}\ndof = \"x\"\n\
             k = 4.0e4\n[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n"
        );
    }
    t += "[damping]\nalpha = 0.05\nbeta = 0.001\n";
    t += "[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\n";
    t
}

/// Solve `D x = b` for `D = M + c J0` of the model's partition through the effective matrix
/// and through the whole `D`, for several `c` and right-hand sides: the two agree to
/// round-off and the effective solve's residual is at round-off. Returns the factor entries
/// `(effective, whole)` at the last `c`.
fn agree(text: &str, what: &str) -> (usize, usize) {
    agree_with(text, what, true)
}

/// [`agree`], with `symmetric` telling whether the effective matrix must be found symmetric
/// positive definite (factored as `L D Lᵀ`) or not (the band LU).
fn agree_with(text: &str, what: &str, symmetric: bool) -> (usize, usize) {
    let st = build_partitions(&model(text), Grouping::Monolithic)
        .expect("builds")
        .remove(0)
        .state;
    let (size, n) = (st.size(), st.n_dofs());
    let mut seed = 2026u64;
    let mut stored = (0, 0);
    let mut worst: f64 = 0.0;
    for c in [1.0e-3 / 3.0, 2.5e-3, 1.0e-2] {
        let d = st.d_entries(c);
        let whole = FactoredMatrix::from_entries(size, &d).expect("invertible");
        let effective = StateMatrixFactors::from_entries(size, n, &d).expect("invertible");
        assert!(
            effective.is_reduced(),
            "{what}: the effective path is taken"
        );
        assert_eq!(
            effective.is_symmetric(),
            symmetric,
            "{what}: L D Lᵀ exactly where the effective matrix is symmetric positive definite"
        );
        stored = (effective.stored(), whole.stored());
        let d_abs = d.iter().map(|e| e.2.abs()).fold(0.0, f64::max);
        for _ in 0..3 {
            let b: Vec<f64> = (0..size).map(|_| lcg(&mut seed)).collect();
            let (mut x, mut y) = (b.clone(), b.clone());
            effective.solve(&mut x);
            whole.solve(&mut y);
            let scale = y.iter().map(|v| v.abs()).fold(0.0, f64::max);
            let diff = x
                .iter()
                .zip(&y)
                .map(|(a, e)| (a - e).abs())
                .fold(0.0, f64::max);
            // Both are backward stable: they differ by the condition of D times ε (D of the
            // frame at c = 1e-2 has κ ≈ 1e3–1e4), and the effective solve's residual is as
            // small as the whole factorization's.
            assert!(
                diff <= 1e-10 * scale,
                "{what}, c = {c}: effective vs whole differ by {diff:e} (scale {scale:e})"
            );
            let residual = |x: &[f64]| {
                let mut r = b.clone();
                for &(i, j, v) in &d {
                    r[i] -= v * x[j];
                }
                r.iter().map(|v| v.abs()).fold(0.0, f64::max)
            };
            let (re, rw) = (residual(&x), residual(&y));
            worst = worst.max(diff / scale);
            assert!(
                re <= 4.0 * rw + 1e-15 * d_abs * scale,
                "{what}, c = {c}: residual {re:e} against {rw:e} of the whole D"
            );
        }
    }
    println!("{what}: effective vs whole D, largest relative difference {worst:.2e}");
    stored
}

/// On a 2D moment frame (12 storeys × 4 bays, 180 DOFs) the effective matrix agrees with the
/// whole `D` to round-off and holds fewer factor entries (the stiffness band instead of the
/// band of `[u; v]` widened by pivoting).
#[test]
fn the_effective_matrix_agrees_with_the_whole_state_matrix_on_a_frame() {
    let (effective, whole) = agree(&frame(12, 4), "frame");
    assert!(
        effective < whole,
        "effective path {effective} entries, whole D {whole}"
    );
}

/// The same on a shear chain of 300 storeys with Rayleigh damping.
#[test]
fn the_effective_matrix_agrees_with_the_whole_state_matrix_on_a_chain() {
    agree(&chain(300), "chain");
}

/// With a Bouc-Wen storey the effective matrix holds the rows of its extra state (`ṡ` depends
/// on `v`, `r` on `s`: not symmetric), so it keeps the band LU, and still agrees with the whole
/// `D` to round-off.
#[test]
fn an_unsymmetric_effective_matrix_keeps_the_band_lu() {
    let text = chain(40).replacen(
        "type = \"spring\"\nname = \"k7\"\nnodes = [6, 7]\ndof = \"x\"\nk = 4.0e4\n",
        "type = \"bouc_wen\"\nname = \"k7\"\nnodes = [6, 7]\ndof = \"x\"\nA = 4.0e4\n\
         beta = 3.5\ngamma = 60.0\nn = 1.0\n",
        1,
    );
    assert!(text.contains("bouc_wen"));
    agree_with(&text, "chain with a Bouc-Wen storey", false);
}

/// A matrix whose displacement rows are not `u̇ − a v̇ = b` (here a stiffness term in a
/// displacement row) is factored whole, and still solved.
#[test]
fn a_matrix_without_the_displacement_rows_is_factored_whole() {
    let st = build_partitions(&model(&chain(20)), Grouping::Monolithic)
        .expect("builds")
        .remove(0)
        .state;
    let (size, n) = (st.size(), st.n_dofs());
    let mut d = st.d_entries(1.0e-3);
    d.push((3, 7, 0.25));
    d.sort_by_key(|e| (e.0, e.1));
    let f = StateMatrixFactors::from_entries(size, n, &d).expect("invertible");
    assert!(!f.is_reduced());
    let b: Vec<f64> = (0..size).map(|i| (i as f64).sin()).collect();
    let mut x = b.clone();
    f.solve(&mut x);
    let mut r = b.clone();
    for &(i, j, v) in &d {
        r[i] -= v * x[j];
    }
    assert!(r.iter().all(|v| v.abs() < 1e-9), "residual {r:?}");
}
