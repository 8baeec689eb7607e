//! One substructure in state-space form, and a partition (state space + optional specimen).

use super::{seismic_vector, CompressedRows};
use crate::elements::{
    zero_state_tangent, ConstantMatrices, DofMap, DofRef, ElementRef, SparseRows,
};
use crate::error::{Diagnostics, ModelError};
use crate::excitation::TimeFunction;
use crate::linalg::DistinctValues;
use crate::model::{ElementName, Estimate, Model, RayleighStiffness};
use crate::physical::{LabControl, PhysicalPort, PortError};
use nalgebra::{DMatrix, DVector};
use num_dual::Dual64;
use std::sync::{Arc, OnceLock};

/// An element placed in a state space: where its DOFs and extra states live.
///
/// 56 bytes (issue 20: a slot of the 10⁵-DOF chain's 200 001 was 112 bytes plus a cloned name
/// and a DOF map in heap blocks of their own, 28 MB and 6.4 MB; then 64 bytes): the name is
/// shared with the model's element, its table and index kept as two fields (an
/// [`ElementName`]'s 4 bytes of padding reused), the DOF map is a range of the state space's
/// table of maps ([`StateSpace::dof_map`]) as long as the element's DOF list, and the offsets
/// are 32-bit.
#[derive(Clone)]
pub struct ElementSlot {
    /// The table of the element's name (shared with the model's element).
    name_table: Arc<crate::model::NameTable>,
    /// The name's index in `name_table`.
    name_index: u32,
    /// The element.
    pub element: ElementRef,
    /// Start of the element's DOF map in [`StateSpace`]'s table of maps (as many entries as
    /// the element has DOFs).
    map_start: u32,
    /// Offset of the element's extra states within the `s` block.
    state_offset: u32,
    /// Number of extra states.
    n_states: u32,
    /// Index, among the element's extra states, of its absorbed energy (`u32::MAX`: none).
    absorbed_energy_state: u32,
    /// Whether the element can store energy (false for masses, dashpots and damping terms).
    stores_energy: bool,
    /// How [`StateSpace::residual`] evaluates the slot.
    kernel: SlotKernel,
    /// The Rayleigh `β K` term of a hysteretic element under `[damping] stiffness =
    /// "committed"` or `"current"` ([`StateSpace::add_tangent_rayleigh`]).
    /// (Boxed: a rare term, kept out of the slot every element of a large model has.)
    tangent_rayleigh: Option<Box<TangentRayleigh>>,
}

/// Stiffness-proportional Rayleigh damping of one hysteretic element whose stiffness follows its
/// state (issue 17): the force `β K v` on the element DOFs, `K` the element's condensed tangent
/// `K = ∂r/∂u + ∂r/∂s · ∂ṡ/∂v` (the extra states eliminated through their rate law, as for the
/// initial stiffness of [`crate::elements::driver::initial_matrices`]) at the committed state
/// (frozen over the step) or at the current one — the `βK_comm` and `βK` terms of OpenSees's
/// `rayleigh` command (McKenna 2011).
#[derive(Debug, Clone)]
struct TangentRayleigh {
    /// β (time).
    beta: f64,
    /// `Some(offset)`: the committed tangent, kept in [`ElementWorkspace`]'s `committed`
    /// from `offset` (`ne²` entries, by columns); `None`: the current tangent.
    committed: Option<usize>,
    /// The initial stiffness `K_0` (`ne²` entries, by columns): the committed tangent of a
    /// state at rest, where the tangent of the spring-slider laws depends on the direction of
    /// the next motion.
    k0: Vec<f64>,
}

impl std::fmt::Debug for ElementSlot {
    /// The slot with its name (not the whole table of names it is in).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElementSlot")
            .field("name", &self.name())
            .field("element", &self.element)
            .field("map_start", &self.map_start)
            .field("state_offset", &self.state_offset)
            .field("n_states", &self.n_states)
            .field("absorbed_energy_state", &self.absorbed_energy_state)
            .field("stores_energy", &self.stores_energy)
            .field("kernel", &self.kernel)
            .field("tangent_rayleigh", &self.tangent_rayleigh)
            .finish()
    }
}

impl ElementSlot {
    /// Element name.
    pub fn name(&self) -> &str {
        self.name_table.get(self.name_index)
    }

    /// The element name, shared (the same entry of the same table as the model's element).
    pub fn shared_name(&self) -> ElementName {
        ElementName::pending(&self.name_table, self.name_index)
    }

    /// Number of element DOFs (the length of its DOF map).
    #[inline(always)]
    pub fn n_dofs(&self) -> usize {
        self.element.dofs().len()
    }

    /// Offset of the element's extra states within the `s` block.
    #[inline(always)]
    pub fn state_offset(&self) -> usize {
        self.state_offset as usize
    }

    /// Number of extra states.
    #[inline(always)]
    pub fn n_states(&self) -> usize {
        self.n_states as usize
    }

    /// Whether the element can store energy (false for masses, dashpots and damping terms).
    pub fn stores_energy(&self) -> bool {
        self.stores_energy
    }

    /// Index, among the element's extra states, of its absorbed energy `e = ∫ r·dd`
    /// (hysteretic springs, bearings and nonlinear dampers), if it has one.
    #[inline]
    pub fn absorbed_energy_state(&self) -> Option<usize> {
        (self.absorbed_energy_state != u32::MAX).then_some(self.absorbed_energy_state as usize)
    }

    /// The slot's DOF map within `maps`, the table of its state space.
    #[inline(always)]
    fn dof_map<'a>(&self, maps: &'a [u32]) -> DofMap<'a> {
        let start = self.map_start as usize;
        DofMap::new(&maps[start..start + self.n_dofs()])
    }

    /// Start of the slot's DOF map in its state space's table of maps
    /// ([`StateSpace::dof_maps`]; as many entries as the element has DOFs).
    #[inline(always)]
    pub fn map_start(&self) -> usize {
        self.map_start as usize
    }

    /// Whether [`StateSpace::element_force`] gives this slot's forces as `K u + C v` from the
    /// matrices its element lends ([`crate::elements::Element::constant_matrices`]): a linear
    /// kernel whose element has no sparse damping and lends its matrices. (A slot moved to its
    /// law by [`StateSpace::set_element_parameter`] no longer does: the residual's plan version
    /// changes, [`StateSpace::plan_version`].)
    pub fn forces_from_constant_matrices(&self) -> bool {
        self.kernel == SlotKernel::Linear
            && self.element.sparse_damping().is_none()
            && self.element.constant_matrices().is_some()
    }

    /// Whether [`StateSpace::potential_energy`] takes this slot's stored energy `½ uᵀ K u`
    /// from the matrices its element lends: a linear kernel whose element lends them.
    pub fn energy_from_constant_matrices(&self) -> bool {
        self.kernel == SlotKernel::Linear && self.element.constant_matrices().is_some()
    }

    /// Whether [`StateSpace::residual`] evaluates this element through precomputed linear
    /// terms `r = K u + C v` (or skips it, for elements without force such as masses) instead
    /// of calling [`crate::elements::Element::restoring`].
    pub fn is_precomputed_linear(&self) -> bool {
        !matches!(self.kernel, SlotKernel::Generic)
    }
}

/// What [`StateSpace::potential_energy_with`] is lent of a linear slot whose stored energy
/// `½ uᵀ K u` comes from its element's matrices
/// ([`ElementSlot::energy_from_constant_matrices`]), instead of asking the element.
#[derive(Debug, Clone, Copy)]
pub enum LentStiffness<'a> {
    /// A copy of the element's matrices (only `K` is read) and its number of DOFs.
    Matrices(ConstantMatrices<'a>, usize),
    /// The slot's forces at the same state by [`StateSpace::element_force`], for an element
    /// without damping (`K u`): `½ Σ_i u_i (K u)_i` without the products
    /// ([`ConstantMatrices::stored_energy_from_forces`]).
    Forces(&'a [f64]),
}

/// How [`StateSpace::residual`] evaluates one slot (the hot path of every step). A linear
/// slot's terms live only in the merged [`LinearRun`] of the residual's plan, not in the slot
/// as well (issue 20: two copies of every linear term were the largest part of a partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotKernel {
    /// Through the element's `restoring` (hysteretic and other nonlinear elements).
    Generic,
    /// An element without restoring force (a mass): nothing to add.
    Inert,
    /// A linear element without extra states, `r = K u + C v`: its nonzero terms over the
    /// partition are groups of [`StateSpace::residual`]'s plan.
    Linear,
}

/// The nonzero terms of a linear element over the partition, row by row: row `i` adds
/// `Σ_t vals[t] · Y[cols[t]]` for `t` in `rows[i-1].1..rows[i].1` to `R[rows[i].0]`.
#[derive(Debug, Clone, Default, PartialEq)]
struct LinearTerms {
    rows: Vec<(usize, usize)>,
    cols: Vec<u32>,
    vals: Vec<f64>,
}

impl SlotKernel {
    /// Classify an element, with the terms of a linear one. Linear means: no extra states, a
    /// declared stiffness (and optionally damping) matrix, and `restoring` reproducing
    /// `K u + C v` at two probe states to round-off, so an element whose declared matrices are
    /// not its law stays on the generic path.
    fn classify(
        e: &dyn crate::elements::Element,
        map: DofMap<'_>,
        n: usize,
    ) -> (Self, LinearTerms) {
        let generic = (SlotKernel::Generic, LinearTerms::default());
        if e.n_states() > 0 {
            return generic;
        }
        if let Some(c) = e.sparse_damping() {
            return Self::from_sparse_damping(c, map, n);
        }
        let ne = map.len();
        let Some(k) = e.linear_stiffness() else {
            return generic;
        };
        let c = e.linear_damping().unwrap_or_else(|| DMatrix::zeros(ne, ne));
        if k.shape() != (ne, ne) || c.shape() != (ne, ne) {
            return generic;
        }
        let mut r = vec![0.0; ne];
        for scale in [1.0, -3.0e-3] {
            let u: Vec<f64> = (0..ne).map(|i| scale * (1.0 + 0.37 * i as f64)).collect();
            let v: Vec<f64> = (0..ne).map(|i| scale * (0.61 - 0.23 * i as f64)).collect();
            e.restoring(&u, &v, &[], &mut r, &mut []);
            for (i, ri) in r.iter().enumerate() {
                let mut expect = 0.0;
                let mut size = 0.0;
                for j in 0..ne {
                    expect += k[(i, j)] * u[j] + c[(i, j)] * v[j];
                    size += (k[(i, j)] * u[j]).abs() + (c[(i, j)] * v[j]).abs();
                }
                if !ri.is_finite() || (ri - expect).abs() > 1e-12 * size {
                    return generic;
                }
            }
        }
        let mut t = LinearTerms::default();
        for (i, mi) in map.iter().enumerate() {
            let Some(row) = mi else { continue };
            for (j, mj) in map.iter().enumerate() {
                let Some(col) = mj else { continue };
                if k[(i, j)] != 0.0 {
                    t.cols.push(column_index(col));
                    t.vals.push(k[(i, j)]);
                }
                if c[(i, j)] != 0.0 {
                    t.cols.push(column_index(n + col));
                    t.vals.push(c[(i, j)]);
                }
            }
            if t.rows.last().map_or(0, |r: &(usize, usize)| r.1) < t.cols.len() {
                t.rows.push((n + row, t.cols.len()));
            }
        }
        if t.rows.is_empty() {
            (SlotKernel::Inert, LinearTerms::default())
        } else {
            (SlotKernel::Linear, t)
        }
    }

    /// The kernel of an element with force `r = C v`, `C` given in compressed rows
    /// ([`crate::elements::Element::sparse_damping`]): the same terms, in the same order, as
    /// [`SlotKernel::classify`] takes from the dense matrices, in `O(nnz)`.
    fn from_sparse_damping(c: SparseRows<'_>, map: DofMap<'_>, n: usize) -> (Self, LinearTerms) {
        let mut t = LinearTerms {
            rows: Vec::new(),
            cols: Vec::with_capacity(c.nnz()),
            vals: Vec::with_capacity(c.nnz()),
        };
        for (i, mi) in map.iter().enumerate() {
            let Some(row) = mi else { continue };
            for (j, value) in c.row(i) {
                if let (Some(col), true) = (map.get(j), value != 0.0) {
                    t.cols.push(column_index(n + col));
                    t.vals.push(value);
                }
            }
            if t.rows.last().map_or(0, |r: &(usize, usize)| r.1) < t.cols.len() {
                t.rows.push((n + row, t.cols.len()));
            }
        }
        if t.rows.is_empty() {
            (SlotKernel::Inert, LinearTerms::default())
        } else {
            (SlotKernel::Linear, t)
        }
    }
}

/// The precomputed linear terms of a run of consecutive [`SlotKernel::Linear`] slots, merged
/// and sorted by the row of `R` they add to, so that [`StateSpace::residual`] sweeps them as
/// one contiguous compressed-row block instead of visiting every element.
///
/// The sums are those of the slot-by-slot loop, in the same order: each slot's row sum
/// (`group`) is formed from 0 term by term, and a row of `R` receives the group sums of the
/// run's slots in slot order (a stable sort by row keeps that order), so the result is the
/// same to the last bit; only rows of different targets are interleaved differently, and those
/// sums are independent.
#[derive(Debug, Clone, Default)]
struct LinearRun {
    /// `(row of R, end of its groups in `group_end`)`, rows ascending.
    targets: Vec<(usize, usize)>,
    /// End of each group's terms in `cols` / `vals`.
    group_end: Vec<usize>,
    /// The slot each group comes from (to take a slot out of the plan again).
    group_slot: Vec<u32>,
    /// Columns of `Y` (32-bit: 12 bytes a term with its value instead of 16, issue 20).
    cols: Vec<u32>,
    vals: Vec<f64>,
}

impl LinearRun {
    /// The run made of the row groups `order` of `groups` (group indices, stably sorted by
    /// their row of `R`; `n_terms` terms in all): their terms copied in that order.
    fn from_groups(groups: &SlotGroups, order: &[u32], n_terms: usize) -> Self {
        let mut run = LinearRun {
            targets: Vec::new(),
            group_end: Vec::with_capacity(order.len()),
            group_slot: Vec::with_capacity(order.len()),
            cols: Vec::with_capacity(n_terms),
            vals: Vec::with_capacity(n_terms),
        };
        for &g in order {
            let (slot, target, _) = groups.groups[g as usize];
            let terms = groups.terms(g);
            run.cols.extend_from_slice(&groups.cols[terms.clone()]);
            run.vals.extend_from_slice(&groups.vals[terms]);
            run.group_end.push(run.cols.len());
            run.group_slot.push(slot);
            let target = target as usize;
            match run.targets.last_mut() {
                Some(last) if last.0 == target => last.1 = run.group_end.len(),
                _ => run.targets.push((target, run.group_end.len())),
            }
        }
        run.targets.shrink_to_fit();
        run
    }
}

/// The coefficients of a generalized-α step that [`StateSpace::folded_predictor_rate`]
/// applies (Abbiati et al. 2019, eqs 11–13): the predictor `Ỹ = (Y + k_y Ẏ) + k_v V`,
/// `Ṽ = Ẏ w_y + w_v V`, and `c = γΔt α_f/α_m` of the folded coupling product.
#[derive(Debug, Clone, Copy)]
pub struct FoldedStep {
    /// `k_y = γΔt (1 − α_f)/α_m`.
    pub ky: f64,
    /// `k_v = Δt (α_m − γ)/α_m`.
    pub kv: f64,
    /// `w_y = (1 − α_f)/α_m`.
    pub wy: f64,
    /// `w_v = −(1 − α_m)/α_m`.
    pub wv: f64,
    /// `c = γΔt α_f/α_m`.
    pub c: f64,
}

/// The outputs of [`FoldedRows::predictor`] for a range of DOFs `lo .. lo + len`: the rows
/// `lo + i` (`.0`) and `n + lo + i` (`.1`) of `Ỹ` and `Ṽ`, the rows `lo + i` of `Ẏ` and the
/// entries `lo + i` of the fused pass's `w`, each of `len` values.
#[derive(Debug)]
pub struct FoldedPredictor<'a> {
    /// Rows of `Ỹ`: displacements and velocities.
    pub y_tilde: (&'a mut [f64], &'a mut [f64]),
    /// Rows of `Ṽ`: displacements and velocities.
    pub v_tilde: (&'a mut [f64], &'a mut [f64]),
    /// The displacement rows of `Ẏ` (`u̇ = v`).
    pub ydot: &'a mut [f64],
    /// `w = ũ + (β + c) ṽ` of the fused pass.
    pub weighted: &'a mut [f64],
}

impl<'a> FoldedPredictor<'a> {
    /// The outputs of the DOFs `0 .. split` and `split .. n` for [`FoldedRows::predictor`]
    /// over the whole `Ỹ` and `Ṽ` (`2n` rows each), the displacement rows of `Ẏ` (the first
    /// `n` of `ydot`) and `w` (`n` entries): two disjoint borrows, one for each thread.
    ///
    /// # Panics
    /// When `split > n` or a slice is shorter than its rows.
    pub fn halves(
        y_tilde: &'a mut [f64],
        v_tilde: &'a mut [f64],
        ydot: &'a mut [f64],
        weighted: &'a mut [f64],
        split: usize,
    ) -> (Self, Self) {
        let n = weighted.len();
        let (yu, yv) = y_tilde[..2 * n].split_at_mut(n);
        let (vu, vv) = v_tilde[..2 * n].split_at_mut(n);
        let ((yu0, yu1), (yv0, yv1)) = (yu.split_at_mut(split), yv.split_at_mut(split));
        let ((vu0, vu1), (vv0, vv1)) = (vu.split_at_mut(split), vv.split_at_mut(split));
        let (du0, du1) = ydot[..n].split_at_mut(split);
        let (w0, w1) = weighted.split_at_mut(split);
        (
            Self {
                y_tilde: (yu0, yv0),
                v_tilde: (vu0, vv0),
                ydot: du0,
                weighted: w0,
            },
            Self {
                y_tilde: (yu1, yv1),
                v_tilde: (vu1, vv1),
                ydot: du1,
                weighted: w1,
            },
        )
    }
}

/// The rows of one DOF of a state stepped in place by [`FoldedRows::predictor_in_place`], for
/// a range of DOFs `lo .. lo + len`: the rows `lo + i` (`.0`) and `n + lo + i` (`.1`) of `Y`
/// and `V` (the step's start, overwritten with `Ỹ` and `Ṽ`), the displacement rows `lo + i`
/// of `Ẏ` (the start, overwritten with `u̇ = ṽ`) and its momentum rows `n + lo + i` (the
/// start, read only), and the entries `lo + i` of the fused pass's `w`, each of `len` values.
#[derive(Debug)]
pub struct FoldedInPlace<'a> {
    /// Rows of `Y`, overwritten with `Ỹ`: displacements and velocities.
    pub y: (&'a mut [f64], &'a mut [f64]),
    /// Rows of `V`, overwritten with `Ṽ`: displacements and velocities.
    pub v: (&'a mut [f64], &'a mut [f64]),
    /// Rows of `Ẏ`: the displacement rows (overwritten with `u̇ = ṽ`) and the momentum rows
    /// (read).
    pub ydot: (&'a mut [f64], &'a [f64]),
    /// `w = ũ + (β + c) ṽ` of the fused pass.
    pub weighted: &'a mut [f64],
}

impl<'a> FoldedInPlace<'a> {
    /// The DOFs `0 .. split` and `split .. n` of a whole state (`Y`, `Ẏ`, `V` of `2n` rows
    /// each) and of `w` (`n` entries), for [`FoldedRows::predictor_in_place`]: two disjoint
    /// borrows, one for each thread.
    ///
    /// # Panics
    /// When `split > n` or a slice is shorter than its rows.
    pub fn halves(
        y: &'a mut [f64],
        v: &'a mut [f64],
        ydot: &'a mut [f64],
        weighted: &'a mut [f64],
        split: usize,
    ) -> (Self, Self) {
        let n = weighted.len();
        let (yu, yv) = y[..2 * n].split_at_mut(n);
        let (vu, vv) = v[..2 * n].split_at_mut(n);
        let (du, dv) = ydot[..2 * n].split_at_mut(n);
        let ((yu0, yu1), (yv0, yv1)) = (yu.split_at_mut(split), yv.split_at_mut(split));
        let ((vu0, vu1), (vv0, vv1)) = (vu.split_at_mut(split), vv.split_at_mut(split));
        let (du0, du1) = du.split_at_mut(split);
        let dv: &'a [f64] = dv;
        let (dv0, dv1) = dv.split_at(split);
        let (w0, w1) = weighted.split_at_mut(split);
        (
            Self {
                y: (yu0, yv0),
                v: (vu0, vv0),
                ydot: (du0, dv0),
                weighted: w0,
            },
            Self {
                y: (yu1, yv1),
                v: (vu1, vv1),
                ydot: (du1, dv1),
                weighted: w1,
            },
        )
    }
}

/// The outputs of pass 1 of the folded step for one DOF ([`predict_dof`]).
struct PredictedDof {
    /// `(ũ, ṽ)`: the DOF's rows of `Ỹ`.
    y_tilde: (f64, f64),
    /// Its rows of `Ṽ`.
    v_tilde: (f64, f64),
    /// `w = ũ + (β + c) ṽ`.
    weighted: f64,
    /// `u̇ = F_u − (−ṽ)`.
    ydot: f64,
}

/// Pass 1 of the folded step for one DOF, from its rows `(displacement, velocity)` of `Y`,
/// `Ẏ` and `V` at the step's start and `F` of its displacement row, with `b = β + c`
/// (Abbiati et al. 2019, eq 11): the operations of [`FoldedRows::predictor`] and
/// [`FoldedRows::predictor_in_place`], written once so that both give the same bits.
#[inline(always)]
fn predict_dof(
    step: FoldedStep,
    b: f64,
    y: (f64, f64),
    ydot: (f64, f64),
    v: (f64, f64),
    load: f64,
) -> PredictedDof {
    let FoldedStep { ky, kv, wy, wv, .. } = step;
    let u = (y.0 + ky * ydot.0) + kv * v.0;
    let velocity = (y.1 + ky * ydot.1) + kv * v.1;
    PredictedDof {
        y_tilde: (u, velocity),
        v_tilde: (ydot.0 * wy + wv * v.0, ydot.1 * wy + wv * v.1),
        weighted: u + b * velocity,
        ydot: load - -velocity,
    }
}

/// The loop of [`FoldedRows::predictor_in_place`] over the DOFs of `state` (`fu` their
/// displacement rows of `F`, every slice of the same length, checked by the caller).
#[inline(always)]
fn predict_in_place(step: FoldedStep, b: f64, fu: &[f64], state: FoldedInPlace<'_>) {
    let FoldedInPlace {
        y: (yu, yv),
        v: (vu, vv),
        ydot: (du, dv),
        weighted: w,
    } = state;
    let len = fu.len();
    let (yu, yv, vu, vv) = (
        &mut yu[..len],
        &mut yv[..len],
        &mut vu[..len],
        &mut vv[..len],
    );
    let (du, dv, w) = (&mut du[..len], &dv[..len], &mut w[..len]);
    for i in 0..len {
        // Every read of the DOF first, then its writes.
        let dof = predict_dof(
            step,
            b,
            (yu[i], yv[i]),
            (du[i], dv[i]),
            (vu[i], vv[i]),
            fu[i],
        );
        yu[i] = dof.y_tilde.0;
        yv[i] = dof.y_tilde.1;
        vu[i] = dof.v_tilde.0;
        vv[i] = dof.v_tilde.1;
        w[i] = dof.weighted;
        du[i] = dof.ydot;
    }
}

/// [`predict_in_place`] compiled for AVX2 (four DOFs a register instead of two): the same
/// operations on each DOF, separate multiplications and additions (no fused multiply-add,
/// which Rust never forms unasked), so the same bits (issue 20, session 26: the predictor's
/// instructions a step on the 990-DOF frame 18.6 → 7.7 thousand).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn predict_in_place_avx2(step: FoldedStep, b: f64, fu: &[f64], state: FoldedInPlace<'_>) {
    predict_in_place(step, b, fu, state);
}

/// The passes over the rows of [`StateSpace::folded_predictor_rate`] by ranges of DOFs
/// ([`StateSpace::folded_rows`]): each value is computed by the same operations whatever
/// the ranges, so the parts give the bits of the whole pass. Shares only the partition's
/// fused pass (read-only), so two threads can run two ranges at once.
#[derive(Debug, Clone, Copy)]
pub struct FoldedRows<'a> {
    run: &'a FusedRun,
    n: usize,
}

impl FoldedRows<'_> {
    /// The partition's DOFs `n` (its state has `2n` rows).
    pub fn n_dofs(&self) -> usize {
        self.n
    }

    /// Pass 1 of [`StateSpace::folded_predictor_rate`] for the DOFs `lo .. lo + len` (`len`
    /// the length of `out`'s slices): `Ỹ = (Y + k_y Ẏ) + k_v V`, `Ṽ = Ẏ w_y + w_v V` (Abbiati
    /// et al. 2019, eq 11) of rows `i` and `n + i`, `w_i = ũ_i + (β + c) ṽ_i` and
    /// `Ẏ_i = F_i − (−ṽ_i)`. `from` is `(Y, Ẏ, V)` of the step's start and `load` is `F`, each
    /// of `2n` rows. Allocation-free.
    ///
    /// # Panics
    /// When a slice's length does not fit.
    pub fn predictor(
        &self,
        step: FoldedStep,
        lo: usize,
        from: (&[f64], &[f64], &[f64]),
        load: &[f64],
        out: FoldedPredictor<'_>,
    ) {
        let n = self.n;
        let b = self.run.beta + step.c;
        let FoldedPredictor {
            y_tilde: (ytu, ytv),
            v_tilde: (vtu, vtv),
            ydot: ydu,
            weighted: w,
        } = out;
        let len = ytu.len();
        assert!(
            lo + len <= n
                && [ytv.len(), vtu.len(), vtv.len(), ydu.len(), w.len()]
                    .iter()
                    .all(|&l| l == len)
                && [from.0.len(), from.1.len(), from.2.len(), load.len()]
                    .iter()
                    .all(|&l| l == 2 * n),
            "FoldedRows::predictor: dimension mismatch"
        );
        let (yu, yv) = (&from.0[lo..lo + len], &from.0[n + lo..n + lo + len]);
        let (du, dv) = (&from.1[lo..lo + len], &from.1[n + lo..n + lo + len]);
        let (vu, vv) = (&from.2[lo..lo + len], &from.2[n + lo..n + lo + len]);
        let fu = &load[lo..lo + len];
        for i in 0..len {
            let dof = predict_dof(
                step,
                b,
                (yu[i], yv[i]),
                (du[i], dv[i]),
                (vu[i], vv[i]),
                fu[i],
            );
            ytu[i] = dof.y_tilde.0;
            ytv[i] = dof.y_tilde.1;
            vtu[i] = dof.v_tilde.0;
            vtv[i] = dof.v_tilde.1;
            w[i] = dof.weighted;
            ydu[i] = dof.ydot;
        }
    }

    /// [`FoldedRows::predictor`] of a state stepped in place ([`FoldedInPlace`]): the same
    /// values by the same operations, each DOF's six start values read before any of its
    /// outputs is written (its rows are the only ones it reads or writes), so that `Ỹ` and
    /// `Ṽ` overwrite `Y` and `V`, and `u̇ = ṽ` the displacement rows of `Ẏ`, exactly. The
    /// momentum rows of `Ẏ` are only read (pass 2, [`FoldedRows::gather`], overwrites them
    /// once every DOF's pass 1 is done). `load` is `F` of `2n` rows. Allocation-free.
    ///
    /// # Panics
    /// When a slice's length does not fit.
    pub fn predictor_in_place(
        &self,
        step: FoldedStep,
        lo: usize,
        load: &[f64],
        state: FoldedInPlace<'_>,
    ) {
        let n = self.n;
        let b = self.run.beta + step.c;
        let FoldedInPlace {
            y: (yu, yv),
            v: (vu, vv),
            ydot: (du, dv),
            weighted: w,
        } = state;
        let len = yu.len();
        assert!(
            lo + len <= n
                && [yv.len(), vu.len(), vv.len(), du.len(), dv.len(), w.len()]
                    .iter()
                    .all(|&l| l == len)
                && load.len() == 2 * n,
            "FoldedRows::predictor_in_place: dimension mismatch"
        );
        let fu = &load[lo..lo + len];
        let state = FoldedInPlace {
            y: (yu, yv),
            v: (vu, vv),
            ydot: (du, dv),
            weighted: w,
        };
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2, checked just above.
            unsafe { predict_in_place_avx2(step, b, fu, state) };
            return;
        }
        predict_in_place(step, b, fu, state);
    }

    /// Pass 2 of [`StateSpace::folded_predictor_rate`] for the momentum rows `n + lo .. n +
    /// lo + len` (`len = ydot.len()`): `Ẏ_r = F_r − (0 + [K w + E Ỹ]_r)` into `ydot` (their
    /// rows only), with `w` of all `n` DOFs and `Ỹ` and `F` of all `2n` rows (after pass 1 of
    /// every DOF). Allocation-free.
    ///
    /// # Panics
    /// When a slice's length does not fit.
    pub fn gather(&self, lo: usize, w: &[f64], y_tilde: &[f64], load: &[f64], ydot: &mut [f64]) {
        let (n, run) = (self.n, self.run);
        let m = 2 * n;
        let len = ydot.len();
        assert!(
            lo + len <= n && run.n == n && w.len() == n && y_tilde.len() == m && load.len() == m,
            "FoldedRows::gather: dimension mismatch"
        );
        let (fv, dv) = (&load[n + lo..n + lo + len], ydot);
        // By construction (`FusedRun::from_groups`): the columns of `K` below `n`, those of
        // `E` below `2n`, the ends ascend to the numbers of terms, the targets ascend
        // (checked by `StateSpace::folded_rows`: they lie in `n..2n`).
        debug_assert!(run.targets.windows(2).all(|p| p[0] < p[1]));
        run.debug_assert_terms(n, m);
        if run.targets.len() != n {
            // Rows without terms: `F − 0`.
            for (d, f) in dv.iter_mut().zip(fv) {
                *d = f - 0.0;
            }
        }
        match &run.terms {
            FusedTerms::Plain(terms) => {
                Self::gather_rows(run, &terms.reader(), lo, w, y_tilde, fv, dv)
            }
            FusedTerms::Shared(terms) => {
                Self::gather_rows(run, &terms.reader(), lo, w, y_tilde, fv, dv)
            }
        }
    }

    /// The rows `n + lo .. n + lo + len` of [`FoldedRows::gather`] (`len = dv.len()`), the
    /// run's terms read through `terms` (its layout): `dv_r = fv_r − (0 + [K w + E y]_r)`.
    #[inline(always)]
    fn gather_rows<L: TermLayout>(
        run: &FusedRun,
        terms: &L,
        lo: usize,
        w: &[f64],
        y: &[f64],
        fv: &[f64],
        dv: &mut [f64],
    ) {
        let (n, len) = (run.n, dv.len());
        debug_assert!(w.len() == n && y.len() == 2 * n && fv.len() == len && lo + len <= n);
        // The targets of rows `lo .. lo + len`, and where their terms start.
        let first = run.targets.partition_point(|&t| (t as usize) < n + lo);
        let last = first + run.targets[first..].partition_point(|&t| (t as usize) < n + lo + len);
        let (mut k0, mut e0) = match first {
            0 => (0, 0),
            f => (run.k_end[f - 1] as usize, run.e_end[f - 1] as usize),
        };
        // The rows through raw pointers held in registers, `fv` and `dv` addressed by the
        // row `target` (their entry `target − n − lo`): the loop's bookkeeping a row is a few
        // instructions beside the row's products (issue 20, session 26).
        let (targets, k_ends, e_ends) =
            (run.targets.as_ptr(), run.k_end.as_ptr(), run.e_end.as_ptr());
        let (fv, dv) = (
            fv.as_ptr().wrapping_sub(n + lo),
            dv.as_mut_ptr().wrapping_sub(n + lo),
        );
        for row in first..last {
            // SAFETY: `first ≤ row < last ≤ targets.len()` (the ends have as many entries);
            // every index is in bounds by the construction and the checks of `gather` (`w`
            // has `n` entries, `y` `2n`, `fv` and `dv` `len`, `n + lo ≤ target < n + lo +
            // len`).
            unsafe {
                let target = *targets.add(row) as usize;
                let (k_end, e_end) = (*k_ends.add(row) as usize, *e_ends.add(row) as usize);
                let acc =
                    terms.row_sum((target.wrapping_sub(n), target), k0..k_end, e0..e_end, w, y);
                *dv.wrapping_add(target) = *fv.wrapping_add(target) - (0.0 + acc);
                (k0, e0) = (k_end, e_end);
            }
        }
    }
}

/// A run of linear slots whose damping is stiffness-proportional up to a few terms,
/// `C = β K + E` (Rayleigh damping `C = α M + β K`, Chopra 1995, with a lumped `M`: `E` is the
/// diagonal `α m`), summed as `r = K (u + β v) + E v`: one pass over the merged stiffness
/// `K` (each entry the sum of the run's elements at that place) on `w = u + β v` formed
/// once, instead of the element groups of `K u` and of `C v`.
///
/// `E = C − β K` is formed entry by entry and its entries within `4 ε |c_ij|` of zero are
/// dropped (they are the rounding of `β k_ij` in the assembly of `C`), so the residual equals
/// the slot-by-slot sum to round-off, not to the bit.
///
/// The terms of `K` and `E` are kept in one of two layouts ([`FusedTerms`]): 4 bytes a term
/// where the run is large ([`SHARED_FROM_BYTES`]), banded and of few distinct values (every
/// frame or chain of repeated members), 12 otherwise. Either holds the values as computed and
/// the passes read them in the same order: the same bits.
#[derive(Debug, Clone, Default)]
struct FusedRun {
    beta: f64,
    /// The DOFs `n` of the state space (`R` has `2n` rows of `u` and `v`): the row `n + i`
    /// is the DOF `i`'s, from which the shared layout's columns of `K` are offsets.
    n: usize,
    /// Rows of `R`, ascending (the rows and the ends in 32 bits: 12 bytes a row instead of
    /// 24, issue 20).
    targets: Vec<u32>,
    /// End of each target's terms of `K` (columns of `w`, `< n`).
    k_end: Vec<u32>,
    /// End of each target's terms of `E` (columns of `Y`, `< 2n`).
    e_end: Vec<u32>,
    terms: FusedTerms,
}

/// The bytes of a fused run's `K` in the plain layout (12 a term) above which its terms take
/// the shared one (4 a term), where they fit it: the size of a core's L2 cache on the machine
/// of the benchmarks (2 MiB). Smaller runs stay in the cache either way and keep the plain
/// layout, whose passes take fewer operations a term: the shared layout's passes were 10–20 %
/// slower on the 990-DOF frame (issue 20, session 25: 8 µs against 7 a pass).
const SHARED_FROM_BYTES: usize = 2 << 20;

/// How the passes of a fused run read its terms, whatever their layout ([`PlainTerms`],
/// [`SharedTerms`]): each pass is written once, generic over the layout, and the layout is
/// chosen once a pass, not once a term.
trait TermLayout {
    /// The column of `w` and the value of `K`'s term `t`, of the row of DOF `i` (row `n + i`
    /// of `R`).
    ///
    /// # Safety
    /// `t` is one of the run's terms of `K`, in the row of DOF `i`.
    unsafe fn k_term(&self, i: usize, t: usize) -> (usize, f64);

    /// The column of `Y` and the value of `E`'s term `t`, of row `r` of `R`.
    ///
    /// # Safety
    /// `t` is one of the run's terms of `E`, in row `r`.
    unsafe fn e_term(&self, r: usize, t: usize) -> (usize, f64);

    /// One row's `Σ K_rc w_c + Σ E_rc y_c` over its terms `k` of `K` and `e` of `E`, in the
    /// row `r = n + i` of `R` (of DOF `i`), summed from `0.0` in that order. `K`'s terms are
    /// added by [`add_products`] (unrolled by the row's length), `E`'s (at most one a row in a
    /// fused run) by [`add_few_products`].
    ///
    /// # Safety
    /// `k` and `e` are the row's terms, every column of `K` lies within `w` and every column
    /// of `E` within `y`.
    #[inline(always)]
    unsafe fn row_sum(
        &self,
        (i, r): (usize, usize),
        k: std::ops::Range<usize>,
        e: std::ops::Range<usize>,
        w: &[f64],
        y: &[f64],
    ) -> f64 {
        let mut acc = add_products(0.0, k.start, k.end.wrapping_sub(k.start), |t| {
            let (c, v) = self.k_term(i, t);
            v * w.get_unchecked(c)
        });
        add_few_products(&mut acc, e, |t| {
            let (c, v) = self.e_term(r, t);
            v * y.get_unchecked(c)
        });
        acc
    }
}

/// The number of terms below which [`add_products`] adds a row's terms in straight-line code.
const UNROLLED_TERMS: usize = 16;

/// `acc + p(t) + p(t + 1) + … + p(t + count − 1)`, added one by one from the left (the sum of
/// the plain loop `for s in t..t + count { acc += p(s) }`: the same operations in the same
/// order, the same bits), with `p = product`. The terms of a row are few (a 2D frame's rows of
/// `K` hold 3 to 15, the 990-DOF frame's 7.4 on average), so a loop's set-up, remainder and exit
/// cost as much as the products: a count below [`UNROLLED_TERMS`] jumps straight into its own
/// unrolled sum (issue 20, session 26: the gather's instructions a row 91 → 69 on the 990-DOF
/// frame); longer rows take blocks of 8 first.
///
/// # Safety
/// `product` is safe to call for every term `t .. t + count`.
#[inline(always)]
unsafe fn add_products(
    mut acc: f64,
    mut t: usize,
    mut count: usize,
    product: impl Fn(usize) -> f64,
) -> f64 {
    macro_rules! terms {
        ($($k:literal)*) => {{
            $(acc += product(t + $k);)*
        }};
    }
    while count >= UNROLLED_TERMS {
        terms!(0 1 2 3 4 5 6 7);
        (t, count) = (t + 8, count - 8);
    }
    match count {
        0 => {}
        1 => terms!(0),
        2 => terms!(0 1),
        3 => terms!(0 1 2),
        4 => terms!(0 1 2 3),
        5 => terms!(0 1 2 3 4),
        6 => terms!(0 1 2 3 4 5),
        7 => terms!(0 1 2 3 4 5 6),
        8 => terms!(0 1 2 3 4 5 6 7),
        9 => terms!(0 1 2 3 4 5 6 7 8),
        10 => terms!(0 1 2 3 4 5 6 7 8 9),
        11 => terms!(0 1 2 3 4 5 6 7 8 9 10),
        12 => terms!(0 1 2 3 4 5 6 7 8 9 10 11),
        13 => terms!(0 1 2 3 4 5 6 7 8 9 10 11 12),
        14 => terms!(0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        // 15 (`count < UNROLLED_TERMS` here).
        _ => terms!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
    }
    acc
}

/// `*acc += p(t)` for the terms `t` of `terms` in order (the plain loop's operations), with
/// `p = product`, for the terms of `E` in a row (at most one in a fused run): a single term
/// is added without a loop.
///
/// # Safety
/// `product` is safe to call for every term of `terms`.
#[inline(always)]
unsafe fn add_few_products(
    acc: &mut f64,
    terms: std::ops::Range<usize>,
    product: impl Fn(usize) -> f64,
) {
    if terms.end.wrapping_sub(terms.start) == 1 {
        *acc += product(terms.start);
    } else {
        for t in terms {
            *acc += product(t);
        }
    }
}

/// The terms of a fused run's `K` and `E` (in the order of the run's rows and ends).
#[derive(Debug, Clone)]
enum FusedTerms {
    /// 32-bit columns and 64-bit values: 12 bytes a term.
    Plain(PlainTerms),
    /// A 16-bit column offset and a 16-bit place in a table of the values: 4 bytes a term.
    Shared(SharedTerms),
}

impl Default for FusedTerms {
    fn default() -> Self {
        FusedTerms::Plain(PlainTerms::default())
    }
}

/// The terms of a fused run, each with its column and its value.
#[derive(Debug, Clone, Default)]
struct PlainTerms {
    k_cols: Vec<u32>,
    k_vals: Vec<f64>,
    e_cols: Vec<u32>,
    e_vals: Vec<f64>,
}

impl PlainTerms {
    /// The terms' reader for a pass ([`PlainReader`]).
    fn reader(&self) -> PlainReader {
        PlainReader {
            k_cols: self.k_cols.as_ptr(),
            k_vals: self.k_vals.as_ptr(),
            e_cols: self.e_cols.as_ptr(),
            e_vals: self.e_vals.as_ptr(),
        }
    }
}

/// The arrays of [`PlainTerms`] as raw pointers, copied into a pass once: the pass keeps them
/// in registers instead of reading them from the run a row (the compiler cannot tell that the
/// pass's writes leave the run's vectors alone; issue 20, session 26).
#[derive(Clone, Copy)]
struct PlainReader {
    k_cols: *const u32,
    k_vals: *const f64,
    e_cols: *const u32,
    e_vals: *const f64,
}

impl TermLayout for PlainReader {
    #[inline(always)]
    unsafe fn k_term(&self, _i: usize, t: usize) -> (usize, f64) {
        (*self.k_cols.add(t) as usize, *self.k_vals.add(t))
    }

    #[inline(always)]
    unsafe fn e_term(&self, _r: usize, t: usize) -> (usize, f64) {
        (*self.e_cols.add(t) as usize, *self.e_vals.add(t))
    }
}

/// One term of [`SharedTerms`] in 4 bytes: its column as a 16-bit offset from its row's own
/// column (the DOF `i` for a term of `K` in row `n + i`, whose columns are those of `w`; the
/// row `r` itself for a term of `E`, whose columns are those of `Y`) in the low half, and its
/// value as a 16-bit place in the run's table of distinct values in the high half. One 32-bit
/// word, read by one load: the passes are bound by their loads, and the two halves read as
/// two were a third slower than the plain layout (3 loads a term there, 4 here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SharedTerm(u32);

impl SharedTerm {
    /// The term of column `base + offset` and value `table[place]`.
    fn new(offset: i16, place: u16) -> Self {
        SharedTerm(u32::from(offset as u16) | (u32::from(place) << 16))
    }

    /// The term's column, from its row's own column `base`, and its value in `table`.
    ///
    /// # Safety
    /// The term's place lies within `table`.
    #[inline(always)]
    unsafe fn read(self, base: usize, table: *const f64) -> (usize, f64) {
        let offset = self.0 as u16 as i16;
        (
            base.wrapping_add_signed(isize::from(offset)),
            *table.add((self.0 >> 16) as usize),
        )
    }

    /// [`SharedTerm::read`], checked.
    ///
    /// # Panics
    /// When the place is not within `table` or the column below zero.
    fn at(self, base: usize, table: &[f64]) -> (usize, f64) {
        let offset = self.0 as u16 as i16;
        let column = base.checked_add_signed(isize::from(offset));
        (column.expect("a column"), table[(self.0 >> 16) as usize])
    }
}

/// The terms of a fused run banded within 2¹⁵ columns of their rows and of at most 2¹⁶
/// distinct values: a structure of repeated members and masses has few (13 in the 2D frame of
/// the `startup_memory` tests, of the shape of `scripts/bench/frame_model.py`'s), so a term
/// takes 4 bytes instead of 12
/// (issue 20: `K`'s 32-bit columns and 64-bit values were 9 MB of the 99 990-DOF frame).
#[derive(Debug, Clone, Default)]
struct SharedTerms {
    k: Vec<SharedTerm>,
    e: Vec<SharedTerm>,
    /// The distinct values, each as computed (the same bits).
    table: Vec<f64>,
}

impl SharedTerms {
    /// The terms' reader for a pass ([`SharedReader`]).
    fn reader(&self) -> SharedReader {
        SharedReader {
            k: self.k.as_ptr(),
            e: self.e.as_ptr(),
            table: self.table.as_ptr(),
        }
    }
}

/// The arrays of [`SharedTerms`] as raw pointers, copied into a pass once (as
/// [`PlainReader`]).
#[derive(Clone, Copy)]
struct SharedReader {
    k: *const SharedTerm,
    e: *const SharedTerm,
    table: *const f64,
}

impl TermLayout for SharedReader {
    #[inline(always)]
    unsafe fn k_term(&self, i: usize, t: usize) -> (usize, f64) {
        (*self.k.add(t)).read(i, self.table)
    }

    #[inline(always)]
    unsafe fn e_term(&self, r: usize, t: usize) -> (usize, f64) {
        (*self.e.add(t)).read(r, self.table)
    }

    /// The provided sum with each row's own column of `w` and of `y` taken once a row: a
    /// term's operand is then read at its offset from it, without an addition a term (the
    /// pass is bound by its operations a term).
    #[inline(always)]
    unsafe fn row_sum(
        &self,
        (i, r): (usize, usize),
        k: std::ops::Range<usize>,
        e: std::ops::Range<usize>,
        w: &[f64],
        y: &[f64],
    ) -> f64 {
        let table = self.table;
        let (terms, own) = (self.k, w.as_ptr().add(i));
        let mut acc = add_products(0.0, k.start, k.end.wrapping_sub(k.start), |t| {
            let term = (*terms.add(t)).0;
            *table.add((term >> 16) as usize) * *own.offset(isize::from(term as u16 as i16))
        });
        let (terms, own) = (self.e, y.as_ptr().add(r));
        add_few_products(&mut acc, e, |t| {
            let term = (*terms.add(t)).0;
            *table.add((term >> 16) as usize) * *own.offset(isize::from(term as u16 as i16))
        });
        acc
    }
}

impl FusedTerms {
    /// The number of terms of `K` and of `E`.
    fn lens(&self) -> (usize, usize) {
        match self {
            FusedTerms::Plain(p) => (p.k_vals.len(), p.e_vals.len()),
            FusedTerms::Shared(s) => (s.k.len(), s.e.len()),
        }
    }

    /// The column and value of `K`'s term `t` of the row of DOF `i`, checked (for the
    /// passes that are not the step's).
    ///
    /// # Panics
    /// When `t` is not a term of `K`.
    fn k_at(&self, i: usize, t: usize) -> (usize, f64) {
        match self {
            FusedTerms::Plain(p) => (p.k_cols[t] as usize, p.k_vals[t]),
            FusedTerms::Shared(s) => s.k[t].at(i, &s.table),
        }
    }

    /// The column and value of `E`'s term `t` of row `r`, checked.
    ///
    /// # Panics
    /// When `t` is not a term of `E`.
    fn e_at(&self, r: usize, t: usize) -> (usize, f64) {
        match self {
            FusedTerms::Plain(p) => (p.e_cols[t] as usize, p.e_vals[t]),
            FusedTerms::Shared(s) => s.e[t].at(r, &s.table),
        }
    }

    /// The bytes the terms hold on the heap (their capacity).
    fn heap_bytes(&self) -> usize {
        match self {
            FusedTerms::Plain(p) => {
                4 * (p.k_cols.capacity() + p.e_cols.capacity())
                    + 8 * (p.k_vals.capacity() + p.e_vals.capacity())
            }
            FusedTerms::Shared(s) => 4 * (s.k.capacity() + s.e.capacity()) + 8 * s.table.capacity(),
        }
    }
}

/// The terms of [`SharedTerms`], their values placed in the run's table while it is built.
impl DistinctValues {
    /// The term of column `c` in a row whose own column is `base`, of value `v`; `None` when
    /// the column is not within 2¹⁵ of `base` or the table is full.
    fn term(&mut self, base: usize, c: usize, v: f64) -> Option<SharedTerm> {
        let offset = i16::try_from(c as i64 - base as i64).ok()?;
        Some(SharedTerm::new(offset, self.place(v)?))
    }
}

impl FusedRun {
    /// Check (debug builds) what [`FusedRun::from_groups`] guarantees of the terms, which the
    /// unchecked sums rely on: the targets in `n .. 2n` (`k_columns = n`), the columns of `K`
    /// below `k_columns` and those of `E` below `e_columns`, the ends ascending to the numbers
    /// of terms, the places within the table.
    #[inline(always)]
    fn debug_assert_terms(&self, k_columns: usize, e_columns: usize) {
        if cfg!(debug_assertions) {
            let (n_k, n_e) = self.terms.lens();
            for (end, len) in [(&self.k_end, n_k), (&self.e_end, n_e)] {
                assert!(end.len() == self.targets.len());
                assert!(end.windows(2).all(|p| p[0] <= p[1]));
                assert!(end.last().map_or(0, |&e| e as usize) == len);
            }
            if let FusedTerms::Plain(p) = &self.terms {
                assert!(p.k_vals.len() == p.k_cols.len() && p.e_vals.len() == p.e_cols.len());
            }
            let (mut k0, mut e0) = (0, 0);
            for ((&target, &k_end), &e_end) in self.targets.iter().zip(&self.k_end).zip(&self.e_end)
            {
                let r = target as usize;
                assert!(r >= k_columns && r < 2 * k_columns);
                // `k_at` and `e_at` check the places and the offsets' sums.
                for t in k0..k_end as usize {
                    assert!(self.terms.k_at(r - k_columns, t).0 < k_columns);
                }
                for t in e0..e_end as usize {
                    assert!(self.terms.e_at(r, t).0 < e_columns);
                }
                (k0, e0) = (k_end as usize, e_end as usize);
            }
        }
    }

    /// The terms in the plain layout (the same values in the same order).
    fn plain_terms(&self) -> PlainTerms {
        let (n_k, n_e) = self.terms.lens();
        let mut p = PlainTerms {
            k_cols: Vec::with_capacity(n_k),
            k_vals: Vec::with_capacity(n_k),
            e_cols: Vec::with_capacity(n_e),
            e_vals: Vec::with_capacity(n_e),
        };
        let (mut k0, mut e0) = (0, 0);
        for ((&target, &k_end), &e_end) in self.targets.iter().zip(&self.k_end).zip(&self.e_end) {
            let r = target as usize;
            for t in k0..k_end as usize {
                let (c, v) = self.terms.k_at(r - self.n, t);
                p.k_cols.push(column_index(c));
                p.k_vals.push(v);
            }
            for t in e0..e_end as usize {
                let (c, v) = self.terms.e_at(r, t);
                p.e_cols.push(column_index(c));
                p.e_vals.push(v);
            }
            (k0, e0) = (k_end as usize, e_end as usize);
        }
        p
    }

    /// The terms in the shared layout, or `None` where a column is not within 2¹⁵ of its
    /// row's or there are more than 2¹⁶ distinct values.
    fn shared_terms(&self) -> Option<SharedTerms> {
        let (n_k, n_e) = self.terms.lens();
        let mut values = DistinctValues::default();
        let (mut k, mut e) = (Vec::with_capacity(n_k), Vec::with_capacity(n_e));
        let (mut k0, mut e0) = (0, 0);
        for ((&target, &k_end), &e_end) in self.targets.iter().zip(&self.k_end).zip(&self.e_end) {
            let r = target as usize;
            for t in k0..k_end as usize {
                let (c, v) = self.terms.k_at(r - self.n, t);
                k.push(values.term(r - self.n, c, v)?);
            }
            for t in e0..e_end as usize {
                let (c, v) = self.terms.e_at(r, t);
                e.push(values.term(r, c, v)?);
            }
            (k0, e0) = (k_end as usize, e_end as usize);
        }
        let table = values.into_table();
        Some(SharedTerms { k, e, table })
    }

    /// The heap bytes of the run: its rows, ends and terms.
    fn heap_bytes(&self) -> usize {
        4 * (self.targets.capacity() + self.k_end.capacity() + self.e_end.capacity())
            + self.terms.heap_bytes()
    }

    /// The fused form of the linear run made of the row groups `order` of `groups` (group
    /// indices, stably sorted by their row of `R`) over `n` DOFs, when its damping terms are
    /// `β K` up to at most one term a row (`E`: the mass-proportional diagonal) and the fused
    /// sweep has fewer terms than the run's `run_terms`; `None` otherwise (the run is then
    /// summed by groups, bit for bit as before).
    ///
    /// Read straight from the groups, row by row, without the run's merged copy: each row's
    /// terms are gathered into `scratch`, stably sorted by column and merged (sums in the
    /// run's order) into `merged`, once to find β, count the terms and place `K`'s values in
    /// the table of the shared layout, once more to write them into arrays of their final
    /// size (issue 20: the rows of merged terms of the whole run, beside the run itself, were
    /// the start-up's largest transient). `K` is written in the shared layout when it is larger
    /// than [`SHARED_FROM_BYTES`] plain and every term fits it; `E` (at most a term a row) is formed plain and then moved into the shared
    /// layout when it fits too, otherwise `K` goes back to the plain one.
    fn from_groups(groups: &SlotGroups, order: &[u32], run_terms: usize, n: usize) -> Option<Self> {
        let mut scratch: Vec<(usize, f64)> = Vec::new();
        let mut merged: Vec<(usize, f64)> = Vec::new();
        // β: the median ratio c_ij / k_ij over the off-diagonal places holding both.
        let mut ratios = Vec::new();
        let (mut n_targets, mut n_k) = (0, 0);
        // The table of `K`'s values, while every term fits the shared layout.
        let mut values = Some(DistinctValues::default());
        for row in groups.rows(order) {
            let target = groups.merged_row(row, &mut scratch, &mut merged);
            if merged.iter().any(|&(c, _)| c >= 2 * n) || target < n || target >= 2 * n {
                return None;
            }
            n_targets += 1;
            let i = target - n;
            for &(c, k) in merged.iter().filter(|t| t.0 < n && t.1 != 0.0) {
                n_k += 1;
                if values.as_mut().is_some_and(|t| t.term(i, c, k).is_none()) {
                    values = None;
                }
                if c == i {
                    continue;
                }
                if let Ok(p) = merged.binary_search_by_key(&(n + c), |t| t.0) {
                    let ratio = merged[p].1 / k;
                    if ratio.is_finite() && ratio != 0.0 {
                        ratios.push(ratio);
                    }
                }
            }
        }
        if ratios.is_empty() {
            return None;
        }
        // The median of the ratios sorted by `total_cmp`: the element a full sort puts at
        // `len / 2` (elements equal under `total_cmp` have the same bits).
        let middle = ratios.len() / 2;
        let beta = *ratios.select_nth_unstable_by(middle, f64::total_cmp).1;
        drop(ratios);
        if 12 * n_k <= SHARED_FROM_BYTES {
            values = None;
        }
        // `K`'s terms in their layout; `E` plain (moved below).
        let (mut shared_k, mut plain_k) = match values {
            Some(_) => (Vec::with_capacity(n_k), PlainTerms::default()),
            None => (
                Vec::new(),
                PlainTerms {
                    k_cols: Vec::with_capacity(n_k),
                    k_vals: Vec::with_capacity(n_k),
                    ..PlainTerms::default()
                },
            ),
        };
        let (mut e_cols, mut e_vals) =
            (Vec::with_capacity(n_targets), Vec::with_capacity(n_targets));
        // `E` may have at most one term a row: more, and the run is not fused.
        let mut f = FusedRun {
            beta,
            n,
            targets: Vec::with_capacity(n_targets),
            k_end: Vec::with_capacity(n_targets),
            e_end: Vec::with_capacity(n_targets),
            terms: FusedTerms::default(),
        };
        let mut k_len = 0;
        for row in groups.rows(order) {
            let target = groups.merged_row(row, &mut scratch, &mut merged);
            let terms = &merged;
            let i = target - n;
            let k_at = |j: usize| {
                terms
                    .binary_search_by_key(&j, |t| t.0)
                    .map_or(0.0, |p| terms[p].1)
            };
            for &(c, v) in terms.iter().filter(|t| t.0 < n && t.1 != 0.0) {
                match values.as_mut() {
                    // Every term was placed by the first pass.
                    Some(table) => shared_k.push(table.term(i, c, v).expect("placed")),
                    None => {
                        plain_k.k_cols.push(column_index(c));
                        plain_k.k_vals.push(v);
                    }
                }
                k_len += 1;
            }
            for &(c, v) in terms.iter().filter(|t| t.0 >= n) {
                let e = v - beta * k_at(c - n);
                if e.abs() > 4.0 * f64::EPSILON * v.abs() {
                    if e_vals.len() == n_targets {
                        return None;
                    }
                    e_cols.push(column_index(c));
                    e_vals.push(e);
                }
            }
            // K terms without a damping partner: E holds −β k there.
            for &(c, k) in terms.iter().filter(|t| t.0 < n && t.1 != 0.0) {
                if terms.binary_search_by_key(&(n + c), |t| t.0).is_err() {
                    if e_vals.len() == n_targets {
                        return None;
                    }
                    e_cols.push(column_index(n + c));
                    e_vals.push(-(beta * k));
                }
            }
            f.targets.push(column_index(target));
            f.k_end.push(column_index(k_len));
            f.e_end.push(column_index(e_vals.len()));
        }
        // Fused only where the damping really is `β K` up to (at most) a diagonal, and the
        // fused sweep is the shorter one.
        let fused_terms = k_len + e_vals.len() + n;
        if !(e_vals.len() <= f.targets.len() && fused_terms < run_terms) {
            return None;
        }
        f.terms = match values {
            Some(mut table) => {
                // `E` in the shared layout too, or both plain.
                let mut shared_e = Vec::with_capacity(e_vals.len());
                let mut e0 = 0;
                for (&target, &e_end) in f.targets.iter().zip(&f.e_end) {
                    let r = target as usize;
                    for t in e0..e_end as usize {
                        match table.term(r, e_cols[t] as usize, e_vals[t]) {
                            Some(term) => shared_e.push(term),
                            None => break,
                        }
                    }
                    e0 = e_end as usize;
                }
                if shared_e.len() == e_vals.len() {
                    FusedTerms::Shared(SharedTerms {
                        k: shared_k,
                        e: shared_e,
                        table: table.into_table(),
                    })
                } else {
                    let shared = FusedTerms::Shared(SharedTerms {
                        k: shared_k,
                        e: Vec::new(),
                        table: table.into_table(),
                    });
                    let mut plain_k = PlainTerms {
                        k_cols: Vec::with_capacity(k_len),
                        k_vals: Vec::with_capacity(k_len),
                        ..PlainTerms::default()
                    };
                    let mut k0 = 0;
                    for (&target, &k_end) in f.targets.iter().zip(&f.k_end) {
                        for t in k0..k_end as usize {
                            let (c, v) = shared.k_at(target as usize - n, t);
                            plain_k.k_cols.push(column_index(c));
                            plain_k.k_vals.push(v);
                        }
                        k0 = k_end as usize;
                    }
                    e_cols.shrink_to_fit();
                    e_vals.shrink_to_fit();
                    FusedTerms::Plain(PlainTerms {
                        e_cols,
                        e_vals,
                        ..plain_k
                    })
                }
            }
            None => {
                e_cols.shrink_to_fit();
                e_vals.shrink_to_fit();
                FusedTerms::Plain(PlainTerms {
                    e_cols,
                    e_vals,
                    ..plain_k
                })
            }
        };
        Some(f)
    }
}

/// One pass of [`StateSpace::residual`], in slot order.
#[derive(Debug, Clone)]
enum ResidualPass {
    /// A run of consecutive linear (or inert) slots.
    Linear(LinearRun),
    /// A run of consecutive linear slots with stiffness-proportional damping, fused.
    Fused(FusedRun),
    /// A slot evaluated through its element's law.
    Generic(usize),
}

/// The row groups of the linear slots, in slot order (the groups of a slot contiguous, in the
/// order the slot gave them): the input of [`residual_plan`].
#[derive(Debug, Default)]
struct SlotGroups {
    /// `(slot, row of R, end of the group's terms)` (12 bytes a group: in 32 bits, as the
    /// terms' columns).
    groups: Vec<(u32, u32, u32)>,
    cols: Vec<u32>,
    vals: Vec<f64>,
}

impl SlotGroups {
    /// Append the terms of linear slot `slot` (slots in increasing order).
    fn push(&mut self, slot: usize, t: &LinearTerms) {
        let base = self.cols.len();
        self.cols.extend_from_slice(&t.cols);
        self.vals.extend_from_slice(&t.vals);
        for &(target, end) in &t.rows {
            self.groups.push((
                column_index(slot),
                column_index(target),
                column_index(base + end),
            ));
        }
    }

    /// Release the capacity grown beyond the groups and terms held.
    fn shrink_to_fit(&mut self) {
        self.groups.shrink_to_fit();
        self.cols.shrink_to_fit();
        self.vals.shrink_to_fit();
    }

    /// The row of `R` group `g` adds to.
    fn target(&self, g: u32) -> usize {
        self.groups[g as usize].1 as usize
    }

    /// The terms of group `g`: a range of `cols` / `vals`.
    fn terms(&self, g: u32) -> std::ops::Range<usize> {
        let g = g as usize;
        let start = if g == 0 {
            0
        } else {
            self.groups[g - 1].2 as usize
        };
        start..self.groups[g].2 as usize
    }

    /// The groups of `order` (sorted by their row of `R`) one row of `R` at a time.
    fn rows<'a>(&'a self, order: &'a [u32]) -> impl Iterator<Item = &'a [u32]> + 'a {
        order.chunk_by(move |&a, &b| self.target(a) == self.target(b))
    }

    /// The terms of the groups `row` (all adding to one row of `R`, in the run's order), by
    /// column, those of a column summed in the run's order: `merged` (`scratch`: the terms
    /// as gathered). Returns the row of `R`.
    fn merged_row(
        &self,
        row: &[u32],
        scratch: &mut Vec<(usize, f64)>,
        merged: &mut Vec<(usize, f64)>,
    ) -> usize {
        scratch.clear();
        merged.clear();
        for &g in row {
            let r = self.terms(g);
            scratch.extend(
                self.cols[r.clone()]
                    .iter()
                    .map(|&c| c as usize)
                    .zip(self.vals[r].iter().copied()),
            );
        }
        scratch.sort_by_key(|t| t.0);
        for &(c, v) in scratch.iter() {
            match merged.last_mut() {
                Some(last) if last.0 == c => last.1 += v,
                _ => merged.push((c, v)),
            }
        }
        self.target(row[0])
    }

    /// The row groups of the linear slots of `slots` over `n` DOFs, their terms classified
    /// again from the elements (a slot moved to the generic path or removed has none). The
    /// terms and their order are those of the start-up classification, so [`residual_plan`]
    /// of the result merges every row's sums in the order it did.
    fn from_slots(slots: &[ElementSlot], maps: &[u32], n: usize) -> Self {
        let mut out = SlotGroups::default();
        for (k, slot) in slots.iter().enumerate() {
            if matches!(slot.kernel, SlotKernel::Linear) {
                let (_, terms) = SlotKernel::classify(slot.element.as_ref(), slot.dof_map(maps), n);
                out.push(k, &terms);
            }
        }
        out
    }
}

/// A column index of `Y` (or of its DOFs) in 32 bits: the terms of the residual's linear
/// runs, the Rayleigh element's contributions.
///
/// # Panics
/// Beyond 2³² − 1 (a state of more than four billion entries).
pub(super) fn column_index(c: usize) -> u32 {
    u32::try_from(c).expect("a state index fits 32 bits")
}

/// The kernel of every slot.
fn kernels(slots: &[ElementSlot]) -> Vec<SlotKernel> {
    slots.iter().map(|s| s.kernel).collect()
}

/// The passes of [`StateSpace::residual`] over slots of kernels `kernels`: consecutive
/// precomputed linear slots merged into one [`LinearRun`] (inert slots skipped), generic slots
/// one by one. `groups` holds the row groups of the linear slots, in slot order.
///
/// A run is made fused straight from `groups` ([`FusedRun::from_groups`]); only a run that
/// is not fused is copied out of them into a [`LinearRun`].
fn residual_plan(kernels: &[SlotKernel], groups: &SlotGroups, n: usize) -> Vec<ResidualPass> {
    let mut plan = Vec::new();
    // Groups of the run under way (indices into `groups.groups`), in slot order (at most all
    // of them: sized once, not grown by doubling).
    let mut run_groups: Vec<u32> = Vec::with_capacity(groups.groups.len());
    let mut next = 0;
    let flush = |run_groups: &mut Vec<u32>, plan: &mut Vec<ResidualPass>| {
        if run_groups.is_empty() {
            return;
        }
        // A stable sort: a row's groups stay in slot order.
        run_groups.sort_by_key(|&g| groups.target(g));
        let n_terms: usize = run_groups.iter().map(|&g| groups.terms(g).len()).sum();
        if let Some(fused) = FusedRun::from_groups(groups, run_groups, n_terms, n) {
            run_groups.clear();
            plan.push(ResidualPass::Fused(fused));
            return;
        }
        let run = LinearRun::from_groups(groups, run_groups, n_terms);
        run_groups.clear();
        plan.push(ResidualPass::Linear(run));
    };
    for (k, kernel) in kernels.iter().enumerate() {
        match kernel {
            SlotKernel::Inert => {}
            SlotKernel::Linear => {
                while next < groups.groups.len() && groups.groups[next].0 as usize == k {
                    run_groups.push(column_index(next));
                    next += 1;
                }
            }
            SlotKernel::Generic => {
                flush(&mut run_groups, &mut plan);
                plan.push(ResidualPass::Generic(k));
            }
        }
    }
    flush(&mut run_groups, &mut plan);
    plan.shrink_to_fit();
    plan
}

/// Scratch buffers for gathering element inputs (sized to the largest element).
#[derive(Debug, Clone)]
pub struct ElementWorkspace {
    u: Vec<f64>,
    v: Vec<f64>,
    s: Vec<f64>,
    r: Vec<f64>,
    sdot: Vec<f64>,
    u1: Vec<f64>,
    r1: Vec<f64>,
    s1: Vec<f64>,
    /// Dual-number inputs and outputs of the tangent Rayleigh terms.
    ud: Vec<Dual64>,
    vd: Vec<Dual64>,
    sd: Vec<Dual64>,
    rd: Vec<Dual64>,
    sdotd: Vec<Dual64>,
    /// `ṡ` at the probe point of the tangent Rayleigh terms.
    sdot1: Vec<f64>,
    /// The committed tangents of the slots with committed tangent Rayleigh damping.
    committed: Vec<f64>,
    /// One element's condensed tangent ([`StateSpace::condensed_tangent`]), by columns.
    kt: Vec<f64>,
    /// `w = u + β v` of a fused linear run (one entry a DOF; empty: formed term by term).
    weighted: Vec<f64>,
}

impl ElementWorkspace {
    /// `w` of the fused pass, one entry a DOF, for [`FoldedRows::predictor`] and
    /// [`FoldedRows::gather`] (empty when the workspace was made before the partition's
    /// residual was fused).
    pub fn folded_weights(&mut self) -> &mut [f64] {
        &mut self.weighted
    }

    /// Buffers for elements of up to `max_dofs` DOFs and `max_states` extra states; the
    /// dual-number ones (used by the tangent Rayleigh terms only) for up to `dual_dofs` DOFs
    /// and `dual_states` states, so that the Rayleigh element over every DOF of a large model
    /// does not give each workspace five dual vectors of its size (issue 20).
    fn new(max_dofs: usize, max_states: usize, dual_dofs: usize, dual_states: usize) -> Self {
        let zero = Dual64::from(0.0);
        Self {
            u: vec![0.0; max_dofs],
            v: vec![0.0; max_dofs],
            s: vec![0.0; max_states],
            r: vec![0.0; max_dofs],
            sdot: vec![0.0; max_states],
            u1: vec![0.0; max_dofs],
            r1: vec![0.0; max_dofs],
            s1: vec![0.0; max_states],
            ud: vec![zero; dual_dofs],
            vd: vec![zero; dual_dofs],
            sd: vec![zero; dual_states],
            rd: vec![zero; dual_dofs],
            sdotd: vec![zero; dual_states],
            sdot1: vec![0.0; max_states],
            committed: Vec::new(),
            kt: vec![0.0; dual_dofs * dual_dofs],
            weighted: Vec::new(),
        }
    }
}

/// `M Ẏ + R(Y) = F(t)` of one substructure's computed elements (Abbiati et al. 2019, eqs 1–2).
#[derive(Debug, Clone)]
pub struct StateSpace {
    /// Substructure name.
    pub name: String,
    /// Whether the substructure is physical.
    pub physical: bool,
    /// DOFs (order of `u` and `v`), shared with the Rayleigh element over them (issue 20: its
    /// copy was 1.6 MB of the 10⁵-DOF chain).
    pub dofs: Arc<[DofRef]>,
    /// Number of extra states.
    pub n_states: usize,
    /// Nonzero entries of the mass matrix `m` over the DOFs, in compressed rows (what the
    /// start-up path and `O(nnz)` products use).
    pub(crate) mass_entries: CompressedRows,
    /// The dense `m`, formed from `mass_entries` on the first call of [`StateSpace::mass`].
    mass_dense: OnceLock<DMatrix<f64>>,
    /// Element slots.
    pub slots: Vec<ElementSlot>,
    /// The DOF maps of the slots, one after another ([`ElementSlot`]'s range; a removed
    /// slot's entries stay, unused).
    maps: Vec<u32>,
    /// The passes of [`StateSpace::residual`] over `slots` (rebuilt whenever a slot's kernel
    /// changes or a slot is removed).
    residual_plan: Vec<ResidualPass>,
    /// Incremented whenever `residual_plan` is rebuilt ([`StateSpace::plan_version`]).
    plan_version: u64,
    /// Nonzero entries of `J0 = ∂R/∂Y` at the zero state (with the estimate of a physical
    /// specimen), in compressed rows; empty after [`StateSpace::release_j0`] (issue 20: memory
    /// a DOF), formed again from the elements on the next read ([`StateSpace::j0_entries`]).
    j0_entries: OnceLock<CompressedRows>,
    /// Whether `j0_entries` equal, to the last bit, what [`StateSpace::assemble_j0`] gives from
    /// the slots, the estimate and the tangent Rayleigh terms as they are now: only then may
    /// they be released (every change that breaks it forms them first).
    j0_reassembles: bool,
    /// The dense `J0`, formed from `j0_entries` on the first call of [`StateSpace::j0`].
    j0_dense: OnceLock<DMatrix<f64>>,
    /// Initial state `Y0`.
    pub y0: DVector<f64>,
    /// Estimated specimen stiffness/damping included in `j0` (physical substructures).
    pub estimate: Option<Estimate>,
    loads: Vec<(usize, TimeFunction)>,
    seismic: Vec<(DVector<f64>, TimeFunction)>,
    /// The ground motion along each DOF (for absolute accelerations), `u32::MAX` for none
    /// ([`StateSpace::ground_dof`]; 4 bytes a DOF instead of the 16 of an `Option<usize>`,
    /// issue 20).
    ground_dof: Vec<u32>,
    ground: Vec<TimeFunction>,
    /// External nodal loads set between steps by a front end (step-by-step co-simulation),
    /// one per DOF, held until changed; empty (and not added to `f(t)`, so that a run without
    /// them computes the same bits) until one has been set (issue 20: a vector of `N` zeros
    /// every run held).
    external: Vec<f64>,
    /// Slots moved to the generic path by [`StateSpace::set_element_parameter`] so far:
    /// whoever keeps matrices built from [`StateSpace::linear_tangent_entries`] (Newton's
    /// method) rebuilds them when this changes.
    kernel_changes: u64,
}

impl StateSpace {
    /// Build from computed elements `(name, element, initial state)`, read where they are
    /// (`elements` is walked twice: the slots, then the initial states).
    ///
    /// Borrowed, not an owned list: a list of the partition's elements beside the slots was
    /// 56 bytes an element (up to twice that grown by doubling) alive through the build's peak
    /// (issue 20: 14.7 MB of the 10⁵-DOF chain's start-up).
    pub fn new<'e>(
        model: &Model,
        name: &str,
        physical: bool,
        dofs: impl Into<Arc<[DofRef]>>,
        elements: impl Iterator<Item = (&'e ElementName, &'e ElementRef, &'e [f64])> + Clone,
        estimate: Option<&Estimate>,
    ) -> Result<Self, ModelError> {
        let dofs: Arc<[DofRef]> = dofs.into();
        let mut diag = Diagnostics::new(&model.source);
        let n = dofs.len();
        let (mut n_elements, mut n_map) = (0, 0);
        for (_, e, _) in elements.clone() {
            n_elements += 1;
            n_map += e.dofs().len();
        }
        let mut slots = Vec::with_capacity(n_elements);
        let mut maps: Vec<u32> = Vec::with_capacity(n_map);
        let mut groups = SlotGroups::default();
        let mut offset = 0;
        let index = super::DofIndex::new(&dofs);
        let small = |x: usize| u32::try_from(x).expect("a slot's offsets fit 32 bits");
        for (ename, e, _) in elements.clone() {
            let map_start = maps.len();
            maps.extend(e.dofs().iter().map(|d| DofMap::entry(index.get(d))));
            let map = DofMap::new(&maps[map_start..]);
            let stores_energy = stores_energy(e.as_ref());
            let (kernel, terms) = SlotKernel::classify(e.as_ref(), map, n);
            groups.push(slots.len(), &terms);
            drop(terms);
            let (name_table, name_index) = ename.clone().into_parts();
            slots.push(ElementSlot {
                name_table,
                name_index,
                element: e.clone(),
                map_start: small(map_start),
                state_offset: small(offset),
                n_states: small(e.n_states()),
                stores_energy,
                absorbed_energy_state: e
                    .state_names()
                    .iter()
                    .position(|n| n == "e")
                    .map_or(u32::MAX, small),
                kernel,
                tangent_rayleigh: None,
            });
            offset += e.n_states();
        }
        let ns = offset;
        let big = 2 * n + ns;
        // The residual's plan first, and the row groups it is read from released before `J0`
        // and the mass are assembled (issue 20: every linear term held a second time through
        // the assembly raised the start-up's peak).
        // The groups grew by doubling: at their size before the plan is built beside them
        // (issue 20: up to 8 MB of the 10⁵-DOF chain's peak was unused capacity).
        groups.shrink_to_fit();
        let plan = residual_plan(&kernels(&slots), &groups, n);
        drop(groups);
        // Compressed rows assembled from the contributions in the order the dense assembly
        // added them: each entry sums its contributions in that order from 0, so the values
        // equal the dense sums to the last bit (the zero terms skipped change no sum).
        let j0_entries = assemble_tangent(&dofs, &slots, &maps, big, |_| true, estimate);
        let mass_entries = CompressedRows::assemble(n, |add| emit_mass(&slots, &maps, add));
        let mut mass_diagonal = vec![0.0; n];
        for (i, j, m) in mass_entries.iter() {
            if i == j {
                mass_diagonal[i] = m;
            }
        }
        // Mass must be positive definite: name the first massless DOF.
        for (i, d) in dofs.iter().enumerate() {
            if mass_diagonal[i] <= 0.0 {
                diag.push(
                    format!("substructure.{name}"),
                    format!(
                        "{d} has no mass in this substructure, so its matrix D = M + c·J0 is \
                         singular; give the node a `mass` element here (or a `split` share of one)"
                    ),
                );
            }
        }
        // A lumped (diagonal) mass with positive entries is positive definite as it stands.
        let diagonal = mass_entries.is_diagonal();
        if !diag.has_errors()
            && n > 0
            && !diagonal
            && dense_from_entries(n, &mass_entries).cholesky().is_none()
        {
            diag.push(
                format!("substructure.{name}"),
                "the mass matrix is not positive definite (check the `linear` elements' m)",
            );
        }
        if diag.has_errors() {
            return Err(diag.into_error());
        }
        let mut y0 = DVector::zeros(big);
        for (i, d) in dofs.iter().enumerate() {
            let (u0, v0) = model.initial(d);
            y0[i] = u0;
            y0[n + i] = v0;
        }
        for ((_, _, s0), slot) in elements.zip(&slots) {
            for (k, x) in s0.iter().enumerate() {
                y0[2 * n + slot.state_offset() + k] = *x;
            }
        }
        let loads = model
            .loads
            .iter()
            .filter_map(|l| index.get(&l.dof).map(|k| (k, l.function.clone())))
            .collect();
        let seismic = model
            .ground_motions
            .iter()
            .map(|g| {
                (
                    seismic_vector(slots.iter().map(|s| &s.element), &dofs, &g.direction),
                    g.acceleration.clone(),
                )
            })
            .filter(|(p, _)| p.amax() > 0.0)
            .collect();
        let ground_dof = dofs
            .iter()
            .map(|d| {
                (model.ground_motions.iter())
                    .position(|g| g.direction == d.dof)
                    .map_or(u32::MAX, |g| {
                        u32::try_from(g).expect("a ground motion index fits 32 bits")
                    })
            })
            .collect();
        let ground = model
            .ground_motions
            .iter()
            .map(|g| g.acceleration.clone())
            .collect();
        drop(index);
        Ok(Self {
            name: name.to_string(),
            physical,
            dofs,
            n_states: ns,
            mass_entries,
            mass_dense: OnceLock::new(),
            residual_plan: plan,
            plan_version: 0,
            slots,
            maps,
            j0_entries: OnceLock::from(j0_entries),
            j0_reassembles: true,
            j0_dense: OnceLock::new(),
            y0,
            estimate: estimate.cloned(),
            loads,
            seismic,
            ground_dof,
            ground,
            external: Vec::new(),
            kernel_changes: 0,
        })
    }

    /// An empty state space (no DOFs): the placeholder left behind while a partition is
    /// moved to a worker thread. Allocation-free.
    pub fn empty() -> Self {
        Self {
            name: String::new(),
            physical: false,
            dofs: Arc::new([]),
            n_states: 0,
            mass_entries: CompressedRows::default(),
            mass_dense: OnceLock::new(),
            slots: Vec::new(),
            maps: Vec::new(),
            residual_plan: Vec::new(),
            plan_version: 0,
            j0_entries: OnceLock::from(CompressedRows::default()),
            j0_reassembles: true,
            j0_dense: OnceLock::new(),
            y0: DVector::zeros(0),
            estimate: None,
            loads: Vec::new(),
            seismic: Vec::new(),
            ground_dof: Vec::new(),
            ground: Vec::new(),
            external: Vec::new(),
            kernel_changes: 0,
        }
    }

    /// How many slots [`StateSpace::set_element_parameter`] has moved to the generic path
    /// (their tangent then follows the state through [`StateSpace::add_current_tangent`]
    /// instead of [`StateSpace::linear_tangent_entries`]).
    pub fn kernel_changes(&self) -> u64 {
        self.kernel_changes
    }

    /// Replace the estimated specimen stiffness/damping in `J0` (the integrator must then
    /// rebuild its operators).
    pub fn set_estimate(&mut self, estimate: Option<Estimate>) {
        let mut j0 = self.take_j0();
        if let Some(old) = self.estimate.take() {
            add_estimate(&mut j0, &self.dofs, &old, -1.0);
        }
        if let Some(new) = &estimate {
            add_estimate(&mut j0, &self.dofs, new, 1.0);
        }
        self.estimate = estimate;
        // A dense copy already handed out follows the entries (same values, in place).
        if let Some(dense) = self.j0_dense.get_mut() {
            dense.fill(0.0);
            for (i, j, v) in j0.iter() {
                dense[(i, j)] = v;
            }
        }
        // Updated in place, not assembled: a fresh assembly may differ at round-off.
        self.put_j0(j0, false);
    }

    /// `J0`'s entries taken out to be changed (formed from the elements first if released);
    /// [`StateSpace::put_j0`] puts them back.
    fn take_j0(&mut self) -> CompressedRows {
        match self.j0_entries.take() {
            Some(j0) => j0,
            None => self.assemble_j0(),
        }
    }

    /// Put `J0`'s entries back (after [`StateSpace::take_j0`]); `reassembles`: whether they
    /// are still what [`StateSpace::assemble_j0`] gives.
    fn put_j0(&mut self, j0: CompressedRows, reassembles: bool) {
        self.j0_entries = OnceLock::from(j0);
        self.j0_reassembles = self.j0_reassembles && reassembles;
    }

    /// Free `J0`'s entries (issue 20: memory a DOF) once the integrator has built what it
    /// steps with from them, when the slots, the estimate and the tangent Rayleigh terms as
    /// they are now give them again to the last bit (the assembly of [`StateSpace::new`]: no
    /// parameter set, no estimate changed since the last assembly). Whatever reads them later
    /// ([`StateSpace::j0_entries`], [`StateSpace::d_rows`], [`StateSpace::j0`], a parameter
    /// change, [`StateSpace::reassemble_tangent`]) forms them again first, the same bits.
    /// Whether they were freed. Frees only.
    pub fn release_j0(&mut self) -> bool {
        self.j0_reassembles && self.j0_entries.take().is_some()
    }

    /// Whether `J0`'s entries are released ([`StateSpace::release_j0`]) and not formed again
    /// since.
    pub fn j0_released(&self) -> bool {
        self.j0_entries.get().is_none()
    }

    /// `J0`'s entries assembled from the elements as they are now: the triplets of
    /// [`StateSpace::new`] in the same order, then the `β K_0` entries of tangent Rayleigh
    /// damping ([`StateSpace::add_tangent_rayleigh`], with the start-up `K_0`) slot by slot.
    /// Allocates.
    fn assemble_j0(&self) -> CompressedRows {
        let size = self.size();
        let mut j0 = assemble_tangent(
            &self.dofs,
            &self.slots,
            &self.maps,
            size,
            |_| true,
            self.estimate.as_ref(),
        );
        let n = self.dofs.len();
        for slot in &self.slots {
            if let Some(t) = &slot.tangent_rayleigh {
                j0 = with_rayleigh_tangent(size, j0, n, slot.dof_map(&self.maps), t.beta, &t.k0);
            }
        }
        j0
    }

    /// Change parameter `parameter` of element `slot` at run time (online model updating,
    /// Abbiati et al. 2020, §2.1). The first call on a slot moves it to the generic path
    /// (its law evaluated through [`crate::elements::Element::restoring`], so that a new value
    /// of a linear element's parameter counts) and gives the slot its own copy of the element
    /// (elements are shared with the model): it allocates, later calls do not. The integrator's
    /// iteration matrices are not rebuilt.
    pub fn set_element_parameter(
        &mut self,
        slot: usize,
        parameter: &str,
        value: f64,
    ) -> Result<(), String> {
        if slot >= self.slots.len() {
            return Err(format!("no element {slot} in `{}`", self.name));
        }
        // `J0` stays the tangent factored (the integrator's): formed from the elements before
        // the change if released, and held from now on.
        let j0 = self.take_j0();
        self.put_j0(j0, false);
        let s = &mut self.slots[slot];
        if !matches!(s.kernel, SlotKernel::Generic) {
            s.kernel = SlotKernel::Generic;
            self.kernel_changes += 1;
            let groups = SlotGroups::from_slots(&self.slots, &self.maps, self.dofs.len());
            self.residual_plan = residual_plan(&kernels(&self.slots), &groups, self.dofs.len());
            self.plan_version += 1;
        }
        let s = &mut self.slots[slot];
        if std::sync::Arc::get_mut(&mut s.element).is_none() {
            s.element = std::sync::Arc::from(s.element.clone_box());
        }
        let element = std::sync::Arc::get_mut(&mut s.element).expect("own copy");
        element.set_parameter(parameter, value)
    }

    /// Give element `element` (a hysteretic element with Rayleigh damping) the stiffness-
    /// proportional term `β K v` with `K` its committed or current tangent
    /// ([`RayleighStiffness`]; [`TangentRayleigh`]), `k0` its initial stiffness, left out of
    /// the substructure's Rayleigh element. `J0` gets `β K_0` in the `∂r/∂v` block (the
    /// iteration matrix stays the initial tangent's). Build time only; an unknown name or
    /// `initial` changes nothing.
    pub(crate) fn add_tangent_rayleigh(
        &mut self,
        element: &str,
        beta: f64,
        stiffness: RayleighStiffness,
        k0: &DMatrix<f64>,
    ) {
        let n = self.dofs.len();
        let size = self.size();
        let committed_len: usize = self
            .slots
            .iter()
            .filter_map(|s| s.tangent_rayleigh.as_ref())
            .filter_map(|t| t.committed.map(|_| t.k0.len()))
            .sum();
        let Some(index) = self.slots.iter().position(|s| s.name() == element) else {
            return;
        };
        let committed = match stiffness {
            RayleighStiffness::Initial => return,
            RayleighStiffness::Committed => Some(committed_len),
            RayleighStiffness::Current => None,
        };
        // [`StateSpace::assemble_j0`] adds the terms slot by slot: the same sums only when
        // they come in that order, each slot once.
        let in_order = self.slots[index..]
            .iter()
            .all(|s| s.tangent_rayleigh.is_none());
        let j0 = self.take_j0();
        let slot = &mut self.slots[index];
        let j0 = with_rayleigh_tangent(size, j0, n, slot.dof_map(&self.maps), beta, k0.as_slice());
        slot.tangent_rayleigh = Some(Box::new(TangentRayleigh {
            beta,
            committed,
            k0: k0.as_slice().to_vec(),
        }));
        self.put_j0(j0, in_order);
        self.j0_dense = OnceLock::new();
    }

    /// Whether an element has Rayleigh damping with its committed tangent: the stepper must
    /// then call [`StateSpace::commit_tangent_rayleigh`] at the start of every step.
    pub fn has_committed_rayleigh(&self) -> bool {
        self.slots.iter().any(|s| {
            s.tangent_rayleigh
                .as_ref()
                .is_some_and(|t| t.committed.is_some())
        })
    }

    /// Keep, in `ws`, the tangent `K_c` of every element with committed-tangent Rayleigh
    /// damping at the state `y` the step starts from (the last committed one); it stays
    /// frozen until the next call. At a state where the element's DOFs do not move, its
    /// initial stiffness. Allocation-free.
    pub fn commit_tangent_rayleigh(&self, y: &[f64], ws: &mut ElementWorkspace) {
        for slot in &self.slots {
            let Some(TangentRayleigh {
                committed: Some(offset),
                k0,
                ..
            }) = slot.tangent_rayleigh.as_deref()
            else {
                continue;
            };
            let ne = slot.n_dofs();
            self.gather(slot, y, ws);
            if ws.v[..ne].iter().all(|v| *v == 0.0) {
                ws.committed[*offset..*offset + ne * ne].copy_from_slice(k0);
                continue;
            }
            Self::condensed_tangent(slot, ws);
            ws.committed[*offset..*offset + ne * ne].copy_from_slice(&ws.kt[..ne * ne]);
        }
    }

    /// The condensed tangent `K = ∂r/∂u + ∂r/∂s · ∂ṡ/∂v` of a slot at the workspace's `u`,
    /// `s`, along the motion `v` (taken at [`Self::probe`]), into `ws.kt` by columns
    /// (`ne²` entries). Allocation-free.
    fn condensed_tangent(slot: &ElementSlot, ws: &mut ElementWorkspace) {
        let ne = slot.n_dofs();
        let ns = slot.n_states();
        slot.element.restoring(
            &ws.u[..ne],
            &ws.v[..ne],
            &ws.s[..ns],
            &mut ws.r[..ne],
            &mut ws.sdot[..ns],
        );
        Self::probe(slot, ws);
        for j in 0..ne {
            // At the probe point: ∂ṡ/∂v_j, then column j: ∂r/∂u_j + ∂r/∂s · ∂ṡ/∂v_j.
            for i in 0..ne {
                ws.ud[i] = Dual64::from(ws.u1[i]);
                ws.vd[i] = Dual64::new(ws.v[i], if i == j { 1.0 } else { 0.0 });
            }
            for k in 0..ns {
                ws.sd[k] = Dual64::from(ws.s1[k]);
            }
            Self::restoring_dual_at(slot, ws);
            for k in 0..ns {
                ws.sd[k] = Dual64::new(ws.s1[k], ws.sdotd[k].eps);
            }
            for i in 0..ne {
                ws.ud[i] = Dual64::new(ws.u1[i], if i == j { 1.0 } else { 0.0 });
                ws.vd[i] = Dual64::from(ws.v[i]);
            }
            Self::restoring_dual_at(slot, ws);
            for i in 0..ne {
                ws.kt[j * ne + i] = ws.rd[i].eps;
            }
        }
    }

    /// The Rayleigh force `β K v` of a slot with tangent Rayleigh damping on the element DOFs,
    /// into `ws.r1`; `ws` holds the slot's `u`, `v`, `s` and `ṡ` (just evaluated).
    ///
    /// The current tangent's `K v` is the directional derivative `∂r/∂u · v + ∂r/∂s · ṡ` (one
    /// dual-number evaluation; equal to `K_t v` for the rate-independent laws, whose `ṡ` is
    /// homogeneous of degree one in `v`), taken at [`Self::probe`] a tiny step ahead along
    /// the motion, so that a state the return mapping left exactly on a yield bound takes the
    /// tangent of the motion that follows (post-yield when loading on, elastic when unloading).
    fn tangent_rayleigh_local(slot: &ElementSlot, t: &TangentRayleigh, ws: &mut ElementWorkspace) {
        let ne = slot.n_dofs();
        match t.committed {
            Some(offset) => {
                let kc = &ws.committed[offset..offset + ne * ne];
                for i in 0..ne {
                    let mut f = 0.0;
                    for j in 0..ne {
                        f += kc[j * ne + i] * ws.v[j];
                    }
                    ws.r1[i] = t.beta * f;
                }
            }
            None => {
                let ns = slot.n_states();
                Self::probe(slot, ws);
                for i in 0..ne {
                    ws.ud[i] = Dual64::new(ws.u1[i], ws.v[i]);
                    ws.vd[i] = Dual64::from(ws.v[i]);
                }
                for k in 0..ns {
                    ws.sd[k] = Dual64::new(ws.s1[k], ws.sdot1[k]);
                }
                Self::restoring_dual_at(slot, ws);
                for i in 0..ne {
                    ws.r1[i] = t.beta * ws.rd[i].eps;
                }
            }
        }
    }

    /// The element's force and state rates in dual numbers at the workspace's `ud`, `vd`,
    /// `sd`, into `rd` and `sdotd`.
    fn restoring_dual_at(slot: &ElementSlot, ws: &mut ElementWorkspace) {
        let (ne, ns) = (slot.n_dofs(), slot.n_states());
        slot.element.restoring_dual(
            &ws.ud[..ne],
            &ws.vd[..ne],
            &ws.sd[..ns],
            &mut ws.rd[..ne],
            &mut ws.sdotd[..ns],
        );
    }

    /// The probe point of the tangent: `u₁ = u + h v`, `s₁ = s + h ṡ` with `ṡ` at `(u, v, s)`
    /// (in `ws.sdot`), and `ṡ₁` there, into `ws.u1`, `ws.s1`, `ws.sdot1`. The pseudo-time `h`
    /// moves the element DOFs by `10⁻⁸` of the element's driver substep (a fraction of its
    /// yield deformation, [`crate::elements::Element::driver_substep`]): past the rounding
    /// margin of the slider bounds, negligible for the smooth laws. `h = 0` for an element
    /// without a substep or at rest.
    fn probe(slot: &ElementSlot, ws: &mut ElementWorkspace) {
        let ne = slot.n_dofs();
        let ns = slot.n_states();
        let speed = ws.v[..ne].iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let h = match slot.element.driver_substep() {
            Some(sub) if speed > 0.0 && sub > 0.0 => 1e-8 * sub / speed,
            _ => 0.0,
        };
        for i in 0..ne {
            ws.u1[i] = ws.u[i] + h * ws.v[i];
        }
        for k in 0..ns {
            ws.s1[k] = ws.s[k] + h * ws.sdot[k];
        }
        slot.element.restoring(
            &ws.u1[..ne],
            &ws.v[..ne],
            &ws.s1[..ns],
            &mut ws.r1[..ne],
            &mut ws.sdot1[..ns],
        );
    }

    /// The Rayleigh force `β K v` of element `slot`'s tangent Rayleigh damping at state `y`
    /// (with the committed tangent kept in `ws`) on the element DOFs, into `out` (length of
    /// the element DOFs); `false` (and `out` untouched) for an element without it.
    /// Allocation-free.
    pub fn tangent_rayleigh_force(
        &self,
        slot: usize,
        y: &[f64],
        out: &mut [f64],
        ws: &mut ElementWorkspace,
    ) -> bool {
        let s = &self.slots[slot];
        let Some(t) = &s.tangent_rayleigh else {
            return false;
        };
        self.eval_slot(s, y, ws);
        Self::tangent_rayleigh_local(s, t, ws);
        out.copy_from_slice(&ws.r1[..s.n_dofs()]);
        true
    }

    /// Remove element slot `slot` (a placeholder added for assembly); the residual's passes
    /// follow. Not for the real-time loop: it allocates.
    pub(crate) fn remove_slot(&mut self, slot: usize) {
        // `J0` keeps the removed slot's terms: held from now on.
        let j0 = self.take_j0();
        self.put_j0(j0, false);
        self.slots.remove(slot);
        let groups = SlotGroups::from_slots(&self.slots, &self.maps, self.dofs.len());
        self.residual_plan = residual_plan(&kernels(&self.slots), &groups, self.dofs.len());
        self.plan_version += 1;
    }

    /// Assemble `J0` again from the elements as they are now (after
    /// [`StateSpace::set_element_parameter`]; online model updating with refactorization,
    /// Abbiati et al. 2020, §2.2). The triplets are those of [`StateSpace::new`] in the same
    /// order, so the entries equal, bit for bit, those of a state space built with the new
    /// parameter values. Returns whether any entry changed (a parameter that does not enter
    /// the zero-state tangent, e.g. Bouc–Wen's `γ` with `n = 1`, changes none). Allocates:
    /// not for a real-time step.
    pub fn reassemble_tangent(&mut self) -> bool {
        // Released entries are those of the elements as they are (no parameter set since).
        if self.j0_released() {
            return false;
        }
        let j0 = self.assemble_j0();
        let changed = self.j0_entries.get() != Some(&j0);
        if changed {
            self.j0_dense = OnceLock::new();
        }
        self.j0_entries = OnceLock::from(j0);
        self.j0_reassembles = true;
        changed
    }

    /// Remove the mass of DOF `i` from the diagonal (the placeholder mass of a massless
    /// imposed copy); the dense copy, if one was formed, is dropped and formed again.
    pub(crate) fn clear_mass_diagonal(&mut self, i: usize) {
        self.mass_entries.retain(|r, c, _| !(r == i && c == i));
        self.mass_dense = OnceLock::new();
    }

    /// The dense mass matrix `m` over the DOFs. Formed (allocated) on the first call only:
    /// integrators that need it dense call it at set-up; the start-up path of the sparse
    /// ones never does (`O(N²)` memory).
    pub fn mass(&self) -> &DMatrix<f64> {
        self.mass_dense
            .get_or_init(|| dense_from_entries(self.dofs.len(), &self.mass_entries))
    }

    /// The dense `J0 = ∂R/∂Y` at the zero state. Formed (allocated) on the first call only:
    /// integrators that need it dense call it at set-up, so that calls in their steps do not
    /// allocate; the sparse start-up path ([`StateSpace::d_entries`]) never does.
    pub fn j0(&self) -> &DMatrix<f64> {
        self.j0_dense
            .get_or_init(|| dense_from_entries(self.size(), self.j0_entries()))
    }

    /// Whether the dense `J0` and the dense mass have been formed (for the start-up checks).
    pub fn dense_formed(&self) -> (bool, bool) {
        (
            self.j0_dense.get().is_some(),
            self.mass_dense.get().is_some(),
        )
    }

    /// The nonzero entries of `J0`, in compressed rows; formed again from the elements (the
    /// same bits) on the first call after [`StateSpace::release_j0`], which allocates.
    pub fn j0_entries(&self) -> &CompressedRows {
        self.j0_entries.get_or_init(|| self.assemble_j0())
    }

    /// The nonzero entries of the mass matrix `m`, in compressed rows.
    pub fn mass_entries(&self) -> &CompressedRows {
        &self.mass_entries
    }

    /// Keep only the nodal loads on DOFs for which `keep` holds. A load on a DOF shared by
    /// several partitions must act on exactly one copy (see [`super::build_partitions`]).
    pub fn retain_loads(&mut self, keep: impl Fn(&DofRef) -> bool) {
        let dofs = &self.dofs;
        self.loads.retain(|(k, _)| keep(&dofs[*k]));
    }

    /// The DOF map of slot `slot`: the partition row of each element DOF.
    pub fn dof_map(&self, slot: usize) -> DofMap<'_> {
        self.slots[slot].dof_map(&self.maps)
    }

    /// The DOF maps of all slots, one after another: slot `s`'s are the
    /// `slots[s].n_dofs()` entries from [`ElementSlot::map_start`] ([`DofMap::GROUND`]: a DOF
    /// fixed to the ground). For a caller that knows a slot's number of DOFs without asking
    /// its element (the recorder's batched linear forces).
    pub fn dof_maps(&self) -> &[u32] {
        &self.maps
    }

    /// The DOF map of `slot`, one of this state space's slots.
    pub fn map_of(&self, slot: &ElementSlot) -> DofMap<'_> {
        slot.dof_map(&self.maps)
    }

    /// Number of DOFs `n`.
    pub fn n_dofs(&self) -> usize {
        self.dofs.len()
    }

    /// Size of `Y`: `2n + n_s`.
    pub fn size(&self) -> usize {
        2 * self.dofs.len() + self.n_states
    }

    /// A workspace for every method of the state space taking one, over any slot (the
    /// element force of the Rayleigh element over every DOF included).
    pub fn workspace(&self) -> ElementWorkspace {
        self.workspace_sized(0..self.slots.len(), true, true)
    }

    /// A workspace for [`StateSpace::residual`] and the other passes over the slots
    /// (tangents, path updates, energies), and for [`StateSpace::element_force`] and
    /// [`StateSpace::element_deformation_and_dissipation`] of `extra` slots: the gather
    /// buffers sized by the largest element gathered. The Rayleigh element over every DOF
    /// (an element with [`crate::elements::Element::sparse_damping`]) is never gathered by
    /// these passes — its terms are precomputed — nor by [`StateSpace::element_force`], which
    /// forms its force `C v` straight from the state, so it does not size them even among
    /// `extra` (issue 20: at the 10⁵-DOF chain it gave each workspace five vectors of `N`, and
    /// the recorder's, recording its force, kept them: 4 MB).
    /// [`StateSpace::element_force_by_law`] of that element takes [`StateSpace::workspace`].
    pub fn workspace_for(&self, extra: impl IntoIterator<Item = usize>) -> ElementWorkspace {
        self.workspace_sized(extra, false, true)
    }

    /// [`StateSpace::workspace_for`] for a workspace that evaluates the residual seldom, if
    /// ever (the recorder's: element forces, deformations, energies): without the vector of
    /// `N` of the fused runs' `w = u + β v`, which [`StateSpace::residual`] then forms term by
    /// term (the same bits; issue 20: 0.8 MB of the 10⁵-DOF chain).
    pub fn recording_workspace_for(
        &self,
        extra: impl IntoIterator<Item = usize>,
    ) -> ElementWorkspace {
        self.workspace_sized(extra, false, false)
    }

    /// [`StateSpace::workspace_for`], the gather buffers also sized by the sparse-damping
    /// elements among `extra` when `gather_sparse`, with the fused runs' `w` when `weighted`.
    fn workspace_sized(
        &self,
        extra: impl IntoIterator<Item = usize>,
        gather_sparse: bool,
        weighted: bool,
    ) -> ElementWorkspace {
        let gathered = |s: &ElementSlot| s.element.sparse_damping().is_none();
        let mut md = 0;
        let mut ms = 0;
        for s in self.slots.iter().filter(|s| gathered(s)) {
            md = md.max(s.n_dofs());
            ms = ms.max(s.n_states());
        }
        let extra = extra.into_iter().filter_map(|k| self.slots.get(k));
        for s in extra.filter(|s| gather_sparse || gathered(s)) {
            md = md.max(s.n_dofs());
            ms = ms.max(s.n_states());
        }
        // Dual-number buffers and the element tangent `kt` serve the slots that are
        // differentiated during a run: tangent Rayleigh terms and, under Newton, every generic
        // (nonlinear) slot. The linear Rayleigh element over every DOF needs none.
        let dual = || {
            self.slots
                .iter()
                .filter(|s| s.tangent_rayleigh.is_some() || matches!(s.kernel, SlotKernel::Generic))
        };
        let dd = dual().map(|s| s.n_dofs()).max().unwrap_or(0);
        let ds = dual().map(|s| s.n_states()).max().unwrap_or(0);
        let mut ws = ElementWorkspace::new(md, ms, dd, ds);
        if weighted {
            ws.weighted = vec![0.0; self.dofs.len()];
        }
        // The committed tangents start at the initial stiffness (the state at rest).
        let committed = || {
            self.slots
                .iter()
                .filter_map(|s| s.tangent_rayleigh.as_ref())
                .filter_map(|t| t.committed.map(|offset| (offset, &t.k0)))
        };
        let len = committed().map(|(o, k)| o + k.len()).max().unwrap_or(0);
        ws.committed = vec![0.0; len];
        for (offset, k0) in committed() {
            ws.committed[offset..offset + k0.len()].copy_from_slice(k0);
        }
        ws
    }

    /// `R(Y) = [−v; r(u, v, s); −ṡ]` of the computed elements (Abbiati et al. 2019, eq 2).
    /// Allocation-free.
    ///
    /// Linear elements without extra states (springs, dashpots, linear superelements, the
    /// Rayleigh term) add their precomputed nonzero terms of `K u + C v` directly (consecutive
    /// such elements as one block of rows, in the same order of sums), masses are skipped, and only the other elements are called through
    /// [`crate::elements::Element::restoring`]; the result equals the element-by-element sum
    /// to round-off.
    pub fn residual(&self, y: &[f64], out: &mut [f64], ws: &mut ElementWorkspace) {
        let n = self.dofs.len();
        let (head, tail) = out.split_at_mut(n);
        for (o, v) in head.iter_mut().zip(&y[n..2 * n]) {
            *o = -v;
        }
        tail.iter_mut().for_each(|x| *x = 0.0);
        for pass in &self.residual_plan {
            match pass {
                ResidualPass::Linear(run) => {
                    let (mut g0, mut t0) = (0, 0);
                    for &(target, g_end) in &run.targets {
                        let mut sum = out[target];
                        for &end in &run.group_end[g0..g_end] {
                            let mut acc = 0.0;
                            for (c, v) in run.cols[t0..end].iter().zip(&run.vals[t0..end]) {
                                acc += v * y[*c as usize];
                            }
                            sum += acc;
                            t0 = end;
                        }
                        out[target] = sum;
                        g0 = g_end;
                    }
                }
                ResidualPass::Fused(run) => Self::fused_pass(run, run.beta, n, y, out, ws),
                ResidualPass::Generic(k) => {
                    let slot = &self.slots[*k];
                    self.eval_slot(slot, y, ws);
                    for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
                        if let Some(k) = m {
                            out[n + k] += ws.r[i];
                        }
                    }
                    let s0 = 2 * n + slot.state_offset();
                    for (o, sd) in out[s0..s0 + slot.n_states()].iter_mut().zip(&ws.sdot) {
                        *o = -sd;
                    }
                    if let Some(t) = &slot.tangent_rayleigh {
                        Self::tangent_rayleigh_local(slot, t, ws);
                        for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
                            if let Some(k) = m {
                                out[n + k] += ws.r1[i];
                            }
                        }
                    }
                }
            }
        }
    }

    /// Add `K (u + b v) + E v` of a fused run to `out` (`b = β`; `β + c` when the coupling
    /// product `c K v` of the step is folded in, [`StateSpace::residual_folded`]).
    #[inline]
    fn fused_pass(
        run: &FusedRun,
        b: f64,
        n: usize,
        y: &[f64],
        out: &mut [f64],
        ws: &mut ElementWorkspace,
    ) {
        match &run.terms {
            FusedTerms::Plain(terms) => Self::fused_rows(run, &terms.reader(), b, n, y, out, ws),
            FusedTerms::Shared(terms) => Self::fused_rows(run, &terms.reader(), b, n, y, out, ws),
        }
    }

    /// [`StateSpace::fused_pass`] with the run's terms read through `terms` (its layout).
    #[inline(always)]
    fn fused_rows<L: TermLayout>(
        run: &FusedRun,
        terms: &L,
        b: f64,
        n: usize,
        y: &[f64],
        out: &mut [f64],
        ws: &mut ElementWorkspace,
    ) {
        let (u, v) = (&y[..n], &y[n..2 * n]);
        let (mut k0, mut e0) = (0, 0);
        assert!(y.len() >= 2 * n && out.len() >= 2 * n && run.n == n);
        // By construction (`FusedRun::from_groups`): the columns of `K` below `n`, those of
        // `E` below `2n`, `n ≤ targets < 2n`, and the ends ascend to the numbers of terms.
        run.debug_assert_terms(n, 2 * n);
        if ws.weighted.len() == n {
            for ((w, a), vb) in ws.weighted.iter_mut().zip(u).zip(v) {
                *w = a + b * vb;
            }
            let w = &ws.weighted;
            for ((&target, &k_end), &e_end) in run.targets.iter().zip(&run.k_end).zip(&run.e_end) {
                let (target, k_end, e_end) = (target as usize, k_end as usize, e_end as usize);
                // SAFETY: every index is in bounds by the construction above (`w` has `n`
                // entries, `y` and `out` at least `2n`).
                unsafe {
                    let acc = terms.row_sum((target - n, target), k0..k_end, e0..e_end, w, y);
                    *out.get_unchecked_mut(target) += acc;
                }
                (k0, e0) = (k_end, e_end);
            }
        } else {
            // A workspace made before this run was fused: `w` term by term (the same values).
            for ((&target, &k_end), &e_end) in run.targets.iter().zip(&run.k_end).zip(&run.e_end) {
                let (target, k_end, e_end) = (target as usize, k_end as usize, e_end as usize);
                let mut acc = 0.0;
                // SAFETY: the terms of the row, whose columns lie within `u`, `v` (`K`) and
                // `y` (`E`), by the construction above.
                unsafe {
                    for t in k0..k_end {
                        let (c, k) = terms.k_term(target - n, t);
                        acc += k * (u.get_unchecked(c) + b * v.get_unchecked(c));
                    }
                    for t in e0..e_end {
                        let (c, e) = terms.e_term(target, t);
                        acc += e * y.get_unchecked(c);
                    }
                }
                out[target] += acc;
                (k0, e0) = (k_end, e_end);
            }
        }
    }

    /// The heap bytes of the residual's fused runs (their rows, ends, terms and tables), their
    /// terms of `K` and `E`, and whether every one keeps the shared layout (4 bytes a term):
    /// what the tests of issue 20 bound.
    #[doc(hidden)]
    pub fn fused_storage(&self) -> (usize, usize, bool) {
        let fused = self.residual_plan.iter().filter_map(|p| match p {
            ResidualPass::Fused(run) => Some(run),
            _ => None,
        });
        fused.fold((0, 0, true), |(bytes, terms, shared), run| {
            let (n_k, n_e) = run.terms.lens();
            (
                bytes + run.heap_bytes(),
                terms + n_k + n_e,
                shared && matches!(run.terms, FusedTerms::Shared(_)),
            )
        })
    }

    /// Keep the terms of the residual's fused runs in the shared layout (`shared`, where they
    /// fit it) or in the plain one: the same values in the same order, so the residual keeps
    /// its bits (what the tests of the two layouts compare). Returns whether every fused run
    /// now has the layout asked for.
    #[doc(hidden)]
    pub fn set_fused_layout(&mut self, shared: bool) -> bool {
        let mut all = true;
        for pass in &mut self.residual_plan {
            if let ResidualPass::Fused(run) = pass {
                if shared {
                    match run.shared_terms() {
                        Some(terms) => run.terms = FusedTerms::Shared(terms),
                        None => all = false,
                    }
                } else {
                    run.terms = FusedTerms::Plain(run.plain_terms());
                }
            }
        }
        all
    }

    /// The version of the residual's passes: it changes whenever they are rebuilt (an element
    /// moved to its law by [`StateSpace::set_element_parameter`], a slot removed), so that a
    /// decision taken on them ([`StateSpace::folds_coupling`]) can be checked cheaply.
    pub fn plan_version(&self) -> u64 {
        self.plan_version
    }

    /// Whether the coupling product `B b_u` of a generalized-α solve can be folded into the
    /// residual: the partition has no extra states, its residual is the single fused pass
    /// `R = [−v; K (u + β v) + E v]` (every element linear, Rayleigh damping), and `B` — rows
    /// `n..2n` of `c ∂R/∂u` as the factors of `D = M + c J0` hold them, in compressed rows
    /// (`b_start`, `b_cols`, `b_vals`, [`crate::linalg::StateMatrixFactors::coupling`]) —
    /// holds the places of `c K` with values equal to within `64 ε` of the row's largest (the
    /// two are sums of the same element terms, possibly in another order). Then
    /// `F − R(Ỹ) − B ṽ = F − [K (ũ + (β + c) ṽ) + E ṽ]` to round-off
    /// ([`StateSpace::residual_folded`]).
    pub fn folds_coupling(
        &self,
        c: f64,
        b_start: &[usize],
        b_cols: &[u32],
        b_vals: &[f64],
    ) -> bool {
        b_start.len() == self.dofs.len() + 1
            && self.folds_coupling_rows(c, |r| {
                let b = (b_start[r], b_start[r + 1]);
                (&b_cols[b.0..b.1], &b_vals[b.0..b.1])
            })
    }

    /// [`StateSpace::folds_coupling`] with `B`'s row `r` (its columns, ascending, and
    /// values, without zeros) given by `row(r)`: read from `D`'s rows before `B` is formed
    /// (issue 20: a `B` the steps fold is then never built).
    pub fn folds_coupling_rows<'a>(
        &self,
        c: f64,
        row: impl Fn(usize) -> (&'a [u32], &'a [f64]),
    ) -> bool {
        let n = self.dofs.len();
        let [ResidualPass::Fused(run)] = self.residual_plan.as_slice() else {
            return false;
        };
        if self.size() != 2 * n || !(c.is_finite() && c > 0.0) {
            return false;
        }
        let mut k0 = 0;
        let mut next = run.targets.iter().zip(&run.k_end).peekable();
        for r in 0..n {
            let (cols, vals) = row(r);
            let k = match next.peek() {
                Some(&(&t, &k_end)) if t as usize == n + r => {
                    next.next();
                    let k = k0..k_end as usize;
                    k0 = k_end as usize;
                    k
                }
                _ => 0..0,
            };
            if cols.len() != k.len() {
                return false;
            }
            let scale = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for ((&bc, bv), t) in cols.iter().zip(vals).zip(k) {
                let (kc, kv) = run.terms.k_at(r, t);
                if bc as usize != kc || (bv - c * kv).abs() > 64.0 * f64::EPSILON * scale {
                    return false;
                }
            }
        }
        next.peek().is_none()
    }

    /// [`StateSpace::residual`] with the coupling product of the step folded in:
    /// `[−v; K (u + (β + c) v) + E v]`, which is `R(Y) + [0; c K v]`. Only for a partition
    /// [`StateSpace::folds_coupling`] accepted (otherwise the plain residual). Allocation-free.
    pub fn residual_folded(&self, y: &[f64], c: f64, out: &mut [f64], ws: &mut ElementWorkspace) {
        let n = self.dofs.len();
        let [ResidualPass::Fused(run)] = self.residual_plan.as_slice() else {
            return self.residual(y, out, ws);
        };
        let (head, tail) = out.split_at_mut(n);
        for (o, v) in head.iter_mut().zip(&y[n..2 * n]) {
            *o = -v;
        }
        tail.iter_mut().for_each(|x| *x = 0.0);
        Self::fused_pass(run, run.beta + c, n, y, out, ws);
    }

    /// The generalized-α predictor and the right-hand side of the rate equation of a
    /// partition whose coupling product is folded ([`StateSpace::folds_coupling`]), in two
    /// passes over the rows instead of five (Abbiati et al. 2019, eqs 11–12):
    ///
    /// 1. for each DOF `i` (rows `i` and `n + i`): `Ỹ = (Y + k_y Ẏ) + k_v V`,
    ///    `Ṽ = Ẏ w_y + w_v V`, the fused pass's `w_i = ũ_i + (β + c) ṽ_i`, and
    ///    `Ẏ_i = F_i − (−ṽ_i)`;
    /// 2. for each momentum row `r`: `Ẏ_r = F_r − (0 + [K w + E Ỹ]_r)`.
    ///
    /// Every value is the one [`StateSpace::residual_folded`] followed by `Ẏ = F − R` gives,
    /// with the same operations in the same order (the same bits), without writing `R`.
    /// `from` is `(Y, Ẏ, V)` of the step's start, `load` is `F` of its end. Returns `false`,
    /// writing nothing, when the partition's residual is not the single fused pass over a
    /// state of `2n` rows or `ws` was made before it was fused. Allocation-free.
    pub fn folded_predictor_rate(
        &self,
        step: FoldedStep,
        from: (&[f64], &[f64], &[f64]),
        tilde: (&mut [f64], &mut [f64]),
        load: &[f64],
        ydot: &mut [f64],
        ws: &mut ElementWorkspace,
    ) -> bool {
        let n = self.dofs.len();
        let [ResidualPass::Fused(run)] = self.residual_plan.as_slice() else {
            return false;
        };
        let m = 2 * n;
        let (y_tilde, v_tilde) = tilde;
        if self.size() != m
            || ws.weighted.len() != n
            || run.targets.first().is_some_and(|&t| (t as usize) < n)
            || run.targets.last().is_some_and(|&t| t as usize >= m)
            || [
                from.0.len(),
                from.1.len(),
                from.2.len(),
                load.len(),
                ydot.len(),
            ]
            .iter()
            .chain(&[y_tilde.len(), v_tilde.len()])
            .any(|&l| l != m)
        {
            return false;
        }
        let rows = FoldedRows { run, n };
        // Pass 1: the predictor by DOF, with `w` and the rows `u̇ = v`.
        {
            let (ytu, ytv) = y_tilde.split_at_mut(n);
            let (vtu, vtv) = v_tilde.split_at_mut(n);
            let (ydu, _) = ydot.split_at_mut(n);
            rows.predictor(
                step,
                0,
                from,
                load,
                FoldedPredictor {
                    y_tilde: (ytu, ytv),
                    v_tilde: (vtu, vtv),
                    ydot: ydu,
                    weighted: &mut ws.weighted[..n],
                },
            );
        }
        // Pass 2: the momentum rows, `K w + E Ỹ` gathered as by the fused pass.
        rows.gather(0, &ws.weighted[..n], y_tilde, load, &mut ydot[n..m]);
        true
    }

    /// [`StateSpace::folded_predictor_rate`] of a state stepped in place (issue 20: one state
    /// fewer a partition): `Y`, `Ẏ` and `V` of the step's start are overwritten with `Ỹ`, the
    /// right-hand side of the rate equation and `Ṽ`, with the same values by the same
    /// operations (pass 1 by [`FoldedRows::predictor_in_place`], which reads each DOF's rows
    /// before writing them; pass 2 once pass 1 is done, reading only `w`, `Ỹ` and `F`).
    /// Returns `false`, writing nothing, where `folded_predictor_rate` would.
    /// Allocation-free.
    pub fn folded_predictor_rate_in_place(
        &self,
        step: FoldedStep,
        state: (&mut [f64], &mut [f64], &mut [f64]),
        load: &[f64],
        ws: &mut ElementWorkspace,
    ) -> bool {
        let n = self.dofs.len();
        let m = 2 * n;
        let (y, ydot, v) = state;
        let Some(rows) = self.folded_rows() else {
            return false;
        };
        if ws.weighted.len() != n
            || [y.len(), ydot.len(), v.len(), load.len()]
                .iter()
                .any(|&l| l != m)
        {
            return false;
        }
        // Pass 1: the predictor by DOF, with `w` and the rows `u̇ = v`, in place.
        {
            let (first, _) = FoldedInPlace::halves(y, v, ydot, &mut ws.weighted[..n], n);
            rows.predictor_in_place(step, 0, load, first);
        }
        // Pass 2: the momentum rows, `K w + E Ỹ` gathered as by the fused pass.
        rows.gather(0, &ws.weighted[..n], y, load, &mut ydot[n..m]);
        true
    }

    /// The two passes of [`StateSpace::folded_predictor_rate`] as functions of a range of
    /// DOFs and rows ([`FoldedRows`]), for a caller that runs them in parts, on two threads
    /// (issue 20: the 9999-DOF frame's step on two cores); `None` where
    /// `folded_predictor_rate` would return `false` for lack of the single fused pass over a
    /// state of `2n` rows. Allocation-free.
    pub fn folded_rows(&self) -> Option<FoldedRows<'_>> {
        let n = self.dofs.len();
        let [ResidualPass::Fused(run)] = self.residual_plan.as_slice() else {
            return None;
        };
        if self.size() != 2 * n
            || run.targets.first().is_some_and(|&t| (t as usize) < n)
            || run.targets.last().is_some_and(|&t| (t as usize) >= 2 * n)
        {
            return None;
        }
        Some(FoldedRows { run, n })
    }

    fn eval_slot(&self, slot: &ElementSlot, y: &[f64], ws: &mut ElementWorkspace) {
        self.gather(slot, y, ws);
        let ne = slot.n_dofs();
        slot.element.restoring(
            &ws.u[..ne],
            &ws.v[..ne],
            &ws.s[..slot.n_states()],
            &mut ws.r[..ne],
            &mut ws.sdot[..slot.n_states()],
        );
    }

    /// The element's `u`, `v` and `s` from `y` into `ws` (zeros on fixed DOFs).
    fn gather(&self, slot: &ElementSlot, y: &[f64], ws: &mut ElementWorkspace) {
        let n = self.dofs.len();
        for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
            match m {
                Some(k) => {
                    ws.u[i] = y[k];
                    ws.v[i] = y[n + k];
                }
                None => {
                    ws.u[i] = 0.0;
                    ws.v[i] = 0.0;
                }
            }
        }
        let s0 = 2 * n + slot.state_offset();
        ws.s[..slot.n_states()].copy_from_slice(&y[s0..s0 + slot.n_states()]);
    }

    /// The slots evaluated through their element's law (hysteretic and other nonlinear
    /// elements): those whose tangent [`StateSpace::add_current_tangent`] evaluates.
    pub fn nonlinear_slots(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&k| matches!(self.slots[k].kernel, SlotKernel::Generic))
            .collect()
    }

    /// The entries `(row, column, value)` of `∂R/∂Y` that do not depend on the state: `J0`
    /// without the slots of [`StateSpace::nonlinear_slots`] (the `u̇ = v` rows, the linear
    /// elements, the estimate of a specimen), merged by place. Allocates (start-up only).
    pub fn linear_tangent_entries(&self) -> Vec<(usize, usize, f64)> {
        let linear = |s: &ElementSlot| !matches!(s.kernel, SlotKernel::Generic);
        assemble_tangent(
            &self.dofs,
            &self.slots,
            &self.maps,
            self.size(),
            linear,
            self.estimate.as_ref(),
        )
        .iter()
        .collect()
    }

    /// A superset of the places `(row, column)` of `D = M + c ∂R/∂Y` at any state as
    /// [`StateSpace::add_current_tangent`] assembles it: the mass,
    /// [`StateSpace::linear_tangent_entries`] and, for every nonlinear slot, its rows (forces,
    /// and states unless they are path-updated) by its columns (`u`, `v`, and the same
    /// states), and the diagonal. Allocates.
    pub fn tangent_pattern(&self) -> Vec<(usize, usize)> {
        let n = self.dofs.len();
        let mut p: Vec<(usize, usize)> = (0..self.size()).map(|i| (i, i)).collect();
        p.extend(self.mass_entries.iter().map(|(i, j, _)| (n + i, n + j)));
        p.extend(
            self.linear_tangent_entries()
                .iter()
                .map(|&(i, j, _)| (i, j)),
        );
        for k in self.nonlinear_slots() {
            let slot = &self.slots[k];
            let s0 = 2 * n + slot.state_offset();
            // A path-updated element's states follow its displacements: nothing in their
            // rows and columns but the diagonal.
            let states = if slot.element.exact_path_update() {
                s0..s0
            } else {
                s0..s0 + slot.n_states()
            };
            let dofs = slot.dof_map(&self.maps).iter().flatten();
            let rows: Vec<usize> = dofs.clone().map(|d| n + d).chain(states.clone()).collect();
            let cols: Vec<usize> = dofs
                .clone()
                .chain(dofs.map(|d| n + d))
                .chain(states)
                .collect();
            for &r in &rows {
                p.extend(cols.iter().map(|&c| (r, c)));
            }
        }
        p
    }

    /// The condensed initial stiffness `K_0` (by columns) of every slot with an exact path
    /// update, empty for the others: the tangent [`StateSpace::add_current_tangent`] takes for
    /// an element that does not move over the step. Allocates.
    pub fn path_initial_stiffness(&self) -> Vec<Vec<f64>> {
        self.slots
            .iter()
            .map(|s| {
                if matches!(s.kernel, SlotKernel::Generic) && s.element.exact_path_update() {
                    crate::elements::rayleigh_stiffness(s.element.as_ref())
                        .map(|k| k.as_slice().to_vec())
                        .unwrap_or_default()
                } else {
                    Vec::new()
                }
            })
            .collect()
    }

    /// The current tangent `∂R/∂Y` of the nonlinear slots `slots` at `y`, the step having
    /// started from `y_start`, term by term through `add(row, column, value)` (Newton's method
    /// on the step's equations, issue 17; exact forward-mode dual numbers):
    ///
    /// - an element with [`crate::elements::Element::exact_path_update`], whose states are
    ///   set by the return mapping along the step's path: the consistent tangent of that update
    ///   (Simo & Taylor 1985), `∂r/∂u + ∂r/∂s · ∂ṡ/∂v` along the step's deformation increment
    ///   `u − u_start` at the end state (the dual numbers of the committed Rayleigh tangent;
    ///   exact for the piecewise-linear laws and for a law integrated along a straight path in
    ///   the deformation), on the displacement columns, and `∂r/∂v`; nothing on its state rows
    ///   and columns (the states follow the displacements). With no deformation increment,
    ///   `k0[slot]`;
    /// - any other nonlinear element: all of `∂r/∂[u; v; s]` and `−∂ṡ/∂[u; v; s]`;
    /// - tangent Rayleigh damping `β K v` ([`RayleighStiffness`]): `β K` on the velocity
    ///   columns, `K` the committed tangent or the current one along the motion (the
    ///   variation of `K` with the state left out).
    ///
    /// Allocation-free.
    pub fn add_current_tangent(
        &self,
        slots: &[usize],
        y_start: &[f64],
        y: &[f64],
        k0: &[Vec<f64>],
        ws: &mut ElementWorkspace,
        add: &mut impl FnMut(usize, usize, f64),
    ) {
        let n = self.dofs.len();
        for &k in slots {
            let slot = &self.slots[k];
            let (ne, ns) = (slot.n_dofs(), slot.n_states());
            let s0 = 2 * n + slot.state_offset();
            self.gather(slot, y, ws);
            let path = slot.element.exact_path_update();
            // Seeds: u_j (d < ne), v_j (ne ≤ d < 2ne), s_k; only v_j for a path-updated one.
            let directions = if path { ne..2 * ne } else { 0..2 * ne + ns };
            for d in directions {
                let col = if d < ne {
                    slot.dof_map(&self.maps).get(d)
                } else if d < 2 * ne {
                    slot.dof_map(&self.maps).get(d - ne).map(|c| n + c)
                } else {
                    Some(s0 + d - 2 * ne)
                };
                let Some(col) = col else { continue };
                for i in 0..ne {
                    ws.ud[i] = Dual64::new(ws.u[i], if d == i { 1.0 } else { 0.0 });
                    ws.vd[i] = Dual64::new(ws.v[i], if d == ne + i { 1.0 } else { 0.0 });
                }
                for q in 0..ns {
                    ws.sd[q] = Dual64::new(ws.s[q], if d == 2 * ne + q { 1.0 } else { 0.0 });
                }
                Self::restoring_dual_at(slot, ws);
                for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
                    if let Some(row) = m {
                        add(n + row, col, ws.rd[i].eps);
                    }
                }
                if !path {
                    for q in 0..ns {
                        add(s0 + q, col, -ws.sdotd[q].eps);
                    }
                }
            }
            if let Some(t) = &slot.tangent_rayleigh {
                let kt: &[f64] = match t.committed {
                    Some(offset) => &ws.committed[offset..offset + ne * ne],
                    None if ws.v[..ne].iter().all(|v| *v == 0.0) => &t.k0,
                    None => {
                        Self::condensed_tangent(slot, ws);
                        &ws.kt[..ne * ne]
                    }
                };
                for (j, mj) in slot.dof_map(&self.maps).iter().enumerate() {
                    let Some(cj) = mj else { continue };
                    for (i, mi) in slot.dof_map(&self.maps).iter().enumerate() {
                        if let Some(ri) = mi {
                            add(n + ri, n + cj, t.beta * kt[j * ne + i]);
                        }
                    }
                }
                self.gather(slot, y, ws);
            }
            if path {
                // Along the deformation increment of the step.
                let mut moved = false;
                for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
                    ws.v[i] = m.map_or(0.0, |c| y[c] - y_start[c]);
                    moved |= ws.v[i] != 0.0;
                }
                let kt: &[f64] = if moved {
                    Self::condensed_tangent(slot, ws);
                    &ws.kt[..ne * ne]
                } else {
                    &k0[k]
                };
                for (j, mj) in slot.dof_map(&self.maps).iter().enumerate() {
                    let Some(cj) = mj else { continue };
                    for (i, mi) in slot.dof_map(&self.maps).iter().enumerate() {
                        if let Some(ri) = mi {
                            add(n + ri, cj, kt[j * ne + i]);
                        }
                    }
                }
            }
        }
    }

    /// Rows of `Y` (extra states) that [`StateSpace::path_update`] sets: the states of the
    /// elements with [`crate::elements::Element::exact_path_update`].
    pub fn path_update_rows(&self) -> Vec<usize> {
        let n = self.dofs.len();
        let mut rows = Vec::new();
        for slot in &self.slots {
            if matches!(slot.kernel, SlotKernel::Generic) && slot.element.exact_path_update() {
                let s0 = 2 * n + slot.state_offset();
                rows.extend(s0..s0 + slot.n_states());
            }
        }
        rows
    }

    /// Whether any element is evaluated through its own law (not as precomputed linear terms):
    /// the state space is then (possibly) nonlinear.
    pub fn has_nonlinear_elements(&self) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s.kernel, SlotKernel::Generic))
    }

    /// Consistent state update over a step (issue 17): for every element with
    /// [`crate::elements::Element::exact_path_update`], set its extra states in `y` to their
    /// value at the end of the straight deformation path from `y_start`'s displacements and
    /// states to `y`'s displacements — the elastic predictor `s_start + ṡ(u_start, Δu,
    /// s_start)` followed by [`crate::elements::Element::project_state`] at the end (the return
    /// mapping; Simo & Hughes 1998) — and its absorbed energy `e` (if it has one) to
    /// `e_start + ½ (r_start + r_end)·Δu`, the trapezoidal work along the path. Other states
    /// are left as they are. Allocation-free.
    pub fn path_update(&self, y_start: &[f64], y: &mut [f64], ws: &mut ElementWorkspace) {
        let n = self.dofs.len();
        for slot in &self.slots {
            if !matches!(slot.kernel, SlotKernel::Generic) || !slot.element.exact_path_update() {
                continue;
            }
            let ne = slot.n_dofs();
            let ns = slot.n_states();
            for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
                let (a, b) = m.map_or((0.0, 0.0), |k| (y_start[k], y[k]));
                ws.u[i] = a;
                ws.u1[i] = b;
                ws.v[i] = b - a;
            }
            let s0 = 2 * n + slot.state_offset();
            ws.s[..ns].copy_from_slice(&y_start[s0..s0 + ns]);
            slot.element.restoring(
                &ws.u[..ne],
                &ws.v[..ne],
                &ws.s[..ns],
                &mut ws.r[..ne],
                &mut ws.sdot[..ns],
            );
            for ((s1, s), sd) in ws.s1[..ns].iter_mut().zip(&ws.s[..ns]).zip(&ws.sdot[..ns]) {
                *s1 = s + sd;
            }
            slot.element
                .project_state(&ws.u1[..ne], &ws.v[..ne], &ws.s[..ns], &mut ws.s1[..ns]);
            slot.element
                .integrate_path(&ws.u[..ne], &ws.u1[..ne], &ws.s[..ns], &mut ws.s1[..ns]);
            if let Some(ie) = slot.absorbed_energy_state() {
                slot.element.restoring(
                    &ws.u1[..ne],
                    &ws.v[..ne],
                    &ws.s1[..ns],
                    &mut ws.r1[..ne],
                    &mut ws.sdot[..ns],
                );
                let mut work = 0.0;
                for i in 0..ne {
                    work += 0.5 * (ws.r[i] + ws.r1[i]) * ws.v[i];
                }
                ws.s1[ie] = ws.s[ie] + work;
            }
            y[s0..s0 + ns].copy_from_slice(&ws.s1[..ns]);
        }
    }

    /// Element forces (per element DOF) at state `y`, into `out` (length of the element DOFs).
    /// A linear slot whose element lends its matrices ([`crate::elements::Element::constant_matrices`])
    /// is evaluated as `K u + C v` in `f64` from them ([`crate::elements::ConstantMatrices::force`]: the bits of
    /// the element's law for a finite state; a non-finite result is evaluated again through
    /// the law, whose zero entries skip a non-finite `u_j`); every other slot through its law,
    /// as [`StateSpace::element_force_by_law`]. Allocation-free.
    pub fn element_force(
        &self,
        slot: usize,
        y: &[f64],
        out: &mut [f64],
        ws: &mut ElementWorkspace,
    ) {
        let s = &self.slots[slot];
        if let Some(c) = s.element.sparse_damping() {
            // `r = C v` row by row as the element's law sums it (the same products and
            // order: the bits of `restoring`), `v` read from the state (0 on fixed DOFs):
            // no gather buffers of the element's size.
            let (map, n) = (s.dof_map(&self.maps), self.dofs.len());
            c.times(|j| map.get(j).map_or(0.0, |k| y[n + k]), out);
            return;
        }
        if s.kernel == SlotKernel::Linear {
            if let Some(m) = s.element.constant_matrices() {
                if !m.force_at(s.dof_map(&self.maps), y, self.dofs.len(), out) {
                    self.gather(s, y, ws);
                    let ne = s.n_dofs();
                    m.force(&ws.u[..ne], &ws.v[..ne], out);
                }
                if out.iter().all(|f| f.is_finite()) {
                    return;
                }
            }
        }
        self.element_force_by_law(slot, y, out, ws);
    }

    /// Element forces (per element DOF) at state `y` through the element's law
    /// ([`crate::elements::Element::restoring`]), into `out` (length of the element DOFs): the
    /// reference of [`StateSpace::element_force`]'s linear path. Allocation-free.
    pub fn element_force_by_law(
        &self,
        slot: usize,
        y: &[f64],
        out: &mut [f64],
        ws: &mut ElementWorkspace,
    ) {
        let s = &self.slots[slot];
        self.eval_slot(s, y, ws);
        out.copy_from_slice(&ws.r[..s.n_dofs()]);
    }

    /// Deformation and cumulative dissipated energy of element `slot` at state `y`, where the
    /// element defines them (hysteretic springs). Allocation-free.
    pub fn element_deformation_and_dissipation(
        &self,
        slot: usize,
        y: &[f64],
        ws: &mut ElementWorkspace,
    ) -> (Option<f64>, Option<f64>) {
        let s = &self.slots[slot];
        self.eval_slot(s, y, ws);
        let ne = s.n_dofs();
        (
            s.element.deformation(&ws.u[..ne]),
            s.element
                .dissipated_energy(&ws.u[..ne], &ws.s[..s.n_states()]),
        )
    }

    /// External load `F(t) = [0; f(t); 0]`, including the seismic load `−p a_g(t)`.
    pub fn load(&self, t: f64, out: &mut [f64]) {
        out.iter_mut().for_each(|x| *x = 0.0);
        let n = self.dofs.len();
        for (k, f) in &self.loads {
            out[n + k] += f.value(t);
        }
        for (p, ag) in &self.seismic {
            let a = ag.value(t);
            if a != 0.0 {
                for (o, p) in out[n..2 * n].iter_mut().zip(&p.as_slice()[..n]) {
                    *o -= p * a;
                }
            }
        }
        if !self.external.is_empty() {
            for (o, f) in out[n..2 * n].iter_mut().zip(&self.external) {
                *o += f;
            }
        }
    }

    /// Hold an external nodal load `value` (model force unit) on DOF `i` from the next load
    /// evaluation on, added to the model's loads and the seismic load (set it to 0 to remove
    /// it). Allocation-free but for the first load set, which allocates the loads' vector of
    /// `N`.
    pub fn set_external_load(&mut self, i: usize, value: f64) -> Result<(), String> {
        let n = self.dofs.len();
        if i >= n {
            return Err(format!(
                "substructure `{}` has {n} DOFs, no DOF {i}",
                self.name
            ));
        }
        if !value.is_finite() {
            return Err(format!(
                "external load on node {} dof {}: {value} is not finite",
                self.dofs[i].node, self.dofs[i].dof
            ));
        }
        if self.external.is_empty() {
            self.external = vec![0.0; self.dofs.len()];
        }
        self.external[i] = value;
        Ok(())
    }

    /// The external nodal loads held on the DOFs ([`Self::set_external_load`]): one a DOF,
    /// or none (empty) before the first is set.
    pub fn external_loads(&self) -> &[f64] {
        &self.external
    }

    /// Ground acceleration along DOF `i` at `t` (0 when not excited).
    pub fn ground_acceleration(&self, i: usize, t: f64) -> f64 {
        match self.ground_dof(i) {
            Some(g) => self.ground_motion(g, t),
            None => 0.0,
        }
    }

    /// The index of the ground motion along DOF `i` (for absolute accelerations), if any.
    #[inline]
    pub fn ground_dof(&self, i: usize) -> Option<usize> {
        let g = self.ground_dof[i];
        (g != u32::MAX).then_some(g as usize)
    }

    /// Ground motion `g` (the index [`StateSpace::ground_dof`] gives for an excited DOF) at `t`.
    pub fn ground_motion(&self, g: usize, t: f64) -> f64 {
        self.ground[g].value(t)
    }

    /// `M x` for the block-diagonal `M = diag(I, m, I)`.
    pub fn mass_times(&self, x: &[f64], out: &mut [f64]) {
        let n = self.dofs.len();
        out[..n].copy_from_slice(&x[..n]);
        // Row by row over the nonzero entries: the dense sum's order without its zero terms.
        out[n..2 * n].iter_mut().for_each(|o| *o = 0.0);
        for i in 0..n {
            let (cols, vals) = self.mass_entries.row(i);
            for (&j, m) in cols.iter().zip(vals) {
                out[n + i] += m * x[n + j as usize];
            }
        }
        out[2 * n..].copy_from_slice(&x[2 * n..]);
    }

    /// The full `M = diag(I, m, I)`.
    pub fn big_mass(&self) -> DMatrix<f64> {
        let n = self.dofs.len();
        let mut m = DMatrix::identity(self.size(), self.size());
        for (i, j, v) in self.mass_entries.iter() {
            m[(n + i, n + j)] = v;
        }
        m
    }

    /// The nonzero entries `(row, column, value)` of `D = M + c J0`, row by row, with the
    /// values of `big_mass() + &j0 * c` to the last bit ([`StateSpace::d_rows`] as triplets).
    pub fn d_entries(&self, c: f64) -> Vec<(usize, usize, f64)> {
        self.d_rows(c).iter().collect()
    }

    /// `D = M + c J0` (Abbiati et al. 2019, eq 12) in compressed rows (12 bytes an entry),
    /// its nonzero entries with the values of `big_mass() + &j0 * c` to the last bit, without
    /// forming a dense matrix nor a list of triplets: each row of `M` (the identity outside
    /// the momentum rows) merged with the same row of `J0` by column, twice (to count, then to
    /// place).
    pub fn d_rows(&self, c: f64) -> CompressedRows {
        let j0 = self.j0_entries();
        CompressedRows::from_rows(self.size(), |i, push| {
            let (j_cols, j_vals) = j0.row(i);
            self.d_row(c, i, j_cols, j_vals, push);
        })
    }

    /// [`StateSpace::d_rows`] then [`StateSpace::release_j0`]: the same `D`, to the last bit,
    /// formed in `J0`'s own arrays when `J0` is to be freed ([`CompressedRows::map_rows`]), so
    /// that `J0` and `D` never stand together (issue 20: on the 10⁵-DOF frame they took 21 MB
    /// each, and made the start-up's peak with the rest of the model). `J0` is released, as by
    /// [`StateSpace::release_j0`], only when it can be formed again to the last bit.
    pub fn d_rows_releasing_j0(&mut self, c: f64) -> CompressedRows {
        if !self.j0_reassembles {
            return self.d_rows(c);
        }
        let j0 = self.take_j0();
        assert_eq!(j0.n_rows(), self.size(), "J0 has a row a state");
        j0.map_rows(|i, j_cols, j_vals, push| self.d_row(c, i, j_cols, j_vals, push))
    }

    /// Row `i` of `D = M + c J0` from row `i` of `J0` (`j_cols`, `j_vals`): `m_ij + J0_ij c`
    /// by increasing column, a missing entry read as 0 (the dense sum's value).
    fn d_row(
        &self,
        c: f64,
        i: usize,
        j_cols: &[u32],
        j_vals: &[f64],
        push: &mut dyn FnMut(usize, f64),
    ) {
        let n = self.dofs.len();
        let identity = ([i as u32], [1.0]);
        let (m_cols, m_vals): (&[u32], &[f64]) = if (n..2 * n).contains(&i) {
            self.mass_entries.row(i - n)
        } else {
            (&identity.0, &identity.1)
        };
        let offset = if (n..2 * n).contains(&i) { n } else { 0 };
        let (mut a, mut b) = (0, 0);
        while a < m_cols.len() || b < j_cols.len() {
            let ca = m_cols.get(a).map_or(usize::MAX, |&j| j as usize + offset);
            let cb = j_cols.get(b).map_or(usize::MAX, |&j| j as usize);
            let col = ca.min(cb);
            let mij = if ca == col {
                a += 1;
                m_vals[a - 1]
            } else {
                0.0
            };
            let jij = if cb == col {
                b += 1;
                j_vals[b - 1]
            } else {
                0.0
            };
            push(col, mij + jij * c);
        }
    }

    /// `x ← M⁻¹ x` for `M = diag(I, m, I)`; false when `m` is singular. A lumped (diagonal)
    /// `m` divides entry by entry, `O(N)`; otherwise `m` alone is factored (dense, `O(N³)`).
    /// Either way the result equals nalgebra's dense LU solve with `big_mass()` to the last
    /// bit (its identity blocks neither pivot nor update the `m` block).
    pub fn solve_mass(&self, x: &mut [f64]) -> bool {
        let n = self.dofs.len();
        if self.mass_entries.is_diagonal() {
            let mut diag = vec![0.0; n];
            for (i, _, m) in self.mass_entries.iter() {
                diag[i] = m;
            }
            if diag.contains(&0.0) {
                return false;
            }
            for (xi, m) in x[n..2 * n].iter_mut().zip(&diag) {
                *xi /= m;
            }
            return true;
        }
        let lu = self.mass().clone().lu();
        let mut v = DVector::from_column_slice(&x[n..2 * n]);
        if !lu.solve_mut(&mut v) {
            return false;
        }
        x[n..2 * n].copy_from_slice(v.as_slice());
        true
    }

    /// Kinetic energy `½ vᵀ m v`.
    pub fn kinetic_energy(&self, y: &[f64]) -> f64 {
        let n = self.dofs.len();
        let mut e = 0.0;
        for i in 0..n {
            let (cols, vals) = self.mass_entries.row(i);
            for (&j, m) in cols.iter().zip(vals) {
                e += 0.5 * y[n + i] * m * y[n + j as usize];
            }
        }
        e
    }

    /// Energy held or absorbed by the computed elements: the stored (strain) energy of
    /// conservative elements and, for elements with an absorbed-energy state `e = ∫ r·dd`
    /// (hysteretic springs, bearings, nonlinear dampers), that work. Both are the work done on
    /// the element by the motion, so kinetic energy plus this balances the external work minus
    /// the dissipation of dashpots and Rayleigh terms. `None` when an element has neither.
    /// A linear slot whose element lends its stiffness
    /// ([`crate::elements::Element::constant_matrices`]) gives `½ uᵀ K u` by
    /// [`crate::elements::ConstantMatrices::stored_energy`] (its law's value to round-off). Allocation-free.
    pub fn potential_energy(&self, y: &[f64], ws: &mut ElementWorkspace) -> Option<f64> {
        self.potential_energy_with(y, ws, || None)
    }

    /// [`StateSpace::potential_energy`] with what `lent` gives of some linear slots, called
    /// once per slot in order ([`LentStiffness`]; `None`: ask the element): the recorder's
    /// copies of their matrices, or the forces of its row, which spare a virtual call and a
    /// read of the element per slot, and the `n²` products. The same sums in the same order,
    /// so the same bits. Allocation-free.
    pub fn potential_energy_with<'m>(
        &self,
        y: &[f64],
        ws: &mut ElementWorkspace,
        mut lent: impl FnMut() -> Option<LentStiffness<'m>>,
    ) -> Option<f64> {
        let n = self.dofs.len();
        let mut total = 0.0;
        for slot in &self.slots {
            let copied = lent();
            if !slot.stores_energy() {
                continue; // masses, dashpots and Rayleigh terms store no energy
            }
            let from_copy = match copied {
                Some(LentStiffness::Matrices(m, ne)) => {
                    m.stored_energy_at(DofMap::new(&self.maps[slot.map_start()..][..ne]), y)
                }
                Some(LentStiffness::Forces(f)) => {
                    let map = DofMap::new(&self.maps[slot.map_start()..][..f.len()]);
                    ConstantMatrices::stored_energy_from_forces(map, y, f)
                }
                None => None,
            };
            if let Some(e) = from_copy {
                total += e;
                continue;
            }
            let ne = slot.n_dofs();
            let matrices = match slot.kernel {
                SlotKernel::Linear => slot.element.constant_matrices(),
                _ => None,
            };
            // `½ uᵀ K u` from the borrowed `K` (issue 20: the entry-by-entry sum of the law
            // was most of a recorded energy column).
            if let Some(e) = matrices.and_then(|m| m.stored_energy_at(slot.dof_map(&self.maps), y))
            {
                total += e;
                continue;
            }
            for (i, m) in slot.dof_map(&self.maps).iter().enumerate() {
                ws.u[i] = m.map(|k| y[k]).unwrap_or(0.0);
            }
            if let Some(m) = matrices {
                total += m.stored_energy(&ws.u[..ne], &mut ws.r[..ne]);
                continue;
            }
            let s0 = 2 * n + slot.state_offset();
            ws.s[..slot.n_states()].copy_from_slice(&y[s0..s0 + slot.n_states()]);
            let held = slot
                .element
                .potential_energy(&ws.u[..ne], &ws.s[..slot.n_states()]);
            total += held.or_else(|| slot.absorbed_energy_state().map(|i| ws.s[i]))?;
        }
        Some(total)
    }
}

/// `J0 = ∂R/∂Y` at the zero state (Abbiati et al. 2019, eq 11: the matrix `D` of the
/// generalized-α step is built from it) over the slots for which `include` holds, in compressed
/// rows: the contributions of [`emit_tangent`] summed in the order the dense assembly added
/// them. [`StateSpace::new`] and [`StateSpace::reassemble_tangent`] both assemble it so, so a
/// re-assembly after a parameter change gives the bits of a state space built with the new
/// value.
fn assemble_tangent(
    dofs: &[DofRef],
    slots: &[ElementSlot],
    maps: &[u32],
    size: usize,
    include: impl Fn(&ElementSlot) -> bool,
    estimate: Option<&Estimate>,
) -> CompressedRows {
    let n = dofs.len();
    let index = estimate.map(|_| super::DofIndex::new(dofs));
    let estimate = estimate.zip(index.as_ref());
    CompressedRows::assemble(size, |add| {
        emit_tangent(n, slots.iter().filter(|s| include(s)), maps, estimate, add)
    })
}

/// The contributions `(row, column, value)` of `J0` at the zero state in the order the dense
/// assembly added them: the `u̇ = v` rows, each slot's tangent (or its sparse damping), then
/// the estimate of a physical specimen.
fn emit_tangent<'s>(
    n: usize,
    slots: impl Iterator<Item = &'s ElementSlot>,
    maps: &[u32],
    estimate: Option<(&Estimate, &super::DofIndex<'_>)>,
    add: &mut dyn FnMut(usize, usize, f64),
) {
    for i in 0..n {
        add(i, n + i, -1.0);
    }
    for slot in slots {
        if let Some(c) = slot.element.sparse_damping() {
            // `r = C v`: only the `∂r/∂v` block, entry by entry (the dense tangent's other
            // entries are zeros).
            for (i, mi) in slot.dof_map(maps).iter().enumerate() {
                let Some(row) = mi else { continue };
                for (j, value) in c.row(i) {
                    if let Some(col) = slot.dof_map(maps).get(j) {
                        add(n + row, n + col, value);
                    }
                }
            }
            continue;
        }
        let t = zero_state_tangent(slot.element.as_ref());
        let ne = slot.n_dofs();
        let nse = slot.n_states();
        // Rows: r (element DOFs) then ṡ; columns: u, v, s.
        let col_index = |c: usize| -> Option<usize> {
            if c < ne {
                slot.dof_map(maps).get(c)
            } else if c < 2 * ne {
                slot.dof_map(maps).get(c - ne).map(|k| n + k)
            } else {
                Some(2 * n + slot.state_offset() + (c - 2 * ne))
            }
        };
        for row in 0..ne + nse {
            let target = if row < ne {
                match slot.dof_map(maps).get(row) {
                    Some(k) => n + k,
                    None => continue,
                }
            } else {
                2 * n + slot.state_offset() + (row - ne)
            };
            let sign = if row < ne { 1.0 } else { -1.0 };
            for c in 0..2 * ne + nse {
                if let Some(col) = col_index(c) {
                    add(target, col, sign * t[(row, c)]);
                }
            }
        }
    }
    if let Some((est, index)) = estimate {
        for (a, da) in est.dofs.iter().enumerate() {
            let Some(i) = index.get(da) else {
                continue;
            };
            for (b, db) in est.dofs.iter().enumerate() {
                let Some(j) = index.get(db) else {
                    continue;
                };
                add(n + i, j, est.stiffness[(a, b)]);
                add(n + i, n + j, est.damping[(a, b)]);
            }
        }
    }
}

/// The contributions `(i, j, m_ij)` of the slots' masses to the mass matrix `m`, in slot
/// order.
fn emit_mass(slots: &[ElementSlot], maps: &[u32], add: &mut dyn FnMut(usize, usize, f64)) {
    for slot in slots {
        if let Some(m) = slot.element.mass() {
            for (i, mi) in slot.dof_map(maps).iter().enumerate() {
                let Some(a) = mi else { continue };
                for (j, mj) in slot.dof_map(maps).iter().enumerate() {
                    let Some(b) = mj else { continue };
                    add(a, b, m[(i, j)]);
                }
            }
        }
    }
}

/// `j0` with the `β K_0` entries of an element's tangent Rayleigh damping added in the
/// `∂r/∂v` block (rows and columns `n + DOF`), `k0` its initial stiffness over the element
/// DOFs `map` (column-major): each entry is `j0`'s value, then the new term.
fn with_rayleigh_tangent(
    size: usize,
    j0: CompressedRows,
    n: usize,
    map: DofMap<'_>,
    beta: f64,
    k0: &[f64],
) -> CompressedRows {
    let ne = map.len();
    CompressedRows::assemble(size, |add| {
        for (i, j, v) in j0.iter() {
            add(i, j, v);
        }
        for (i, mi) in map.iter().enumerate() {
            let Some(row) = mi else { continue };
            for (j, mj) in map.iter().enumerate() {
                let Some(col) = mj else { continue };
                let k = k0[i + j * ne];
                if k != 0.0 {
                    add(n + row, n + col, beta * k);
                }
            }
        }
    })
}

/// The dense `size × size` matrix of `entries`.
fn dense_from_entries(size: usize, entries: &CompressedRows) -> DMatrix<f64> {
    let mut m = DMatrix::zeros(size, size);
    for (i, j, v) in entries.iter() {
        m[(i, j)] = v;
    }
    m
}

/// Whether an element can store energy: false for masses, dashpots and damping terms (a
/// linear stiffness that is identically zero).
fn stores_energy(e: &dyn crate::elements::Element) -> bool {
    if e.sparse_damping().is_some() {
        return false;
    }
    !e.linear_stiffness().is_some_and(|k| k.amax() == 0.0)
}

/// Add `sign ×` the estimated stiffness/damping to the momentum rows of `J0`.
fn add_estimate(j0: &mut CompressedRows, dofs: &[DofRef], est: &Estimate, sign: f64) {
    let n = dofs.len();
    let mut add = |i: usize, j: usize, v: f64| j0.add(i, j, v);
    for (a, da) in est.dofs.iter().enumerate() {
        let Some(i) = dofs.iter().position(|x| x == da) else {
            continue;
        };
        for (b, db) in est.dofs.iter().enumerate() {
            let Some(j) = dofs.iter().position(|x| x == db) else {
                continue;
            };
            add(n + i, j, sign * est.stiffness[(a, b)]);
            add(n + i, n + j, sign * est.damping[(a, b)]);
        }
    }
}

/// A partition: the computed state space plus, for a physical substructure, the port of the
/// specimen. The partition never commands the specimen itself: [`Partition::residual`] is the
/// computed elements only, and integrators command the port in the open, once per tick.
pub struct Partition {
    /// Computed part.
    pub state: StateSpace,
    /// The port of the physical substructure (physical partitions).
    pub physical: Option<PhysicalPort>,
    /// The specimen elements behind the port, with their partition DOF maps.
    pub specimen: Vec<(ElementRef, Vec<Option<usize>>)>,
    /// Index of this partition in its integrator.
    pub index: usize,
    /// Element workspace.
    pub ws: ElementWorkspace,
    /// Per specimen element: whether it can store energy (false for dashpots and masses).
    specimen_stores_energy: Vec<bool>,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("name", &self.state.name)
            .field("dofs", &self.state.dofs)
            .field("physical", &self.state.physical)
            .finish()
    }
}

impl Partition {
    /// Wrap a state space.
    pub fn new(
        state: StateSpace,
        physical: Option<PhysicalPort>,
        specimen: Vec<(ElementRef, Vec<Option<usize>>)>,
        index: usize,
    ) -> Self {
        let ws = state.workspace_for([]);
        let specimen_stores_energy = specimen
            .iter()
            .map(|(e, _)| stores_energy(e.as_ref()))
            .collect();
        Self {
            state,
            physical,
            specimen,
            index,
            ws,
            specimen_stores_energy,
        }
    }

    /// An empty partition: the placeholder left behind while a partition is moved to a
    /// worker thread (see [`crate::integrators::FreeTask`]). Allocation-free.
    pub fn empty() -> Self {
        Self {
            state: StateSpace::empty(),
            physical: None,
            specimen: Vec::new(),
            index: usize::MAX,
            ws: ElementWorkspace::new(0, 0, 0, 0),
            specimen_stores_energy: Vec::new(),
        }
    }

    /// `R(Y)` of the computed elements (pure: the specimen is not touched).
    pub fn residual(&mut self, y: &[f64], out: &mut [f64]) {
        self.state.residual(y, out, &mut self.ws);
    }

    /// [`StateSpace::residual_folded`] over the partition's workspace.
    pub fn residual_folded(&mut self, y: &[f64], c: f64, out: &mut [f64]) {
        self.state.residual_folded(y, c, out, &mut self.ws);
    }

    /// `R(Y0)` with the specimen measured at rest (before step 1).
    pub fn residual_at_rest(
        &mut self,
        t: f64,
        y: &[f64],
        out: &mut [f64],
    ) -> Result<(), PortError> {
        self.state.residual(y, out, &mut self.ws);
        if let Some(port) = self.physical.as_mut() {
            let n = self.state.n_dofs();
            let force = port.measure_at_rest(t, y)?;
            for (o, f) in out[n..2 * n].iter_mut().zip(force) {
                *o += f;
            }
        }
        Ok(())
    }

    /// The lab-control handle of this partition's physical substructure, if a transfer
    /// system stands behind it.
    pub fn lab(&self) -> Option<&dyn LabControl> {
        self.physical.as_ref()?.lab()
    }

    /// The lab-control handle, mutably.
    pub fn lab_mut(&mut self) -> Option<&mut dyn LabControl> {
        self.physical.as_mut()?.lab_mut()
    }

    /// Total mechanical energy with this partition's own DOF copy: kinetic plus the energy
    /// held or absorbed by its elements ([`StateSpace::potential_energy`]). A specimen's part
    /// is taken from its elements at the partition's state when they have no extra states
    /// (stand-in specimens), else from the physical substructure behind the port (the stand-in's
    /// own element states, or the laboratory's measured work `∫ F·dd`).
    pub fn energy(&mut self, y: &[f64]) -> Option<f64> {
        let k = self.state.kinetic_energy(y);
        let p = self.state.potential_energy(y, &mut self.ws)?;
        let s = self.specimen_energy_at(y).or_else(|| self.held_energy())?;
        Some(k + p + s)
    }

    /// The part of [`Partition::energy`] not given by the state: what the physical
    /// substructure behind the port holds or absorbed (the laboratory's measured work
    /// `∫ F·dd`, accumulated at its own ticks), `None` without a port.
    pub fn held_energy(&self) -> Option<f64> {
        self.physical.as_ref()?.substructure().potential_energy()
    }

    /// [`Partition::energy`] at a copy `y` of the state, with `held` read by
    /// [`Partition::held_energy`] when the copy was taken and the scratch `ws` of
    /// [`StateSpace::workspace`]: the same sums in the same order, so the same bits.
    pub fn energy_at(
        &self,
        y: &[f64],
        held: Option<f64>,
        ws: &mut ElementWorkspace,
    ) -> Option<f64> {
        self.energy_at_with(y, held, ws, || None)
    }

    /// [`Partition::energy_at`] with the stiffness of linear slots lent as
    /// [`StateSpace::potential_energy_with`] takes it: the same bits. Allocation-free.
    pub fn energy_at_with<'m>(
        &self,
        y: &[f64],
        held: Option<f64>,
        ws: &mut ElementWorkspace,
        lent: impl FnMut() -> Option<LentStiffness<'m>>,
    ) -> Option<f64> {
        let k = self.state.kinetic_energy(y);
        let p = self.state.potential_energy_with(y, ws, lent)?;
        let s = self.specimen_energy_at(y).or(held)?;
        Some(k + p + s)
    }

    /// The specimen elements' stored energy at the partition state `y`, when every one of
    /// them is conservative and has no extra state.
    fn specimen_energy_at(&self, y: &[f64]) -> Option<f64> {
        let mut s = 0.0;
        let mut u = [0.0f64; 16];
        for ((e, map), &stores) in self.specimen.iter().zip(&self.specimen_stores_energy) {
            if !stores {
                continue; // dashpots and masses hold no energy
            }
            if e.n_states() > 0 || map.len() > u.len() {
                return None;
            }
            for (i, m) in map.iter().enumerate() {
                u[i] = m.map(|k| y[k]).unwrap_or(0.0);
            }
            s += e.potential_energy(&u[..map.len()], &[])?;
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::{build_partitions, Grouping};
    use crate::model::NoFiles;

    /// A chain of springs and dashpots with Bouc-Wen storeys every seventh storey (generic
    /// slots between runs of linear ones), masses and Rayleigh damping.
    fn mixed_chain(n: usize) -> Model {
        Model::from_toml(&mixed_chain_text(n), "mixed_chain.toml", &NoFiles)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`mixed_chain_text`] with springs for its Bouc-Wen storeys and no dashpots: a linear
    /// chain whose only damping is Rayleigh's (a run the residual fuses).
    fn linear_rayleigh_chain_text(n: usize) -> String {
        let linear =
            mixed_chain_text(n).replace("type = \"bouc_wen\"", "type = \"spring\"\nk = 3.0e4");
        let linear: String = linear
            .split("[[element]]")
            .filter(|e| !e.contains("type = \"dashpot\""))
            .collect::<Vec<_>>()
            .join("[[element]]");
        linear
            .lines()
            .filter(|l| {
                !l.starts_with("A = ")
                    && !l.starts_with("beta = 3.5")
                    && !l.starts_with("gamma")
                    && !l.starts_with("n = 1.0")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The monolithic state space of [`linear_rayleigh_chain_text`].
    fn linear_rayleigh_chain(n: usize) -> StateSpace {
        let text = linear_rayleigh_chain_text(n);
        let model = Model::from_toml(&text, "linear_chain.toml", &NoFiles)
            .unwrap_or_else(|e| panic!("{e}"));
        build_partitions(&model, Grouping::Monolithic)
            .expect("builds")
            .remove(0)
            .state
    }

    /// `got = R(y)` of `st` equals the slot-by-slot residual to round-off: each row within 4 ε
    /// of the sum of its terms' magnitudes (`what` names the residual in the message).
    fn assert_near_slot_by_slot(st: &StateSpace, y: &[f64], got: &[f64], what: &str) {
        let mut expected = vec![0.0; st.size()];
        residual_slot_by_slot(st, y, &mut expected);
        let mut scale = vec![0.0; st.size()];
        for (i, j, v) in st.j0_entries().iter() {
            scale[i] += (v * y[j]).abs();
        }
        for i in 0..st.size() {
            assert!(
                (got[i] - expected[i]).abs() <= 4.0 * f64::EPSILON * scale[i],
                "row {i}: {what} {} vs slot by slot {} (scale {})",
                got[i],
                expected[i],
                scale[i]
            );
        }
    }

    /// The model file of [`mixed_chain`].
    fn mixed_chain_text(n: usize) -> String {
        let mut t = String::from("title = \"mixed chain\"\n");
        for i in 1..=n {
            t += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
        }
        for i in 1..=n {
            let nodes = if i == 1 {
                "[1]".to_string()
            } else {
                format!("[{}, {i}]", i - 1)
            };
            if i % 7 == 3 {
                t += &format!(
                    "[[element]]\ntype = \"bouc_wen\"\nname = \"b{i}\"\nnodes = {nodes}\n\
                     dof = \"x\"\nA = 4.0e4\nbeta = 3.5\ngamma = 60.0\nn = 1.0\n"
                );
            } else {
                t += &format!(
                    "[[element]]\ntype = \"spring\"\nname = \"k{i}\"\nnodes = {nodes}\n\
                     dof = \"x\"\nk = {}\n",
                    4.0e4 + 13.0 * i as f64
                );
            }
            t += &format!(
                "[[element]]\ntype = \"dashpot\"\nname = \"c{i}\"\nnodes = {nodes}\ndof = \"x\"\n\
                 c = 60.0\n[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n"
            );
        }
        t += "[damping]\nalpha = 0.05\nbeta = 0.001\n";
        t += "[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\n";
        t
    }

    /// `R(Y)` slot by slot in slot order, as the residual summed before its linear slots were
    /// merged into runs (the reference of the merged sweep).
    fn residual_slot_by_slot(st: &StateSpace, y: &[f64], out: &mut [f64]) {
        let n = st.dofs.len();
        let mut ws = st.workspace();
        let (head, tail) = out.split_at_mut(n);
        for (o, v) in head.iter_mut().zip(&y[n..2 * n]) {
            *o = -v;
        }
        tail.iter_mut().for_each(|x| *x = 0.0);
        for slot in &st.slots {
            match &slot.kernel {
                SlotKernel::Inert => {}
                SlotKernel::Linear => {
                    let (_, terms) =
                        SlotKernel::classify(slot.element.as_ref(), slot.dof_map(&st.maps), n);
                    let (rows, cols, vals) = (&terms.rows, &terms.cols, &terms.vals);
                    let mut start = 0;
                    for &(target, end) in rows {
                        let mut acc = 0.0;
                        for (c, v) in cols[start..end].iter().zip(&vals[start..end]) {
                            acc += v * y[*c as usize];
                        }
                        out[target] += acc;
                        start = end;
                    }
                }
                SlotKernel::Generic => {
                    st.eval_slot(slot, y, &mut ws);
                    for (i, m) in slot.dof_map(&st.maps).iter().enumerate() {
                        if let Some(k) = m {
                            out[n + k] += ws.r[i];
                        }
                    }
                    let s0 = 2 * n + slot.state_offset();
                    for (o, sd) in out[s0..s0 + slot.n_states()].iter_mut().zip(&ws.sdot) {
                        *o = -sd;
                    }
                }
            }
        }
    }

    /// The merged runs of linear slots give the slot-by-slot residual to the last bit, with
    /// generic (Bouc-Wen) slots between the runs, after a slot is moved to the generic path at
    /// run time and after a slot is removed.
    #[test]
    fn merged_linear_runs_equal_the_slot_by_slot_residual_bit_for_bit() {
        let mut st = build_partitions(&mixed_chain(40), Grouping::Monolithic)
            .expect("builds")
            .remove(0)
            .state;
        let runs = |st: &StateSpace| {
            st.residual_plan
                .iter()
                .filter(|p| matches!(p, ResidualPass::Linear(_)))
                .count()
        };
        assert!(runs(&st) >= 5, "{} runs", runs(&st));
        let check = |st: &StateSpace| {
            let size = st.size();
            let y: Vec<f64> = (0..size)
                .map(|i| 1e-2 * (0.37 * i as f64).sin() + 1e-3 * (1.3 * i as f64).cos())
                .collect();
            let (mut a, mut b) = (vec![0.0; size], vec![0.0; size]);
            let mut ws = st.workspace();
            st.residual(&y, &mut a, &mut ws);
            residual_slot_by_slot(st, &y, &mut b);
            for (i, (x, e)) in a.iter().zip(&b).enumerate() {
                assert_eq!(x.to_bits(), e.to_bits(), "row {i}: {x} vs {e}");
            }
        };
        check(&st);
        let spring = st
            .slots
            .iter()
            .position(|s| s.name() == "k20")
            .expect("k20");
        st.set_element_parameter(spring, "k", 5.0e4).expect("k");
        assert!(!st.slots[spring].is_precomputed_linear());
        check(&st);
        let dashpot = st
            .slots
            .iter()
            .position(|s| s.name() == "c11")
            .expect("c11");
        st.remove_slot(dashpot);
        check(&st);
    }

    /// The fused form of a run as it was made before it was read straight from the slot
    /// groups (issue 20): every row's terms merged into a vector of rows beside the run's
    /// merged copy, `β` by a full sort. The reference of
    /// [`fused_runs_read_from_the_groups_equal_those_of_the_merged_rows_bit_for_bit`]: the
    /// fused form of `run` over `n` DOFs, or `None`.
    fn fused_from_merged_rows(run: &LinearRun, n: usize) -> Option<FusedRun> {
        // Merge each target's terms by column (sums in the run's order).
        let mut rows: Vec<(usize, Vec<(usize, f64)>)> = Vec::with_capacity(run.targets.len());
        let mut t0 = 0;
        for &(target, g_end) in &run.targets {
            let t_end = run.group_end[g_end - 1];
            let mut terms: Vec<(usize, f64)> = run.cols[t0..t_end]
                .iter()
                .map(|&c| c as usize)
                .zip(run.vals[t0..t_end].iter().copied())
                .collect();
            if terms.iter().any(|&(c, _)| c >= 2 * n) || target < n || target >= 2 * n {
                return None;
            }
            terms.sort_by_key(|t| t.0);
            let mut merged: Vec<(usize, f64)> = Vec::with_capacity(terms.len());
            for (c, v) in terms {
                match merged.last_mut() {
                    Some(last) if last.0 == c => last.1 += v,
                    _ => merged.push((c, v)),
                }
            }
            rows.push((target, merged));
            t0 = t_end;
        }
        // β: the median ratio c_ij / k_ij over the off-diagonal places holding both.
        let mut ratios = Vec::new();
        for (target, terms) in &rows {
            let i = target - n;
            for &(c, k) in terms.iter().filter(|t| t.0 < n && t.0 != i && t.1 != 0.0) {
                if let Ok(p) = terms.binary_search_by_key(&(n + c), |t| t.0) {
                    let ratio = terms[p].1 / k;
                    if ratio.is_finite() && ratio != 0.0 {
                        ratios.push(ratio);
                    }
                }
            }
        }
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_by(f64::total_cmp);
        let beta = ratios[ratios.len() / 2];
        let mut f = FusedRun {
            beta,
            n,
            ..Default::default()
        };
        let mut p = PlainTerms::default();
        for (target, terms) in &rows {
            let k_at = |j: usize| {
                terms
                    .binary_search_by_key(&j, |t| t.0)
                    .map_or(0.0, |p| terms[p].1)
            };
            for &(c, v) in terms.iter().filter(|t| t.0 < n && t.1 != 0.0) {
                p.k_cols.push(column_index(c));
                p.k_vals.push(v);
            }
            for &(c, v) in terms.iter().filter(|t| t.0 >= n) {
                let e = v - beta * k_at(c - n);
                if e.abs() > 4.0 * f64::EPSILON * v.abs() {
                    p.e_cols.push(column_index(c));
                    p.e_vals.push(e);
                }
            }
            // K terms without a damping partner: E holds −β k there.
            for &(c, k) in terms.iter().filter(|t| t.0 < n && t.1 != 0.0) {
                if terms.binary_search_by_key(&(n + c), |t| t.0).is_err() {
                    p.e_cols.push(column_index(n + c));
                    p.e_vals.push(-(beta * k));
                }
            }
            f.targets.push(column_index(*target));
            f.k_end.push(column_index(p.k_cols.len()));
            f.e_end.push(column_index(p.e_cols.len()));
        }
        // Fused only where the damping really is `β K` up to (at most) a diagonal, and the
        // fused sweep is the shorter one.
        let fused_terms = p.k_vals.len() + p.e_vals.len() + n;
        let fused = p.e_vals.len() <= f.targets.len() && fused_terms < run.vals.len();
        f.terms = FusedTerms::Plain(p);
        fused.then_some(f)
    }

    /// Whether two fused runs are the same to the last bit (their terms compared in the
    /// plain layout, whatever each one's).
    fn same_fused(a: &FusedRun, b: &FusedRun) -> bool {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (pa, pb) = (a.plain_terms(), b.plain_terms());
        a.beta.to_bits() == b.beta.to_bits()
            && a.n == b.n
            && a.targets == b.targets
            && a.k_end == b.k_end
            && pa.k_cols == pb.k_cols
            && bits(&pa.k_vals) == bits(&pb.k_vals)
            && a.e_end == b.e_end
            && pa.e_cols == pb.e_cols
            && bits(&pa.e_vals) == bits(&pb.e_vals)
    }

    /// Each run's fused form read straight from the slot groups ([`FusedRun::from_groups`])
    /// is the one the merged copy of the run gave ([`fused_from_merged_rows`]) to the last bit,
    /// or none where that gave none: Rayleigh-damped linear chains (fused), the chain with
    /// Bouc-Wen storeys and dashpots between its runs, with and without Rayleigh damping (runs
    /// not fused), and the plan the state space keeps holds those runs.
    #[test]
    fn fused_runs_read_from_the_groups_equal_those_of_the_merged_rows_bit_for_bit() {
        let undamped = mixed_chain_text(12).replace("[damping]\nalpha = 0.05\nbeta = 0.001\n", "");
        let undamped =
            Model::from_toml(&undamped, "mixed.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"));
        let spaces = [
            linear_rayleigh_chain(30),
            linear_rayleigh_chain(301),
            build_partitions(&mixed_chain(40), Grouping::Monolithic)
                .expect("builds")
                .remove(0)
                .state,
            build_partitions(&undamped, Grouping::Monolithic)
                .expect("builds")
                .remove(0)
                .state,
        ];
        let mut fused = 0;
        for st in &spaces {
            let n = st.n_dofs();
            let groups = SlotGroups::from_slots(&st.slots, &st.maps, n);
            // The runs: the groups of consecutive linear slots between generic ones.
            let mut runs: Vec<Vec<u32>> = vec![Vec::new()];
            let mut next = 0;
            for (k, kernel) in kernels(&st.slots).iter().enumerate() {
                match kernel {
                    SlotKernel::Inert => {}
                    SlotKernel::Linear => {
                        while next < groups.groups.len() && groups.groups[next].0 as usize == k {
                            runs.last_mut().expect("a run").push(next as u32);
                            next += 1;
                        }
                    }
                    SlotKernel::Generic => runs.push(Vec::new()),
                }
            }
            runs.retain(|r| !r.is_empty());
            let kept: Vec<&FusedRun> = st
                .residual_plan
                .iter()
                .filter_map(|p| match p {
                    ResidualPass::Fused(f) => Some(f),
                    _ => None,
                })
                .collect();
            let mut kept = kept.into_iter();
            for mut order in runs {
                order.sort_by_key(|&g| groups.target(g));
                let n_terms: usize = order.iter().map(|&g| groups.terms(g).len()).sum();
                let run = LinearRun::from_groups(&groups, &order, n_terms);
                let reference = fused_from_merged_rows(&run, n);
                let got = FusedRun::from_groups(&groups, &order, n_terms, n);
                match (&reference, &got) {
                    (None, None) => {}
                    (Some(a), Some(b)) => {
                        assert!(same_fused(a, b), "{a:?}\n{b:?}");
                        assert!(same_fused(a, kept.next().expect("kept in the plan")));
                        fused += 1;
                    }
                    _ => panic!("fused: {} vs {}", reference.is_some(), got.is_some()),
                }
            }
            assert!(kept.next().is_none());
        }
        assert!(fused >= 2, "{fused} fused runs");
    }

    /// A linear chain with Rayleigh damping `C = α M + β K` is summed as one fused run
    /// `K (u + β v) + α M v`: equal to the slot-by-slot residual to round-off (each row within
    /// 4 ε of the sum of its terms' magnitudes), with or without the workspace's `w`; with
    /// dashpots and no Rayleigh damping (`C` not proportional to `K`) the run is not fused and
    /// the sums stay bit for bit.
    #[test]
    fn rayleigh_runs_are_fused_to_round_off_and_others_are_not() {
        let st = linear_rayleigh_chain(30);
        assert!(!st.has_nonlinear_elements());
        assert!(
            st.residual_plan
                .iter()
                .any(|p| matches!(p, ResidualPass::Fused(_))),
            "the Rayleigh run is fused"
        );
        let size = st.size();
        let n = st.n_dofs();
        let y: Vec<f64> = (0..size)
            .map(|i| 1e-2 * (0.37 * i as f64).sin() + 1e-3 * (1.3 * i as f64).cos())
            .collect();
        let (mut a, mut c) = (vec![0.0; size], vec![0.0; size]);
        st.residual(&y, &mut a, &mut st.workspace());
        st.residual(&y, &mut c, &mut ElementWorkspace::new(2, 0, 0, 0));
        for i in 0..size {
            assert_eq!(
                a[i].to_bits(),
                c[i].to_bits(),
                "row {i}: w formed once or per term"
            );
        }
        assert_near_slot_by_slot(&st, &y, &a, "fused");
        assert!((n..2 * n).any(|i| a[i] != 0.0));
        // Springs and dashpots without Rayleigh damping: not fused.
        let text = mixed_chain_text(12).replace("[damping]\nalpha = 0.05\nbeta = 0.001\n", "");
        let model =
            Model::from_toml(&text, "mixed.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"));
        let st = build_partitions(&model, Grouping::Monolithic)
            .expect("builds")
            .remove(0)
            .state;
        assert!(!st
            .residual_plan
            .iter()
            .any(|p| matches!(p, ResidualPass::Fused(_))));
    }

    /// The coupling product `B b_u` of the generalized-α solve folds into a fused Rayleigh
    /// residual (`K (u + (β + c) v)`) with the same solution to round-off, only where `B` is
    /// `c K` of that residual, and no longer once the plan changes (an element moved to its
    /// law during a run).
    #[test]
    fn the_coupling_product_folds_into_a_fused_residual_to_round_off() {
        use crate::linalg::StateMatrixFactors;
        let mut st = linear_rayleigh_chain(600);
        let (size, n) = (st.size(), st.n_dofs());
        let c = 2.5e-4;
        let d = StateMatrixFactors::from_entries(size, n, &st.d_entries(c)).expect("regular");
        let (b_start, b_cols, b_vals) = d.coupling().expect("the reduced path");
        assert!(st.folds_coupling(c, b_start, b_cols, b_vals));
        assert!(
            !st.folds_coupling(2.0 * c, b_start, b_cols, b_vals),
            "B is not 2c K"
        );
        let y: Vec<f64> = (0..size)
            .map(|i| 1e-2 * (0.37 * i as f64).sin() + 1e-3 * (1.3 * i as f64).cos())
            .collect();
        let mut ws = st.workspace();
        let (mut plain, mut folded) = (vec![0.0; size], vec![0.0; size]);
        st.residual(&y, &mut plain, &mut ws);
        st.residual_folded(&y, c, &mut folded, &mut ws);
        for r in [&mut plain, &mut folded] {
            r.iter_mut().for_each(|x| *x = -*x);
        }
        d.solve(&mut plain);
        d.solve_folded(&mut folded);
        let scale = plain.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(scale > 0.0);
        for i in 0..size {
            assert!(
                (plain[i] - folded[i]).abs() <= 1e-12 * scale,
                "unknown {i}: {} folded vs {} (scale {scale})",
                folded[i],
                plain[i]
            );
        }
        // A changed parameter moves its element to the generic path: a new plan, not folded.
        let version = st.plan_version();
        let spring = st
            .slots
            .iter()
            .position(|s| matches!(s.kernel, SlotKernel::Linear) && s.n_dofs() <= 2)
            .expect("a spring slot");
        st.set_element_parameter(spring, "k", 4.5e4).expect("k");
        assert_ne!(st.plan_version(), version);
        assert!(!st.folds_coupling(c, b_start, b_cols, b_vals));
        // Springs and dashpots without Rayleigh damping: no fused pass, nothing folded.
        let text = mixed_chain_text(12).replace("[damping]\nalpha = 0.05\nbeta = 0.001\n", "");
        let model =
            Model::from_toml(&text, "mixed.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"));
        let st = build_partitions(&model, Grouping::Monolithic)
            .expect("builds")
            .remove(0)
            .state;
        let d = StateMatrixFactors::from_entries(st.size(), st.n_dofs(), &st.d_entries(c))
            .expect("regular");
        if let Some((b_start, b_cols, b_vals)) = d.coupling() {
            assert!(!st.folds_coupling(c, b_start, b_cols, b_vals));
        }
    }

    /// `(Y, Ẏ, V)` and `F` of `size` rows (smooth, of mixed signs; `F`'s displacement rows
    /// zero, one momentum row `−0`) and step constants, for the folded passes' tests.
    #[allow(clippy::type_complexity)]
    fn folded_inputs(
        size: usize,
        n: usize,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, FoldedStep) {
        let wave = |a: f64, b: f64| -> Vec<f64> {
            (0..size)
                .map(|i| 1e-2 * (a * i as f64).sin() + 1e-3 * (b * i as f64).cos())
                .collect()
        };
        let (y, ydot, v) = (wave(0.37, 1.3), wave(0.11, 0.7), wave(0.53, 2.1));
        let mut load = wave(0.29, 0.9);
        load[..n].iter_mut().for_each(|f| *f = 0.0);
        load[n + 3] = -0.0;
        let step = FoldedStep {
            ky: 2.7e-4,
            kv: -1.3e-5,
            wy: 0.93,
            wv: -0.07,
            c: 2.5e-4,
        };
        (y, ydot, v, load, step)
    }

    /// The merged predictor and rate passes of a folded partition give the bits of the
    /// passes they replace: the predictor, `R` by [`StateSpace::residual_folded`] and
    /// `Ẏ = F − R`; and they refuse (writing nothing) a partition that does not fold.
    #[test]
    fn the_merged_predictor_and_rate_passes_keep_the_bits_of_the_separate_ones() {
        let mut st = linear_rayleigh_chain(300);
        let (size, n) = (st.size(), st.n_dofs());
        let (y, ydot, v, load, step) = folded_inputs(size, n);
        // The separate passes, as `AlphaStepper::step` makes them.
        let mut ws = st.workspace();
        let (mut yt, mut vt) = (vec![0.0; size], vec![0.0; size]);
        for i in 0..size {
            yt[i] = (y[i] + step.ky * ydot[i]) + step.kv * v[i];
            vt[i] = ydot[i] * step.wy + step.wv * v[i];
        }
        let mut res = vec![0.0; size];
        st.residual_folded(&yt, step.c, &mut res, &mut ws);
        let expected: Vec<f64> = load.iter().zip(&res).map(|(l, r)| l - r).collect();
        // The merged passes.
        let mut ws = st.workspace();
        let (mut yt2, mut vt2, mut rate) = (vec![9.0; size], vec![9.0; size], vec![9.0; size]);
        assert!(st.folded_predictor_rate(
            step,
            (&y, &ydot, &v),
            (&mut yt2, &mut vt2),
            &load,
            &mut rate,
            &mut ws,
        ));
        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&yt2), bits(&yt), "predicted Y");
        assert_eq!(bits(&vt2), bits(&vt), "predicted V");
        assert_eq!(bits(&rate), bits(&expected), "F − R");
        // A workspace of the wrong size, or a plan that is no longer one fused pass: refused.
        let mut small = ElementWorkspace::new(0, 0, 0, 0);
        assert!(!st.folded_predictor_rate(
            step,
            (&y, &ydot, &v),
            (&mut yt2, &mut vt2),
            &load,
            &mut rate,
            &mut small,
        ));
        let spring = st
            .slots
            .iter()
            .position(|s| matches!(s.kernel, SlotKernel::Linear) && s.n_dofs() <= 2)
            .expect("a spring slot");
        st.set_element_parameter(spring, "k", 4.5e4).expect("k");
        let mut ws = st.workspace();
        let mut untouched = vec![7.0; size];
        assert!(!st.folded_predictor_rate(
            step,
            (&y, &ydot, &v),
            (&mut yt2, &mut vt2),
            &load,
            &mut untouched,
            &mut ws,
        ));
        assert!(untouched.iter().all(|&x| x == 7.0));
    }

    /// The passes of [`StateSpace::folded_predictor_rate`] by ranges ([`FoldedRows`]), run in
    /// two halves on two threads at once (as the two-core step runs them), give the bits of
    /// the whole passes and of the separate ones, wherever the rows are split.
    #[test]
    fn the_folded_passes_in_two_halves_on_two_threads_keep_the_bits_of_the_whole_pass() {
        let st = linear_rayleigh_chain(300);
        let (size, n) = (st.size(), st.n_dofs());
        let (y, ydot, v, load, step) = folded_inputs(size, n);
        let mut ws = st.workspace();
        let (mut yt, mut vt, mut rate) = (vec![9.0; size], vec![9.0; size], vec![9.0; size]);
        assert!(st.folded_predictor_rate(
            step,
            (&y, &ydot, &v),
            (&mut yt, &mut vt),
            &load,
            &mut rate,
            &mut ws,
        ));
        // The separate passes (predictor, residual, F − R), as in the test above.
        let (mut yt1, mut vt1) = (vec![0.0; size], vec![0.0; size]);
        for i in 0..size {
            yt1[i] = (y[i] + step.ky * ydot[i]) + step.kv * v[i];
            vt1[i] = ydot[i] * step.wy + step.wv * v[i];
        }
        let mut res = vec![0.0; size];
        st.residual_folded(&yt1, step.c, &mut res, &mut st.workspace());
        let separate: Vec<f64> = load.iter().zip(&res).map(|(l, r)| l - r).collect();
        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&rate), bits(&separate));
        let rows = st.folded_rows().expect("one fused pass");
        assert_eq!(rows.n_dofs(), n);
        for split in [0, 1, 137, n / 2, n - 1, n] {
            let mut ws = st.workspace();
            let w = ws.folded_weights();
            assert_eq!(w.len(), n);
            let (mut yt2, mut vt2, mut rate2) = (vec![9.0; size], vec![9.0; size], vec![9.0; size]);
            {
                let (first, second) =
                    FoldedPredictor::halves(&mut yt2, &mut vt2, &mut rate2, w, split);
                let start = (&y[..], &ydot[..], &v[..]);
                let load = &load[..];
                std::thread::scope(|s| {
                    s.spawn(|| rows.predictor(step, split, start, load, second));
                    rows.predictor(step, 0, start, load, first);
                });
            }
            {
                let (w, yt2) = (&*w, &yt2[..]);
                let (head, tail) = rate2[n..].split_at_mut(split);
                std::thread::scope(|s| {
                    s.spawn(|| rows.gather(split, w, yt2, &load, tail));
                    rows.gather(0, w, yt2, &load, head);
                });
            }
            assert_eq!(bits(&yt2), bits(&yt), "Ỹ, split at {split}");
            assert_eq!(bits(&vt2), bits(&vt), "Ṽ, split at {split}");
            assert_eq!(bits(&rate2), bits(&rate), "F − R, split at {split}");
        }
    }

    /// A slot made generic (a parameter changed during a run) or removed rebuilds the plan from
    /// the remaining slots' own terms: a fused Rayleigh run keeps no groups to take them from,
    /// and losing them would drop the Rayleigh and spring forces from `R`. The workspace's
    /// dual-number buffers and element tangent are sized by the slots differentiated during a
    /// run, not by the Rayleigh element over every DOF (an `N²` tangent at `N = 10⁴` is 800 MB).
    #[test]
    fn a_fused_plan_is_rebuilt_from_the_slots_and_the_workspace_stays_element_sized() {
        let mut st = linear_rayleigh_chain(40);
        let ws = st.workspace();
        assert_eq!(
            ws.kt.len(),
            0,
            "no slot is differentiated in a linear chain"
        );
        assert_eq!(ws.ud.len(), 0);
        let spring = st
            .slots
            .iter()
            .position(|s| matches!(s.kernel, SlotKernel::Linear) && s.n_dofs() <= 2)
            .expect("a spring slot");
        st.set_element_parameter(spring, "k", 4.5e4).expect("k");
        assert!(
            st.residual_plan
                .iter()
                .any(|p| matches!(p, ResidualPass::Fused(_))),
            "the Rayleigh run is still fused"
        );
        let ws = st.workspace();
        assert!(
            ws.kt.len() <= 4,
            "the generic spring's tangent only: {}",
            ws.kt.len()
        );
        let size = st.size();
        let y: Vec<f64> = (0..size)
            .map(|i| 1e-2 * (0.41 * i as f64).sin() + 1e-3 * (1.7 * i as f64).cos())
            .collect();
        let mut a = vec![0.0; size];
        st.residual(&y, &mut a, &mut st.workspace());
        assert_near_slot_by_slot(&st, &y, &a, "rebuilt plan");
    }

    /// `J0` assembled again (refactorization on request) keeps the `β K_0` entries of tangent
    /// Rayleigh damping: with no parameter changed it equals the start-up `J0` and reports no
    /// change (without them it would drop that damping from `D`).
    #[test]
    fn reassembled_tangent_keeps_the_tangent_rayleigh_entries() {
        let text = mixed_chain_text(10)
            .replace("[damping]\n", "[damping]\nstiffness = \"committed\"\n")
            .replace(
                "type = \"bouc_wen\"\n",
                "type = \"bouc_wen\"\nrayleigh = true\n",
            );
        let model = Model::from_toml(&text, "mixed_chain_committed.toml", &NoFiles)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut st = build_partitions(&model, Grouping::Monolithic)
            .expect("builds")
            .remove(0)
            .state;
        assert!(st.slots.iter().any(|s| s.tangent_rayleigh.is_some()));
        let before = st.j0_entries().clone();
        assert!(!st.reassemble_tangent(), "no parameter changed");
        assert_eq!(st.j0_entries(), &before);
    }

    /// Values whose sums depend on their order (magnitudes from 1e-300 to 1e300, signed
    /// zeros, subnormals), from a fixed linear congruential sequence.
    fn order_sensitive_values(count: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let bits = state >> 11;
                match bits % 7 {
                    0 => -0.0,
                    1 => f64::from_bits(bits & 0x000f_ffff_ffff_ffff),
                    _ => {
                        let mantissa = (bits % 1_000_003) as f64 / 1_000_003.0 - 0.5;
                        mantissa * 10f64.powi((bits % 601) as i32 - 300)
                    }
                }
            })
            .collect()
    }

    /// [`add_products`] and [`add_few_products`] (unrolled by the count) give the bits of the
    /// plain loop for every count, from every start, on sums whose order matters.
    #[test]
    fn unrolled_row_sums_equal_the_plain_loop_bit_for_bit() {
        let values = order_sensitive_values(120, 7);
        let operands = order_sensitive_values(120, 11);
        let product = |t: usize| values[t] * operands[t];
        for start in [0, 1, 5, 17] {
            for count in 0..=(3 * UNROLLED_TERMS + 5) {
                for acc in [0.0, -0.0, 1.5e-3] {
                    let mut plain = acc;
                    for t in start..start + count {
                        plain += product(t);
                    }
                    // SAFETY: every term `start .. start + count` lies within the vectors.
                    let unrolled = unsafe { add_products(acc, start, count, product) };
                    assert_eq!(unrolled.to_bits(), plain.to_bits(), "{start} + {count}");
                    let mut few = acc;
                    // SAFETY: as above.
                    unsafe { add_few_products(&mut few, start..start + count, product) };
                    assert_eq!(few.to_bits(), plain.to_bits(), "{start} + {count}");
                }
            }
        }
    }

    /// The AVX2 build of the in-place predictor gives the bits of the portable one.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_predictor_equals_the_portable_one_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let n = 37;
        let (y, ydot, v, load, step) = folded_inputs(2 * n, n);
        let b = 0.3 + step.c;
        let run = |avx2: bool| {
            let (mut y, mut ydot, mut v, mut w) =
                (y.clone(), ydot.clone(), v.clone(), vec![0.0; n]);
            let (state, _) = FoldedInPlace::halves(&mut y, &mut v, &mut ydot, &mut w, n);
            if avx2 {
                // SAFETY: the processor supports AVX2, checked above.
                unsafe { predict_in_place_avx2(step, b, &load[..n], state) };
            } else {
                predict_in_place(step, b, &load[..n], state);
            }
            [y, ydot, v, w]
                .concat()
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(true), run(false));
    }
}
