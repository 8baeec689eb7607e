//! Linear superelement with full mass, damping and stiffness matrices.

use super::{ConstantMatrices, DofRef, Element, ElementLaw, Scalar};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// Linear superelement over an ordered DOF list: row/column `i` of `m`, `c`, `k` belongs to DOF
/// `i`. Resisting force `r = c v + k u`. `k` and `c` are symmetric and `m` positive
/// semi-definite (checked when the model is read). An optional seismic `influence` vector `ι`
/// replaces the default (ones on the excited direction) for condensed models, so the seismic
/// load is `−m ι a_g`.
///
/// A zero `m` or `c` is not stored (a frame member written as a `linear` element with only
/// its `k` held two dense zero matrices, about 600 bytes a member, issue 20); [`Element::mass`]
/// and [`Element::linear_damping`] give what the dense ones gave. The rare parts (`m`, `c`,
/// `influence`) are boxed and `k` is its `n²` values by columns (the order of a `DMatrix`), so
/// the element is 56 bytes and its DOFs and `k` (issue 20: 176 bytes with the matrices' and
/// vectors' headers inline, 12 MB of the 10⁵-DOF frame's 63 630 members).
///
/// `k` is shared: elements read from one model file with the same stiffness, to the bit, hold
/// one copy of it ([`LinearSuperelement::with_shared_stiffness`]; issue 20: the 10⁵-DOF
/// frame's 63 630 members had 63 630 copies of two matrices, 18.3 MB).
#[derive(Debug, Clone)]
pub struct LinearSuperelement {
    dofs: Box<[DofRef]>,
    /// Mass matrix, `None` when it is zero.
    m: Option<Box<DMatrix<f64>>>,
    /// Damping matrix, `None` when it is zero.
    c: Option<Box<DMatrix<f64>>>,
    /// Stiffness matrix `n × n`, by columns (shared by the elements with the same one).
    k: Arc<[f64]>,
    /// Seismic influence vector, if given.
    influence: Option<Box<DVector<f64>>>,
}

impl LinearSuperelement {
    /// A superelement; matrices must be `n × n` with `n = dofs.len()`.
    pub fn new(
        dofs: Vec<DofRef>,
        m: DMatrix<f64>,
        c: DMatrix<f64>,
        k: DMatrix<f64>,
        influence: Option<DVector<f64>>,
    ) -> Self {
        assert_eq!((k.nrows(), k.ncols()), (dofs.len(), dofs.len()));
        Self::with_shared_stiffness(dofs, m, c, Arc::from(k.as_slice()), influence)
    }

    /// [`LinearSuperelement::new`] with the stiffness given as its `n²` values by columns,
    /// held as given (shared with the other holders of `k`).
    ///
    /// # Panics
    /// If `k` does not have `n²` values.
    pub fn with_shared_stiffness(
        dofs: Vec<DofRef>,
        m: DMatrix<f64>,
        c: DMatrix<f64>,
        k: Arc<[f64]>,
        influence: Option<DVector<f64>>,
    ) -> Self {
        assert_eq!(k.len(), dofs.len() * dofs.len(), "k must be n × n");
        let nonzero = |a: DMatrix<f64>| (!a.iter().all(|x| *x == 0.0)).then(|| Box::new(a));
        Self {
            dofs: dofs.into_boxed_slice(),
            m: nonzero(m),
            c: nonzero(c),
            k,
            influence: influence.map(Box::new),
        }
    }

    /// The stiffness values by columns, as held (shared).
    pub fn shared_stiffness(&self) -> &Arc<[f64]> {
        &self.k
    }

    /// `k[(i, j)]`.
    #[inline(always)]
    fn k(&self, i: usize, j: usize) -> f64 {
        self.k[j * self.dofs.len() + i]
    }
}

impl ElementLaw for LinearSuperelement {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], _s: &[T], r: &mut [T], _sdot: &mut [T]) {
        let n = self.dofs.len();
        for (i, ri) in r.iter_mut().enumerate().take(n) {
            let mut acc = T::zero();
            for j in 0..n {
                let kij = self.k(i, j);
                let cij = self.c.as_ref().map_or(0.0, |c| c[(i, j)]);
                if kij != 0.0 {
                    acc += u[j] * kij;
                }
                if cij != 0.0 {
                    acc += v[j] * cij;
                }
            }
            *ri = acc;
        }
    }
}

impl Element for LinearSuperelement {
    fn kind(&self) -> &'static str {
        "linear"
    }
    fn dofs(&self) -> &[DofRef] {
        &self.dofs
    }
    fn mass(&self) -> Option<DMatrix<f64>> {
        self.m.as_deref().cloned()
    }
    fn seismic_influence(&self) -> Option<DVector<f64>> {
        self.influence.as_deref().cloned()
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        Some(DMatrix::from_column_slice(n, n, &self.k))
    }
    fn linear_damping(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        Some(
            self.c
                .as_deref()
                .cloned()
                .unwrap_or_else(|| DMatrix::zeros(n, n)),
        )
    }
    fn rayleigh_by_default(&self) -> bool {
        true
    }
    fn constant_matrices(&self) -> Option<ConstantMatrices<'_>> {
        Some(ConstantMatrices {
            k: &self.k,
            c: self.c.as_ref().map(|c| c.as_slice()),
        })
    }
    fn potential_energy(&self, u: &[f64], _s: &[f64]) -> Option<f64> {
        let n = self.dofs.len();
        let mut e = 0.0;
        for i in 0..n {
            for j in 0..n {
                e += 0.5 * u[i] * self.k(i, j) * u[j];
            }
        }
        Some(e)
    }
    crate::impl_element_evaluation!();
}
