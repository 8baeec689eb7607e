//! The identification model: an element of the library driven by the measured interface
//! kinematics, predicting the interface force (Abbiati et al. 2020, §2.1, eq 5; ALGORITHMS.md
//! A12, E28).
//!
//! Over one coarse step `[t_n, t_{n+1}]` the element's deformation follows the cubic Hermite
//! path through the measured displacements and velocities at both ends (so the path's
//! velocity integrates exactly to the measured displacement increment and rate-dependent
//! elements see the measured velocities at the step ends). The element's extra states (for a
//! Bouc-Wen spring its force `r` and absorbed energy `e`) are integrated along it with a fixed
//! number of classical Runge–Kutta substeps, a fixed cost per update. The model state is
//! `Y = [extra states; predicted force]`, so the measurement `H` of the filter is Boolean
//! (it selects the predicted force), as in the paper.
//!
//! New parameter values reach the element through
//! [`Element::set_parameter`], which checks them like
//! the model file's and does not allocate when it accepts them: no separate rebuild trait is
//! needed. A value the element rejects fails the transition, which trips the filter.

use super::ukf::{SigmaPoints, Trip, UnscentedKalmanFilter};
use crate::elements::Element;
use nalgebra::DMatrix;

/// Measured interface kinematics over one coarse step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepKinematics {
    /// Step length.
    pub dt: f64,
    /// Displacement at the start and at the end of the step.
    pub displacement: [f64; 2],
    /// Velocity at the start and at the end of the step.
    pub velocity: [f64; 2],
}

impl StepKinematics {
    /// Displacement and velocity of the cubic Hermite path at `tau = (t − t_n)/Δt ∈ [0, 1]`.
    pub fn at(&self, tau: f64) -> (f64, f64) {
        let (u0, u1) = (self.displacement[0], self.displacement[1]);
        let (v0, v1) = (self.velocity[0] * self.dt, self.velocity[1] * self.dt);
        let (t2, t3) = (tau * tau, tau * tau * tau);
        let u = (2.0 * t3 - 3.0 * t2 + 1.0) * u0
            + (t3 - 2.0 * t2 + tau) * v0
            + (-2.0 * t3 + 3.0 * t2) * u1
            + (t3 - t2) * v1;
        let du = (6.0 * t2 - 6.0 * tau) * u0
            + (3.0 * t2 - 4.0 * tau + 1.0) * v0
            + (-6.0 * t2 + 6.0 * tau) * u1
            + (3.0 * t2 - 2.0 * tau) * v1;
        (u, du / self.dt)
    }
}

/// A model whose parameters a filter identifies from the measured interface force.
pub trait IdentificationModel: Send {
    /// Length of the model state `Y` (the predicted force included).
    fn state_len(&self) -> usize;
    /// Index of the predicted interface force in `Y`.
    fn force_index(&self) -> usize;
    /// Names of the identified parameters, in the order of `θ`.
    fn parameter_names(&self) -> &[&'static str];
    /// The state at rest (length [`IdentificationModel::state_len`]).
    fn rest_state(&self, y: &mut [f64]);
    /// Advance `y` over one coarse step driven by `kinematics`, with parameters `theta`.
    /// `false` if the model cannot (a parameter value it rejects). Must not allocate when it
    /// succeeds.
    fn propagate(&mut self, y: &mut [f64], theta: &[f64], kinematics: &StepKinematics) -> bool;
}

/// An element of the library (one node to ground or two nodes on one DOF direction) as an
/// identification model: the deformation is the measured interface displacement, the
/// predicted force is the element's resisting force on its first DOF.
pub struct ElementModel {
    element: Box<dyn Element>,
    names: Vec<&'static str>,
    substeps: usize,
    ns: usize,
    u: Vec<f64>,
    v: Vec<f64>,
    r: Vec<f64>,
    stage: Vec<f64>,
    k: [Vec<f64>; 4],
}

impl ElementModel {
    /// `element` with the parameters `parameters` to identify, integrated with `substeps`
    /// Runge–Kutta substeps per coarse step.
    pub fn new(
        element: Box<dyn Element>,
        parameters: &[&str],
        substeps: usize,
    ) -> Result<Self, String> {
        let n = element.dofs().len();
        if !(1..=2).contains(&n) || element.deformation(&vec![0.0; n]).is_none() {
            return Err(format!(
                "element kind `{}` is not a one- or two-node element on one DOF direction",
                element.kind()
            ));
        }
        if substeps == 0 {
            return Err("`substeps` must be ≥ 1".into());
        }
        let known = element.parameters();
        let mut names = Vec::with_capacity(parameters.len());
        for p in parameters {
            match known.iter().find(|(k, _)| k == p) {
                Some((k, _)) => {
                    if names.contains(k) {
                        return Err(format!("parameter `{p}` is listed twice"));
                    }
                    names.push(*k)
                }
                None => {
                    let list: Vec<&str> = known.iter().map(|(k, _)| *k).collect();
                    return Err(format!(
                        "element kind `{}` has no parameter `{p}` (it has {})",
                        element.kind(),
                        list.join(", ")
                    ));
                }
            }
        }
        if names.is_empty() {
            return Err("no parameter to identify".into());
        }
        let ns = element.n_states();
        Ok(Self {
            element,
            names,
            substeps,
            ns,
            u: vec![0.0; n],
            v: vec![0.0; n],
            r: vec![0.0; n],
            stage: vec![0.0; ns],
            k: std::array::from_fn(|_| vec![0.0; ns]),
        })
    }

    /// The element (with the parameter values of the last propagation).
    pub fn element(&self) -> &dyn Element {
        self.element.as_ref()
    }

    /// Current value of each identified parameter in the element.
    pub fn current_parameters(&self) -> Vec<f64> {
        let all = self.element.parameters();
        self.names
            .iter()
            .map(|n| all.iter().find(|(k, _)| k == n).map_or(f64::NAN, |p| p.1))
            .collect()
    }

    fn rates(&mut self, kin: &StepKinematics, tau: f64, which: usize) {
        let (d, dv) = kin.at(tau);
        self.u[0] = d;
        self.v[0] = dv;
        let (stage, k) = (&self.stage, &mut self.k[which]);
        self.element
            .restoring(&self.u, &self.v, stage, &mut self.r, k);
    }
}

impl IdentificationModel for ElementModel {
    fn state_len(&self) -> usize {
        self.ns + 1
    }

    fn force_index(&self) -> usize {
        self.ns
    }

    fn parameter_names(&self) -> &[&'static str] {
        &self.names
    }

    fn rest_state(&self, y: &mut [f64]) {
        y.fill(0.0);
    }

    // Index-parallel stage arrays read like the Runge–Kutta formulas.
    #[allow(clippy::needless_range_loop)]
    fn propagate(&mut self, y: &mut [f64], theta: &[f64], kin: &StepKinematics) -> bool {
        for (i, name) in self.names.iter().enumerate() {
            if self.element.set_parameter(name, theta[i]).is_err() {
                return false;
            }
        }
        let ns = self.ns;
        let h = 1.0 / self.substeps as f64;
        for j in 0..self.substeps {
            let tau = j as f64 * h;
            let dt = h * kin.dt;
            self.stage.copy_from_slice(&y[..ns]);
            self.rates(kin, tau, 0);
            for i in 0..ns {
                self.stage[i] = y[i] + 0.5 * dt * self.k[0][i];
            }
            self.rates(kin, tau + 0.5 * h, 1);
            for i in 0..ns {
                self.stage[i] = y[i] + 0.5 * dt * self.k[1][i];
            }
            self.rates(kin, tau + 0.5 * h, 2);
            for i in 0..ns {
                self.stage[i] = y[i] + dt * self.k[2][i];
            }
            self.rates(kin, tau + h, 3);
            for i in 0..ns {
                y[i] += dt / 6.0
                    * (self.k[0][i] + 2.0 * self.k[1][i] + 2.0 * self.k[2][i] + self.k[3][i]);
            }
        }
        // The predicted force at the end of the step.
        self.stage.copy_from_slice(&y[..ns]);
        let (d, dv) = kin.at(1.0);
        self.u[0] = d;
        self.v[0] = dv;
        let k = &mut self.k[0];
        self.element
            .restoring(&self.u, &self.v, &self.stage, &mut self.r, k);
        y[ns] = self.r[0];
        y.iter().all(|x| x.is_finite())
    }
}

/// Prior and noise of an identification, per parameter and for the model state.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentificationSettings {
    /// Prior mean of each parameter.
    pub prior_mean: Vec<f64>,
    /// Prior standard deviation of each parameter.
    pub prior_sd: Vec<f64>,
    /// Standard deviation of the random walk of each parameter per update (`√V^θ`).
    pub parameter_noise_sd: Vec<f64>,
    /// Initial and per-update process standard deviation of every model state (`√V^Y`).
    pub state_noise_sd: f64,
    /// Standard deviation of the measured force (`√W`).
    pub measurement_sd: f64,
    /// Lower and upper bound of each parameter: estimates are kept inside, and the model
    /// is propagated with sigma points clamped to them.
    pub bounds: Vec<(f64, f64)>,
    /// Sigma-point scaling.
    pub sigma_points: SigmaPoints,
}

/// When updating freezes (the estimates are then kept as they are): seed 003 disabled it
/// above a peak ground acceleration of 0.50 g, where the estimate became unstable.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FreezeRule {
    /// Freeze once the magnitude of the ground acceleration exceeds this.
    pub above_pga: Option<f64>,
    /// Freeze when an estimate reaches one of its bounds (an unstable estimate).
    pub at_bound: bool,
}

/// Why updating froze.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frozen {
    /// By the caller ([`Identification::freeze`]).
    Requested,
    /// The ground acceleration exceeded [`FreezeRule::above_pga`].
    GroundAcceleration,
    /// An estimate reached a bound ([`FreezeRule::at_bound`]); the parameter's index.
    AtBound(usize),
}

/// An identification model and its filter: one [`Identification::update`] per coarse step.
pub struct Identification<M: IdentificationModel> {
    model: M,
    filter: UnscentedKalmanFilter,
    bounds: Vec<(f64, f64)>,
    theta: Vec<f64>,
    ny: usize,
    frozen: Option<Frozen>,
    rule: FreezeRule,
}

impl<M: IdentificationModel> Identification<M> {
    /// A filter over `[Y; θ]` for `model`. Errors name the setting.
    pub fn new(model: M, settings: &IdentificationSettings) -> Result<Self, String> {
        let ny = model.state_len();
        let np = model.parameter_names().len();
        for (what, len) in [
            ("prior_mean", settings.prior_mean.len()),
            ("prior_sd", settings.prior_sd.len()),
            ("parameter_noise_sd", settings.parameter_noise_sd.len()),
            ("bounds", settings.bounds.len()),
        ] {
            if len != np {
                return Err(format!(
                    "`{what}` has {len} entries for {np} identified parameters"
                ));
            }
        }
        for (i, &(lo, hi)) in settings.bounds.iter().enumerate() {
            let m = settings.prior_mean[i];
            if lo.is_nan() || hi.is_nan() || lo >= hi || !(lo..=hi).contains(&m) {
                return Err(format!(
                    "`bounds` of `{}`: [{lo}, {hi}] must be increasing and contain the prior mean {m}",
                    model.parameter_names()[i]
                ));
            }
        }
        let sd_ok = |x: f64| x.is_finite() && x > 0.0;
        if !settings.prior_sd.iter().all(|&x| sd_ok(x)) {
            return Err("`prior_sd` must be > 0".into());
        }
        if !settings
            .parameter_noise_sd
            .iter()
            .all(|&x| x.is_finite() && x >= 0.0)
        {
            return Err("`parameter_noise_sd` must be ≥ 0".into());
        }
        if !sd_ok(settings.state_noise_sd) {
            return Err("`state_noise_sd` must be > 0".into());
        }
        if !sd_ok(settings.measurement_sd) {
            return Err("`measurement_sd` must be > 0".into());
        }
        let l = ny + np;
        let mut x0 = vec![0.0; l];
        model.rest_state(&mut x0[..ny]);
        x0[ny..].copy_from_slice(&settings.prior_mean);
        let mut p0 = DMatrix::zeros(l, l);
        let mut v = DMatrix::zeros(l, l);
        let s2 = settings.state_noise_sd * settings.state_noise_sd;
        for i in 0..ny {
            p0[(i, i)] = s2;
            v[(i, i)] = s2;
        }
        for i in 0..np {
            p0[(ny + i, ny + i)] = settings.prior_sd[i] * settings.prior_sd[i];
            v[(ny + i, ny + i)] = settings.parameter_noise_sd[i] * settings.parameter_noise_sd[i];
        }
        let w = DMatrix::from_element(1, 1, settings.measurement_sd * settings.measurement_sd);
        let measured = [model.force_index()];
        let filter = UnscentedKalmanFilter::new(&x0, p0, v, w, &measured, settings.sigma_points)?;
        Ok(Self {
            model,
            filter,
            bounds: settings.bounds.clone(),
            theta: vec![0.0; np],
            ny,
            frozen: None,
            rule: FreezeRule::default(),
        })
    }

    /// One coarse step: propagate with the measured `kinematics`, correct with the measured
    /// interface force. A frozen identification does nothing; a tripped one neither.
    pub fn update(&mut self, kinematics: &StepKinematics, measured_force: f64) -> Option<Trip> {
        if self.frozen.is_some() {
            return self.filter.trip();
        }
        let Self {
            model,
            filter,
            bounds,
            theta,
            ny,
            frozen,
            rule,
        } = self;
        let ny = *ny;
        let trip = filter.step(
            |x: &mut [f64]| {
                let (y, th) = x.split_at_mut(ny);
                for ((t, x), (lo, hi)) in theta.iter_mut().zip(th.iter()).zip(bounds.iter()) {
                    *t = x.clamp(*lo, *hi);
                }
                model.propagate(y, theta, kinematics)
            },
            &[measured_force],
        );
        if trip.is_none() {
            for (i, &(lo, hi)) in bounds.iter().enumerate() {
                filter.clamp(ny + i, lo, hi);
                let x = filter.estimate()[ny + i];
                if rule.at_bound && frozen.is_none() && (x <= lo || x >= hi) {
                    *frozen = Some(Frozen::AtBound(i));
                }
            }
        }
        trip
    }

    /// The automatic freeze criteria (none by default).
    pub fn set_freeze_rule(&mut self, rule: FreezeRule) {
        self.rule = rule;
    }

    /// The ground acceleration now: freezes updating once its magnitude exceeds
    /// [`FreezeRule::above_pga`].
    pub fn observe_ground_acceleration(&mut self, acceleration: f64) {
        if let Some(limit) = self.rule.above_pga {
            if self.frozen.is_none() && acceleration.abs() > limit {
                self.frozen = Some(Frozen::GroundAcceleration);
            }
        }
    }

    /// Stop updating (estimates are kept); see also [`Identification::frozen`].
    pub fn freeze(&mut self) {
        self.frozen.get_or_insert(Frozen::Requested);
    }

    /// Whether updating was frozen.
    pub fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// Why updating froze, if it did.
    pub fn frozen(&self) -> Option<Frozen> {
        self.frozen
    }

    /// Why the filter tripped, if it did.
    pub fn trip(&self) -> Option<Trip> {
        self.filter.trip()
    }

    /// The current estimate of parameter `i`.
    pub fn parameter(&self, i: usize) -> f64 {
        self.filter.estimate()[self.ny + i]
    }

    /// The standard deviation of parameter `i`.
    pub fn parameter_sd(&self, i: usize) -> f64 {
        self.filter.standard_deviation(self.ny + i)
    }

    /// The predicted interface force of the current estimate.
    pub fn force(&self) -> f64 {
        self.filter.estimate()[self.model.force_index()]
    }

    /// The identification model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The filter.
    pub fn filter(&self) -> &UnscentedKalmanFilter {
        &self.filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Hermite path interpolates both ends and its velocity integrates to the displacement
    /// increment (Simpson's rule is exact for the quadratic velocity).
    #[test]
    fn hermite_path() {
        let k = StepKinematics {
            dt: 0.02,
            displacement: [0.1, 0.3],
            velocity: [-2.0, 5.0],
        };
        assert_eq!(k.at(0.0), (0.1, -2.0));
        let (u1, v1) = k.at(1.0);
        assert!((u1 - 0.3).abs() < 1e-15 && (v1 - 5.0).abs() < 1e-12);
        let simpson = k.dt / 6.0 * (k.at(0.0).1 + 4.0 * k.at(0.5).1 + k.at(1.0).1);
        assert!((simpson - 0.2).abs() < 1e-14);
    }
}
