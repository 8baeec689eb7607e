//! Modal analysis of the linearized coupled model: periods, damping ratios, Rayleigh damping.

use nalgebra::{DMatrix, DVector};

/// Undamped modes of `K φ = ω² M φ`, ascending.
#[derive(Debug, Clone)]
pub struct Modes {
    /// Circular frequencies (rad/time), ascending.
    pub omega: Vec<f64>,
    /// Mass-normalized mode shapes (columns).
    pub shapes: DMatrix<f64>,
}

/// Solve the generalized symmetric eigenproblem by Cholesky reduction `M = L Lᵀ`,
/// `L⁻¹ K L⁻ᵀ ψ = ω² ψ`, `φ = L⁻ᵀ ψ`.
pub fn modes(m: &DMatrix<f64>, k: &DMatrix<f64>) -> Result<Modes, String> {
    let n = m.nrows();
    if n == 0 {
        return Err("the model has no free DOF".into());
    }
    let chol = m
        .clone()
        .cholesky()
        .ok_or("the mass matrix is not positive definite")?;
    let l = chol.l();
    let l_inv = l
        .clone()
        .try_inverse()
        .ok_or("the mass matrix is singular")?;
    let ksym = &l_inv * k * l_inv.transpose();
    let ksym = (&ksym + ksym.transpose()) * 0.5;
    let eig = nalgebra::SymmetricEigen::new(ksym);
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|a, b| eig.eigenvalues[*a].total_cmp(&eig.eigenvalues[*b]));
    let omega = idx
        .iter()
        .map(|i| eig.eigenvalues[*i].max(0.0).sqrt())
        .collect();
    let psi = DMatrix::from_fn(n, n, |r, c| eig.eigenvectors[(r, idx[c])]);
    let shapes = l_inv.transpose() * psi;
    Ok(Modes { omega, shapes })
}

/// Modal damping ratio `ζ_i = φ_iᵀ C φ_i / (2 ω_i)` of mass-normalized modes (exact for
/// classically damped models, the diagonal approximation otherwise).
pub fn damping_ratios(modes: &Modes, c: &DMatrix<f64>) -> Vec<f64> {
    (0..modes.omega.len())
        .map(|i| {
            let phi: DVector<f64> = modes.shapes.column(i).clone_owned();
            let w = modes.omega[i];
            if w > 0.0 {
                (phi.transpose() * c * &phi)[(0, 0)] / (2.0 * w)
            } else {
                f64::NAN
            }
        })
        .collect()
}
