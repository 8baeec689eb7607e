//! Experimental setups: how the actuators of a physical substructure are attached to its DOFs.
//!
//! A [`Setup`] turns trial DOF displacements and velocities into actuator commands (length
//! changes and their rates) and measured actuator forces back into DOF forces, at the current
//! geometry; for the virtual lab it also inverts the map (achieved actuator displacements →
//! DOF displacements, DOF forces of the specimen → actuator forces). The layering follows
//! OpenFresco's experimental element → site → setup → control (Schellenberg, Mahin and Fenves
//! 2009); the setups' geometric relations are theirs, the code is ours.
//!
//! Implementations:
//! - [`DofMap`] (`linear`): today's constant matrix `d = T u`, forces `f = Tᵀ F`, one row per
//!   `[[lab.actuator]]` with `dofs` and `coefficients`; bit for bit the map of earlier versions.
//! - [`PlanarRig`]: actuators on a rigid body moving in a plane ([`planar`]), built by one file
//!   per kind: [`one_actuator`], [`two_actuators_2d`], [`three_actuators_2d`],
//!   [`inverted_v_brace_2d`], each with `geometry = "linear"` (the tangent at the reference
//!   configuration) or `"nonlinear"` (large displacements and rotations, the exact actuator
//!   lengths).
//!
//! **Forces.** Measured actuator forces go back as `f = J(u)ᵀ F`, `J = ∂d/∂u` the Jacobian of the
//! actuator-length map at the current *trial* configuration: the virtual work of the actuator
//! forces on a virtual length change, `F·δd = F·J δu`, equals that of the DOF forces, `f·δu`, for
//! every `δu`, which is what makes the exchange energy-consistent. The trial `u` (the command of
//! the tick) is used rather than the measured configuration: it is known without a nonlinear
//! solve on noisy data, and the two differ by the tracking error times the curvature of the map
//! (second order). With the linear geometry `J` is constant and `f = J₀ᵀ F`.
//!
//! **Inversion (virtual lab).** A kinematic setup has as many actuators as DOFs. Its DOF
//! displacements for given actuator displacements are found by Newton's method from the last
//! solution (`J δq = d(q) − d*`, at most [`MAX_NEWTON`] iterations, converged when the residual
//! is below 64 ε times the setup's size); a singular Jacobian or no convergence is a transfer
//! error that names the setup. Velocities solve `J q̇ = ḋ`; accelerations `J q̈ = d̈`, which
//! leaves out the convective term `J̇ q̇` (it matters only to a specimen mass measured in real time
//! under large rotations). Specimen forces go to the actuators by `Jᵀ F = f`.
//!
//! **Scale factors per DOF.** A kinematic setup may give `displacement_scale` and `force_scale`
//! per DOF (prototype = scale × specimen, like `lab.geometric_scale` and `lab.force_scale`, on
//! top of them): the setup's geometry is in specimen units and sees `q_j = u_j / (s_g s_j)`.

mod inverted_v_brace_2d;
mod one_actuator;
pub mod planar;
mod three_actuators_2d;
mod two_actuators_2d;

pub use inverted_v_brace_2d::inverted_v_brace_2d;
pub use one_actuator::one_actuator;
pub use planar::PlanarActuator;
pub use three_actuators_2d::three_actuators_2d;
pub use two_actuators_2d::two_actuators_2d;

pub use super::transfer::DofMap;
pub use crate::model::lab::Geometry;
use crate::model::lab::{SetupKind, SetupSettings};

/// Largest number of DOFs (= actuators) of a kinematic setup.
pub const MAX_SETUP_DOFS: usize = 3;

/// Largest number of Newton iterations of the inversion.
pub const MAX_NEWTON: usize = 50;

/// An experimental setup over `n_dofs` DOFs and `n_actuators` actuators (its own numbering).
///
/// The provided methods serve square setups of at most [`MAX_SETUP_DOFS`] DOFs (stack
/// workspaces, no allocation); [`DofMap`] overrides them all.
pub trait Setup: Send + Sync + std::fmt::Debug {
    /// The kind's name in the model file.
    fn kind(&self) -> &'static str;
    /// Actuators.
    fn n_actuators(&self) -> usize;
    /// DOFs.
    fn n_dofs(&self) -> usize;
    /// A length of the setup (its largest actuator), the scale of the inversion's tolerance.
    fn size(&self) -> f64 {
        1.0
    }
    /// Actuator displacements `d = g(u)`.
    fn to_actuators(&self, u: &[f64], d: &mut [f64]);
    /// The Jacobian `J(u) = ∂d/∂u`, row-major `n_actuators × n_dofs`.
    fn jacobian(&self, u: &[f64], j: &mut [f64]);
    /// A copy behind a box.
    fn boxed(&self) -> Box<dyn Setup>;

    /// Actuator velocities `ḋ = J(u) v`.
    fn velocities_to_actuators(&self, u: &[f64], v: &[f64], vd: &mut [f64]) {
        let (na, n) = (self.n_actuators(), self.n_dofs());
        let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
        self.jacobian(u, &mut j[..na * n]);
        for (k, x) in vd.iter_mut().enumerate().take(na) {
            *x = (0..n).map(|i| j[k * n + i] * v[i]).sum();
        }
    }

    /// `f += scale · J(u)ᵀ F`.
    fn forces_to_dofs(&self, u: &[f64], force: &[f64], scale: f64, f: &mut [f64]) {
        let (na, n) = (self.n_actuators(), self.n_dofs());
        let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
        self.jacobian(u, &mut j[..na * n]);
        for (i, fi) in f.iter_mut().enumerate().take(n) {
            *fi += scale * (0..na).map(|k| j[k * n + i] * force[k]).sum::<f64>();
        }
    }

    /// DOF displacements `u` with `g(u) = d`, by Newton's method from the `u` given (the last
    /// solution). Returns the iterations used.
    fn actuators_to_dofs(&self, d: &[f64], u: &mut [f64]) -> Result<usize, String> {
        let n = self.n_dofs();
        let tol =
            64.0 * f64::EPSILON * (self.size() + d.iter().fold(0.0f64, |m, x| m.max(x.abs())));
        let mut g = [0.0; MAX_SETUP_DOFS];
        let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
        let mut residual = f64::NAN;
        for it in 0..=MAX_NEWTON {
            self.to_actuators(u, &mut g[..n]);
            residual = 0.0;
            for k in 0..n {
                g[k] -= d[k];
                residual = residual.max(g[k].abs());
            }
            if !residual.is_finite() {
                break;
            }
            if residual <= tol {
                return Ok(it);
            }
            if it == MAX_NEWTON {
                break;
            }
            self.jacobian(u, &mut j[..n * n]);
            solve(n, &mut j, &mut g, false).map_err(|e| format!("{} setup: {e}", self.kind()))?;
            for i in 0..n {
                u[i] -= g[i];
            }
        }
        Err(format!(
            "{} setup: the actuator displacements could not be mapped back to DOF \
             displacements (Newton's method left a residual of {residual:e} after {MAX_NEWTON} \
             iterations)",
            self.kind()
        ))
    }

    /// DOF velocities from actuator velocities at `u`: `J v = ḋ`.
    fn velocities_to_dofs(&self, u: &[f64], vd: &[f64], v: &mut [f64]) -> Result<(), String> {
        let n = self.n_dofs();
        let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
        let mut b = [0.0; MAX_SETUP_DOFS];
        self.jacobian(u, &mut j[..n * n]);
        b[..n].copy_from_slice(&vd[..n]);
        solve(n, &mut j, &mut b, false).map_err(|e| format!("{} setup: {e}", self.kind()))?;
        v[..n].copy_from_slice(&b[..n]);
        Ok(())
    }

    /// Actuator forces from DOF forces at `u`: `Jᵀ F = f`.
    fn dof_forces_to_actuators(
        &self,
        u: &[f64],
        f: &[f64],
        force: &mut [f64],
    ) -> Result<(), String> {
        let n = self.n_dofs();
        let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
        let mut b = [0.0; MAX_SETUP_DOFS];
        self.jacobian(u, &mut j[..n * n]);
        b[..n].copy_from_slice(&f[..n]);
        solve(n, &mut j, &mut b, true).map_err(|e| format!("{} setup: {e}", self.kind()))?;
        force[..n].copy_from_slice(&b[..n]);
        Ok(())
    }
}

/// Solve `A x = b` (or `Aᵀ x = b`), `A` row-major `n × n` (n ≤ [`MAX_SETUP_DOFS`]), by Gaussian
/// elimination with partial pivoting; `b` becomes `x`. A pivot below 1e-12 of the largest entry
/// is a singular configuration.
fn solve(n: usize, a: &mut [f64], b: &mut [f64], transpose: bool) -> Result<(), String> {
    let mut m = [[0.0; MAX_SETUP_DOFS]; MAX_SETUP_DOFS];
    let mut big = 0.0f64;
    for r in 0..n {
        for c in 0..n {
            m[r][c] = if transpose {
                a[c * n + r]
            } else {
                a[r * n + c]
            };
            big = big.max(m[r][c].abs());
        }
    }
    let singular =
        || "the configuration is singular (the actuators' Jacobian has no inverse)".to_string();
    let nan = m.iter().flatten().any(|x| x.is_nan());
    if nan || big == 0.0 || !big.is_finite() {
        return Err(singular());
    }
    for c in 0..n {
        let p = (c..n)
            .max_by(|&x, &y| m[x][c].abs().total_cmp(&m[y][c].abs()))
            .unwrap_or(c);
        if m[p][c].abs() <= 1e-12 * big {
            return Err(singular());
        }
        m.swap(c, p);
        b.swap(c, p);
        for r in c + 1..n {
            let l = m[r][c] / m[c][c];
            let pivot = m[c];
            for (x, p) in m[r].iter_mut().zip(pivot).take(n).skip(c) {
                *x -= l * p;
            }
            b[r] -= l * b[c];
        }
    }
    for c in (0..n).rev() {
        let mut s = b[c];
        for k in c + 1..n {
            s -= m[c][k] * b[k];
        }
        b[c] = s / m[c][c];
    }
    Ok(())
}

/// Actuators on a rigid body moving in a plane: the kinematic setups. `dofs` lists which of the
/// body's `(u, v, θ)` are the setup's DOFs, in order; the others stay zero.
#[derive(Debug, Clone)]
pub struct PlanarRig {
    kind: &'static str,
    actuators: Vec<PlanarActuator>,
    dofs: Vec<usize>,
    geometry: Geometry,
}

impl PlanarRig {
    /// A rig of `actuators` on the body DOFs `dofs` (indices into `(u, v, θ)`); as many
    /// actuators as DOFs, at most [`MAX_SETUP_DOFS`]. Fails on a bad length or a singular
    /// reference configuration.
    pub fn new(
        kind: &'static str,
        actuators: Vec<PlanarActuator>,
        dofs: Vec<usize>,
        geometry: Geometry,
    ) -> Result<Self, String> {
        if actuators.len() != dofs.len() || dofs.is_empty() || dofs.len() > MAX_SETUP_DOFS {
            return Err(format!(
                "{kind}: {} actuators on {} DOFs (a setup needs as many actuators as DOFs, at \
                 most {MAX_SETUP_DOFS})",
                actuators.len(),
                dofs.len()
            ));
        }
        for (k, a) in actuators.iter().enumerate() {
            if !(a.length.is_finite() && a.length > 0.0) {
                return Err(format!(
                    "actuator {k}'s length must be positive and finite, found {}",
                    a.length
                ));
            }
        }
        let rig = Self {
            kind,
            actuators,
            dofs,
            geometry,
        };
        let n = rig.dofs.len();
        let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
        rig.jacobian(&[0.0; MAX_SETUP_DOFS][..n], &mut j[..n * n]);
        let mut b = [0.0; MAX_SETUP_DOFS];
        solve(n, &mut j, &mut b, false).map_err(|_| {
            "the reference configuration is singular: the actuators cannot control every DOF \
             (check the angle, the lengths and the beam length)"
                .to_string()
        })?;
        Ok(rig)
    }

    fn body(&self, u: &[f64]) -> [f64; 3] {
        let mut q = [0.0; 3];
        for (i, &k) in self.dofs.iter().enumerate() {
            q[k] = u[i];
        }
        q
    }
}

impl Setup for PlanarRig {
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn n_actuators(&self) -> usize {
        self.actuators.len()
    }
    fn n_dofs(&self) -> usize {
        self.dofs.len()
    }
    fn size(&self) -> f64 {
        self.actuators
            .iter()
            .map(|a| a.length + a.offset[0].abs() + a.offset[1].abs())
            .fold(0.0, f64::max)
    }
    fn to_actuators(&self, u: &[f64], d: &mut [f64]) {
        let q = self.body(u);
        for (a, x) in self.actuators.iter().zip(d.iter_mut()) {
            *x = a.displacement(q, self.geometry);
        }
    }
    fn jacobian(&self, u: &[f64], j: &mut [f64]) {
        let q = self.body(u);
        let n = self.dofs.len();
        for (k, a) in self.actuators.iter().enumerate() {
            let g = a.gradient(q, self.geometry);
            for (i, &b) in self.dofs.iter().enumerate() {
                j[k * n + i] = g[b];
            }
        }
    }
    fn boxed(&self) -> Box<dyn Setup> {
        Box::new(self.clone())
    }
}

impl Setup for DofMap {
    fn kind(&self) -> &'static str {
        "linear"
    }
    fn n_actuators(&self) -> usize {
        self.n_act
    }
    fn n_dofs(&self) -> usize {
        self.n_dof
    }
    fn to_actuators(&self, u: &[f64], d: &mut [f64]) {
        DofMap::to_actuators(self, u, d)
    }
    fn jacobian(&self, _u: &[f64], j: &mut [f64]) {
        j[..self.t.len()].copy_from_slice(&self.t);
    }
    fn boxed(&self) -> Box<dyn Setup> {
        Box::new(self.clone())
    }
    fn velocities_to_actuators(&self, _u: &[f64], v: &[f64], vd: &mut [f64]) {
        DofMap::to_actuators(self, v, vd)
    }
    fn forces_to_dofs(&self, _u: &[f64], force: &[f64], scale: f64, f: &mut [f64]) {
        if scale == 1.0 {
            DofMap::forces_to_dofs(self, force, f);
        } else {
            for (k, fk) in force.iter().enumerate().take(self.n_act) {
                let ff = fk * scale;
                for (j, fj) in f.iter_mut().enumerate().take(self.n_dof) {
                    let c = self.t[k * self.n_dof + j];
                    if c != 0.0 {
                        *fj += c * ff;
                    }
                }
            }
        }
    }
    fn actuators_to_dofs(&self, d: &[f64], u: &mut [f64]) -> Result<usize, String> {
        DofMap::actuators_to_dofs(self, d, u);
        Ok(1)
    }
    fn velocities_to_dofs(&self, _u: &[f64], vd: &[f64], v: &mut [f64]) -> Result<(), String> {
        DofMap::actuators_to_dofs(self, vd, v);
        Ok(())
    }
    fn dof_forces_to_actuators(
        &self,
        _u: &[f64],
        f: &[f64],
        force: &mut [f64],
    ) -> Result<(), String> {
        DofMap::dof_forces_to_actuators(self, f, force);
        Ok(())
    }
}

/// The kinematic setup of `settings` (specimen units), without its placement.
pub fn build(settings: &SetupSettings) -> Result<PlanarRig, String> {
    let g = settings.geometry;
    match settings.kind {
        SetupKind::OneActuator { length, angle } => one_actuator(length, angle, g),
        SetupKind::TwoActuators2d { lengths } => two_actuators_2d(lengths, g),
        SetupKind::ThreeActuators2d {
            lengths,
            beam_length,
        } => three_actuators_2d(lengths, beam_length, g),
        SetupKind::InvertedVBrace2d {
            lengths,
            beam_length,
            arm_height,
        } => inverted_v_brace_2d(lengths, beam_length, arm_height, g),
    }
}

/// A kinematic setup placed on a substructure: its actuators (in the substructure's command
/// order), its partition DOFs, and its per-DOF scale factors.
#[derive(Debug)]
pub struct Placed {
    /// The setup.
    pub setup: Box<dyn Setup>,
    /// Substructure actuator index of each setup actuator.
    pub actuators: Vec<usize>,
    /// Partition DOF of each setup DOF.
    pub dofs: Vec<usize>,
    /// Prototype/specimen displacement ratio per DOF.
    pub displacement_scale: Vec<f64>,
    /// Prototype/specimen force ratio per DOF.
    pub force_scale: Vec<f64>,
}

impl Clone for Placed {
    fn clone(&self) -> Self {
        Self {
            setup: self.setup.boxed(),
            actuators: self.actuators.clone(),
            dofs: self.dofs.clone(),
            displacement_scale: self.displacement_scale.clone(),
            force_scale: self.force_scale.clone(),
        }
    }
}

/// Every actuator of one physical substructure on its partition DOFs: the linear rows `T`
/// (`[[lab.actuator]] dofs`/`coefficients`) and the kinematic setups (`[[lab.setup]]`). A map of
/// linear rows only is exactly the [`DofMap`] of earlier versions (same operations, same bits).
///
/// Units: the substructure's side is prototype DOFs and actuator displacements times the
/// geometric scale `s_g` (the provider divides by `s_g`); the virtual lab's side is specimen
/// actuator displacements. Every method is allocation-free.
#[derive(Debug, Clone)]
pub struct SetupMap {
    n_act: usize,
    n_dof: usize,
    /// Linear rows: `T` over all actuators (zero rows for a setup's actuators) and the
    /// [`DofMap`] of the linear actuators alone with their substructure indices.
    linear: Option<(DofMap, Vec<usize>)>,
    parts: Vec<Placed>,
    s_g: f64,
    /// `J` at the reference configuration (prototype units), for stiffness estimates.
    tangent: DofMap,
}

impl SetupMap {
    /// Linear rows only: today's map.
    pub fn linear(map: DofMap) -> Self {
        let act = (0..map.n_act).collect();
        Self {
            n_act: map.n_act,
            n_dof: map.n_dof,
            tangent: map.clone(),
            linear: Some((map, act)),
            parts: Vec::new(),
            s_g: 1.0,
        }
    }

    /// `n_act` actuators on `n_dof` DOFs: the linear rows `rows` (substructure actuator index,
    /// `T` row over the partition) and the kinematic setups `parts`; `s_g` the geometric scale.
    pub fn new(
        n_act: usize,
        n_dof: usize,
        rows: Vec<(usize, Vec<f64>)>,
        parts: Vec<Placed>,
        s_g: f64,
    ) -> Result<Self, String> {
        if parts.is_empty() && rows.iter().enumerate().all(|(i, (a, _))| i == *a) {
            let t = rows.into_iter().flat_map(|(_, r)| r).collect();
            return Ok(Self::linear(DofMap::new(n_act, n_dof, t)?));
        }
        let linear = if rows.is_empty() {
            None
        } else {
            let act: Vec<usize> = rows.iter().map(|(a, _)| *a).collect();
            let t = rows.into_iter().flat_map(|(_, r)| r).collect();
            Some((DofMap::new(act.len(), n_dof, t)?, act))
        };
        let mut t = vec![0.0; n_act * n_dof];
        if let Some((m, act)) = &linear {
            for (r, &a) in act.iter().enumerate() {
                t[a * n_dof..(a + 1) * n_dof].copy_from_slice(&m.t[r * n_dof..(r + 1) * n_dof]);
            }
        }
        for p in &parts {
            let n = p.dofs.len();
            let mut j = vec![0.0; n * n];
            p.setup.jacobian(&vec![0.0; n], &mut j);
            for (k, &a) in p.actuators.iter().enumerate() {
                for (i, &dof) in p.dofs.iter().enumerate() {
                    t[a * n_dof + dof] = j[k * n + i] / p.displacement_scale[i];
                }
            }
        }
        Ok(Self {
            n_act,
            n_dof,
            linear,
            parts,
            s_g,
            tangent: DofMap::new(n_act, n_dof, t)?,
        })
    }

    /// The map, when it is today's linear `T` alone.
    pub fn as_linear(&self) -> Option<&DofMap> {
        match &self.linear {
            Some((m, _)) if self.parts.is_empty() => Some(m),
            _ => None,
        }
    }

    /// `J` at the reference configuration (prototype units): the linear map of stiffness
    /// estimates and, with linear geometry, the map itself.
    pub fn tangent(&self) -> &DofMap {
        &self.tangent
    }

    /// Actuators.
    pub fn n_actuators(&self) -> usize {
        self.n_act
    }

    /// Partition DOFs.
    pub fn n_dofs(&self) -> usize {
        self.n_dof
    }

    /// Local specimen coordinates `q` of part `p` from partition `u`.
    fn local(&self, p: &Placed, u: &[f64]) -> [f64; MAX_SETUP_DOFS] {
        let mut q = [0.0; MAX_SETUP_DOFS];
        for (i, &dof) in p.dofs.iter().enumerate() {
            q[i] = u[dof] / (self.s_g * p.displacement_scale[i]);
        }
        q
    }

    /// Linear rows' `Σ T_aj x_j` into `d[a]`.
    fn linear_rows(&self, x: &[f64], d: &mut [f64]) {
        if let Some((m, act)) = &self.linear {
            for (r, &a) in act.iter().enumerate() {
                let mut s = 0.0;
                for (j, xj) in x.iter().enumerate().take(self.n_dof) {
                    let c = m.t[r * self.n_dof + j];
                    if c != 0.0 {
                        s += c * xj;
                    }
                }
                d[a] = s;
            }
        }
    }

    /// Actuator displacements (times `s_g`) for trial DOF displacements `u`.
    pub fn to_actuators(&self, u: &[f64], d: &mut [f64]) {
        if let Some(m) = self.as_linear() {
            return m.to_actuators(u, d);
        }
        self.linear_rows(u, d);
        for p in &self.parts {
            let n = p.dofs.len();
            let q = self.local(p, u);
            let mut g = [0.0; MAX_SETUP_DOFS];
            p.setup.to_actuators(&q[..n], &mut g[..n]);
            for (k, &a) in p.actuators.iter().enumerate() {
                d[a] = self.s_g * g[k];
            }
        }
    }

    /// Actuator velocities (times `s_g`) for DOF velocities `v` at trial displacements `u`.
    pub fn velocities_to_actuators(&self, u: &[f64], v: &[f64], vd: &mut [f64]) {
        if let Some(m) = self.as_linear() {
            return m.to_actuators(v, vd);
        }
        self.linear_rows(v, vd);
        for p in &self.parts {
            let n = p.dofs.len();
            let q = self.local(p, u);
            let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
            p.setup.jacobian(&q[..n], &mut j[..n * n]);
            for (k, &a) in p.actuators.iter().enumerate() {
                vd[a] = (0..n)
                    .map(|i| j[k * n + i] * v[p.dofs[i]] / p.displacement_scale[i])
                    .sum();
            }
        }
    }

    /// `f += scale · Jᵀ F` at trial displacements `u` (per-DOF force scales included).
    pub fn forces_to_dofs(&self, u: &[f64], force: &[f64], scale: f64, f: &mut [f64]) {
        if let Some(m) = self.as_linear() {
            return Setup::forces_to_dofs(m, u, force, scale, f);
        }
        if let Some((m, act)) = &self.linear {
            for (r, &a) in act.iter().enumerate() {
                let ff = force[a] * scale;
                for (j, fj) in f.iter_mut().enumerate().take(self.n_dof) {
                    let c = m.t[r * self.n_dof + j];
                    if c != 0.0 {
                        *fj += c * ff;
                    }
                }
            }
        }
        for p in &self.parts {
            let n = p.dofs.len();
            let q = self.local(p, u);
            let mut j = [0.0; MAX_SETUP_DOFS * MAX_SETUP_DOFS];
            p.setup.jacobian(&q[..n], &mut j[..n * n]);
            for (i, &dof) in p.dofs.iter().enumerate() {
                let s: f64 = (0..n).map(|k| j[k * n + i] * force[p.actuators[k]]).sum();
                f[dof] += scale * p.force_scale[i] * s;
            }
        }
    }

    /// Prototype DOF displacements `out` of actuator displacement errors `e` (specimen units)
    /// through the linear rows; `false` when a kinematic setup takes part (no linear inverse
    /// of its errors is kept). Allocation-free.
    pub fn errors_to_dofs(&self, e: &[f64], out: &mut [f64]) -> bool {
        let Some((m, act)) = &self.linear else {
            return false;
        };
        if !self.parts.is_empty() {
            return false;
        }
        let na = act.len();
        for (j, o) in out.iter_mut().enumerate().take(self.n_dof) {
            let mut acc = 0.0;
            for (r, &k) in act.iter().enumerate() {
                acc += m.p[j * na + r] * e[k];
            }
            *o = acc * self.s_g;
        }
        true
    }

    /// The virtual lab's side: prototype DOF displacements, velocities and accelerations `u`,
    /// `v`, `a` for specimen actuator displacements, velocities and accelerations `x`, `xv`,
    /// `xa`; `u` holds the last solution on entry (Newton's start for a nonlinear setup).
    #[allow(clippy::too_many_arguments)]
    pub fn specimen_to_dofs(
        &self,
        x: &[f64],
        xv: &[f64],
        xa: &[f64],
        u: &mut [f64],
        v: &mut [f64],
        a: &mut [f64],
    ) -> Result<(), String> {
        let s = self.s_g;
        if let Some((m, act)) = &self.linear {
            let na = act.len();
            for j in 0..self.n_dof {
                let (mut su, mut sv, mut sa) = (0.0, 0.0, 0.0);
                for (r, &k) in act.iter().enumerate() {
                    let c = m.p[j * na + r];
                    if c != 0.0 {
                        su += c * x[k];
                        sv += c * xv[k];
                        sa += c * xa[k];
                    }
                }
                u[j] = su * s;
                v[j] = sv * s;
                a[j] = sa * s;
            }
        }
        for p in &self.parts {
            let n = p.dofs.len();
            let mut q = self.local(p, u);
            let mut d = [0.0; MAX_SETUP_DOFS];
            let mut dv = [0.0; MAX_SETUP_DOFS];
            let mut da = [0.0; MAX_SETUP_DOFS];
            for (k, &i) in p.actuators.iter().enumerate() {
                d[k] = x[i];
                dv[k] = xv[i];
                da[k] = xa[i];
            }
            p.setup.actuators_to_dofs(&d[..n], &mut q[..n])?;
            let mut qv = [0.0; MAX_SETUP_DOFS];
            let mut qa = [0.0; MAX_SETUP_DOFS];
            p.setup
                .velocities_to_dofs(&q[..n], &dv[..n], &mut qv[..n])?;
            p.setup
                .velocities_to_dofs(&q[..n], &da[..n], &mut qa[..n])?;
            for (i, &dof) in p.dofs.iter().enumerate() {
                let k = s * p.displacement_scale[i];
                u[dof] = k * q[i];
                v[dof] = k * qv[i];
                a[dof] = k * qa[i];
            }
        }
        Ok(())
    }

    /// The virtual lab's side: actuator forces `force` (prototype force units; the lab divides by
    /// its force scale) that balance prototype DOF forces `f` at prototype displacements `u`.
    pub fn dof_forces_to_specimen(
        &self,
        u: &[f64],
        f: &[f64],
        force: &mut [f64],
    ) -> Result<(), String> {
        if let Some((m, act)) = &self.linear {
            for (r, &a) in act.iter().enumerate() {
                let mut s = 0.0;
                for (j, fj) in f.iter().enumerate().take(self.n_dof) {
                    let c = m.r[r * self.n_dof + j];
                    if c != 0.0 {
                        s += c * fj;
                    }
                }
                force[a] = s;
            }
        }
        for p in &self.parts {
            let n = p.dofs.len();
            let q = self.local(p, u);
            let mut b = [0.0; MAX_SETUP_DOFS];
            for (i, &dof) in p.dofs.iter().enumerate() {
                b[i] = f[dof] / p.force_scale[i];
            }
            let mut out = [0.0; MAX_SETUP_DOFS];
            p.setup
                .dof_forces_to_actuators(&q[..n], &b[..n], &mut out[..n])?;
            for (k, &a) in p.actuators.iter().enumerate() {
                force[a] = out[k];
            }
        }
        Ok(())
    }
}
