//! The generalized-α step shared by the monolithic and partitioned schemes.

use crate::assembly::{Coupling, Partition};
use crate::physical::ProviderError;
use nalgebra::{DMatrix, DVector, Dyn, LU};

/// Generalized-α parameters from ρ∞ (seed 000 eq 7; ALGORITHMS.md A1):
/// `α_m = (3 − ρ∞)/(2(1 + ρ∞))`, `α_f = 1/(1 + ρ∞)`, `γ = 1/2 + α_m − α_f`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlphaParameters {
    /// Spectral radius at infinity.
    pub rho_inf: f64,
    /// α_m.
    pub alpha_m: f64,
    /// α_f.
    pub alpha_f: f64,
    /// γ.
    pub gamma: f64,
}

impl AlphaParameters {
    /// Parameters for `rho_inf ∈ [0, 1]`.
    pub fn new(rho_inf: f64) -> Self {
        let alpha_m = (3.0 - rho_inf) / (2.0 * (1.0 + rho_inf));
        let alpha_f = 1.0 / (1.0 + rho_inf);
        Self {
            rho_inf,
            alpha_m,
            alpha_f,
            gamma: 0.5 + alpha_m - alpha_f,
        }
    }

    /// `c = γ Δt α_f/α_m`, the factor of `Ẏ_{n+1}` in `Y_{n+1}` (eq 13a).
    pub fn c(&self, dt: f64) -> f64 {
        self.gamma * dt * self.alpha_f / self.alpha_m
    }

    /// Spurious root `(α_m − 1)/α_m` of the amplification matrix as Ω → 0.
    pub fn spurious_root(&self) -> f64 {
        (self.alpha_m - 1.0) / self.alpha_m
    }

    /// `𝕄` and `ℕ` of the linear step `𝕄 𝕐_{n+1} + ℕ 𝕐_n = 𝔽_{n+1}` (seed 000 eq 16) for
    /// `𝕐 = [Y; Ẏ; V]`, with `J0` in place of `K`.
    pub fn step_matrices(
        &self,
        j0: &DMatrix<f64>,
        m: &DMatrix<f64>,
        dt: f64,
    ) -> (DMatrix<f64>, DMatrix<f64>) {
        let n = m.nrows();
        let i = DMatrix::<f64>::identity(n, n);
        let mut mm = DMatrix::zeros(3 * n, 3 * n);
        let mut nn = DMatrix::zeros(3 * n, 3 * n);
        mm.view_mut((0, 0), (n, n)).copy_from(j0);
        mm.view_mut((0, n), (n, n)).copy_from(m);
        mm.view_mut((n, 0), (n, n)).copy_from(&i);
        mm.view_mut((n, 2 * n), (n, n))
            .copy_from(&(&i * (-self.gamma * dt)));
        mm.view_mut((2 * n, n), (n, n))
            .copy_from(&(&i * (-self.alpha_f)));
        mm.view_mut((2 * n, 2 * n), (n, n))
            .copy_from(&(&i * self.alpha_m));
        nn.view_mut((n, 0), (n, n)).copy_from(&(-&i));
        nn.view_mut((n, 2 * n), (n, n))
            .copy_from(&(&i * (-dt * (1.0 - self.gamma))));
        nn.view_mut((2 * n, n), (n, n))
            .copy_from(&(&i * (-(1.0 - self.alpha_f))));
        nn.view_mut((2 * n, 2 * n), (n, n))
            .copy_from(&(&i * (1.0 - self.alpha_m)));
        (mm, nn)
    }
}

/// Algorithmic state of one partition: `Y`, `Ẏ` and the filtered rate `V`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlphaState {
    /// `Y = [u; v; s]`.
    pub y: DVector<f64>,
    /// `Ẏ`.
    pub ydot: DVector<f64>,
    /// `V` (seed 000 eq 10b).
    pub v: DVector<f64>,
}

impl AlphaState {
    /// Zero state of size `n`.
    pub fn zeros(n: usize) -> Self {
        Self {
            y: DVector::zeros(n),
            ydot: DVector::zeros(n),
            v: DVector::zeros(n),
        }
    }

    /// Copy another state into this one (no allocation).
    pub fn assign(&mut self, other: &AlphaState) {
        self.y.copy_from(&other.y);
        self.ydot.copy_from(&other.ydot);
        self.v.copy_from(&other.v);
    }

    /// Flat length `3N`.
    pub fn flat_len(&self) -> usize {
        3 * self.y.len()
    }

    /// Write `[Y; Ẏ; V]`.
    pub fn export(&self, out: &mut [f64]) {
        let n = self.y.len();
        out[..n].copy_from_slice(self.y.as_slice());
        out[n..2 * n].copy_from_slice(self.ydot.as_slice());
        out[2 * n..3 * n].copy_from_slice(self.v.as_slice());
    }

    /// Read `[Y; Ẏ; V]`.
    pub fn import(&mut self, x: &[f64]) {
        let n = self.y.len();
        self.y.copy_from_slice(&x[..n]);
        self.ydot.copy_from_slice(&x[n..2 * n]);
        self.v.copy_from_slice(&x[2 * n..3 * n]);
    }
}

/// One generalized-α step of a partition over preallocated workspaces, with
/// `D = M + c J0` factorized once (seed 000 eqs 11–13; ALGORITHMS.md A1):
///
/// `Ỹ = Y_n + Ẏ_n γΔt(1−α_f)/α_m + V_n Δt(α_m−γ)/α_m`,
/// `Ṽ = Ẏ_n(1−α_f)/α_m − V_n(1−α_m)/α_m`,
/// `Ẏ_{n+1} = D⁻¹(F_{n+1} − R(Ỹ) + L Λ w)`, `Y_{n+1} = Ỹ + c Ẏ_{n+1}`,
/// `V_{n+1} = Ṽ + (α_f/α_m) Ẏ_{n+1}`.
///
/// With `corrections = k > 1` (numerical partitions only), `k − 1` further fixed-`D`
/// corrections `Ẏ ← Ẏ + D⁻¹(F + LΛw − M Ẏ − R(Ỹ + cẎ))` restore second order on nonlinear
/// problems (ALGORITHMS.md E38).
#[derive(Debug, Clone)]
pub struct AlphaStepper {
    /// Parameters.
    pub params: AlphaParameters,
    /// Step size of this partition.
    pub dt: f64,
    /// `c = γΔt α_f/α_m`.
    pub c: f64,
    /// Corrections per step (≥ 1).
    pub corrections: usize,
    d_lu: LU<f64, Dyn, Dyn>,
    y_tilde: DVector<f64>,
    v_tilde: DVector<f64>,
    load: DVector<f64>,
    res: DVector<f64>,
    rhs: DVector<f64>,
    tmp: DVector<f64>,
    y_iter: DVector<f64>,
}

impl AlphaStepper {
    /// Factorize `D = M + c J0` of `part` for step `dt`.
    pub fn new(
        part: &Partition,
        params: AlphaParameters,
        dt: f64,
        corrections: usize,
    ) -> Result<Self, String> {
        let st = &part.state;
        let c = params.c(dt);
        let d = st.big_mass() + &st.j0 * c;
        let d_lu = d.lu();
        if !d_lu.is_invertible() {
            return Err(format!(
                "substructure `{}`: D = M + c·J0 is singular for Δt = {dt}",
                st.name
            ));
        }
        let n = st.size();
        if part.provider.is_some() && corrections > 1 {
            return Err(format!(
                "substructure `{}` is physical: it cannot be corrected (a specimen cannot be reverted)",
                st.name
            ));
        }
        Ok(Self {
            params,
            dt,
            c,
            corrections: corrections.max(1),
            d_lu,
            y_tilde: DVector::zeros(n),
            v_tilde: DVector::zeros(n),
            load: DVector::zeros(n),
            res: DVector::zeros(n),
            rhs: DVector::zeros(n),
            tmp: DVector::zeros(n),
            y_iter: DVector::zeros(n),
        })
    }

    /// Solve `D x = b` in place.
    pub fn solve_d(&self, x: &mut DVector<f64>) {
        self.d_lu.solve_mut(x);
    }

    /// Step `from` (at `t_next − dt`) to `to` (at `t_next`). `coupling` adds `w L Λ` to the
    /// momentum rows. The provider of a physical partition is commanded once, at `Ỹ`.
    pub fn step(
        &mut self,
        part: &mut Partition,
        from: &AlphaState,
        t_next: f64,
        coupling: Option<(&[Coupling], &DVector<f64>, f64)>,
        to: &mut AlphaState,
    ) -> Result<(), ProviderError> {
        let p = self.params;
        let dt = self.dt;
        let am = p.alpha_m;
        let af = p.alpha_f;
        let g = p.gamma;
        let n = part.state.n_dofs();
        // Predictor (eq 11).
        self.y_tilde.copy_from(&from.y);
        self.y_tilde.axpy(g * dt * (1.0 - af) / am, &from.ydot, 1.0);
        self.y_tilde.axpy(dt * (am - g) / am, &from.v, 1.0);
        self.v_tilde.copy_from(&from.ydot);
        self.v_tilde.scale_mut((1.0 - af) / am);
        self.v_tilde.axpy(-(1.0 - am) / am, &from.v, 1.0);
        // Rate (eq 12).
        part.state.load(t_next, self.load.as_mut_slice());
        if let Some((cs, lambda, w)) = coupling {
            if w != 0.0 {
                for c in cs {
                    self.load[n + c.row] += w * c.sign * lambda[c.lambda];
                }
            }
        }
        part.residual(t_next, self.y_tilde.as_slice(), self.res.as_mut_slice())?;
        self.rhs.copy_from(&self.load);
        self.rhs -= &self.res;
        self.d_lu.solve_mut(&mut self.rhs);
        to.ydot.copy_from(&self.rhs);
        // Further fixed-D corrections (numerical partitions only).
        for _ in 1..self.corrections {
            self.y_iter.copy_from(&self.y_tilde);
            self.y_iter.axpy(self.c, &to.ydot, 1.0);
            part.state.residual(
                self.y_iter.as_slice(),
                self.res.as_mut_slice(),
                &mut part.ws,
            );
            part.state
                .mass_times(to.ydot.as_slice(), self.tmp.as_mut_slice());
            self.rhs.copy_from(&self.load);
            self.rhs -= &self.res;
            self.rhs -= &self.tmp;
            self.d_lu.solve_mut(&mut self.rhs);
            to.ydot += &self.rhs;
        }
        // Corrector (eq 13).
        to.y.copy_from(&self.y_tilde);
        to.y.axpy(self.c, &to.ydot, 1.0);
        to.v.copy_from(&self.v_tilde);
        to.v.axpy(af / am, &to.ydot, 1.0);
        Ok(())
    }
}
