//! The displacement-driven form of any element.
//!
//! Laboratories characterize devices by imposing a displacement history and measuring the
//! force (seed 000 Figs 19, 22); a virtual specimen, a Kalman filter propagating sigma points
//! and a network element server all need the same operation. [`ElementDriver`] wraps one
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
//! elements only). The force returned is the element's at the trial `(u, v)`, so velocity
//! terms (dashpots, `sgn(ḋ)` of the LRB lead core) see the trial velocity.
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

use super::{zero_state_tangent, Element, ElementRef};
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

/// Displacement-driven form of an element (see the module docs).
#[derive(Debug)]
pub struct ElementDriver {
    element: Box<dyn Element>,
    n: usize,
    ns: usize,
    max_substeps: usize,
    default_substeps: usize,
    // Committed.
    uc: Vec<f64>,
    vc: Vec<f64>,
    sc: Vec<f64>,
    rc: Vec<f64>,
    work_c: f64,
    // Trial.
    ut: Vec<f64>,
    vt: Vec<f64>,
    st: Vec<f64>,
    rt: Vec<f64>,
    work_t: f64,
    span_t: f64,
    substeps_t: usize,
    // Scratch.
    uw: Vec<f64>,
    vp: Vec<f64>,
    smid: Vec<f64>,
    s0w: Vec<f64>,
    k1: Vec<f64>,
    k2: Vec<f64>,
    ra: Vec<f64>,
    rb: Vec<f64>,
    // Dual scratch for the tangent.
    d_du: Vec<Dual64>,
    d_uw: Vec<Dual64>,
    d_vp: Vec<Dual64>,
    d_s: Vec<Dual64>,
    d_smid: Vec<Dual64>,
    d_s0: Vec<Dual64>,
    d_k1: Vec<Dual64>,
    d_k2: Vec<Dual64>,
    d_r: Vec<Dual64>,
    d_v: Vec<Dual64>,
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
        let zd = Dual64::from(0.0);
        let mut d = Self {
            element,
            n,
            ns,
            max_substeps: 10_000,
            default_substeps: 8,
            uc: vec![0.0; n],
            vc: vec![0.0; n],
            sc: initial_state.to_vec(),
            rc: vec![0.0; n],
            work_c: 0.0,
            ut: vec![0.0; n],
            vt: vec![0.0; n],
            st: initial_state.to_vec(),
            rt: vec![0.0; n],
            work_t: 0.0,
            span_t: 1.0,
            substeps_t: 0,
            uw: vec![0.0; n],
            vp: vec![0.0; n],
            smid: vec![0.0; ns],
            s0w: vec![0.0; ns],
            k1: vec![0.0; ns],
            k2: vec![0.0; ns],
            ra: vec![0.0; n],
            rb: vec![0.0; n],
            d_du: vec![zd; n],
            d_uw: vec![zd; n],
            d_vp: vec![zd; n],
            d_s: vec![zd; ns],
            d_smid: vec![zd; ns],
            d_s0: vec![zd; ns],
            d_k1: vec![zd; ns],
            d_k2: vec![zd; ns],
            d_r: vec![zd; n],
            d_v: vec![zd; n],
            tangent: DMatrix::zeros(n, n),
            tangent_fresh: false,
        };
        d.element
            .restoring(&d.uc, &d.vc, &d.sc, &mut d.rc, &mut d.k1);
        if d.rc.iter().any(|x| !x.is_finite()) {
            return Err(DriverError::Diverged { what: "force" });
        }
        d.rt.copy_from_slice(&d.rc);
        Ok(d)
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
        self.substeps_t
    }

    /// Impose the trial displacement `u` and velocity `v` (element DOFs) reached `dt` after
    /// the committed state; integrates the extra states along the path (module docs).
    /// Allocation-free. On error the trial is reset to the committed state.
    #[allow(clippy::needless_range_loop)] // parallel arrays indexed together
    pub fn set_trial(&mut self, dt: f64, u: &[f64], v: &[f64]) -> Result<(), DriverError> {
        if !dt.is_finite() || dt < 0.0 {
            return Err(DriverError::TimeStep(dt));
        }
        check(u, self.n, "displacement")?;
        check(v, self.n, "velocity")?;
        let span = if dt > 0.0 { dt } else { 1.0 };
        let mut dmax = 0.0f64;
        for i in 0..self.n {
            let du = u[i] - self.uc[i];
            self.vp[i] = du / span;
            dmax = dmax.max(du.abs());
        }
        if let (Some(a), Some(b)) = (
            self.element.deformation(u),
            self.element.deformation(&self.uc),
        ) {
            dmax = (a - b).abs();
        }
        let m = self.substep_count(dmax);
        self.st.copy_from_slice(&self.sc);
        let mut work = self.work_c;
        if m > 0 {
            let h = span / m as f64;
            let e = &self.element;
            for i in 0..self.n {
                self.uw[i] = self.uc[i];
            }
            e.restoring(&self.uw, &self.vp, &self.st, &mut self.ra, &mut self.k1);
            for k in 0..m {
                self.s0w.copy_from_slice(&self.st);
                let w_mid = (k as f64 + 0.5) / m as f64;
                for i in 0..self.ns {
                    self.smid[i] = self.st[i] + 0.5 * h * self.k1[i];
                }
                for i in 0..self.n {
                    self.uw[i] = self.uc[i] + w_mid * (u[i] - self.uc[i]);
                }
                e.project_state(&self.uw, &self.vp, &self.s0w, &mut self.smid);
                e.restoring(&self.uw, &self.vp, &self.smid, &mut self.rb, &mut self.k2);
                for i in 0..self.ns {
                    self.st[i] += h * self.k2[i];
                }
                let w_end = (k + 1) as f64 / m as f64;
                for i in 0..self.n {
                    self.uw[i] = self.uc[i] + w_end * (u[i] - self.uc[i]);
                }
                e.project_state(&self.uw, &self.vp, &self.s0w, &mut self.st);
                e.restoring(&self.uw, &self.vp, &self.st, &mut self.rb, &mut self.k1);
                for i in 0..self.n {
                    work += 0.5 * (self.ra[i] + self.rb[i]) * (u[i] - self.uc[i]) / m as f64;
                }
                std::mem::swap(&mut self.ra, &mut self.rb);
            }
        }
        // Force at the trial point with the trial velocity.
        self.element
            .restoring(u, v, &self.st, &mut self.rt, &mut self.k2);
        if self.st.iter().any(|x| !x.is_finite()) {
            self.revert();
            return Err(DriverError::Diverged { what: "state" });
        }
        if self.rt.iter().any(|x| !x.is_finite()) {
            self.revert();
            return Err(DriverError::Diverged { what: "force" });
        }
        self.ut.copy_from_slice(u);
        self.vt.copy_from_slice(v);
        self.work_t = work;
        self.span_t = span;
        self.substeps_t = m;
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
        &self.rt
    }

    /// Resisting forces at the committed state.
    pub fn committed_force(&self) -> &[f64] {
        &self.rc
    }

    /// Extra states at the trial.
    pub fn states(&self) -> &[f64] {
        &self.st
    }

    /// Committed extra states.
    pub fn committed_states(&self) -> &[f64] {
        &self.sc
    }

    /// Trial displacement.
    pub fn displacement(&self) -> &[f64] {
        &self.ut
    }

    /// Trial velocity.
    pub fn velocity(&self) -> &[f64] {
        &self.vt
    }

    /// Deformation at the trial, when the element defines one.
    pub fn deformation(&self) -> Option<f64> {
        self.element.deformation(&self.ut)
    }

    /// Work `∫ rᵀ du` done on the element since the start, at the trial.
    pub fn work(&self) -> f64 {
        self.work_t
    }

    /// Cumulative dissipated energy at the trial (module docs).
    pub fn dissipated_energy(&self) -> f64 {
        if let Some(e) = self.element.dissipated_energy(&self.ut, &self.st) {
            return e;
        }
        match self.element.potential_energy(&self.ut, &self.st) {
            Some(p) => self.work_t - p,
            None => self.work_t,
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

    #[allow(clippy::needless_range_loop)]
    fn tangent_column(&mut self, j: usize) {
        let (n, ns, m) = (self.n, self.ns, self.substeps_t);
        let span = self.span_t;
        for i in 0..n {
            let seed = if i == j { 1.0 } else { 0.0 };
            self.d_du[i] = Dual64::new(self.ut[i] - self.uc[i], seed);
            self.d_vp[i] = self.d_du[i] / span;
        }
        for i in 0..ns {
            self.d_s[i] = Dual64::from(self.sc[i]);
        }
        let e = &self.element;
        if m > 0 {
            let h = span / m as f64;
            for i in 0..n {
                self.d_uw[i] = Dual64::from(self.uc[i]);
            }
            e.restoring_dual(
                &self.d_uw,
                &self.d_vp,
                &self.d_s,
                &mut self.d_r,
                &mut self.d_k1,
            );
            for k in 0..m {
                self.d_s0.copy_from_slice(&self.d_s);
                let w_mid = (k as f64 + 0.5) / m as f64;
                for i in 0..ns {
                    self.d_smid[i] = self.d_s[i] + self.d_k1[i] * (0.5 * h);
                }
                for i in 0..n {
                    self.d_uw[i] = self.d_du[i] * w_mid + self.uc[i];
                }
                e.project_state_dual(&self.d_uw, &self.d_vp, &self.d_s0, &mut self.d_smid);
                e.restoring_dual(
                    &self.d_uw,
                    &self.d_vp,
                    &self.d_smid,
                    &mut self.d_r,
                    &mut self.d_k2,
                );
                for i in 0..ns {
                    self.d_s[i] += self.d_k2[i] * h;
                }
                let w_end = (k + 1) as f64 / m as f64;
                for i in 0..n {
                    self.d_uw[i] = self.d_du[i] * w_end + self.uc[i];
                }
                e.project_state_dual(&self.d_uw, &self.d_vp, &self.d_s0, &mut self.d_s);
                e.restoring_dual(
                    &self.d_uw,
                    &self.d_vp,
                    &self.d_s,
                    &mut self.d_r,
                    &mut self.d_k1,
                );
            }
        }
        for i in 0..n {
            let seed = if i == j { 1.0 } else { 0.0 };
            self.d_uw[i] = Dual64::new(self.ut[i], seed);
            self.d_v[i] = Dual64::from(self.vt[i]);
        }
        e.restoring_dual(
            &self.d_uw,
            &self.d_v,
            &self.d_s,
            &mut self.d_r,
            &mut self.d_k2,
        );
        for i in 0..n {
            self.tangent[(i, j)] = self.d_r[i].eps;
        }
    }

    /// Accept the trial as the new committed state.
    pub fn commit(&mut self) {
        self.uc.copy_from_slice(&self.ut);
        self.vc.copy_from_slice(&self.vt);
        self.sc.copy_from_slice(&self.st);
        self.rc.copy_from_slice(&self.rt);
        self.work_c = self.work_t;
    }

    /// Discard the trial: back to the committed state.
    pub fn revert(&mut self) {
        self.ut.copy_from_slice(&self.uc);
        self.vt.copy_from_slice(&self.vc);
        self.st.copy_from_slice(&self.sc);
        self.rt.copy_from_slice(&self.rc);
        self.work_t = self.work_c;
        self.substeps_t = 0;
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
