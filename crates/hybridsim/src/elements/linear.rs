//! Linear superelement with full mass, damping and stiffness matrices.

use super::{ConstantMatrices, DofRef, Element, ElementLaw, Scalar, SmallList};
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
/// `influence`) are in one box, absent when all three are, and `k` is its `n²` values by
/// columns (the order of a `DMatrix`).
///
/// Up to six DOFs (a 2D beam's two nodes of `x`, `y`, `rz`) are kept inside the element: one
/// heap block a member, its shared handle's, of 144 bytes (issue 20: the DOFs were a boxed
/// slice of their own, 96 bytes in a 112-byte block of glibc's beside the handle's 80-byte one,
/// 192 bytes of resident memory a member and 63 630 blocks more at the 10⁵-DOF frame).
///
/// `k` is shared: elements read from one model file with the same stiffness, to the bit, hold
/// one copy of it ([`LinearSuperelement::with_shared_stiffness`]; issue 20: the 10⁵-DOF
/// frame's 63 630 members had 63 630 copies of two matrices, 18.3 MB).
#[derive(Debug, Clone)]
pub struct LinearSuperelement {
    dofs: SmallList<DofRef, 6>,
    /// Stiffness matrix `n × n`, by columns (shared by the elements with the same one).
    k: Arc<[f64]>,
    /// The mass, damping and influence, `None` when the matrices are zero and no influence is
    /// given (a frame member).
    rare: Option<Box<RareParts>>,
}

/// The parts of a [`LinearSuperelement`] most members of a large model do not have.
#[derive(Debug, Clone)]
struct RareParts {
    /// Mass matrix, `None` when it is zero.
    m: Option<DMatrix<f64>>,
    /// Damping matrix, `None` when it is zero.
    c: Option<DMatrix<f64>>,
    /// Seismic influence vector, if given.
    influence: Option<DVector<f64>>,
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
        let nonzero = |a: DMatrix<f64>| (!a.iter().all(|x| *x == 0.0)).then_some(a);
        let rare = RareParts {
            m: nonzero(m),
            c: nonzero(c),
            influence,
        };
        let any = rare.m.is_some() || rare.c.is_some() || rare.influence.is_some();
        Self {
            dofs: dofs.into(),
            k,
            rare: any.then(|| Box::new(rare)),
        }
    }

    /// The damping matrix, `None` when it is zero.
    #[inline(always)]
    fn c(&self) -> Option<&DMatrix<f64>> {
        self.rare.as_ref().and_then(|r| r.c.as_ref())
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
        let c = self.c();
        for (i, ri) in r.iter_mut().enumerate().take(n) {
            let mut acc = T::zero();
            for j in 0..n {
                let kij = self.k(i, j);
                let cij = c.map_or(0.0, |c| c[(i, j)]);
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
        self.rare.as_ref().and_then(|r| r.m.clone())
    }
    fn seismic_influence(&self) -> Option<DVector<f64>> {
        self.rare.as_ref().and_then(|r| r.influence.clone())
    }
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        Some(DMatrix::from_column_slice(n, n, &self.k))
    }
    fn linear_damping(&self) -> Option<DMatrix<f64>> {
        let n = self.dofs.len();
        Some(self.c().cloned().unwrap_or_else(|| DMatrix::zeros(n, n)))
    }
    fn rayleigh_by_default(&self) -> bool {
        true
    }
    fn constant_matrices(&self) -> Option<ConstantMatrices<'_>> {
        Some(ConstantMatrices {
            k: &self.k,
            c: self.c().map(|c| c.as_slice()),
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
