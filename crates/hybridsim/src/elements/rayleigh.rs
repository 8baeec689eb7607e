//! Rayleigh damping of a whole substructure, `C = α M_R + β K_R`, stored sparse.

use super::{DofRef, Element, ElementLaw, Scalar};
use nalgebra::DMatrix;
use std::sync::Arc;

/// The nonzero entries of a sparse square matrix by rows (compressed sparse rows): row `i`
/// holds `values[t]` in column `columns[t]` for `t` in `row_start[i]..row_start[i + 1]`,
/// columns increasing.
#[derive(Debug, Clone, Copy)]
pub struct SparseRows<'a> {
    /// Start of each row in `columns`/`values`, plus the end (`n + 1` entries).
    pub row_start: &'a [usize],
    /// Column of each entry (32-bit).
    pub columns: &'a [u32],
    /// Value of each entry.
    pub values: &'a [f64],
}

/// Rayleigh damping `C = α M_R + β K_R` (Chopra 1995) over a
/// substructure's DOFs, where `M_R` and `K_R` are the mass and stiffness of the elements it
/// applies to: a linear element with force `r = C v`, no mass, no stiffness, no extra states.
///
/// `C` is assembled from the element-level matrices and kept in compressed rows, so its
/// force, its Jacobian and its recorded output cost `O(nnz)`, `O(N)` for a chain or a frame,
/// instead of the `O(N²)` of a dense superelement over every DOF.
#[derive(Debug, Clone)]
pub struct RayleighDamping {
    /// The substructure's DOFs (shared with its state space).
    dofs: Arc<[DofRef]>,
    row_start: Vec<usize>,
    /// Columns in 32 bits, sized exactly with `values` (issue 20: 64-bit columns in vectors
    /// grown by pushes were up to 32 bytes an entry, 9.2 MB of the 10⁵-DOF chain; now 12).
    columns: Vec<u32>,
    values: Vec<f64>,
}

impl RayleighDamping {
    /// `C = α M_R + β K_R` over `dofs` from the element contributions `(i, j, m, k)` to
    /// `M_R[i, j]` and `K_R[i, j]`, given in assembly order (the contributions to one entry are
    /// summed in the order given). Entries where `C` vanishes are dropped; `None` when all do.
    ///
    /// The contributions are ordered by row through a counting pass and a list of their
    /// positions (4 bytes each), then by column within each row (ties in assembly order): no
    /// sorted copy of the list and no sorting scratch beside it (issue 20: the 10⁵-DOF frame's
    /// ≈ 2.1 million contributions took 67 MB as 64-bit tuples and 22 MB more to sort them,
    /// the heap peak of its start-up).
    ///
    /// # Panics
    /// When a contribution's row or column is not below the number of DOFs.
    pub fn from_contributions(
        dofs: impl Into<Arc<[DofRef]>>,
        contributions: Vec<(u32, u32, f64, f64)>,
        alpha: f64,
        beta: f64,
    ) -> Option<Self> {
        let dofs: Arc<[DofRef]> = dofs.into();
        let n = dofs.len();
        let total = u32::try_from(contributions.len()).expect("contributions fit 32 bits");
        // Where each row's contributions start in `order` (counting sort by row: stable).
        let mut start = vec![0u32; n + 1];
        for &(i, _, _, _) in &contributions {
            start[i as usize + 1] += 1;
        }
        for r in 0..n {
            start[r + 1] += start[r];
        }
        debug_assert_eq!(start[n], total);
        let mut order = vec![0u32; contributions.len()];
        let mut next = start.clone();
        for (t, &(i, _, _, _)) in (0..total).zip(&contributions) {
            let slot = &mut next[i as usize];
            order[*slot as usize] = t;
            *slot += 1;
        }
        drop(next);
        // Within a row by column, the contributions to one entry in assembly order.
        let mut places = 0;
        for r in 0..n {
            let row = &mut order[start[r] as usize..start[r + 1] as usize];
            row.sort_unstable_by_key(|&t| (contributions[t as usize].1, t));
            // A row's first contribution opens a place, and so does each change of column.
            places += usize::from(!row.is_empty())
                + row
                    .windows(2)
                    .filter(|p| contributions[p[0] as usize].1 != contributions[p[1] as usize].1)
                    .count();
        }
        let mut row_start = Vec::with_capacity(n + 1);
        let mut columns = Vec::with_capacity(places);
        let mut values = Vec::with_capacity(places);
        row_start.push(0);
        for r in 0..n {
            let row = &order[start[r] as usize..start[r + 1] as usize];
            let mut t = 0;
            while t < row.len() {
                let col = contributions[row[t] as usize].1;
                let (mut m, mut k) = (0.0, 0.0);
                while t < row.len() && contributions[row[t] as usize].1 == col {
                    let (_, _, mt, kt) = contributions[row[t] as usize];
                    m += mt;
                    k += kt;
                    t += 1;
                }
                let c = m * alpha + k * beta;
                if c != 0.0 {
                    columns.push(col);
                    values.push(c);
                }
            }
            row_start.push(columns.len());
        }
        drop((order, start, contributions));
        columns.shrink_to_fit();
        values.shrink_to_fit();
        (!values.is_empty()).then_some(Self {
            dofs,
            row_start,
            columns,
            values,
        })
    }

    /// The damping matrix, sparse.
    pub fn matrix(&self) -> SparseRows<'_> {
        SparseRows {
            row_start: &self.row_start,
            columns: &self.columns,
            values: &self.values,
        }
    }

    /// The damping matrix, dense (allocates `N²`: reports and small models only).
    pub fn dense(&self) -> DMatrix<f64> {
        let n = self.dofs.len();
        let mut c = DMatrix::zeros(n, n);
        for i in 0..n {
            for t in self.row_start[i]..self.row_start[i + 1] {
                c[(i, self.columns[t] as usize)] = self.values[t];
            }
        }
        c
    }
}

impl ElementLaw for RayleighDamping {
    fn law<T: Scalar>(&self, _u: &[T], v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        for (i, ri) in r.iter_mut().enumerate() {
            let mut acc = T::zero();
            for t in self.row_start[i]..self.row_start[i + 1] {
                acc += v[self.columns[t] as usize] * self.values[t];
            }
            *ri = acc;
        }
    }
}

impl Element for RayleighDamping {
    fn kind(&self) -> &'static str {
        "rayleigh"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        Some(DMatrix::zeros(n, n))
    }
    fn linear_damping(&self) -> Option<DMatrix<f64>> {
        Some(self.dense())
    }
    fn sparse_damping(&self) -> Option<SparseRows<'_>> {
        Some(self.matrix())
    }
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        let mut t = DMatrix::zeros(n, 2 * n);
        t.view_mut((0, n), (n, n)).copy_from(&self.dense());
        Some(t)
    }
    crate::impl_element_evaluation!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elements::zero_state_tangent;
    use num_dual::Dual64;

    fn dofs(n: usize) -> Vec<DofRef> {
        (0..n).map(|i| DofRef::new(i as i64 + 1, "x")).collect()
    }

    /// Contributions to one entry are summed in order, vanishing entries are dropped, and the
    /// force, the explicit tangent and the dual-number tangent agree with the dense `C`.
    #[test]
    fn sparse_rayleigh_matches_its_dense_matrix() {
        let (alpha, beta) = (0.3, 2e-3);
        // A two-spring chain with lumped masses, plus a pair that cancels.
        let contributions = vec![
            (0, 0, 2.0, 0.0),
            (0, 0, 0.0, 300.0),
            (0, 1, 0.0, -300.0),
            (1, 0, 0.0, -300.0),
            (1, 1, 0.0, 300.0),
            (1, 1, 3.0, 0.0),
            (1, 2, 0.0, -100.0),
            (2, 1, 0.0, -100.0),
            (2, 2, 0.0, 100.0),
            (2, 2, 1.5, 0.0),
            (2, 0, 0.0, 5.0),
            (2, 0, 0.0, -5.0),
        ];
        let e = RayleighDamping::from_contributions(dofs(3), contributions, alpha, beta)
            .expect("nonzero");
        assert_eq!(e.matrix().values.len(), 7, "the cancelled entry is dropped");
        let c = e.dense();
        assert_eq!(c[(0, 0)], 2.0 * alpha + 300.0 * beta);
        assert_eq!(c[(1, 2)], -100.0 * beta);
        assert_eq!(c[(2, 0)], 0.0);
        let v = [0.7, -1.1, 0.25];
        let mut r = [0.0; 3];
        e.restoring(&[0.0; 3], &v, &[], &mut r, &mut []);
        let expect = &c * nalgebra::DVector::from_column_slice(&v);
        for i in 0..3 {
            assert!((r[i] - expect[i]).abs() <= 1e-15 * expect.amax());
        }
        let explicit = e.initial_tangent().expect("explicit");
        assert_eq!(explicit.view((0, 3), (3, 3)), c);
        assert_eq!(zero_state_tangent(&e), explicit);
        // The explicit tangent is the law's own derivative (dual numbers, one seed per v_j).
        for j in 0..3 {
            let zero = Dual64::from(0.0);
            let mut vd = [zero; 3];
            vd[j] = Dual64::new(0.0, 1.0);
            let mut rd = [zero; 3];
            e.restoring_dual(&[zero; 3], &vd, &[], &mut rd, &mut []);
            for i in 0..3 {
                assert_eq!(rd[i].eps, c[(i, j)]);
            }
        }
        assert!(
            RayleighDamping::from_contributions(dofs(2), vec![(0, 0, 1.0, 0.0)], 0.0, 1.0)
                .is_none()
        );
    }
}
