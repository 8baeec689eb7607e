//! Elements: the building blocks of every substructure.
//!
//! An element acts on an ordered list of node DOFs and may carry extra states `s` (hysteretic
//! variables). In the state-space form of Abbiati et al. (2019), eqs (1)–(2) it contributes
//! - a constant mass block over its DOFs,
//! - a *resisting* force `r(u, v, s)` on its DOFs (a spring between nodes 1→2 returns
//!   `k(u1 − u2)` at node 1, as in OpenSees),
//! - the rates `ṡ = h(u, v, s)` of its extra states; the substructure stores `R_s = −ṡ` so that
//!   `M Ẏ + R(Y) = F` with `M = diag(I, m, I)`.
//!
//! Every element evaluates with `f64` and with forward dual numbers ([`Dual64`]), so the initial
//! Jacobian `J0 = ∂R/∂Y` is exact (Abbiati et al. 2019, Steps 5/9); elements for which the
//! derivative at the zero state is wrong (slider models, ALGORITHMS.md E3) return an explicit
//! [`Element::initial_tangent`].

mod bouc_wen;
mod cubic_spring;
mod dashpot;
pub(crate) mod declare;
pub mod driver;
mod elastomeric_bearing;
pub(crate) mod lead_rubber;
mod linear;
mod mass;
mod mostaghel;
pub mod mr_damper;
mod rayleigh;
mod sliding_bearing;
mod small_list;
mod spring;
mod steel01;
mod steel02;
pub mod switching;
mod viscous_damper;

pub use bouc_wen::BoucWen;
pub use cubic_spring::CubicSpring;
pub use dashpot::Dashpot;
pub use driver::{DriverError, ElementDriver};
pub use elastomeric_bearing::ElastomericBearing;
pub use lead_rubber::{LeadLaw, LeadRubberBearing};
pub use linear::LinearSuperelement;
pub use mass::{Mass, SingleDofMass};
pub use mostaghel::Mostaghel;
pub use mr_damper::MrDamper;
pub use rayleigh::{RayleighDamping, SparseRows};
pub use sliding_bearing::{FrictionTable, TripleSlidingBearing};
pub use small_list::SmallList;
pub use spring::Spring;
pub use steel01::Steel01;
pub use steel02::Steel02;
pub use viscous_damper::ViscousDamper;

use nalgebra::DMatrix;
use num_dual::{Dual64, DualNum};
use std::fmt;
use std::sync::Arc;

/// A node DOF: node id and DOF name (`x`, `y`, `rz`, …). 16 bytes, no heap.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DofRef {
    /// Node id as written in the model file.
    pub node: i64,
    /// DOF name as declared on the node.
    pub dof: DofName,
}

impl DofRef {
    /// Shorthand constructor.
    pub fn new(node: i64, dof: &str) -> Self {
        Self {
            node,
            dof: DofName::new(dof),
        }
    }
}

/// A DOF name (`x`, `y`, `rz`, …), interned: an index into one table of the distinct names
/// shared by the whole process, so that a [`DofRef`] is 16 bytes without a heap string of
/// its own and a node's names are 4 bytes each (issue 20: a model of 10⁵ DOFs held a
/// `String` per DOF reference). It reads, prints, compares, orders and hashes like the name
/// it stands for: the order is that of the text (not of the table), and two names are equal
/// exactly when their texts are.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DofName(u32);

/// The distinct DOF names, each once: the text of index `i` and the index of a text. Names
/// are never removed (a model has a handful of distinct ones), so each text is kept for the
/// life of the process.
struct DofNameTable {
    names: Vec<&'static str>,
    index: std::collections::HashMap<&'static str, u32>,
}

fn dof_name_table() -> &'static std::sync::RwLock<DofNameTable> {
    static TABLE: std::sync::OnceLock<std::sync::RwLock<DofNameTable>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        std::sync::RwLock::new(DofNameTable {
            names: Vec::new(),
            index: std::collections::HashMap::new(),
        })
    })
}

impl DofName {
    /// The interned name `name` (added to the table on its first use).
    pub fn new(name: &str) -> Self {
        let table = dof_name_table();
        if let Some(&i) = table
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .index
            .get(name)
        {
            return Self(i);
        }
        let mut t = table.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = t.index.get(name) {
            return Self(i);
        }
        let text: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let i = u32::try_from(t.names.len()).expect("fewer than 2³² distinct DOF names");
        t.names.push(text);
        t.index.insert(text, i);
        Self(i)
    }

    /// The name's text.
    pub fn as_str(&self) -> &'static str {
        dof_name_table()
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .names[self.0 as usize]
    }
}

impl Default for DofName {
    fn default() -> Self {
        Self::new("")
    }
}

impl std::ops::Deref for DofName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for DofName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for DofName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for DofName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialOrd for DofName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DofName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self.0 == other.0 {
            std::cmp::Ordering::Equal
        } else {
            self.as_str().cmp(other.as_str())
        }
    }
}

impl From<&str> for DofName {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<&String> for DofName {
    fn from(name: &String) -> Self {
        Self::new(name)
    }
}

impl From<String> for DofName {
    fn from(name: String) -> Self {
        Self::new(&name)
    }
}

impl From<DofName> for String {
    fn from(name: DofName) -> Self {
        name.as_str().to_owned()
    }
}

impl PartialEq<str> for DofName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for DofName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for DofName {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<DofName> for str {
    fn eq(&self, other: &DofName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<DofName> for &str {
    fn eq(&self, other: &DofName) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<DofName> for String {
    fn eq(&self, other: &DofName) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Display for DofRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {} dof {}", self.node, self.dof)
    }
}

/// The DOFs of a one- or two-node element (node 1, then node 2 if any), inside the element.
pub type PairDofs = SmallList<DofRef, 2>;

/// Physical quantity of an element output, for column units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Force (moment on rotational DOFs).
    Force,
    /// Displacement (rotation on rotational DOFs).
    Displacement,
    /// Velocity.
    Velocity,
    /// Energy.
    Energy,
    /// No unit.
    Dimensionless,
    /// Stiffness (force per displacement of the DOF).
    Stiffness,
}

/// Scalar type the element laws are written over: `f64` for values, [`Dual64`] for tangents.
pub trait Scalar: DualNum<Primitive = f64> + Copy {}
impl<T: DualNum<Primitive = f64> + Copy> Scalar for T {}

/// The constitutive law of an element in state-space form, generic over the scalar so that one
/// code path gives both values and exact derivatives. Implement this and call
/// [`impl_element_evaluation!`](crate::impl_element_evaluation) inside `impl Element`.
pub trait ElementLaw {
    /// Resisting forces `r` on the element DOFs and extra-state rates `sdot`.
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]);
}

/// Implements [`Element::restoring`] and [`Element::restoring_dual`] through [`ElementLaw::law`].
#[macro_export]
macro_rules! impl_element_evaluation {
    () => {
        fn restoring(&self, u: &[f64], v: &[f64], s: &[f64], r: &mut [f64], sdot: &mut [f64]) {
            $crate::elements::ElementLaw::law(self, u, v, s, r, sdot)
        }
        fn restoring_dual(
            &self,
            u: &[num_dual::Dual64],
            v: &[num_dual::Dual64],
            s: &[num_dual::Dual64],
            r: &mut [num_dual::Dual64],
            sdot: &mut [num_dual::Dual64],
        ) {
            $crate::elements::ElementLaw::law(self, u, v, s, r, sdot)
        }
    };
}

/// The rows of an element's DOFs in a partition (its DOF map), 32 bits a DOF:
/// [`DofMap::GROUND`] for a DOF the partition does not hold (fixed to the ground). A state
/// space keeps the maps of all its elements in one table and lends each element its part
/// (issue 20: a `Vec<Option<usize>>` an element was 24 bytes, 16 a DOF and a heap block of
/// its own; 6.4 MB of the 10⁵-DOF chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DofMap<'a>(&'a [u32]);

impl<'a> DofMap<'a> {
    /// The entry of a DOF fixed to the ground (not in the partition).
    pub const GROUND: u32 = u32::MAX;

    /// The map of the rows `rows` ([`DofMap::GROUND`]: none).
    pub fn new(rows: &'a [u32]) -> Self {
        Self(rows)
    }

    /// The entry of a row (`None`: [`DofMap::GROUND`]) in 32 bits.
    ///
    /// # Panics
    /// For a row of `u32::MAX` or more (a partition of more than four billion DOFs).
    pub fn entry(row: Option<usize>) -> u32 {
        match row {
            Some(r) => match u32::try_from(r) {
                Ok(r) if r != Self::GROUND => r,
                _ => panic!("a partition row fits 32 bits"),
            },
            None => Self::GROUND,
        }
    }

    /// Number of element DOFs.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the element has no DOFs.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Partition row of element DOF `i` (`None`: fixed to the ground).
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<usize> {
        let r = self.0[i];
        (r != Self::GROUND).then_some(r as usize)
    }

    /// The rows of the element DOFs in order (`None`: fixed to the ground).
    #[inline]
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = Option<usize>> + ExactSizeIterator + Clone + 'a {
        self.0
            .iter()
            .map(|&r| (r != Self::GROUND).then_some(r as usize))
    }

    /// The rows as a vector (allocates).
    pub fn to_vec(&self) -> Vec<Option<usize>> {
        self.iter().collect()
    }

    /// The 32-bit entries.
    pub fn entries(&self) -> &'a [u32] {
        self.0
    }
}

/// The constant stiffness and damping of a linear element `r = K u + C v` over its `n` DOFs,
/// borrowed from the element ([`Element::constant_matrices`]), each `n × n` column by column:
/// `K_ij` is `k[i + j n]`.
#[derive(Debug, Clone, Copy)]
pub struct ConstantMatrices<'a> {
    /// The stiffness `K`, column by column.
    pub k: &'a [f64],
    /// The damping `C`, column by column, `None` when it is zero.
    pub c: Option<&'a [f64]>,
}

impl ConstantMatrices<'_> {
    /// `r = K u + C v`, column by column: row `i` adds its terms in the order `j = 0, 1, …`
    /// (the stiffness term, then the damping term, of every `j`), the order of a row-by-row
    /// dot product, so the same bits as that product for finite `u` and `v`. Up to 12 DOFs
    /// (a 2D or 3D beam's 6 or 12) the sums are kept in registers. No allocation.
    #[inline]
    pub fn force(&self, u: &[f64], v: &[f64], r: &mut [f64]) {
        match r.len() {
            1 => self.force_of::<1>(u, v, r),
            2 => self.force_of::<2>(u, v, r),
            3 => self.force_of::<3>(u, v, r),
            4 => self.force_of::<4>(u, v, r),
            6 => self.force_of::<6>(u, v, r),
            8 => self.force_of::<8>(u, v, r),
            12 => self.force_of::<12>(u, v, r),
            _ => self.force_any(u, v, r),
        }
    }

    /// [`ConstantMatrices::force`] at a state vector `y`: `u_j = y[map_j]` and
    /// `v_j = y[velocities + map_j]`, both 0 where `map_j` is `None` (a DOF fixed to the
    /// ground), read straight into registers for the sizes [`ConstantMatrices::force`] keeps
    /// there; `false` (nothing written) for the other sizes. No allocation.
    #[inline]
    pub fn force_at(&self, map: DofMap<'_>, y: &[f64], velocities: usize, r: &mut [f64]) -> bool {
        match map.len() {
            1 => self.force_at_of::<1>(map, y, velocities, r),
            2 => self.force_at_of::<2>(map, y, velocities, r),
            3 => self.force_at_of::<3>(map, y, velocities, r),
            4 => self.force_at_of::<4>(map, y, velocities, r),
            6 => self.force_at_of::<6>(map, y, velocities, r),
            8 => self.force_at_of::<8>(map, y, velocities, r),
            12 => self.force_at_of::<12>(map, y, velocities, r),
            _ => return false,
        }
        true
    }

    /// [`ConstantMatrices::stored_energy`] at a state vector `y` (`u_j = y[map_j]`, 0 where
    /// `map_j` is `None`), for the sizes [`ConstantMatrices::force_at`] serves; `None` for
    /// the others. No allocation.
    #[inline]
    pub fn stored_energy_at(&self, map: DofMap<'_>, y: &[f64]) -> Option<f64> {
        Some(match map.len() {
            1 => self.stored_energy_of::<1>(map, y),
            2 => self.stored_energy_of::<2>(map, y),
            3 => self.stored_energy_of::<3>(map, y),
            4 => self.stored_energy_of::<4>(map, y),
            6 => self.stored_energy_of::<6>(map, y),
            8 => self.stored_energy_of::<8>(map, y),
            12 => self.stored_energy_of::<12>(map, y),
            _ => return None,
        })
    }

    /// [`ConstantMatrices::stored_energy_at`] from the forces `K u` already evaluated at `y`
    /// (`forces`, those of an element without damping, by [`ConstantMatrices::force_at`] or
    /// its law, which agree for a finite `u`): `½ Σ_i u_i (K u)_i`, the same sum, so the same
    /// bits, without the `n²` products. `None` where `u` is not finite (the forces may then be
    /// the law's, not the product's) or for a size [`ConstantMatrices::force_at`] does not
    /// serve. No allocation.
    #[inline]
    pub fn stored_energy_from_forces(map: DofMap<'_>, y: &[f64], forces: &[f64]) -> Option<f64> {
        match map.len() {
            1 => Self::stored_energy_from_forces_of::<1>(map, y, forces),
            2 => Self::stored_energy_from_forces_of::<2>(map, y, forces),
            3 => Self::stored_energy_from_forces_of::<3>(map, y, forces),
            4 => Self::stored_energy_from_forces_of::<4>(map, y, forces),
            6 => Self::stored_energy_from_forces_of::<6>(map, y, forces),
            8 => Self::stored_energy_from_forces_of::<8>(map, y, forces),
            12 => Self::stored_energy_from_forces_of::<12>(map, y, forces),
            _ => None,
        }
    }

    #[inline]
    fn stored_energy_from_forces_of<const N: usize>(
        map: DofMap<'_>,
        y: &[f64],
        forces: &[f64],
    ) -> Option<f64> {
        let u = Self::gathered::<N>(map, y, 0);
        if !u.iter().all(|x| x.is_finite()) {
            return None;
        }
        let mut e = 0.0;
        for (ui, fi) in u.iter().zip(&forces[..N]) {
            e += ui * fi;
        }
        Some(0.5 * e)
    }

    /// `x_j = y[offset + map_j]` (0 where `map_j` is `None`) for `N` DOFs.
    #[inline]
    fn gathered<const N: usize>(map: DofMap<'_>, y: &[f64], offset: usize) -> [f64; N] {
        let mut x = [0.0; N];
        for (xi, m) in x.iter_mut().zip(&map.entries()[..N]) {
            if *m != DofMap::GROUND {
                *xi = y[offset + *m as usize];
            }
        }
        x
    }

    #[inline]
    fn force_at_of<const N: usize>(
        &self,
        map: DofMap<'_>,
        y: &[f64],
        velocities: usize,
        r: &mut [f64],
    ) {
        let u = Self::gathered::<N>(map, y, 0);
        let v = match self.c {
            Some(_) => Self::gathered::<N>(map, y, velocities),
            None => [0.0; N],
        };
        self.force_of::<N>(&u, &v, r);
    }

    #[inline]
    fn stored_energy_of<const N: usize>(&self, map: DofMap<'_>, y: &[f64]) -> f64 {
        let u = Self::gathered::<N>(map, y, 0);
        let stiffness = ConstantMatrices { k: self.k, c: None };
        let mut ku = [0.0; N];
        stiffness.force_of::<N>(&u, &u, &mut ku);
        let mut e = 0.0;
        for (ui, fi) in u.iter().zip(&ku) {
            e += ui * fi;
        }
        0.5 * e
    }

    /// [`ConstantMatrices::force`] for `N` DOFs, the sums in a fixed-size array.
    #[inline]
    fn force_of<const N: usize>(&self, u: &[f64], v: &[f64], r: &mut [f64]) {
        let mut acc = [0.0; N];
        let k = &self.k[..N * N];
        let u = &u[..N];
        match self.c {
            None => {
                for j in 0..N {
                    let uj = u[j];
                    for i in 0..N {
                        acc[i] += k[i + j * N] * uj;
                    }
                }
            }
            Some(c) => {
                let (c, v) = (&c[..N * N], &v[..N]);
                for j in 0..N {
                    let (uj, vj) = (u[j], v[j]);
                    for i in 0..N {
                        acc[i] += k[i + j * N] * uj;
                        acc[i] += c[i + j * N] * vj;
                    }
                }
            }
        }
        r[..N].copy_from_slice(&acc);
    }

    /// [`ConstantMatrices::force`] for any number of DOFs, the sums in `r`.
    fn force_any(&self, u: &[f64], v: &[f64], r: &mut [f64]) {
        let n = r.len();
        r.fill(0.0);
        match self.c {
            None => {
                for (j, column) in self.k.chunks_exact(n).enumerate() {
                    let uj = u[j];
                    for (ri, kij) in r.iter_mut().zip(column) {
                        *ri += kij * uj;
                    }
                }
            }
            Some(c) => {
                for (j, (kc, cc)) in self.k.chunks_exact(n).zip(c.chunks_exact(n)).enumerate() {
                    let (uj, vj) = (u[j], v[j]);
                    for ((ri, kij), cij) in r.iter_mut().zip(kc).zip(cc) {
                        *ri += kij * uj;
                        *ri += cij * vj;
                    }
                }
            }
        }
    }

    /// The stored energy `½ uᵀ K u` as `½ Σ_i u_i (K u)_i` with `K u` from
    /// [`ConstantMatrices::force`] (no damping) into `scratch` (length `n`): `n² + n`
    /// products instead of the `3 n²` of the entry-by-entry double sum, equal to it to
    /// round-off. No allocation.
    #[inline]
    pub fn stored_energy(&self, u: &[f64], scratch: &mut [f64]) -> f64 {
        let stiffness = ConstantMatrices { k: self.k, c: None };
        stiffness.force(u, u, scratch);
        let mut e = 0.0;
        for (ui, fi) in u.iter().zip(scratch.iter()) {
            e += ui * fi;
        }
        0.5 * e
    }
}

/// Copying a boxed element (blanket-implemented for every `Element + Clone`), so that an
/// element shared by a model can be handed to an [`ElementDriver`] or updated at run time.
pub trait ElementClone {
    /// An independent copy of the element.
    fn clone_box(&self) -> Box<dyn Element>;
}

impl<T: Element + Clone + 'static> ElementClone for T {
    fn clone_box(&self) -> Box<dyn Element> {
        Box::new(self.clone())
    }
}

/// The stiffness that stiffness-proportional Rayleigh damping `β K` uses for an element: its
/// constant stiffness when linear, else its initial stiffness `K0` at rest (extra states
/// condensed, [`driver::initial_matrices`]), as OpenSees's `rayleigh` with `βK_init` does for a
/// hysteretic element (`[damping] stiffness = "initial"`; under `"committed"` or `"current"`
/// a hysteretic element's term follows its tangent instead, in the state space). `None` for an
/// element without stiffness (a mass, a dashpot).
pub fn rayleigh_stiffness(element: &dyn Element) -> Option<DMatrix<f64>> {
    if let Some(k) = element.linear_stiffness() {
        return Some(k);
    }
    if element.mass().is_some() || element.linear_damping().is_some() {
        return None;
    }
    let (k0, _) = driver::initial_matrices(element);
    (k0.amax() > 0.0).then_some(k0)
}

/// An element of a substructure (see the module docs for the sign conventions).
pub trait Element: Send + Sync + fmt::Debug + ElementClone {
    /// Registry name of the element kind (`spring`, `mass`, …).
    fn kind(&self) -> &'static str;

    /// The element DOFs, in the order of its `u`, `v`, `r` vectors.
    fn dofs(&self) -> &[DofRef];

    /// Number of extra states `s`.
    fn n_states(&self) -> usize {
        0
    }

    /// Names of the extra states (length [`Element::n_states`]).
    fn state_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Quantity of extra state `i` (for output units).
    fn state_quantity(&self, _i: usize) -> Quantity {
        Quantity::Dimensionless
    }

    /// Constant mass matrix over the element DOFs, if the element has mass.
    fn mass(&self) -> Option<DMatrix<f64>> {
        None
    }

    /// Seismic influence vector `ι` over the element DOFs (load `−m ι a_g`), where it is not the
    /// default (ones on the excited direction, zeros elsewhere).
    fn seismic_influence(&self) -> Option<nalgebra::DVector<f64>> {
        None
    }

    /// Constant stiffness matrix for linear elements (used by Rayleigh damping and energy).
    fn linear_stiffness(&self) -> Option<DMatrix<f64>> {
        None
    }

    /// Constant damping matrix for linear elements.
    fn linear_damping(&self) -> Option<DMatrix<f64>> {
        None
    }

    /// The constant matrices of a linear element, borrowed, for evaluations in `f64` without
    /// the law (the recorder's element forces and the stored energy of every row, issue 20).
    /// An element returning them promises, for every finite `u` and `v`, that `restoring` with
    /// no extra states gives `K u + C v` summed over `j` in order for each row (the
    /// [`ConstantMatrices::force`] of these matrices, to the last bit) and that
    /// `potential_energy` is `½ uᵀ K u`. `None` (the default): evaluate through the law.
    fn constant_matrices(&self) -> Option<ConstantMatrices<'_>> {
        None
    }

    /// The constant damping matrix in compressed rows, for a linear element with force
    /// `r = C v` only (no mass, stiffness or extra states) too large to be handled dense: the
    /// Rayleigh damping of a whole substructure ([`RayleighDamping`]). Assembly then uses these
    /// entries instead of [`Element::linear_damping`] and the tangent. `None` (the default)
    /// for every other element.
    fn sparse_damping(&self) -> Option<SparseRows<'_>> {
        None
    }

    /// Whether Rayleigh damping applies to this element unless the model file says otherwise:
    /// true for linear numerical elements, never for hysteretic ones.
    fn rayleigh_by_default(&self) -> bool {
        false
    }

    /// Resisting forces and extra-state rates at `(u, v, s)`.
    fn restoring(&self, u: &[f64], v: &[f64], s: &[f64], r: &mut [f64], sdot: &mut [f64]);

    /// The same with forward dual numbers (for exact Jacobians).
    fn restoring_dual(
        &self,
        u: &[Dual64],
        v: &[Dual64],
        s: &[Dual64],
        r: &mut [Dual64],
        sdot: &mut [Dual64],
    );

    /// Explicit initial tangent `∂[r; ṡ]/∂[u; v; s]` ((n + n_s) × (2n + n_s)) where automatic
    /// differentiation at the zero state is wrong (ALGORITHMS.md E3). `None`: use dual numbers.
    fn initial_tangent(&self) -> Option<DMatrix<f64>> {
        None
    }

    /// Stored (potential) energy at `(u, s)` for conservative elements; `None` otherwise.
    fn potential_energy(&self, _u: &[f64], _s: &[f64]) -> Option<f64> {
        None
    }

    /// The element's scalar parameters by name (for reports and online model updating).
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Change a parameter at run time (online model updating). The value is validated like the
    /// model file's; the element's extra states are left as they are.
    fn set_parameter(&mut self, name: &str, _value: f64) -> Result<(), String> {
        Err(format!(
            "element kind `{}` has no run-time parameter `{name}`",
            self.kind()
        ))
    }

    /// Deformation of a one- or two-node element (`u1 − u2`, or `u1` to ground), if defined.
    fn deformation(&self, _u: &[f64]) -> Option<f64> {
        None
    }

    /// Cumulative dissipated energy at `(u, s)` for elements that track it (hysteretic
    /// springs: absorbed energy minus the recoverable energy of their elastic parts).
    fn dissipated_energy(&self, _u: &[f64], _s: &[f64]) -> Option<f64> {
        None
    }

    /// A line for the model summary (`hybridsim check`) naming a choice of law the model file
    /// made for this element where the kind has several (the lead law of a lead-rubber
    /// bearing). Default: none.
    fn law_summary(&self) -> Option<String> {
        None
    }

    /// The choice of law of [`Element::law_summary`] for records (`hybridsim cyclic`'s
    /// run.json): its name (the model-file value) and the numbers that define it, by name.
    /// Default: none.
    fn law_record(&self) -> Option<(&'static str, Vec<(&'static str, f64)>)> {
        None
    }

    /// Return mapping of the extra states at a stage of a displacement-driven substep (used by
    /// [`ElementDriver`] only): puts states that overshot a switching surface back on it (slider
    /// bounds) or sets them to their exact value along the straight path (running peaks), which
    /// locates the switching events exactly for piecewise-linear laws. `v` is the path
    /// velocity, `s_start` the states at the start of the substep. Default: nothing.
    fn project_state(&self, _u: &[f64], _v: &[f64], _s_start: &[f64], _s: &mut [f64]) {}

    /// [`Element::project_state`] with dual numbers (for the driver's algorithmic tangent).
    fn project_state_dual(
        &self,
        _u: &[Dual64],
        _v: &[Dual64],
        _s_start: &[Dual64],
        _s: &mut [Dual64],
    ) {
    }

    /// Largest deformation increment per internal substep of the displacement-driven form
    /// (a fraction of the element's yield deformation); `None`: no preference.
    fn driver_substep(&self) -> Option<f64> {
        None
    }

    /// Whether the element's state update over a time step may be done along the straight
    /// deformation path: the elastic predictor `s_start + ṡ(u_start, Δu, s_start)` (the rate
    /// law with the increment `Δu` as velocity) followed by [`Element::project_state`] at the
    /// end deformation is the exact update of a rate-independent, piecewise-linear law (the
    /// return mapping of OpenSees's `Steel01`; Simo & Hughes 1998). Integrators then solve the
    /// step with these states instead of integrating their rate law, which locates yield and
    /// unloading events inside the step (issue 17). Default: false.
    fn exact_path_update(&self) -> bool {
        false
    }

    /// For an element with [`Element::exact_path_update`] whose law is rate-independent but not
    /// piecewise linear (Bouc-Wen): set the extra states `s` at the end of the straight
    /// deformation path from `u_start` (states `s_start`) to `u`, by integrating the law along
    /// the path in the deformation (exactly, or finely), after the predictor and
    /// [`Element::project_state`]. Along a straight path the deformation never reverses, so the
    /// velocity reversals of the step fall at its ends and the kink of the law at `ḋ = 0`
    /// never lies inside an integration interval. Must not allocate. Default: nothing.
    fn integrate_path(&self, _u_start: &[f64], _u: &[f64], _s_start: &[f64], _s: &mut [f64]) {}
}

/// Shared handle to an element.
pub type ElementRef = Arc<dyn Element>;

/// Tangent `∂[r; ṡ]/∂[u; v; s]` of an element at the zero state: the explicit one if the element
/// gives it, otherwise exact forward-mode dual numbers (one sweep per input direction).
pub fn zero_state_tangent(element: &dyn Element) -> DMatrix<f64> {
    if let Some(t) = element.initial_tangent() {
        return t;
    }
    let n = element.dofs().len();
    let ns = element.n_states();
    let ncol = 2 * n + ns;
    let mut jac = DMatrix::zeros(n + ns, ncol);
    let zero = Dual64::from(0.0);
    let mut u = vec![zero; n];
    let mut v = vec![zero; n];
    let mut s = vec![zero; ns];
    let mut r = vec![zero; n];
    let mut sd = vec![zero; ns];
    for col in 0..ncol {
        u.iter_mut().for_each(|x| *x = zero);
        v.iter_mut().for_each(|x| *x = zero);
        s.iter_mut().for_each(|x| *x = zero);
        let seed = Dual64::new(0.0, 1.0);
        if col < n {
            u[col] = seed;
        } else if col < 2 * n {
            v[col - n] = seed;
        } else {
            s[col - 2 * n] = seed;
        }
        r.iter_mut().for_each(|x| *x = zero);
        sd.iter_mut().for_each(|x| *x = zero);
        element.restoring_dual(&u, &v, &s, &mut r, &mut sd);
        for i in 0..n {
            jac[(i, col)] = r[i].eps;
        }
        for i in 0..ns {
            jac[(n + i, col)] = sd[i].eps;
        }
    }
    jac
}

/// Check that a matrix is square of size `n`, finite and (optionally) symmetric.
pub(crate) fn check_matrix(m: &DMatrix<f64>, n: usize, symmetric: bool) -> Result<(), String> {
    if m.nrows() != n || m.ncols() != n {
        return Err(format!(
            "must be {n}×{n} to match the DOF list, found {}×{}",
            m.nrows(),
            m.ncols()
        ));
    }
    if m.iter().any(|x| !x.is_finite()) {
        return Err("contains a non-finite entry".into());
    }
    if symmetric {
        let scale = m.amax().max(f64::MIN_POSITIVE);
        for i in 0..n {
            for j in 0..i {
                if (m[(i, j)] - m[(j, i)]).abs() > 1e-10 * scale {
                    return Err(format!(
                        "must be symmetric: entry ({i},{j}) = {} but ({j},{i}) = {}",
                        m[(i, j)],
                        m[(j, i)]
                    ));
                }
            }
        }
    }
    Ok(())
}
