//! The displacement-driven form of any element.
//!
//! Laboratories characterize devices by imposing a displacement history and measuring the
//! force (Abbiati et al. 2019, Figs 19, 22); a virtual specimen, a Kalman filter propagating sigma
//! points and a network element server all need the same operation. [`ElementDriver`] wraps one
//! [`Element`] and offers the trial/commit interface of finite-element programs:
//!
//! ```text
//! set_trial(dt, u, v) → force(), tangent(), states(), dissipated_energy() → commit() | revert()
//! ```
//!
//! **Path.** Between the committed displacement `u_c` and the trial one `u`, the element DOFs
//! move on the straight line `u(τ) = u_c + τ (u − u_c)`, `τ ∈ [0, 1]`, in time `dt`, with the
//! constant path velocity `(u − u_c)/dt`. The extra states are integrated along it with `m`
//! explicit-midpoint substeps, `m = ⌈|Δd| / h⌉` where `h` is the element's
//! [`Element::driver_substep`] (a fraction of its yield deformation) and `Δd` the deformation
//! increment (largest DOF increment for elements without a deformation), capped at
//! [`ElementDriver::set_max_substeps`]. After every substep the element's
//! [`Element::project_state`] puts states that crossed a switching surface back on it (slider
//! bounds, running peak): for the piecewise-linear slider models this locates the switching
//! events exactly, so their forces are exact for any driving step. Using the path velocity —
//! not an interpolation of the endpoint velocities — makes the state increments of
//! rate-independent elements depend only on the displacement increment (`∫ v dt = Δu`).
//! With `dt = 0` the path is traversed in unit pseudo-time (meaningful for rate-independent
//! elements only); a zero increment with `dt = 0` leaves the states as they are. The force
//! returned is the element's at the trial `(u, v)`, so velocity terms (dashpots, viscous
//! dampers) see the trial velocity.
//!
//! **Tangent.** [`ElementDriver::tangent`] is `K_t = ∂r/∂u` of the discrete map from the
//! committed state to the trial force, differentiated exactly with forward dual numbers
//! through the same substeps and projections (one sweep per DOF; computed on demand) — the
//! "consistent" tangent (`αk` while a Mostaghel slider slips, `k` while it sticks).
//!
//! **Energy.** The driver integrates the work done on the element along the path,
//! `W = ∫ rᵀ du` (trapezoidal per substep), and reports the element's cumulative dissipated
//! energy: [`Element::dissipated_energy`] where the element defines it (hysteretic springs),
//! otherwise `W` minus the stored energy when the element is conservative, otherwise `W`.
//!
//! [`ElementDriver::set_trial`] does not allocate (every buffer is sized in the constructor);
//! `tangent` does not either.

use super::{zero_state_tangent, Element, ElementRef, Scalar};
use nalgebra::DMatrix;
use num_dual::Dual64;

/// Why a driver call was refused or failed.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum DriverError {
    /// An input vector has the wrong length.
    #[error("{what} has {found} entries, the element has {expected}")]
    Length {
        /// Which input.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Given length.
        found: usize,
    },
    /// An input is NaN or infinite.
    #[error("{what} is not finite")]
    NonFinite {
        /// Which input.
        what: &'static str,
    },
    /// The driving step is negative or not finite.
    #[error("the driving step must be finite and ≥ 0, found {0}")]
    TimeStep(f64),
    /// The element returned a non-finite force or state along the path.
    #[error("the element's {what} became non-finite along the imposed path")]
    Diverged {
        /// `force` or `state`.
        what: &'static str,
    },
}

/// A point of the driven history (element DOFs and extra states).
#[derive(Debug, Clone)]
struct State {
    /// Displacement.
    u: Vec<f64>,
    /// Velocity.
    v: Vec<f64>,
    /// Extra states.
    s: Vec<f64>,
    /// Resisting force.
    r: Vec<f64>,
    /// Work `∫ rᵀ du` done on the element since the start.
    work: f64,
}

impl State {
    fn at_rest(n: usize, s: &[f64]) -> Self {
        Self {
            u: vec![0.0; n],
            v: vec![0.0; n],
            s: s.to_vec(),
            r: vec![0.0; n],
            work: 0.0,
        }
    }

    /// Become a copy of `other` without allocating.
    #[inline]
    fn copy_from(&mut self, other: &State) {
        copy_small(&mut self.u, &other.u);
        copy_small(&mut self.v, &other.v);
        copy_small(&mut self.s, &other.s);
        copy_small(&mut self.r, &other.r);
        self.work = other.work;
    }
}

/// `dst.copy_from_slice(src)` for the few numbers of a small element without a call into
/// `memcpy` (a two-node spring's states are copied several times per controller tick, where
/// the call costs more than the copy).
#[inline(always)]
fn copy_small(dst: &mut [f64], src: &[f64]) {
    match (dst, src) {
        ([], []) => {}
        ([a], [x]) => *a = *x,
        ([a, b], [x, y]) => (*a, *b) = (*x, *y),
        ([a, b, c], [x, y, z]) => (*a, *b, *c) = (*x, *y, *z),
        ([a, b, c, d], [x, y, z, w]) => (*a, *b, *c, *d) = (*x, *y, *z, *w),
        (dst, src) => dst.copy_from_slice(src),
    }
}

/// The state last accepted by [`ElementDriver::commit`].
#[derive(Debug)]
struct Committed(State);

/// The trial state and the path that led to it from the committed one.
#[derive(Debug)]
struct Trial {
    at: State,
    /// Duration of the path (`dt`, or 1 in pseudo-time).
    span: f64,
    /// Internal substeps taken along it.
    substeps: usize,
}

/// The scalar a path is traversed with: `f64` for the states, [`Dual64`] for the tangent.
trait PathScalar: Scalar {
    fn restoring(
        e: &dyn Element,
        u: &[Self],
        v: &[Self],
        s: &[Self],
        r: &mut [Self],
        sd: &mut [Self],
    );
    fn project(e: &dyn Element, u: &[Self], v: &[Self], s_start: &[Self], s: &mut [Self]);
}

impl PathScalar for f64 {
    fn restoring(e: &dyn Element, u: &[f64], v: &[f64], s: &[f64], r: &mut [f64], sd: &mut [f64]) {
        e.restoring(u, v, s, r, sd)
    }
    fn project(e: &dyn Element, u: &[f64], v: &[f64], s_start: &[f64], s: &mut [f64]) {
        e.project_state(u, v, s_start, s)
    }
}

impl PathScalar for Dual64 {
    fn restoring(
        e: &dyn Element,
        u: &[Dual64],
        v: &[Dual64],
        s: &[Dual64],
        r: &mut [Dual64],
        sd: &mut [Dual64],
    ) {
        e.restoring_dual(u, v, s, r, sd)
    }
    fn project(e: &dyn Element, u: &[Dual64], v: &[Dual64], s0: &[Dual64], s: &mut [Dual64]) {
        e.project_state_dual(u, v, s0, s)
    }
}

/// Buffers of one traversal of the straight path, sized once.
#[derive(Debug)]
struct Path<T> {
    /// Displacement increment `u − u_c` (set by the caller).
    du: Vec<T>,
    /// Path velocity `du / span` (set by the caller).
    vp: Vec<T>,
    /// Extra states: the committed ones on entry (set by the caller), the trial ones on exit.
    s: Vec<T>,
    uw: Vec<T>,
    s0: Vec<T>,
    smid: Vec<T>,
    k1: Vec<T>,
    k2: Vec<T>,
    ra: Vec<T>,
    rb: Vec<T>,
}

impl<T: PathScalar> Path<T> {
    fn new(n: usize, ns: usize) -> Self {
        let z = T::from(0.0);
        Self {
            du: vec![z; n],
            vp: vec![z; n],
            s: vec![z; ns],
            uw: vec![z; n],
            s0: vec![z; ns],
            smid: vec![z; ns],
            k1: vec![z; ns],
            k2: vec![z; ns],
            ra: vec![z; n],
            rb: vec![z; n],
        }
    }

    /// `uw = u_c + w du`.
    fn point(&mut self, uc: &[f64], w: f64) {
        for ((x, du), uc) in self.uw.iter_mut().zip(&self.du).zip(uc) {
            *x = *du * w + *uc;
        }
    }

    /// The one substep routine: integrates the states `s` along `u_c + τ du`, `τ ∈ [0, 1]`,
    /// with `m` explicit-midpoint substeps of `h = span/m` and a return mapping
    /// ([`Element::project_state`]) after each stage; returns `work` plus the work done along
    /// the path (trapezoidal per substep).
    fn traverse(&mut self, e: &dyn Element, uc: &[f64], span: f64, m: usize, mut work: T) -> T {
        if m == 0 {
            return work;
        }
        let h = span / m as f64;
        self.point(uc, 0.0);
        T::restoring(e, &self.uw, &self.vp, &self.s, &mut self.ra, &mut self.k1);
        for k in 0..m {
            self.s0.copy_from_slice(&self.s);
            for ((x, s), k1) in self.smid.iter_mut().zip(&self.s).zip(&self.k1) {
                *x = *s + *k1 * (0.5 * h);
            }
            self.point(uc, (k as f64 + 0.5) / m as f64);
            T::project(e, &self.uw, &self.vp, &self.s0, &mut self.smid);
            T::restoring(
                e,
                &self.uw,
                &self.vp,
                &self.smid,
                &mut self.rb,
                &mut self.k2,
            );
            for (s, k2) in self.s.iter_mut().zip(&self.k2) {
                *s += *k2 * h;
            }
            self.point(uc, (k + 1) as f64 / m as f64);
            T::project(e, &self.uw, &self.vp, &self.s0, &mut self.s);
            T::restoring(e, &self.uw, &self.vp, &self.s, &mut self.rb, &mut self.k1);
            for ((ra, rb), du) in self.ra.iter().zip(&self.rb).zip(&self.du) {
                work += (*ra + *rb) * 0.5 * *du / m as f64;
            }
            std::mem::swap(&mut self.ra, &mut self.rb);
        }
        work
    }
}

/// Displacement-driven form of an element (see the module docs).
#[derive(Debug)]
pub struct ElementDriver {
    element: Box<dyn Element>,
    n: usize,
    ns: usize,
    max_substeps: usize,
    default_substeps: usize,
    committed: Committed,
    trial: Trial,
    path: Path<f64>,
    /// The same path with dual numbers, for the tangent.
    dual: Path<Dual64>,
    tangent: DMatrix<f64>,
    tangent_fresh: bool,
}

fn check(x: &[f64], n: usize, what: &'static str) -> Result<(), DriverError> {
    if x.len() != n {
        return Err(DriverError::Length {
            what,
            expected: n,
            found: x.len(),
        });
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(DriverError::NonFinite { what });
    }
    Ok(())
}

impl ElementDriver {
    /// Drive `element` from rest (`u = v = 0`) with extra states `initial_state` (length
    /// [`Element::n_states`]).
    pub fn new(element: Box<dyn Element>, initial_state: &[f64]) -> Result<Self, DriverError> {
        let n = element.dofs().len();
        let ns = element.n_states();
        check(initial_state, ns, "initial state")?;
        let mut rest = State::at_rest(n, initial_state);
        let mut path = Path::new(n, ns);
        element.restoring(&rest.u, &rest.v, &rest.s, &mut rest.r, &mut path.k1);
        if rest.r.iter().any(|x| !x.is_finite()) {
            return Err(DriverError::Diverged { what: "force" });
        }
        Ok(Self {
            element,
            n,
            ns,
            max_substeps: 10_000,
            default_substeps: 8,
            trial: Trial {
                at: rest.clone(),
                span: 1.0,
                substeps: 0,
            },
            committed: Committed(rest),
            path,
            dual: Path::new(n, ns),
            tangent: DMatrix::zeros(n, n),
            tangent_fresh: false,
        })
    }

    /// A driver on an independent copy of a shared element.
    pub fn from_shared(element: &ElementRef, initial_state: &[f64]) -> Result<Self, DriverError> {
        Self::new(element.clone_box(), initial_state)
    }

    /// The element.
    pub fn element(&self) -> &dyn Element {
        self.element.as_ref()
    }

    /// Number of element DOFs.
    pub fn n_dofs(&self) -> usize {
        self.n
    }

    /// Number of extra states.
    pub fn n_states(&self) -> usize {
        self.ns
    }

    /// Cap on the internal substeps per trial (default 10 000).
    pub fn set_max_substeps(&mut self, m: usize) {
        self.max_substeps = m.max(1);
    }

    /// Substeps for elements without [`Element::driver_substep`] (default 8).
    pub fn set_default_substeps(&mut self, m: usize) {
        self.default_substeps = m.max(1);
    }

    /// Internal substeps used by the last [`Self::set_trial`].
    pub fn substeps(&self) -> usize {
        self.trial.substeps
    }

    /// Impose the trial displacement `u` and velocity `v` (element DOFs) reached `dt` after
    /// the committed state; integrates the extra states along the path (module docs).
    /// Allocation-free. On error the trial is reset to the committed state.
    pub fn set_trial(&mut self, dt: f64, u: &[f64], v: &[f64]) -> Result<(), DriverError> {
        if !dt.is_finite() || dt < 0.0 {
            return Err(DriverError::TimeStep(dt));
        }
        check(u, self.n, "displacement")?;
        check(v, self.n, "velocity")?;
        let span = if dt > 0.0 { dt } else { 1.0 };
        if self.ns == 0 {
            return self.set_trial_stateless(span, u, v);
        }
        let (c, p, e) = (&self.committed.0, &mut self.path, self.element.as_ref());
        let mut dmax = 0.0f64;
        for (i, (du, vp)) in p.du.iter_mut().zip(&mut p.vp).enumerate() {
            *du = u[i] - c.u[i];
            *vp = *du / span;
            dmax = dmax.max(du.abs());
        }
        if let (Some(a), Some(b)) = (e.deformation(u), e.deformation(&c.u)) {
            dmax = (a - b).abs();
        }
        // A path of zero length in zero time changes nothing (not even the states of
        // rate-dependent elements, which unit pseudo-time would advance).
        let m = if dt == 0.0 && dmax == 0.0 {
            0
        } else {
            self.substep_count(dmax)
        };
        let (c, p, e) = (&self.committed.0, &mut self.path, self.element.as_ref());
        p.s.copy_from_slice(&c.s);
        let work = p.traverse(e, &c.u, span, m, c.work);
        // Force at the trial point with the trial velocity.
        e.restoring(u, v, &p.s, &mut p.ra, &mut p.k2);
        let diverged = if p.s.iter().any(|x| !x.is_finite()) {
            Some("state")
        } else if p.ra.iter().any(|x| !x.is_finite()) {
            Some("force")
        } else {
            None
        };
        if let Some(what) = diverged {
            self.revert();
            return Err(DriverError::Diverged { what });
        }
        let t = &mut self.trial;
        t.at.u.copy_from_slice(u);
        t.at.v.copy_from_slice(v);
        t.at.s.copy_from_slice(&p.s);
        t.at.r.copy_from_slice(&p.ra);
        t.at.work = work;
        t.span = span;
        t.substeps = m;
        self.tangent_fresh = false;
        Ok(())
    }

    /// [`Self::set_trial`] of an element without extra states (springs, dashpots, linear
    /// superelements): no path to integrate (zero substeps, the work carried over), only the
    /// force at the trial point — the same operations as the general path, in the same order,
    /// without its per-trial bookkeeping.
    fn set_trial_stateless(&mut self, span: f64, u: &[f64], v: &[f64]) -> Result<(), DriverError> {
        let p = &mut self.path;
        self.element.restoring(u, v, &[], &mut p.ra, &mut p.k2);
        if p.ra.iter().any(|x| !x.is_finite()) {
            self.revert();
            return Err(DriverError::Diverged { what: "force" });
        }
        let t = &mut self.trial;
        copy_small(&mut t.at.u, u);
        copy_small(&mut t.at.v, v);
        copy_small(&mut t.at.r, &self.path.ra);
        t.at.work = self.committed.0.work;
        t.span = span;
        t.substeps = 0;
        self.tangent_fresh = false;
        Ok(())
    }

    fn substep_count(&self, dmax: f64) -> usize {
        if self.ns == 0 {
            return 0;
        }
        let m = match self.element.driver_substep() {
            Some(h) if h > 0.0 => (dmax / h).ceil(),
            _ => self.default_substeps as f64,
        };
        if m.is_finite() {
            (m as usize).clamp(1, self.max_substeps)
        } else {
            self.max_substeps
        }
    }

    /// Resisting forces at the trial state (element DOFs).
    pub fn force(&self) -> &[f64] {
        &self.trial.at.r
    }

    /// Resisting forces at the committed state.
    pub fn committed_force(&self) -> &[f64] {
        &self.committed.0.r
    }

    /// Extra states at the trial.
    pub fn states(&self) -> &[f64] {
        &self.trial.at.s
    }

    /// Committed extra states.
    pub fn committed_states(&self) -> &[f64] {
        &self.committed.0.s
    }

    /// Trial displacement.
    pub fn displacement(&self) -> &[f64] {
        &self.trial.at.u
    }

    /// Trial velocity.
    pub fn velocity(&self) -> &[f64] {
        &self.trial.at.v
    }

    /// Deformation at the trial, when the element defines one.
    pub fn deformation(&self) -> Option<f64> {
        self.element.deformation(&self.trial.at.u)
    }

    /// Work `∫ rᵀ du` done on the element since the start, at the trial.
    pub fn work(&self) -> f64 {
        self.trial.at.work
    }

    /// Cumulative dissipated energy at the trial (module docs).
    pub fn dissipated_energy(&self) -> f64 {
        let t = &self.trial.at;
        if let Some(e) = self.element.dissipated_energy(&t.u, &t.s) {
            return e;
        }
        match self.element.potential_energy(&t.u, &t.s) {
            Some(p) => t.work - p,
            None => t.work,
        }
    }

    /// Algorithmic tangent `K_t = ∂r/∂u` of the last trial (module docs). Allocation-free.
    pub fn tangent(&mut self) -> &DMatrix<f64> {
        if !self.tangent_fresh {
            for j in 0..self.n {
                self.tangent_column(j);
            }
            self.tangent_fresh = true;
        }
        &self.tangent
    }

    /// Column `j` of the tangent: the trial force along the same path with `u_j` seeded.
    fn tangent_column(&mut self, j: usize) {
        let (c, t, p) = (&self.committed.0, &self.trial, &mut self.dual);
        let e = self.element.as_ref();
        let seed = |i: usize| if i == j { 1.0 } else { 0.0 };
        for i in 0..self.n {
            p.du[i] = Dual64::new(t.at.u[i] - c.u[i], seed(i));
            p.vp[i] = p.du[i] / t.span;
        }
        for (s, sc) in p.s.iter_mut().zip(&c.s) {
            *s = Dual64::from(*sc);
        }
        p.traverse(e, &c.u, t.span, t.substeps, Dual64::from(0.0));
        for i in 0..self.n {
            p.uw[i] = Dual64::new(t.at.u[i], seed(i));
            p.vp[i] = Dual64::from(t.at.v[i]);
        }
        e.restoring_dual(&p.uw, &p.vp, &p.s, &mut p.ra, &mut p.k2);
        for (i, r) in p.ra.iter().enumerate() {
            self.tangent[(i, j)] = r.eps;
        }
    }

    /// Accept the trial as the new committed state.
    #[inline]
    pub fn commit(&mut self) {
        self.committed.0.copy_from(&self.trial.at);
    }

    /// Discard the trial: back to the committed state.
    pub fn revert(&mut self) {
        self.trial.at.copy_from(&self.committed.0);
        self.trial.substeps = 0;
        self.tangent_fresh = false;
    }

    /// Change an element parameter (online updating); it acts from the next
    /// [`Self::set_trial`] on, the states are kept.
    pub fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        self.element.set_parameter(name, value)?;
        self.tangent_fresh = false;
        Ok(())
    }

    /// The element's parameters.
    pub fn parameters(&self) -> Vec<(&'static str, f64)> {
        self.element.parameters()
    }

    /// Initial (elastic) stiffness `K0` over the element DOFs. Allocates; call at setup.
    pub fn initial_stiffness(&self) -> DMatrix<f64> {
        initial_matrices(self.element.as_ref()).0
    }

    /// Initial damping `C0 = ∂r/∂v` over the element DOFs. Allocates.
    pub fn damping(&self) -> DMatrix<f64> {
        initial_matrices(self.element.as_ref()).1
    }

    /// Mass matrix over the element DOFs (zeros for massless elements). Allocates.
    pub fn mass(&self) -> DMatrix<f64> {
        self.element
            .mass()
            .unwrap_or_else(|| DMatrix::zeros(self.n, self.n))
    }
}

/// Initial stiffness and damping of an element over its DOFs, with the extra states condensed
/// for a rate-independent start: from the zero-state tangent `T` (explicit where given, E3),
/// `K0 = ∂r/∂u + ∂r/∂s · ∂ṡ/∂v` (a state driven by `ṡ = (∂ṡ/∂v) v` grows by `(∂ṡ/∂v) du`) and
/// `C0 = ∂r/∂v`. Equals the elastic stiffness `k` of a Mostaghel spring, `A` of Bouc-Wen and
/// `k0 + k1 + k2` of the T-CSB.
pub fn initial_matrices(element: &dyn Element) -> (DMatrix<f64>, DMatrix<f64>) {
    let t = zero_state_tangent(element);
    let n = element.dofs().len();
    let ns = element.n_states();
    let kuu = t.view((0, 0), (n, n)).clone_owned();
    let c = t.view((0, n), (n, n)).clone_owned();
    let rs = t.view((0, 2 * n), (n, ns)).clone_owned();
    let sv = t.view((n, n), (ns, n)).clone_owned();
    (kuu + rs * sv, c)
}
