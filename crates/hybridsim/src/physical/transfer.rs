//! The transfer-system interface: what stands between the integrator and a specimen.
//!
//! Split phase (Abbiati et al. 2019, §2.2; 2020, §2.2): every controller tick Δt^C the integrator
//! [`TransferSystem::send`]s one command per actuator (displacement, velocity, acceleration,
//! in specimen units and wall-clock rates) and later [`TransferSystem::receive`]s the measured
//! force and achieved displacement of that tick; a network transfer system may answer after
//! more than a tick. [`TransferSystem::measure_at_rest`] comes before step 1, so that Λ0 uses
//! the measured force.

use super::TransferError;
use crate::model::lab::{LinkSettings, TransferKind};

/// One actuator command of a tick (specimen units; wall-clock velocity and acceleration).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ActuatorCommand {
    /// Displacement.
    pub d: f64,
    /// Velocity (`ṽ/λ` in specimen units, A17).
    pub v: f64,
    /// Acceleration (`ã/λ²`).
    pub a: f64,
}

/// What a transfer system had for a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A new measurement of the tick.
    Fresh,
    /// No new sample arrived for this tick (a lost frame, a late acquisition); the output
    /// slices are left as they were. The safety layer holds the last good sample and counts
    /// the dropout.
    Missing,
}

/// A transfer system: actuators and load cells (virtual or real).
pub trait TransferSystem: Send {
    /// Description for summaries.
    fn describe(&self) -> String;
    /// Whether this is the virtual laboratory (no hardware).
    fn is_virtual(&self) -> bool;
    /// Number of actuators.
    fn n_actuators(&self) -> usize;
    /// Measure force and position of every actuator at rest (before step 1).
    fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError>;
    /// Send the commands of `tick` (wall time `t_wall` of the test).
    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError>;
    /// Read one measurement at tick `tick` (wall time `t_wall`) without sending a command:
    /// the controller holds its present command (the hold before the bumpless start, whose
    /// samples are averaged). [`Sample::Missing`] when no new sample arrived.
    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError>;
    /// Receive the measured force and achieved displacement of `tick`
    /// ([`Sample::Missing`] when no new sample arrived).
    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError>;
    /// Stored energy of the specimen, when known (virtual specimens of conservative elements).
    fn potential_energy(&self) -> Option<f64> {
        None
    }
    /// Random seeds used (recorded in run.json).
    fn seeds(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// Statistics for run.json (a link's latency percentiles, lost and late replies).
    fn statistics(&self) -> Vec<(String, f64)> {
        Vec::new()
    }
    /// The safety layer tripped: from now on only ramp-down commands (if any) follow. A link
    /// tells its controller. Allocation-free.
    fn on_trip(&mut self) {}
    /// The noise-free force and achieved displacement of the last tick (before sensor noise,
    /// ADC and injected sensor faults), when the transfer system knows them (the virtual
    /// lab); `false` (slices untouched) for hardware and links. Allocation-free.
    fn noise_free(&self, _force: &mut [f64], _achieved: &mut [f64]) -> bool {
        false
    }
}

/// What a laboratory needs from a front end that builds network transfer systems
/// ([`crate::physical::LabControl::transfer_request`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TransferRequest {
    /// Physical substructure.
    pub substructure: String,
    /// Kind of transfer system (`lab.transfer`).
    pub kind: TransferKind,
    /// `[lab.link]` (network kinds).
    pub link: Option<LinkSettings>,
    /// Actuator names, in command order.
    pub actuators: Vec<String>,
    /// Controller tick Δt^C, s of wall clock.
    pub dt_c: f64,
}

/// Builds the network transfer systems of laboratories (implemented by the front end that
/// owns the sockets: the core does no I/O).
pub trait TransferConnector: Send + Sync {
    /// Connect the transfer system `request` describes.
    fn connect(&self, request: &TransferRequest) -> Result<Box<dyn TransferSystem>, TransferError>;
}

/// Connect one laboratory whose transfer system is on the network with `connector` (a no-op
/// for the virtual lab); without a connector such a laboratory is an error. Call before the
/// integrator is built on the partition (its consistent start measures the lab at rest):
/// [`crate::integrators::build_with`] does.
pub fn connect_lab(
    lab: &mut dyn crate::physical::LabControl,
    connector: Option<&dyn TransferConnector>,
) -> Result<(), String> {
    let request = lab.transfer_request();
    if !request.kind.is_network() {
        return Ok(());
    }
    let connector = connector.ok_or_else(|| {
        format!(
            "physical substructure `{}`: transfer system `{}` needs the network, which this \
             front end does not reach",
            request.substructure,
            request.kind.name()
        )
    })?;
    let transfer = connector
        .connect(&request)
        .map_err(|e| format!("physical substructure `{}`: {e}", request.substructure))?;
    lab.attach_transfer(transfer)
}

/// The stand-in of a network transfer system before a front end connected it: every call is
/// a transfer fault that says so.
pub struct Unconnected {
    kind: TransferKind,
    n: usize,
}

impl Unconnected {
    /// A stand-in for `n` actuators of a `kind` transfer system.
    pub fn new(kind: TransferKind, n: usize) -> Self {
        Self { kind, n }
    }

    fn error(&self) -> TransferError {
        TransferError::new(format!(
            "transfer system `{}` is not connected (no front end connected the network link)",
            self.kind.name()
        ))
    }
}

impl TransferSystem for Unconnected {
    fn describe(&self) -> String {
        format!("{} link (not connected)", self.kind.name())
    }
    fn is_virtual(&self) -> bool {
        false
    }
    fn n_actuators(&self) -> usize {
        self.n
    }
    fn measure_at_rest(&mut self, _: &mut [f64], _: &mut [f64]) -> Result<(), TransferError> {
        Err(self.error())
    }
    fn send(&mut self, _: u64, _: f64, _: &[ActuatorCommand]) -> Result<(), TransferError> {
        Err(self.error())
    }
    fn hold_sample(
        &mut self,
        _: u64,
        _: f64,
        _: &mut [f64],
        _: &mut [f64],
    ) -> Result<Sample, TransferError> {
        Err(self.error())
    }
    fn receive(&mut self, _: u64, _: &mut [f64], _: &mut [f64]) -> Result<Sample, TransferError> {
        Err(self.error())
    }
}

/// Linear map between partition DOFs and actuators: `d = T u` (prototype units), forces back
/// by `f = Tᵀ F`. A two-node device driven by its relative displacement (`T = [−1, 1]`) thus
/// returns equal and opposite forces. `R = (T Tᵀ)⁻¹ T` maps DOF forces to actuator forces and
/// `P = Tᵀ (T Tᵀ)⁻¹` actuator displacements to (minimum-norm) DOF displacements.
#[derive(Debug, Clone)]
pub struct DofMap {
    /// Actuators.
    pub n_act: usize,
    /// Partition DOFs.
    pub n_dof: usize,
    /// `T`, row-major `n_act × n_dof`.
    pub t: Vec<f64>,
    /// `R`, row-major `n_act × n_dof`.
    pub r: Vec<f64>,
    /// `P`, row-major `n_dof × n_act`.
    pub p: Vec<f64>,
}

impl DofMap {
    /// Build from `T` (row-major). Fails when `T Tᵀ` is singular (dependent actuators).
    pub fn new(n_act: usize, n_dof: usize, t: Vec<f64>) -> Result<Self, String> {
        let tm = nalgebra::DMatrix::from_row_slice(n_act, n_dof, &t);
        let ttt = &tm * tm.transpose();
        let inv = ttt
            .try_inverse()
            .ok_or("the actuators are not independent (T·Tᵀ is singular)")?;
        // Exact inverse for the common diagonal case (single-DOF actuators, ±1 devices).
        let r = &inv * &tm;
        let p = tm.transpose() * &inv;
        let row_major = |m: &nalgebra::DMatrix<f64>| {
            let mut out = Vec::with_capacity(m.nrows() * m.ncols());
            for i in 0..m.nrows() {
                for j in 0..m.ncols() {
                    out.push(m[(i, j)]);
                }
            }
            out
        };
        Ok(Self {
            n_act,
            n_dof,
            r: row_major(&r),
            p: row_major(&p),
            t,
        })
    }

    /// `d = T u`.
    pub fn to_actuators(&self, u: &[f64], d: &mut [f64]) {
        for (a, da) in d.iter_mut().enumerate().take(self.n_act) {
            let mut s = 0.0;
            for (j, uj) in u.iter().enumerate().take(self.n_dof) {
                let c = self.t[a * self.n_dof + j];
                if c != 0.0 {
                    s += c * uj;
                }
            }
            *da = s;
        }
    }

    /// `f += Tᵀ F`.
    pub fn forces_to_dofs(&self, force: &[f64], f: &mut [f64]) {
        for (a, fa) in force.iter().enumerate().take(self.n_act) {
            for (j, fj) in f.iter_mut().enumerate().take(self.n_dof) {
                let c = self.t[a * self.n_dof + j];
                if c != 0.0 {
                    *fj += c * fa;
                }
            }
        }
    }

    /// `F = R f`.
    pub fn dof_forces_to_actuators(&self, f: &[f64], force: &mut [f64]) {
        for (a, fa) in force.iter_mut().enumerate().take(self.n_act) {
            let mut s = 0.0;
            for (j, fj) in f.iter().enumerate().take(self.n_dof) {
                let c = self.r[a * self.n_dof + j];
                if c != 0.0 {
                    s += c * fj;
                }
            }
            *fa = s;
        }
    }

    /// `u = P d`.
    pub fn actuators_to_dofs(&self, d: &[f64], u: &mut [f64]) {
        for (j, uj) in u.iter_mut().enumerate().take(self.n_dof) {
            let mut s = 0.0;
            for (a, da) in d.iter().enumerate().take(self.n_act) {
                let c = self.p[j * self.n_act + a];
                if c != 0.0 {
                    s += c * da;
                }
            }
            *uj = s;
        }
    }
}

impl<T: TransferSystem + ?Sized> TransferSystem for Box<T> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn is_virtual(&self) -> bool {
        (**self).is_virtual()
    }
    fn n_actuators(&self) -> usize {
        (**self).n_actuators()
    }
    fn measure_at_rest(
        &mut self,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<(), TransferError> {
        (**self).measure_at_rest(force, position)
    }
    fn send(
        &mut self,
        tick: u64,
        t_wall: f64,
        cmd: &[ActuatorCommand],
    ) -> Result<(), TransferError> {
        (**self).send(tick, t_wall, cmd)
    }
    fn hold_sample(
        &mut self,
        tick: u64,
        t_wall: f64,
        force: &mut [f64],
        position: &mut [f64],
    ) -> Result<Sample, TransferError> {
        (**self).hold_sample(tick, t_wall, force, position)
    }
    fn receive(
        &mut self,
        tick: u64,
        force: &mut [f64],
        achieved: &mut [f64],
    ) -> Result<Sample, TransferError> {
        (**self).receive(tick, force, achieved)
    }
    fn potential_energy(&self) -> Option<f64> {
        (**self).potential_energy()
    }
    fn seeds(&self) -> Vec<(String, u64)> {
        (**self).seeds()
    }
    fn statistics(&self) -> Vec<(String, f64)> {
        (**self).statistics()
    }
    fn on_trip(&mut self) {
        (**self).on_trip()
    }
    fn noise_free(&self, force: &mut [f64], achieved: &mut [f64]) -> bool {
        (**self).noise_free(force, achieved)
    }
}
