//! Discretization of a continuous linear system `ẋ = A x + B u`, `y = C x + D u` (one input,
//! `p` outputs) at the controller tick Δt^C: zero-order hold, first-order (triangle) hold and
//! the bilinear (Tustin) transform, optionally prewarped.
//!
//! Every result is written as a causal discrete system `ξ_{k+1} = Φ ξ_k + Γ u_k`,
//! `y_k = C_d ξ_k + D_d u_k` so that one step needs only the current input:
//!
//! - ZOH: `exp([[A, B], [0, 0]] Δt) = [[Φ, Γ], [0, 1]]`, `C_d = C`, `D_d = D`, exact at the
//!   samples for an input held over each tick.
//! - FOH (Franklin, Powell & Workman 1998, triangle hold): with the input linear between samples,
//!   `exp([[A, B, 0], [0, 0, 1/Δt], [0, 0, 0]] Δt) = [[Φ, Γ₁, Γ₂], [0, 1, 1], [0, 0, 1]]` gives
//!   `x_{k+1} = Φ x_k + Γ₁ u_k + Γ₂ (u_{k+1} − u_k)`; the state `ξ_k = x_k − Γ₂ u_k` makes it causal:
//!   `Γ = Γ₁ + Φ Γ₂ − Γ₂`, `C_d = C`, `D_d = D + C Γ₂`. Exact for a piecewise-linear input.
//! - Tustin: `s = α (z − 1)/(z + 1)`, `α = 2/Δt`, or `α = ω₀ / tan(ω₀ Δt/2)` prewarped at ω₀
//!   (exact response at ω₀). With `Q = (α I − A)⁻¹`: `Φ = Q (α I + A)`, and the state
//!   `ξ_k = x_k − Q B u_k` gives `Γ = (Φ + I) Q B`, `C_d = C`, `D_d = D + C Q B`.

use crate::model::lab::Discretization;
use nalgebra::{DMatrix, DVector};

/// A discrete system `ξ_{k+1} = Φ ξ_k + Γ u_k`, `y_k = C ξ_k + D u_k`.
#[derive(Debug, Clone, PartialEq)]
pub struct Discrete {
    /// Φ (n × n).
    pub phi: DMatrix<f64>,
    /// Γ (n).
    pub gamma: DVector<f64>,
    /// C (p × n).
    pub c: DMatrix<f64>,
    /// D (p).
    pub d: DVector<f64>,
}

/// A continuous system `(A, B, C, D)`: A n × n, B n, C p × n, D p.
pub type Continuous = (DMatrix<f64>, DVector<f64>, DMatrix<f64>, DVector<f64>);

/// Matrix exponential (nalgebra's scaling and squaring with Padé approximants), refusing a
/// non-finite result.
pub fn expm(m: &DMatrix<f64>) -> Result<DMatrix<f64>, String> {
    if m.iter().any(|x| !x.is_finite()) {
        return Err("the matrix has a non-finite entry".into());
    }
    let e = m.clone().exp();
    if e.iter().all(|x| x.is_finite()) {
        Ok(e)
    } else {
        Err("the matrix exponential overflows".into())
    }
}

/// Discretize `(A, B, C, D)` (A n × n, B n, C p × n, D p) at step `dt` (s).
pub fn discretize(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    c: &DMatrix<f64>,
    d: &DVector<f64>,
    dt: f64,
    how: Discretization,
) -> Result<Discrete, String> {
    let n = a.nrows();
    if n == 0 {
        return Ok(Discrete {
            phi: a.clone(),
            gamma: b.clone(),
            c: c.clone(),
            d: d.clone(),
        });
    }
    if !(dt.is_finite() && dt > 0.0) {
        return Err(format!("the controller tick must be positive, found {dt}"));
    }
    let out = match how {
        Discretization::Zoh => {
            let mut m = DMatrix::zeros(n + 1, n + 1);
            m.view_mut((0, 0), (n, n)).copy_from(&(a * dt));
            m.view_mut((0, n), (n, 1)).copy_from(&(b * dt));
            let e = expm(&m)?;
            Discrete {
                phi: e.view((0, 0), (n, n)).into_owned(),
                gamma: e.view((0, n), (n, 1)).column(0).into_owned(),
                c: c.clone(),
                d: d.clone(),
            }
        }
        Discretization::Foh => {
            let mut m = DMatrix::zeros(n + 2, n + 2);
            m.view_mut((0, 0), (n, n)).copy_from(&(a * dt));
            m.view_mut((0, n), (n, 1)).copy_from(&(b * dt));
            // (1/Δt)·Δt: the input's slope block.
            m[(n, n + 1)] = 1.0;
            let e = expm(&m)?;
            let phi = e.view((0, 0), (n, n)).into_owned();
            let g1 = e.view((0, n), (n, 1)).column(0).into_owned();
            let g2 = e.view((0, n + 1), (n, 1)).column(0).into_owned();
            let gamma = &g1 + &phi * &g2 - &g2;
            let d = d + c * &g2;
            Discrete {
                phi,
                gamma,
                c: c.clone(),
                d,
            }
        }
        Discretization::Tustin { prewarp_hz } => {
            let alpha = match prewarp_hz {
                None => 2.0 / dt,
                Some(f) => {
                    let w = 2.0 * std::f64::consts::PI * f;
                    let half = w * dt / 2.0;
                    if !(f.is_finite() && f > 0.0 && half < std::f64::consts::FRAC_PI_2) {
                        return Err(format!(
                            "the prewarp frequency {f} Hz must be positive and below the \
                             Nyquist frequency {} Hz of the controller tick",
                            0.5 / dt
                        ));
                    }
                    w / half.tan()
                }
            };
            let eye = DMatrix::<f64>::identity(n, n);
            let q = (&eye * alpha - a)
                .try_inverse()
                .ok_or_else(|| format!("α I − A is singular (α = {alpha})"))?;
            let phi = &q * (&eye * alpha + a);
            let qb = &q * b;
            let gamma = (&phi + &eye) * &qb;
            let d = d + c * &qb;
            Discrete {
                phi,
                gamma,
                c: c.clone(),
                d,
            }
        }
    };
    if out
        .phi
        .iter()
        .chain(out.gamma.iter())
        .chain(out.d.iter())
        .all(|x| x.is_finite())
    {
        Ok(out)
    } else {
        Err("the discretized system is not finite".into())
    }
}

/// Strip leading zero coefficients (highest power first); an all-zero list becomes `[0]`.
pub fn strip(p: &[f64]) -> Vec<f64> {
    match p.iter().position(|c| *c != 0.0) {
        Some(k) => p[k..].to_vec(),
        None => vec![0.0],
    }
}

/// Controllable canonical realization `(A, B, C, D)` of a proper `num(s)/den(s)` (coefficients
/// highest power first, `den` with a non-zero leading coefficient).
pub fn tf_to_ss(num: &[f64], den: &[f64]) -> Result<Continuous, String> {
    let den = strip(den);
    let num = strip(num);
    if den[0] == 0.0 {
        return Err("the denominator is zero".into());
    }
    if num.len() > den.len() {
        return Err(format!(
            "the transfer function must be proper: numerator degree {} > denominator degree {}",
            num.len() - 1,
            den.len() - 1
        ));
    }
    let n = den.len() - 1;
    let a0 = den[0];
    let a: Vec<f64> = den.iter().map(|x| x / a0).collect();
    // Numerator padded to degree n.
    let mut b = vec![0.0; n + 1 - num.len()];
    b.extend(num.iter().map(|x| x / a0));
    let mut am = DMatrix::zeros(n, n);
    for j in 0..n {
        am[(0, j)] = -a[j + 1];
    }
    for i in 1..n {
        am[(i, i - 1)] = 1.0;
    }
    let mut bm = DVector::zeros(n);
    if n > 0 {
        bm[0] = 1.0;
    }
    let mut cm = DMatrix::zeros(1, n);
    for j in 0..n {
        cm[(0, j)] = b[j + 1] - b[0] * a[j + 1];
    }
    Ok((am, bm, cm, DVector::from_element(1, b[0])))
}
