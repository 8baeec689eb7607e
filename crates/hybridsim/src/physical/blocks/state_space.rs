//! A discretized linear block with one input and one or more outputs (the first is the one
//! passed down a chain).

use super::discretize::{discretize, tf_to_ss, Discrete};
use super::Block;
use crate::model::lab::Discretization;
use nalgebra::{DMatrix, DVector};

/// Discrete state space `ξ_{k+1} = Φ ξ_k + Γ u_k`, `y_k = C ξ_k + D u_k`; every buffer is
/// allocated at construction, a step allocates nothing.
#[derive(Debug, Clone)]
pub struct StateSpace {
    n: usize,
    p: usize,
    /// Φ row-major.
    phi: Vec<f64>,
    gamma: Vec<f64>,
    /// C row-major (p × n).
    c: Vec<f64>,
    d: Vec<f64>,
    x: Vec<f64>,
    next: Vec<f64>,
    y: Vec<f64>,
    /// Steady state per unit input `(I − Φ)⁻¹ Γ` (zeros when I − Φ is singular).
    steady: Vec<f64>,
    /// DC gain of every output (NaN when I − Φ is singular).
    dc: Vec<f64>,
}

impl StateSpace {
    /// Discretize the continuous `(A, B, C, D)` at step `dt` (s).
    pub fn new(
        a: &DMatrix<f64>,
        b: &DVector<f64>,
        c: &DMatrix<f64>,
        d: &DVector<f64>,
        dt: f64,
        how: Discretization,
    ) -> Result<Self, String> {
        let n = a.nrows();
        if a.ncols() != n || b.len() != n || c.ncols() != n || d.len() != c.nrows() {
            return Err(format!(
                "inconsistent sizes: A {}×{}, B {}, C {}×{}, D {}",
                a.nrows(),
                a.ncols(),
                b.len(),
                c.nrows(),
                c.ncols(),
                d.len()
            ));
        }
        Ok(Self::from_discrete(discretize(a, b, c, d, dt, how)?))
    }

    /// `num(s)/den(s)` (highest power first, proper) through its controllable canonical
    /// realization, discretized at `dt`.
    pub fn transfer_function(
        num: &[f64],
        den: &[f64],
        dt: f64,
        how: Discretization,
    ) -> Result<Self, String> {
        let (a, b, c, d) = tf_to_ss(num, den)?;
        Self::new(&a, &b, &c, &d, dt, how)
    }

    /// From an already discrete system.
    pub fn from_discrete(s: Discrete) -> Self {
        let n = s.phi.nrows();
        let p = s.c.nrows();
        let row_major = |m: &DMatrix<f64>| -> Vec<f64> {
            let mut v = Vec::with_capacity(m.len());
            for i in 0..m.nrows() {
                for j in 0..m.ncols() {
                    v.push(m[(i, j)]);
                }
            }
            v
        };
        let eye = DMatrix::<f64>::identity(n, n);
        // A static gain (no state: `num/den` of equal degree 0) has the empty steady state; the
        // LU of an empty matrix is not asked for.
        let steady = if n == 0 {
            Some(nalgebra::DVector::<f64>::zeros(0))
        } else {
            (&eye - &s.phi)
                .lu()
                .solve(&s.gamma)
                .filter(|x| x.iter().all(|v| v.is_finite()))
        };
        let dc: Vec<f64> = match &steady {
            Some(x) => (&s.c * x + &s.d).iter().copied().collect(),
            None => vec![f64::NAN; p],
        };
        Self {
            n,
            p,
            phi: row_major(&s.phi),
            gamma: s.gamma.iter().copied().collect(),
            c: row_major(&s.c),
            d: s.d.iter().copied().collect(),
            x: vec![0.0; n],
            next: vec![0.0; n],
            y: vec![0.0; p],
            steady: steady
                .map(|x| x.iter().copied().collect())
                .unwrap_or_else(|| vec![0.0; n]),
            dc,
        }
    }

    /// Every output of the last step (or of the last reset).
    pub fn outputs(&self) -> &[f64] {
        &self.y
    }

    /// Number of states.
    pub fn order(&self) -> usize {
        self.n
    }

    /// Discrete state matrix Φ (allocates; not for the real-time path).
    pub fn phi(&self) -> DMatrix<f64> {
        DMatrix::from_row_slice(self.n, self.n, &self.phi)
    }

    /// DC gain of output `i` (NaN when the discrete system has a pole at z = 1).
    pub fn dc_gain(&self, i: usize) -> f64 {
        self.dc.get(i).copied().unwrap_or(f64::NAN)
    }

    fn output(&mut self, u: f64) {
        for i in 0..self.p {
            let row = &self.c[i * self.n..(i + 1) * self.n];
            let mut y = self.d[i] * u;
            for (cj, xj) in row.iter().zip(&self.x) {
                y += cj * xj;
            }
            self.y[i] = y;
        }
    }
}

impl Block for StateSpace {
    fn step(&mut self, u: f64) -> f64 {
        self.output(u);
        for i in 0..self.n {
            let row = &self.phi[i * self.n..(i + 1) * self.n];
            let mut v = self.gamma[i] * u;
            for (pj, xj) in row.iter().zip(&self.x) {
                v += pj * xj;
            }
            self.next[i] = v;
        }
        std::mem::swap(&mut self.x, &mut self.next);
        self.y.first().copied().unwrap_or(0.0)
    }

    fn reset(&mut self, output: f64) -> f64 {
        let g = self.dc.first().copied().unwrap_or(f64::NAN);
        let u = if g.is_finite() && g.abs() > 1e-300 {
            output / g
        } else {
            0.0
        };
        for (x, s) in self.x.iter_mut().zip(&self.steady) {
            *x = s * u;
        }
        self.output(u);
        u
    }
}
