//! Online estimation beside a hybrid test: estimators fed once per coarse step with what the
//! laboratory measured at the interface.
//!
//! The real-time runner hands every [`Observation`] to an [`Estimator`] on its own thread
//! (Abbiati et al. 2020, §2.2: the estimation task runs in parallel with the numerical and
//! physical free solutions). Estimates are reported; applying them to the integrator (the
//! estimated stiffness of `D^P` and the Steklov–Poincaré operator) at a fixed step latency is
//! the online-updating issue's work.
//!
//! Sign convention (as everywhere in hybridsim): the measured force is the *resisting* force
//! of the specimen on the physical copy of the interface DOF, so a spring of stiffness `k`
//! reads `f = k u` and a secant estimate of a positive stiffness is positive.
//!
//! Online model updating (Abbiati et al. 2020, §2.1): [`ukf`] is the unscented Kalman filter
//! over the augmented state `[model state; parameters]`, [`identification`] the identification
//! model (an element of the library driven by the measured interface kinematics) and the
//! [`Identification`] that joins the two, one update per coarse step.

pub mod identification;
pub mod ukf;

pub use identification::{
    ElementModel, FreezeRule, Frozen, Identification, IdentificationModel, IdentificationSettings,
    StepKinematics,
};
pub use ukf::{SigmaPoints, Trip, UnscentedKalmanFilter};

/// What an estimator sees after one coarse step, over the interface DOFs it observes
/// (physical copy).
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// Coarse step index.
    pub step: u64,
    /// Simulation time.
    pub time: f64,
    /// Interface displacements.
    pub displacement: &'a [f64],
    /// Measured restoring forces of the specimen on those DOFs.
    pub force: &'a [f64],
}

/// An online estimator. `observe` runs once per coarse step on the estimation thread and
/// must not allocate.
pub trait Estimator: Send {
    /// What it estimates, for run.json.
    fn describe(&self) -> &'static str;
    /// Take one observation.
    fn observe(&mut self, observation: &Observation<'_>);
    /// Observations taken.
    fn observations(&self) -> u64;
    /// The current estimate per observed DOF (`None` until it is defined).
    fn estimate(&self, dof: usize) -> Option<f64>;
}

/// Least-squares secant stiffness per interface DOF: `k̂ = Σ f u / Σ u²` over every
/// observation so far (the slope through the origin of the measured force against the
/// displacement). Viscous and inertial parts of the measured force, in quadrature with `u`
/// over a cycle, average out.
#[derive(Debug, Clone)]
pub struct SecantStiffness {
    sum_uu: Vec<f64>,
    sum_fu: Vec<f64>,
    count: u64,
}

impl SecantStiffness {
    /// An estimator over `dofs` interface DOFs.
    pub fn new(dofs: usize) -> Self {
        Self {
            sum_uu: vec![0.0; dofs],
            sum_fu: vec![0.0; dofs],
            count: 0,
        }
    }
}

impl Estimator for SecantStiffness {
    fn describe(&self) -> &'static str {
        "least-squares secant stiffness per interface DOF, sum(f u) / sum(u^2) of the measured \
         specimen force (reported, not applied)"
    }

    fn observe(&mut self, o: &Observation<'_>) {
        let n = self
            .sum_uu
            .len()
            .min(o.displacement.len())
            .min(o.force.len());
        for i in 0..n {
            let (u, f) = (o.displacement[i], o.force[i]);
            if u.is_finite() && f.is_finite() {
                self.sum_uu[i] += u * u;
                self.sum_fu[i] += f * u;
            }
        }
        self.count += 1;
    }

    fn observations(&self) -> u64 {
        self.count
    }

    fn estimate(&self, dof: usize) -> Option<f64> {
        let (uu, fu) = (*self.sum_uu.get(dof)?, *self.sum_fu.get(dof)?);
        (uu > 0.0).then(|| fu / uu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spring with viscous damping under a sine: the secant estimate is the spring's
    /// stiffness, positive, and the damping averages out over whole cycles.
    #[test]
    fn secant_stiffness_of_a_damped_spring_is_its_positive_stiffness() {
        let (k, c, w) = (4.0e4, 60.0, 2.0 * std::f64::consts::PI * 1.5);
        let mut est = SecantStiffness::new(1);
        let dt: f64 = 1e-3;
        let steps = (4.0 / 1.5 / dt).round() as u64; // four whole cycles
        for n in 0..=steps {
            let t = n as f64 * dt;
            let (u, v) = (0.01 * (w * t).sin(), 0.01 * w * (w * t).cos());
            let f = k * u + c * v;
            est.observe(&Observation {
                step: n,
                time: t,
                displacement: &[u],
                force: &[f],
            });
        }
        let k_hat = est.estimate(0).unwrap();
        assert!(k_hat > 0.0);
        assert!((k_hat - k).abs() < 1e-3 * k, "{k_hat}");
        assert_eq!(est.estimate(1), None);
        assert_eq!(SecantStiffness::new(1).estimate(0), None);
    }
}
