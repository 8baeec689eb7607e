//! Linear algebra the integrators share: `D⁻¹` through skyline LU factors of a matrix
//! renumbered by reverse Cuthill–McKee, factorized once and solved many times without
//! allocating.

use nalgebra::{DMatrix, DVector};

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
pub struct FactoredMatrix {
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
    pub fn empty() -> Self {
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
    pub fn new(d: &DMatrix<f64>) -> Option<Self> {
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
    pub fn solve(&self, x: &mut [f64]) {
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
