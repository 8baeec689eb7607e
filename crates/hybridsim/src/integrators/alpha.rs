//! The generalized-α step shared by the monolithic and partitioned schemes.

use crate::assembly::{Coupling, Partition, StateSpace};
use crate::physical::PortError;
use nalgebra::{DMatrix, DVector};

/// Generalized-α parameters from ρ∞ (Abbiati et al. 2019, eq 7; ALGORITHMS.md A1):
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

    /// `𝕄` and `ℕ` of the linear step `𝕄 𝕐_{n+1} + ℕ 𝕐_n = 𝔽_{n+1}` (Abbiati et al. 2019, eq 16)
    /// for `𝕐 = [Y; Ẏ; V]`, with `J0` in place of `K`.
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
    /// `V` (Abbiati et al. 2019, eq 10b).
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

    /// Start from `Y_0` of `state` with `Ẏ_0 = M⁻¹ rhs` (`rhs = F_0 − R(Y_0)`, plus `L Λ_0`
    /// for a coupled start) and `V_0 = Ẏ_0` (Abbiati et al. 2019, eqs 14, 24;
    /// ALGORITHMS.md A1, A2).
    pub fn start(&mut self, state: &StateSpace, rhs: &DVector<f64>) -> Result<(), String> {
        let ydot = state
            .big_mass()
            .lu()
            .solve(rhs)
            .ok_or_else(|| format!("substructure `{}`: singular mass matrix", state.name))?;
        self.y.copy_from(&state.y0);
        self.ydot.copy_from(&ydot);
        self.v.copy_from(&ydot);
        Ok(())
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

/// `D⁻¹` applied through an LU factorization with partial pivoting, stored in skyline form
/// (per column, the contiguous run of rows from the diagonal to the farthest nonzero entry),
/// allocation-free.
///
/// `D = M + c J0` (Abbiati et al. 2019, eq 12) of a structural model is sparse, but in the
/// `[u; v; s]` order partial pivoting fills the factors in completely (the `c K` rows outweigh the
/// identity rows of `u̇ = v`). The unknowns are therefore first renumbered symmetrically by reverse
/// Cuthill–McKee on the pattern of `D + Dᵀ` (a chain then becomes banded, and pivoting keeps the
/// factors within a band of about twice its width); the renumbering is kept only when its
/// skyline is smaller than that of the natural order.
///
/// [`FactoredMatrix::solve`] performs exactly the floating-point operations of nalgebra's
/// `LU::solve_mut` on the factors of the (renumbered) matrix — row swaps, the unit-lower
/// column sweep `x[i+1..] −= x[i] L[i+1.., i]`, then `x[i] /= U[i,i]`,
/// `x[..i] −= x[i] U[..i, i]` — in the same order, minus the terms outside the skyline, whose
/// factor entries are exact zeros. Without renumbering its results equal nalgebra's to the last
/// bit; with it, to round-off. The runs are contiguous, so the sweeps vectorize.
#[derive(Debug, Clone)]
pub(crate) struct FactoredMatrix {
    /// Swaps applied in order to `b` before the sweeps: the renumbering, then `P`.
    pre_swaps: Vec<(usize, usize)>,
    /// Swaps applied in order to the solution after the sweeps (the inverse renumbering).
    post_swaps: Vec<(usize, usize)>,
    /// `L` below the diagonal within the skyline, column by column: `(row, column, value)`.
    l_entries: Vec<(usize, usize, f64)>,
    /// Column `i` of `U` above the diagonal: rows `u_first[i] .. i` in
    /// `u_val[u_ptr[i]..u_ptr[i+1]]`.
    u_ptr: Vec<usize>,
    u_first: Vec<usize>,
    u_val: Vec<f64>,
    /// Diagonal of `U`.
    diag: Vec<f64>,
}

/// Swaps that, applied in order to a vector `b`, leave `b[gather[0]], b[gather[1]], …`.
fn gather_swaps(gather: &[usize]) -> Vec<(usize, usize)> {
    let n = gather.len();
    let mut at: Vec<usize> = (0..n).collect(); // at[p]: original entry now at position p
    let mut pos: Vec<usize> = (0..n).collect(); // pos[r]: position of original entry r
    let mut swaps = Vec::new();
    for (i, &g) in gather.iter().enumerate() {
        let j = pos[g];
        if j != i {
            swaps.push((i, j));
            let (ri, rj) = (at[i], at[j]);
            at.swap(i, j);
            pos[ri] = j;
            pos[rj] = i;
        }
    }
    swaps
}

/// Reverse Cuthill–McKee order (Cuthill & McKee 1969; reversed as in George 1971) of the
/// symmetric pattern of `d + dᵀ` (every connected
/// component from a vertex of minimum degree, neighbours by increasing degree).
fn reverse_cuthill_mckee(d: &DMatrix<f64>) -> Vec<usize> {
    let n = d.nrows();
    let adj: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            (0..n)
                .filter(|&j| j != i && (d[(i, j)] != 0.0 || d[(j, i)] != 0.0))
                .collect()
        })
        .collect();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let start = (0..n)
            .filter(|&i| !seen[i])
            .min_by_key(|&i| adj[i].len())
            .expect("an unvisited vertex");
        seen[start] = true;
        let mut head = order.len();
        order.push(start);
        while head < order.len() {
            let v = order[head];
            head += 1;
            let mut next: Vec<usize> = adj[v].iter().copied().filter(|&w| !seen[w]).collect();
            next.sort_by_key(|&w| (adj[w].len(), w));
            for w in next {
                seen[w] = true;
                order.push(w);
            }
        }
    }
    order.reverse();
    order
}

impl FactoredMatrix {
    /// The factors of a 0×0 matrix (a placeholder). Allocation-free.
    pub(crate) fn empty() -> Self {
        Self {
            pre_swaps: Vec::new(),
            post_swaps: Vec::new(),
            l_entries: Vec::new(),
            u_ptr: Vec::new(),
            u_first: Vec::new(),
            u_val: Vec::new(),
            diag: Vec::new(),
        }
    }
}

impl FactoredMatrix {
    /// Factorize `d`; `None` when it is singular.
    pub(crate) fn new(d: &DMatrix<f64>) -> Option<Self> {
        let natural = Self::with_order(d, None)?;
        let n = d.nrows();
        let order = reverse_cuthill_mckee(d);
        if order.iter().enumerate().all(|(i, &o)| i == o) {
            return Some(natural);
        }
        let permuted = DMatrix::from_fn(n, n, |i, j| d[(order[i], order[j])]);
        match Self::with_order(&permuted, Some(&order)) {
            Some(r) if r.stored() < natural.stored() => Some(r),
            _ => Some(natural),
        }
    }

    /// Stored factor entries (the cost of a solve).
    fn stored(&self) -> usize {
        self.l_entries.len() + self.u_val.len()
    }

    /// Factorize `d` (already renumbered by `order`, if any).
    fn with_order(d: &DMatrix<f64>, order: Option<&[usize]>) -> Option<Self> {
        let lu = d.clone().lu();
        if !lu.is_invertible() {
            return None;
        }
        let n = d.nrows();
        // The gather order of P (P b = b[perm]), realized by swaps.
        let mut idx = DVector::from_fn(n, |i, _| i as f64);
        lu.p().permute_rows(&mut idx);
        let perm: Vec<usize> = idx.iter().map(|x| *x as usize).collect();
        let (mut pre_swaps, mut post_swaps) = match order {
            Some(o) => {
                let q = gather_swaps(o);
                let post = q.iter().rev().copied().collect();
                (q, post)
            }
            None => (Vec::new(), Vec::new()),
        };
        pre_swaps.extend(gather_swaps(&perm));
        post_swaps.shrink_to_fit();
        let (l, u) = (lu.l(), lu.u());
        let mut f = Self {
            pre_swaps,
            post_swaps,
            l_entries: Vec::new(),
            u_ptr: vec![0],
            u_first: Vec::with_capacity(n),
            u_val: Vec::new(),
            diag: (0..n).map(|i| u[(i, i)]).collect(),
        };
        for i in 0..n {
            let l_end = (i + 1..n)
                .rev()
                .find(|&r| l[(r, i)] != 0.0)
                .map_or(i + 1, |r| r + 1);
            f.l_entries
                .extend((i + 1..l_end).map(|r| (r, i, l[(r, i)])));
            let u_first = (0..i).find(|&r| u[(r, i)] != 0.0).unwrap_or(i);
            f.u_first.push(u_first);
            f.u_val.extend((u_first..i).map(|r| u[(r, i)]));
            f.u_ptr.push(f.u_val.len());
        }
        Some(f)
    }

    /// Solve `D x = b` in place (`x` holds `b` on entry). Allocation-free.
    #[inline]
    pub(crate) fn solve(&self, x: &mut [f64]) {
        let n = self.diag.len();
        assert_eq!(x.len(), n, "FactoredMatrix::solve: dimension mismatch");
        for &(i, j) in &self.pre_swaps {
            x.swap(i, j);
        }
        // Lower sweep, column by column: the entries of column `i` only change rows > i, so
        // `x[i]` is final when they are applied.
        for &(r, i, l) in &self.l_entries {
            x[r] -= x[i] * l;
        }
        for i in (0..n).rev() {
            let c = x[i] / self.diag[i];
            x[i] = c;
            let col = &self.u_val[self.u_ptr[i]..self.u_ptr[i + 1]];
            let first = self.u_first[i];
            for (xr, u) in x[first..i].iter_mut().zip(col) {
                *xr -= c * u;
            }
        }
        for &(i, j) in &self.post_swaps {
            x.swap(i, j);
        }
    }
}

/// One generalized-α step of a partition over preallocated workspaces, with
/// `D = M + c J0` factorized once (Abbiati et al. 2019, eqs 11–13; ALGORITHMS.md A1):
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
    d_fact: FactoredMatrix,
    y_tilde: DVector<f64>,
    v_tilde: DVector<f64>,
    load: DVector<f64>,
    res: DVector<f64>,
    rhs: DVector<f64>,
    tmp: DVector<f64>,
    y_iter: DVector<f64>,
}

impl AlphaStepper {
    /// A stepper of a 0-size partition (a placeholder). Allocation-free.
    pub fn empty(params: AlphaParameters) -> Self {
        Self {
            params,
            dt: 0.0,
            c: 0.0,
            corrections: 1,
            d_fact: FactoredMatrix::empty(),
            y_tilde: DVector::zeros(0),
            v_tilde: DVector::zeros(0),
            load: DVector::zeros(0),
            res: DVector::zeros(0),
            rhs: DVector::zeros(0),
            tmp: DVector::zeros(0),
            y_iter: DVector::zeros(0),
        }
    }

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
        let singular = || {
            format!(
                "substructure `{}`: D = M + c·J0 is singular for Δt = {dt}",
                st.name
            )
        };
        let d_fact = FactoredMatrix::new(&d).ok_or_else(singular)?;
        let n = st.size();
        if part.physical.is_some() && corrections > 1 {
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
            d_fact,
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
        self.d_fact.solve(x.as_mut_slice());
    }

    /// Step `from` (at `t_next − dt`) to `to` (at `t_next`). `coupling` adds `w L Λ` to the
    /// momentum rows. The port of a physical partition is commanded once, at `Ỹ`, with the
    /// tick of `t_next`; the corrections evaluate the computed elements only.
    pub fn step(
        &mut self,
        part: &mut Partition,
        from: &AlphaState,
        t_next: f64,
        coupling: Option<(&[Coupling], &DVector<f64>, f64)>,
        to: &mut AlphaState,
    ) -> Result<(), PortError> {
        let p = self.params;
        let dt = self.dt;
        let am = p.alpha_m;
        let af = p.alpha_f;
        let g = p.gamma;
        let n = part.state.n_dofs();
        // Predictor (eq 11), one fused pass (the same operations as copy + axpy + axpy).
        let (ky, kv) = (g * dt * (1.0 - af) / am, dt * (am - g) / am);
        let (wy, wv) = ((1.0 - af) / am, -(1.0 - am) / am);
        for ((((yt, vt), y), yd), v) in self
            .y_tilde
            .as_mut_slice()
            .iter_mut()
            .zip(self.v_tilde.as_mut_slice())
            .zip(from.y.as_slice())
            .zip(from.ydot.as_slice())
            .zip(from.v.as_slice())
        {
            *yt = (y + ky * yd) + kv * v;
            *vt = yd * wy + wv * v;
        }
        // Rate (eq 12).
        part.state.load(t_next, self.load.as_mut_slice());
        if let Some((cs, lambda, w)) = coupling {
            if w != 0.0 {
                for c in cs {
                    self.load[n + c.row] += w * c.sign * lambda[c.lambda];
                }
            }
        }
        part.residual(self.y_tilde.as_slice(), self.res.as_mut_slice());
        // The one command of this tick: the specimen at the predictor.
        if let Some(port) = part.physical.as_mut() {
            let tick = port.tick(t_next);
            let force = port.command(tick, self.y_tilde.as_slice())?;
            for (r, f) in self.res.as_mut_slice()[n..2 * n].iter_mut().zip(force) {
                *r += f;
            }
        }
        for ((d, l), r) in to
            .ydot
            .as_mut_slice()
            .iter_mut()
            .zip(self.load.as_slice())
            .zip(self.res.as_slice())
        {
            *d = l - r;
        }
        self.d_fact.solve(to.ydot.as_mut_slice());
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
            self.d_fact.solve(self.rhs.as_mut_slice());
            to.ydot += &self.rhs;
        }
        // Corrector (eq 13).
        let (c, w) = (self.c, af / am);
        for ((((y, v), yd), yt), vt) in
            to.y.as_mut_slice()
                .iter_mut()
                .zip(to.v.as_mut_slice())
                .zip(to.ydot.as_slice())
                .zip(self.y_tilde.as_slice())
                .zip(self.v_tilde.as_slice())
        {
            *y = yt + c * yd;
            *v = vt + w * yd;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded linear congruential sequence in [-1, 1) (seed recorded in the test).
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// Without renumbering, the skyline solve is bit-identical to nalgebra's `LU::solve_mut`
    /// on dense, banded and pivoting matrices.
    #[test]
    fn factored_solve_is_bit_identical_to_nalgebra_lu() {
        let mut seed = 20_240_601u64;
        for (n, band, diag_boost) in [
            (1, 0, 1.0),
            (6, 6, 0.0),
            (22, 1, 3.0),
            (24, 3, 0.1),
            (40, 40, 0.0),
        ] {
            let d = DMatrix::from_fn(n, n, |i, j| {
                let x = lcg(&mut seed);
                if (i as isize - j as isize).unsigned_abs() > band {
                    0.0
                } else if i == j {
                    x + diag_boost
                } else {
                    x
                }
            });
            let f = FactoredMatrix::with_order(&d, None).expect("invertible");
            let lu = d.clone().lu();
            for _ in 0..5 {
                let b = DVector::from_fn(n, |_, _| 1e3 * lcg(&mut seed));
                let mut expect = b.clone();
                assert!(lu.solve_mut(&mut expect));
                let mut x = b.clone();
                f.solve(x.as_mut_slice());
                for (a, e) in x.iter().zip(expect.iter()) {
                    assert_eq!(
                        a.to_bits(),
                        e.to_bits(),
                        "n = {n}, band = {band}: {a} vs {e}"
                    );
                }
            }
        }
        assert!(FactoredMatrix::new(&DMatrix::zeros(3, 3)).is_none());
    }

    /// On a chain's `D = M + c J0` (order `[u; v]`) the renumbered factors stay banded and the
    /// solve agrees with nalgebra's dense LU to round-off.
    #[test]
    fn renumbered_chain_is_banded_and_accurate() {
        let n = 12;
        let c = 5e-4;
        let mut d = DMatrix::<f64>::zeros(2 * n, 2 * n);
        for i in 0..n {
            d[(i, i)] = 1.0;
            d[(i, n + i)] = -c;
            d[(n + i, n + i)] = 1.0e3 + c * 2.0e4;
            d[(n + i, i)] = c * 2.0e7;
            if i + 1 < n {
                for (a, b) in [(i, i + 1), (i + 1, i)] {
                    d[(n + a, b)] = -c * 1.0e7;
                    d[(n + a, n + b)] = -c * 1.0e4;
                }
            }
        }
        let f = FactoredMatrix::new(&d).expect("invertible");
        assert!(
            f.stored() < 8 * 2 * n,
            "renumbered factors hold {} entries, dense would be {}",
            f.stored(),
            2 * n * (2 * n - 1)
        );
        let mut seed = 7u64;
        let b = DVector::from_fn(2 * n, |_, _| lcg(&mut seed));
        let expect = d.clone().lu().solve(&b).expect("invertible");
        let mut x = b.clone();
        f.solve(x.as_mut_slice());
        let err = (&x - &expect).amax() / expect.amax();
        assert!(err < 1e-13, "relative difference {err:e}");
        // and it really solves D x = b
        let resid = (&d * &x - &b).amax() / (d.amax() * x.amax());
        assert!(resid < 1e-14, "relative residual {resid:e}");
    }
}
