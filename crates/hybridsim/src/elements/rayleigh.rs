//! Rayleigh damping of a whole substructure, `C = α M_R + β K_R`, stored sparse.

use super::{DofRef, Element, ElementLaw, Scalar};
use crate::linalg::DistinctValues;
use nalgebra::DMatrix;
use std::sync::Arc;

/// The nonzero entries of a sparse square matrix by rows (compressed sparse rows), columns
/// increasing in each row: [`SparseRows::row`] gives row `i`'s `(column, value)` pairs.
#[derive(Debug, Clone, Copy)]
pub struct SparseRows<'a> {
    /// Start of each row's entries, plus the end (`n + 1` entries, 32-bit).
    row_start: &'a [u32],
    columns: &'a Columns,
    values: &'a Values,
}

impl<'a> SparseRows<'a> {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.row_start.len() - 1
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.row_start.last().map_or(0, |&e| e as usize)
    }

    /// The entries `(column, value)` of row `i`, columns increasing.
    ///
    /// # Panics
    /// When `i` is not below [`SparseRows::n_rows`].
    #[inline]
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + 'a {
        let (columns, values) = (self.columns, self.values);
        (self.row_start[i] as usize..self.row_start[i + 1] as usize)
            .map(move |t| (columns.at(i, t), values.at(t)))
    }

    /// `out_i = Σ_j C_ij x(j)` for every row `i`, each row summed as [`SparseRows::row`] gives
    /// its entries (`acc += x(j) · C_ij`, columns increasing, from 0): the bits of that loop,
    /// with the layouts of the columns and the values chosen once, not per entry (the
    /// recorded Rayleigh forces of a 10⁵-DOF frame, 1.4 M entries a row, issue 20).
    #[inline]
    pub fn times(&self, x: impl Fn(usize) -> f64, out: &mut [f64]) {
        match (self.columns, self.values) {
            (Columns::Offsets(o), Values::Shared { table, place }) => self.times_with(
                |i, t| (i as isize + o[t] as isize) as usize,
                |t| table[usize::from(place[t])],
                x,
                out,
            ),
            (Columns::Offsets(o), Values::Plain(v)) => self.times_with(
                |i, t| (i as isize + o[t] as isize) as usize,
                |t| v[t],
                x,
                out,
            ),
            (Columns::Absolute(c), Values::Shared { table, place }) => self.times_with(
                |_, t| c[t] as usize,
                |t| table[usize::from(place[t])],
                x,
                out,
            ),
            (Columns::Absolute(c), Values::Plain(v)) => {
                self.times_with(|_, t| c[t] as usize, |t| v[t], x, out)
            }
        }
    }

    /// [`SparseRows::times`] with the column and the value of entry `t` of row `i` given by
    /// `column` and `value`.
    #[inline(always)]
    fn times_with(
        &self,
        column: impl Fn(usize, usize) -> usize,
        value: impl Fn(usize) -> f64,
        x: impl Fn(usize) -> f64,
        out: &mut [f64],
    ) {
        for (i, (oi, ends)) in out.iter_mut().zip(self.row_start.windows(2)).enumerate() {
            let mut acc = 0.0;
            for t in ends[0] as usize..ends[1] as usize {
                acc += x(column(i, t)) * value(t);
            }
            *oi = acc;
        }
    }
}

/// The columns of the entries of `C`.
#[derive(Debug, Clone)]
enum Columns {
    /// Each entry's column minus its row, in 16 bits (a banded `C`: every chain or frame
    /// whose DOFs are numbered along it).
    Offsets(Vec<i16>),
    /// Each entry's column, in 32 bits.
    Absolute(Vec<u32>),
}

impl Columns {
    /// The columns `columns` of the entries of rows `row_start`, as offsets from the row
    /// when every one fits 16 bits.
    fn new(row_start: &[u32], columns: Vec<u32>) -> Self {
        let mut offsets = Vec::with_capacity(columns.len());
        for (i, range) in row_start.windows(2).enumerate() {
            for &col in &columns[range[0] as usize..range[1] as usize] {
                match i16::try_from(i64::from(col) - i as i64) {
                    Ok(o) => offsets.push(o),
                    Err(_) => return Columns::Absolute(columns),
                }
            }
        }
        Columns::Offsets(offsets)
    }

    /// The column of entry `t`, of row `row`.
    #[inline(always)]
    fn at(&self, row: usize, t: usize) -> usize {
        match self {
            Columns::Offsets(o) => (row as isize + o[t] as isize) as usize,
            Columns::Absolute(c) => c[t] as usize,
        }
    }
}

/// The values of the entries of `C`.
#[derive(Debug, Clone)]
enum Values {
    /// Each entry's place, in 16 bits, in a table of the distinct values (at most 2¹⁶): a
    /// structure of repeated members and masses has few distinct entries of `C`.
    Shared { table: Vec<f64>, place: Vec<u16> },
    /// Each entry's value.
    Plain(Vec<f64>),
}

impl Values {
    /// `values`, through a table of the distinct values when there are at most 2¹⁶ (the
    /// same bits: the table holds each value as computed).
    fn new(values: Vec<f64>) -> Self {
        let mut distinct = DistinctValues::default();
        let mut place = Vec::with_capacity(values.len());
        for &v in &values {
            match distinct.place(v) {
                Some(p) => place.push(p),
                None => return Values::Plain(values),
            }
        }
        Values::Shared {
            table: distinct.into_table(),
            place,
        }
    }

    /// The value of entry `t`.
    #[inline(always)]
    fn at(&self, t: usize) -> f64 {
        match self {
            Values::Shared { table, place } => table[usize::from(place[t])],
            Values::Plain(v) => v[t],
        }
    }
}

/// Rayleigh damping `C = α M_R + β K_R` (Chopra 1995) over a
/// substructure's DOFs, where `M_R` and `K_R` are the mass and stiffness of the elements it
/// applies to: a linear element with force `r = C v`, no mass, no stiffness, no extra states.
///
/// `C` is assembled from the element-level matrices and kept in compressed rows, so its
/// force, its Jacobian and its recorded output cost `O(nnz)`, `O(N)` for a chain or a frame,
/// instead of the `O(N²)` of a dense superelement over every DOF.
///
/// An entry takes 4 bytes where `C` is banded within 2¹⁵ DOFs and has at most 2¹⁶ distinct
/// values — a column's 16-bit offset from its row and a 16-bit place in a table of the
/// values — and 12 otherwise (issue 20: 12 bytes an entry and 64-bit row starts were
/// 9.8 MB of the 99 990-DOF frame's engine, 4.4 MB of the 10⁵-DOF chain's). The values are
/// those computed, bit for bit.
#[derive(Debug, Clone)]
pub struct RayleighDamping {
    /// The substructure's DOFs (shared with its state space).
    dofs: Arc<[DofRef]>,
    /// Start of each row's entries, plus the end (32-bit).
    row_start: Vec<u32>,
    columns: Columns,
    values: Values,
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
        let mut row_start: Vec<u32> = Vec::with_capacity(n + 1);
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
            row_start.push(u32::try_from(columns.len()).expect("entries fit 32 bits"));
        }
        drop((order, start, contributions));
        if values.is_empty() {
            return None;
        }
        columns.shrink_to_fit();
        values.shrink_to_fit();
        let columns = Columns::new(&row_start, columns);
        let values = Values::new(values);
        Some(Self {
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
        let sparse = self.matrix();
        for i in 0..n {
            for (j, value) in sparse.row(i) {
                c[(i, j)] = value;
            }
        }
        c
    }
}

impl ElementLaw for RayleighDamping {
    fn law<T: Scalar>(&self, _u: &[T], v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        let c = self.matrix();
        for (i, ri) in r.iter_mut().enumerate() {
            let mut acc = T::zero();
            for (j, value) in c.row(i) {
                acc += v[j] * value;
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
        assert_eq!(e.matrix().nnz(), 7, "the cancelled entry is dropped");
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
