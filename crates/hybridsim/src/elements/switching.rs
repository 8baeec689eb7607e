//! Switching functions of the spring-slider models (Abbiati et al. 2019, eq 41; 2020, eq 19) and
//! helpers shared by the hysteretic elements.
//!
//! Eq 41 of Abbiati et al. (2019) defines `N(w) = 0.5(1 + sgn w)(1 + (1 − sgn w))`, a Heaviside
//! step with `N(0) = 1` *provided* `sgn(0) = 0` (MATLAB). Rust's `f64::signum` returns ±1 for ±0.0,
//! so a literal port gives `N(−0.0) = 0` (ALGORITHMS.md E1). Everything here decides on the value
//! part of the scalar and never calls `signum`.

use super::Scalar;

/// Sign with `sgn(0) = sgn(−0.0) = 0` (MATLAB convention; E1, E5).
#[inline]
pub fn sgn(w: f64) -> f64 {
    if w > 0.0 {
        1.0
    } else if w < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// `N(w)` of Abbiati et al. (2019), eq 41: 1 for `w ≥ 0` (including −0.0), 0 otherwise.
#[inline]
pub fn n_fn(w: f64) -> f64 {
    if w >= 0.0 {
        1.0
    } else {
        0.0
    }
}

/// `M(w) = 1 − N(w)`: 1 for `w < 0`.
#[inline]
pub fn m_fn(w: f64) -> f64 {
    1.0 - n_fn(w)
}

/// `N̄(w) = M(−w)`: 1 for `w > 0`.
#[inline]
pub fn n_bar(w: f64) -> f64 {
    m_fn(-w)
}

/// `M̄(w) = N(−w)`: 1 for `w ≤ 0`.
#[inline]
pub fn m_bar(w: f64) -> f64 {
    n_fn(-w)
}

/// The elastic indicator of a spring-slider branch, `N̄(v) M̄(s − δ) + M(v) N(s + δ)`
/// (Abbiati et al. 2019, eq 39b; 2020, eq 17): 1 while the slider sticks (`v > 0 ∧ s ≤ δ` or
/// `v < 0 ∧ s ≥ −δ`), 0 while it slips — and 0 at `v = 0` exactly, which is why automatic
/// differentiation at rest returns the post-slip stiffness (E3). The bound is widened by
/// [`SWITCH_TOLERANCE`]`·δ`, so a state put back on the bound by a return mapping counts as on it
/// despite rounding.
#[inline]
pub fn stick(v: f64, s: f64, delta: f64) -> f64 {
    let d = delta * (1.0 + SWITCH_TOLERANCE);
    n_bar(v) * m_bar(s - d) + m_fn(v) * n_fn(s + d)
}

/// Relative widening of slider bounds in [`stick`] (rounding only; 1e-12).
pub const SWITCH_TOLERANCE: f64 = 1e-12;

/// Value part of a scalar.
#[inline]
pub fn re<T: Scalar>(x: T) -> f64 {
    x.re()
}

/// `|x|` for a generic scalar, with derivative `sgn(x)·ẋ` (zero derivative at `x = 0`).
#[inline]
pub fn abs<T: Scalar>(x: T) -> T {
    if x.re() < 0.0 {
        -x
    } else if x.re() > 0.0 {
        x
    } else {
        x * 0.0
    }
}

/// `|x|^n` for a generic scalar; `0` (with zero derivative) at `x = 0`, so `n < 1` does not
/// produce `0 · ∞`.
#[inline]
pub fn abs_pow<T: Scalar>(x: T, n: f64) -> T {
    if x.re() == 0.0 {
        x * 0.0
    } else if n == 1.0 {
        abs(x)
    } else {
        abs(x).powf(n)
    }
}

/// Deformation `u1 − u2` of a two-node element, or `u1` for a node-to-ground one.
#[inline]
pub fn deformation<T: Scalar>(u: &[T]) -> T {
    if u.len() == 2 {
        u[0] - u[1]
    } else {
        u[0]
    }
}

/// Write the resisting forces `[f, −f]` (two nodes) or `[f]` (to ground).
#[inline]
pub fn scatter_force<T: Scalar>(r: &mut [T], f: T) {
    r[0] = f;
    if r.len() == 2 {
        r[1] = -f;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_functions_follow_eq_41_with_sgn_0_equal_0() {
        assert_eq!(sgn(-0.0), 0.0);
        assert_eq!(sgn(0.0), 0.0);
        assert_eq!(n_fn(-0.0), 1.0);
        assert_eq!([n_fn(-1.0), n_fn(0.0), n_fn(1.0)], [0.0, 1.0, 1.0]);
        assert_eq!([m_fn(-1.0), m_fn(0.0), m_fn(1.0)], [1.0, 0.0, 0.0]);
        assert_eq!([n_bar(-1.0), n_bar(0.0), n_bar(1.0)], [0.0, 0.0, 1.0]);
        assert_eq!([m_bar(-1.0), m_bar(0.0), m_bar(1.0)], [1.0, 1.0, 0.0]);
        // Literal eq 41 with sgn(0) = 0 agrees everywhere.
        for w in [-2.0, -0.0, 0.0, 3.0] {
            let lit = 0.5 * (1.0 + sgn(w)) * (1.0 + (1.0 - sgn(w)));
            assert_eq!(lit, n_fn(w), "w = {w}");
        }
        assert_eq!(stick(1.0, 0.5, 1.0), 1.0);
        assert_eq!(stick(1.0, 1.0, 1.0), 1.0);
        assert_eq!(stick(1.0, 1.0 + 1e-9, 1.0), 0.0);
        assert_eq!(stick(-1.0, 1.5, 1.0), 1.0);
        assert_eq!(stick(-1.0, -1.0 - 1e-9, 1.0), 0.0);
        assert_eq!(stick(1.0, 1.0 + 1e-16, 1.0), 1.0);
        assert_eq!(stick(0.0, 0.0, 1.0), 0.0);
        assert_eq!(stick(-0.0, 0.0, 1.0), 0.0);
    }
}
