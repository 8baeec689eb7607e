//! Explicit real-time hybrid coupling (`[analysis] integrator = "explicit-rths"`): the loop
//! that most real-time hybrid simulation benchmarks and controllers run (e.g. the vRTHS
//! benchmark of Silva et al. 2020): the numerical model is stepped at the controller rate, its
//! interface displacement is sent once per tick and held by zero-order hold, and the force
//! measured `force_delay` controller samples earlier is applied to it as an external load.
//!
//! # Equations
//!
//! The *numerical model* holds every element of the model except the specimens (the mass,
//! damping — Rayleigh included — and numerical stiffness of every substructure, physical ones
//! too), over all DOFs, in the first-order form of [`crate::assembly`]:
//! `M Ẏ + R(Y) = F(t) − Sᵀ f̂`, `Y = [u; v; s]`, where `S` picks the physical DOFs and `f̂` is
//! the measured restoring force held over the tick. With `Δt = Δt^C` (λ = 1, ss = 1), tick
//! `n → n + 1` is
//!
//! 1. `f̂_{n+1} = f^m_{n−d}`: the force measured at tick `n − d` (`d = force_delay`; the forces
//!    before tick 0 are the force measured at rest);
//! 2. one generalized-α step of the numerical model with the load `F(t_{n+1}) − Sᵀ f̂_{n+1}`
//!    (the Brüls–Arnold state-space form of Abbiati et al. 2019, eqs 11–13, as
//!    [`super::AlphaStepper`]): predictor
//!    `Ỹ = Y_n + Ẏ_n γΔt(1−α_f)/α_m + V_n Δt(α_m−γ)/α_m`,
//!    `(M + c J0) Ẏ_{n+1} = F(t_{n+1}) − Sᵀ f̂_{n+1} − R(Ỹ)`, `Y_{n+1} = Ỹ + c Ẏ_{n+1}`,
//!    `V_{n+1} = Ṽ + (α_f/α_m) Ẏ_{n+1}`, `c = γΔt α_f/α_m` (ρ∞ = 1 is the trapezoidal rule);
//! 3. the command of tick `n + 1`: `u_c = S u_{n+1}` (and `S v_{n+1}`), sent once through the
//!    physical port and its lab provider (compensation, limits checked first, transfer,
//!    recording; a trip ends in a hold or a paced ramp-down), which returns `f^m_{n+1}`.
//!
//! With an ideal actuator and a linear specimen `f = K_s u`, `d = 0` gives
//! `M a_{n+1} + C v_{n+1} + K u_{n+1} = f_{n+1} − K_s u_n`: the specimen force is one step
//! late, the explicit one-sample loop. The step is linearly implicit in the numerical model
//! (exact for linear elements; `corrections` fixed-D corrections for nonlinear ones, ALGORITHMS.md
//! E38) and explicit in the specimen: it never needs the specimen force at a trial state.
//!
//! # Order and stability
//!
//! Alone, the numerical model is stepped by generalized-α: second order, unconditionally stable
//! for ρ∞ ∈ [0, 1] (Chung and Hulbert 1993; Abbiati et al. 2019). The held, lagged force
//! lags the exact coupling force by `(d + 1/2)Δt` on average, so the coupled scheme is first
//! order in Δt, and its stability is conditional: the lag feeds energy into the structure
//! (a negative damping of about `K_s τ` for a specimen of stiffness `K_s` and a total delay τ;
//! Horiuchi et al. 1999), which the structural damping must absorb. The closed-loop spectral
//! radius and the critical delay of a linear model are computed by
//! [`crate::analysis::critical_delay`].

use super::{check_finite, AlphaParameters, AlphaState, AlphaStepper, StepClock, StepSettings};
use super::{StepError, TimeIntegrator};
use crate::assembly::{Coupling, Partition};
use crate::physical::PortError;
use nalgebra::DVector;

/// The link of one physical partition to the numerical model.
struct PhysicalLink {
    /// Row of each partition DOF in the numerical model.
    rows: Vec<usize>,
    /// Offset of its forces in the force vectors.
    offset: usize,
    /// `[u; v; s]` over the partition (u and v gathered from the numerical model; s = 0).
    y: DVector<f64>,
    /// Its rate, gathered likewise.
    ydot: DVector<f64>,
}

/// Explicit RTHS coupling (see the module documentation).
pub struct ExplicitRths {
    /// `[numerical model, physical partitions…]`.
    parts: Vec<Partition>,
    links: Vec<PhysicalLink>,
    stepper: AlphaStepper,
    state: AlphaState,
    next: AlphaState,
    couplings: Vec<Coupling>,
    /// Measured forces of the last `d + 1` ticks, `(d + 1) × n_f`, oldest at `head`.
    history: Vec<f64>,
    head: usize,
    /// The force applied in the current step.
    applied: DVector<f64>,
    n_force: usize,
    force_delay: usize,
    dt: f64,
    clock: StepClock,
}

impl ExplicitRths {
    /// Build from the numerical model `numerical` (every non-specimen element, over all DOFs)
    /// and the physical partitions `physical` (each with its port), measure the specimens at
    /// rest at `t0` and start from `Y_0` with `Ẏ_0 = M⁻¹(F_0 − R(Y_0) − Sᵀ f^m_0)`.
    pub fn new(
        numerical: Partition,
        physical: Vec<Partition>,
        settings: &StepSettings,
        force_delay: usize,
    ) -> Result<Self, String> {
        let dt = settings.time_step;
        let t0 = settings.t0;
        if physical.is_empty() {
            return Err("explicit-rths needs a physical substructure to couple".into());
        }
        let params = AlphaParameters::new(settings.rho_inf);
        let stepper = AlphaStepper::new(&numerical, params, dt, settings.corrections)?;
        let size = numerical.state.size();
        let n = numerical.state.n_dofs();
        let mut parts = vec![numerical];
        let mut links = Vec::new();
        let mut couplings = Vec::new();
        let mut offset = 0;
        for mut p in physical {
            if p.physical.is_none() {
                return Err(format!(
                    "substructure `{}` has no physical port to command",
                    p.state.name
                ));
            }
            let mut rows = Vec::new();
            for d in p.state.dofs.iter() {
                let Some(r) = parts[0].state.dofs.iter().position(|x| x == d) else {
                    return Err(format!(
                        "DOF {d} of physical substructure `{}` belongs to no numerical element \
                         (no mass or stiffness in the numerical model): explicit-rths applies \
                         the measured force to the numerical model, so every physical DOF needs \
                         its mass there",
                        p.state.name
                    ));
                };
                rows.push(r);
            }
            for (i, r) in rows.iter().enumerate() {
                couplings.push(Coupling {
                    row: *r,
                    lambda: offset + i,
                    sign: -1.0,
                });
            }
            let ps = p.state.size();
            p.index = parts.len();
            links.push(PhysicalLink {
                offset,
                y: DVector::zeros(ps),
                ydot: DVector::zeros(ps),
                rows,
            });
            offset += p.state.n_dofs();
            parts.push(p);
        }
        let n_force = offset;
        let mut s = Self {
            parts,
            links,
            stepper,
            state: AlphaState::zeros(size),
            next: AlphaState::zeros(size),
            couplings,
            history: vec![0.0; (force_delay + 1) * n_force],
            head: 0,
            applied: DVector::zeros(n_force),
            n_force,
            force_delay,
            dt,
            clock: StepClock::new(t0, dt),
        };
        // Measure at rest; a safety event at rest is latched in the layer and reported by the
        // first step (as with PG-α), so that the runner stops through the safety layer.
        s.state.y.copy_from(&s.parts[0].state.y0);
        s.gather();
        let mut f0 = vec![0.0; n_force];
        for (k, link) in s.links.iter().enumerate() {
            let part = &mut s.parts[k + 1];
            let port = part.physical.as_mut().expect("checked");
            match port.measure_at_rest(t0, link.y.as_slice()) {
                Ok(f) => f0[link.offset..link.offset + f.len()].copy_from_slice(f),
                Err(PortError::Safety(_)) => {}
                Err(e) => return Err(format!("substructure `{}`: {e}", part.state.name)),
            }
        }
        for slot in s.history.chunks_mut(n_force.max(1)) {
            slot.copy_from_slice(&f0[..slot.len()]);
        }
        let mut rhs = DVector::zeros(size);
        let mut r0 = DVector::zeros(size);
        let y0 = s.parts[0].state.y0.clone();
        s.parts[0].state.load(t0, rhs.as_mut_slice());
        s.parts[0].residual(y0.as_slice(), r0.as_mut_slice());
        rhs -= r0;
        for c in &s.couplings {
            rhs[n + c.row] += c.sign * f0[c.lambda];
        }
        s.state.start(&s.parts[0].state, &rhs)?;
        s.gather();
        Ok(s)
    }

    /// Controller samples between a measurement and the step it loads.
    pub fn force_delay(&self) -> usize {
        self.force_delay
    }

    /// The force (over the physical DOFs of every physical partition, in order) that loaded
    /// the last step.
    pub fn applied_force(&self) -> &[f64] {
        self.applied.as_slice()
    }

    /// Gather each physical partition's `u`, `v` (and rates) from the numerical model.
    fn gather(&mut self) {
        let n = self.parts[0].state.n_dofs();
        for (k, link) in self.links.iter_mut().enumerate() {
            let np = self.parts[k + 1].state.n_dofs();
            for (i, r) in link.rows.iter().enumerate() {
                link.y[i] = self.state.y[*r];
                link.y[np + i] = self.state.y[n + r];
                link.ydot[i] = self.state.ydot[*r];
                link.ydot[np + i] = self.state.ydot[n + r];
            }
        }
    }
}

impl TimeIntegrator for ExplicitRths {
    fn name(&self) -> &'static str {
        "explicit-rths"
    }
    fn time(&self) -> f64 {
        self.clock.time()
    }
    fn steps_taken(&self) -> u64 {
        self.clock.steps()
    }
    fn time_step(&self) -> f64 {
        self.dt
    }
    fn step(&mut self) -> Result<(), StepError> {
        let nf = self.n_force;
        let t_next = {
            let mut c = self.clock;
            c.advance();
            c.time()
        };
        // 1. The force measured `force_delay` ticks ago (the oldest of the ring).
        let h = self.head * nf;
        self.applied
            .as_mut_slice()
            .copy_from_slice(&self.history[h..h + nf]);
        // 2. The numerical step with that force as a load.
        let Self {
            parts,
            stepper,
            state,
            next,
            couplings,
            applied,
            ..
        } = self;
        stepper
            .step(
                &mut parts[0],
                state,
                t_next,
                Some((couplings.as_slice(), &*applied, 1.0)),
                next,
            )
            .map_err(|e| StepError::from_port(&parts[0].state.name, e))?;
        std::mem::swap(&mut self.state, &mut self.next);
        self.clock.advance();
        let step = self.clock.steps();
        check_finite(self.state.y.as_slice(), "state", t_next, step)?;
        // 3. The one command of tick n + 1, and its measured force into the ring.
        self.gather();
        for (k, link) in self.links.iter().enumerate() {
            let part = &mut self.parts[k + 1];
            let port = part.physical.as_mut().expect("checked at build");
            let tick = port.tick(t_next);
            let f = port
                .command(tick, link.y.as_slice())
                .map_err(|e| StepError::from_port(&part.state.name, e))?;
            self.history[h + link.offset..h + link.offset + f.len()].copy_from_slice(f);
        }
        self.head = (self.head + 1) % (self.force_delay + 1);
        Ok(())
    }
    fn partitions(&self) -> &[Partition] {
        &self.parts
    }
    fn set_element_parameter(
        &mut self,
        partition: usize,
        element: usize,
        parameter: &str,
        value: f64,
    ) -> Result<(), String> {
        super::set_parameter_in(&mut self.parts, partition, element, parameter, value)
    }
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn crate::physical::LabControl)) {
        super::labs_of(&mut self.parts, f)
    }
    fn state(&self, p: usize) -> &[f64] {
        if p == 0 {
            self.state.y.as_slice()
        } else {
            self.links[p - 1].y.as_slice()
        }
    }
    fn rate(&self, p: usize) -> &[f64] {
        if p == 0 {
            self.state.ydot.as_slice()
        } else {
            self.links[p - 1].ydot.as_slice()
        }
    }
    fn energy_source(&self, p: usize) -> super::EnergySource {
        if p == 0 {
            super::EnergySource::PartitionState
        } else {
            super::EnergySource::Specimen
        }
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        // The numerical model's energy (the physical partitions' mass is in it); for a
        // physical partition, what its specimen holds or absorbed, as measured behind the port.
        if p == 0 {
            let Self { parts, state, .. } = self;
            parts[0].energy(state.y.as_slice())
        } else {
            self.parts[p]
                .physical
                .as_ref()?
                .substructure()
                .potential_energy()
        }
    }
    fn state_len(&self) -> usize {
        self.state.flat_len() + self.history.len()
    }
    fn export_state(&self, out: &mut [f64]) {
        let l = self.state.flat_len();
        self.state.export(&mut out[..l]);
        // The force ring, oldest first.
        let nf = self.n_force;
        let slots = self.force_delay + 1;
        for j in 0..slots {
            let s = ((self.head + j) % slots) * nf;
            out[l + j * nf..l + (j + 1) * nf].copy_from_slice(&self.history[s..s + nf]);
        }
    }
    fn import_state(&mut self, x: &[f64]) {
        let l = self.state.flat_len();
        self.state.import(&x[..l]);
        let n = self.history.len();
        self.history.copy_from_slice(&x[l..l + n]);
        self.head = 0;
        self.gather();
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
}
