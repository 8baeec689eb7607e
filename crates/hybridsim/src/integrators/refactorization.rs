//! Refactorization on request during online model updating (`[updating] refactorize =
//! "on_update"`; Abbiati et al. 2020, §2.2).
//!
//! The generalized-α schemes factorize `D = M + c·J0` once (Abbiati et al. 2019, eq 13, with
//! `c = γΔt α_f/α_m`), and PG-α builds its link operators `ℚ^X` (eqs 32–33) and the
//! Steklov–Poincaré operator `H = Σ_X 𝔾^X ℚ^X` (eq 38) from it. An estimate that changes a
//! receiving element's zero-state tangent (a stiffness-like parameter) leaves these matrices
//! on the old law unless they are rebuilt. A [`Refactorizer`] holds its own copy of the
//! receiving partition's state space (taken at start-up) and everything the rebuild needs that
//! does not change during a run (the interface and, for PG-α, the other partitions' products
//! `𝔾^X ℚ^X`); [`Refactorizer::build`] sets the new values on that copy, assembles `J0` again
//! ([`StateSpace::reassemble_tangent`]) and, when it changed, factorizes the new `D^N` and
//! builds the new `ℚ^N` and `H` into an [`Operators`]. That work allocates and may take longer
//! than a step, so it runs off the real-time path (inline in `hybridsim run`, on the updating
//! task in the threaded runner); [`crate::integrators::TimeIntegrator::swap_operators`] then
//! exchanges them with the integrator's in place (moves only), at a coarse-step boundary.
//!
//! The same arithmetic in the same order as the start-up build: after a swap the integrator's
//! matrices are those of an integrator built with the new parameter values (to the last bit
//! for `D`, `ℚ` and `H`). Not rebuilt: Rayleigh damping (its `K_R` is the model file's initial
//! stiffness of the elements it covers; hysteretic elements are not among them by default) and
//! the estimated stiffness of the physical partitions.

use super::pg_alpha::{link_operator, LinkBlocks};
use super::{AlphaParameters, AlphaStepper};
use crate::assembly::{Interface, StateSpace, SteklovPoincare};
use crate::linalg::StateMatrixFactors;
use nalgebra::DMatrix;

/// Operators built for new parameter values ([`Refactorizer::build`]), to be exchanged with
/// the integrator's ([`crate::integrators::TimeIntegrator::swap_operators`]); after the
/// exchange they hold the old ones (to be dropped off the real-time thread).
pub struct Operators {
    step: u64,
    pub(crate) d: StateMatrixFactors,
    /// PG-α: the receiving partition's link blocks `ℚ_Y`, `ℚ_Ẏ`, `ℚ_V`.
    pub(crate) link: Option<LinkBlocks>,
    /// PG-α: the assembled `H` and its factors.
    pub(crate) h: Option<(DMatrix<f64>, Option<SteklovPoincare>)>,
}

impl Operators {
    /// The coarse step of the update whose estimates they were built for.
    pub fn step(&self) -> u64 {
        self.step
    }
}

impl std::fmt::Debug for Operators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operators")
            .field("step", &self.step)
            .field("partitioned", &self.link.is_some())
            .finish()
    }
}

/// What PG-α's rebuild needs besides the receiving partition's state space.
#[derive(Clone)]
pub(crate) struct PartitionedContext {
    /// The receiving (numerical) partition.
    pub k: usize,
    /// The interface (couplings; its `L^N` and `𝔾^N`).
    pub interface: Interface,
    /// `𝔾^X ℚ^X` of every partition, in order (`None` for the receiving one).
    pub products: Vec<Option<DMatrix<f64>>>,
    /// `𝔾^N` of the receiving partition.
    pub g: DMatrix<f64>,
}

/// Builds, off the real-time path, the operators of the receiving partition for new parameter
/// values of the receivers (see the module documentation). Made by
/// [`crate::integrators::TimeIntegrator::refactorizer`] at start-up.
#[derive(Clone)]
pub struct Refactorizer {
    state: StateSpace,
    partition: usize,
    receivers: Vec<usize>,
    parameters: Vec<&'static str>,
    params: AlphaParameters,
    dt: f64,
    partitioned: Option<PartitionedContext>,
    panic_at: Option<u64>,
}

impl std::fmt::Debug for Refactorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refactorizer")
            .field("partition", &self.partition)
            .field("receivers", &self.receivers)
            .field("parameters", &self.parameters)
            .finish()
    }
}

impl Refactorizer {
    /// A refactorizer of partition `partition` (its state space `state` as it is now) whose
    /// receivers are the slots `receivers`, taking `parameters` in the order of the estimates.
    /// Each receiver gets its own copy of its element here, so that the copy never shares an
    /// element with the running integrator.
    pub(crate) fn new(
        mut state: StateSpace,
        partition: usize,
        receivers: &[usize],
        parameters: &[&'static str],
        params: AlphaParameters,
        dt: f64,
        partitioned: Option<PartitionedContext>,
    ) -> Result<Self, String> {
        for &s in receivers {
            let slot = state
                .slots
                .get_mut(s)
                .ok_or_else(|| format!("no element {s} in `{}`", state.name))?;
            slot.element = std::sync::Arc::from(slot.element.clone_box());
        }
        Ok(Self {
            state,
            partition,
            receivers: receivers.to_vec(),
            parameters: parameters.to_vec(),
            params,
            dt,
            partitioned,
            panic_at: None,
        })
    }

    /// The receiving partition.
    pub fn partition(&self) -> usize {
        self.partition
    }

    /// Test hook: [`Refactorizer::build`] panics when asked to build for the update of
    /// `step` (the fault tests of the updating task and of the inline path).
    pub fn inject_panic_at(&mut self, step: u64) {
        self.panic_at = Some(step);
    }

    /// Set `values` (one per parameter) on every receiver of the copy, assemble `J0` again
    /// and, if it changed, build the new `D^N` factors (and for PG-α `ℚ^N` and
    /// `H = Σ 𝔾^X ℚ^X`, the other partitions' `𝔾^X ℚ^X` unchanged), tagged with `step`.
    /// `Ok(None)`: the values leave `J0` as it was (nothing to swap). Errors: a value the
    /// element refuses, a singular `D^N` or `H`. Allocates; not for a real-time thread.
    pub fn build(&mut self, step: u64, values: &[f64]) -> Result<Option<Box<Operators>>, String> {
        if self.panic_at == Some(step) {
            panic!("injected panic in the refactorization of step {step}");
        }
        for &s in &self.receivers {
            for (p, v) in self.parameters.iter().zip(values) {
                self.state.set_element_parameter(s, p, *v)?;
            }
        }
        if !self.state.reassemble_tangent() {
            return Ok(None);
        }
        let d = AlphaStepper::factor(&self.state, self.params, self.dt)?;
        let Some(ctx) = &self.partitioned else {
            return Ok(Some(Box::new(Operators {
                step,
                d,
                link: None,
                h: None,
            })));
        };
        let link = link_operator(
            &self.state,
            ctx.k,
            &ctx.interface,
            &d,
            self.params,
            self.dt,
            1,
        )?;
        let nl = ctx.interface.len();
        let mut h = DMatrix::zeros(nl, nl);
        for (k, product) in ctx.products.iter().enumerate() {
            match product {
                Some(p) => h += p,
                None if k == ctx.k => h += &ctx.g * &link.1,
                None => {}
            }
        }
        let op = SteklovPoincare::new(&h);
        if op.is_none() {
            return Err(
                "the Steklov-Poincaré operator H of the new parameter values is singular".into(),
            );
        }
        Ok(Some(Box::new(Operators {
            step,
            d,
            link: Some(link),
            h: Some((h, op)),
        })))
    }
}
