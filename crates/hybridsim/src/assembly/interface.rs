//! Interface between partitions: multipliers, signed Boolean `L`/`G`, Steklov–Poincaré `H`.

use super::{Partition, SteklovPoincare};
use crate::elements::DofRef;
use nalgebra::{DMatrix, DVector};
use std::collections::HashSet;

/// One interface multiplier: a DOF shared by two partitions.
#[derive(Debug, Clone, PartialEq)]
pub struct InterfaceDof {
    /// The shared DOF.
    pub dof: DofRef,
    /// Partition receiving `+Λ` (the physical copy, or the later one).
    pub plus: usize,
    /// Partition receiving `−Λ` (the numerical copy, or the earlier one).
    pub minus: usize,
}

/// Entry of the signed Boolean `L^X` (momentum rows) and `G^X` (rate rows) of one partition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coupling {
    /// DOF index in the partition.
    pub row: usize,
    /// Multiplier index.
    pub lambda: usize,
    /// +1 or −1.
    pub sign: f64,
}

/// Which rows of `Ẏ` the compatibility condition acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstraintLevel {
    /// `Σ G^X u̇^X = 0` (PG-α, Abbiati et al. 2019, eq 23c).
    Velocity,
    /// `Σ G^X v̇^X = 0` (the Rosenbrock family, Bursi et al. 2011, eq 6).
    Acceleration,
}

/// The interface of a set of partitions.
#[derive(Debug, Clone)]
pub struct Interface {
    /// Multipliers.
    pub dofs: Vec<InterfaceDof>,
    /// Couplings of each partition.
    pub couplings: Vec<Vec<Coupling>>,
    /// Constraint level.
    pub level: ConstraintLevel,
    /// Steklov–Poincaré operator `H` (n_Λ × n_Λ).
    pub h: DMatrix<f64>,
    operator: Option<SteklovPoincare>,
    gap: DVector<f64>,
}

impl Interface {
    /// The shared DOFs of `parts` with their plus/minus partitions. Numerical partitions come
    /// first: a DOF shared by partitions `a < b < c` (numerical before physical) gets
    /// multipliers `(a, b)` and `(a, c)`.
    pub fn dofs_of(parts: &[Partition]) -> Vec<InterfaceDof> {
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|i| (parts[*i].state.physical, *i));
        let mut out = Vec::new();
        // Hash sets: a numerical partition of N DOFs is scanned in O(N), not O(N²).
        let held: Vec<HashSet<&DofRef>> = parts
            .iter()
            .map(|p| p.state.dofs.iter().collect())
            .collect();
        let mut seen: HashSet<&DofRef> = HashSet::new();
        for &a in &order {
            for d in parts[a].state.dofs.iter() {
                if !seen.insert(d) {
                    continue;
                }
                for &b in order.iter().skip_while(|x| **x != a).skip(1) {
                    if held[b].contains(d) {
                        out.push(InterfaceDof {
                            dof: d.clone(),
                            plus: b,
                            minus: a,
                        });
                    }
                }
            }
        }
        out
    }

    /// Build the interface (without `H`, see [`Interface::set_operator`]).
    pub fn new(parts: &[Partition], level: ConstraintLevel) -> Self {
        let dofs = Self::dofs_of(parts);
        let mut couplings = vec![Vec::new(); parts.len()];
        for (k, d) in dofs.iter().enumerate() {
            for (p, sign) in [(d.plus, 1.0), (d.minus, -1.0)] {
                let row = parts[p]
                    .state
                    .dofs
                    .iter()
                    .position(|x| *x == d.dof)
                    .expect("shared DOF");
                couplings[p].push(Coupling {
                    row,
                    lambda: k,
                    sign,
                });
            }
        }
        let nl = dofs.len();
        Self {
            dofs,
            couplings,
            level,
            h: DMatrix::zeros(nl, nl),
            operator: None,
            gap: DVector::zeros(nl),
        }
    }

    /// Number of multipliers.
    pub fn len(&self) -> usize {
        self.dofs.len()
    }

    /// Whether there are no multipliers.
    pub fn is_empty(&self) -> bool {
        self.dofs.is_empty()
    }

    /// `L^X` as a dense `size × n_Λ` matrix (entries on the momentum rows).
    pub fn l_matrix(&self, part: usize, n: usize, size: usize) -> DMatrix<f64> {
        let mut l = DMatrix::zeros(size, self.len());
        for c in &self.couplings[part] {
            l[(n + c.row, c.lambda)] = c.sign;
        }
        l
    }

    /// `G^X` as a dense `n_Λ × size` matrix acting on `Ẏ`.
    pub fn g_matrix(&self, part: usize, n: usize, size: usize) -> DMatrix<f64> {
        let mut g = DMatrix::zeros(self.len(), size);
        for c in &self.couplings[part] {
            g[(c.lambda, self.rate_row(c.row, n))] = c.sign;
        }
        g
    }

    fn rate_row(&self, row: usize, n: usize) -> usize {
        match self.level {
            ConstraintLevel::Velocity => row,
            ConstraintLevel::Acceleration => n + row,
        }
    }

    /// Set (or re-set, e.g. after the estimated stiffness changed) `H` and factorize it once.
    /// Returns false when `H` is singular.
    pub fn set_operator(&mut self, h: DMatrix<f64>) -> bool {
        self.operator = SteklovPoincare::new(&h);
        self.h = h;
        self.operator.is_some()
    }

    /// Exchange `H` and its factors with `h` and `operator` (a refactorization built off the
    /// real-time path); they then hold the old ones. Moves only: no allocation.
    pub fn swap_operator(
        &mut self,
        h: &mut DMatrix<f64>,
        operator: &mut Option<super::SteklovPoincare>,
    ) {
        std::mem::swap(&mut self.h, h);
        std::mem::swap(&mut self.operator, operator);
    }

    /// Start accumulating `Σ G^X Ẏ^X`.
    pub fn begin(&mut self) {
        self.gap.fill(0.0);
    }

    /// Add partition `part`'s rates (`n` DOFs).
    pub fn add(&mut self, part: usize, ydot: &[f64], n: usize) {
        for c in &self.couplings[part] {
            self.gap[c.lambda] += c.sign * ydot[self.rate_row(c.row, n)];
        }
    }

    /// The accumulated compatibility residual `Σ G^X Ẏ^X`.
    pub fn gap(&self) -> &[f64] {
        self.gap.as_slice()
    }

    /// `Λ = −H⁻¹ Σ G^X Ẏ^X` (Abbiati et al. 2019, eq 37). Allocation-free.
    pub fn solve(&self, lambda: &mut DVector<f64>) {
        lambda.copy_from(&self.gap);
        if let Some(op) = &self.operator {
            op.solve_mut(lambda);
        }
        lambda.neg_mut();
    }
}
