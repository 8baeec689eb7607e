//! Element-level partitioned integration with localized Lagrange multipliers (LLM),
//! Hovmand et al. (2022), §2 eqs 1–9 (ALGORITHMS.md A7, errata E31–E35), with the trapezoidal rule
//! or — beyond the paper, its stated future work — generalized-α as the basic solver.

use super::{
    check_finite, AlphaParameters, AlphaState, AlphaStepper, StepClock, StepSettings,
    TimeIntegrator,
};
use crate::assembly::{ElementPartitions, Partition, SteklovPoincare};
use crate::elements::{DofRef, Quantity};
use crate::integrators::StepError;
use crate::model::imposed_motion::ImposedMotion;
use nalgebra::{DMatrix, DVector};

/// Per-element machinery: stepper with `D^(i)` factorized once, coupled and free states, and
/// the link operator `D^(i)⁻¹ B^(i)` (eq 7).
pub struct LlmRun {
    /// Generalized-α stepper (ρ∞ = 1: the trapezoidal rule of eqs 6, 8).
    pub stepper: AlphaStepper,
    /// Coupled state at `t_n`.
    pub coupled: AlphaState,
    /// Free state at `t_{n+1}` (eq 6).
    pub free: AlphaState,
    /// `D^(i)⁻¹ B^(i)`: size × n_Λ^(i).
    pub link: DMatrix<f64>,
    /// `(partition DOF row, index in X^g)` of the coupled copies.
    pub coupled_rows: Vec<(usize, usize)>,
    /// Offset of `Λ^(i)` in the interface unknowns.
    pub offset: usize,
    load: DVector<f64>,
    res: DVector<f64>,
    tmp: DVector<f64>,
}

/// The LLM partitioned integrator.
///
/// Every element is a partition `M Ẋ + R(X) = F + BΛ` (eq 3a) coupled to the generalized
/// interface DOFs `X^g` by `G Ẋ + Ḡ Ẋ^g = 0` (3b), imposed rates `Ḡ^c Ẋ^g = h(t)` (3c, a
/// *velocity*: `Ḡ^c = −S`, `h = −ẇ`, E33) and force balance `Σ B̄Λ + B̄^cΛ^c = 0` (3d,
/// `B̄ = Ḡᵀ` with the sign of E31). A step `t_n → t_{n+1}` runs, over preallocated buffers:
///
/// 1. [`Llm::free_step`] of every element (eq 6; with generalized-α the predictor/corrector
///    of Abbiati et al. 2019, eqs 11–13, `c = γΔtα_f/α_m` in place of `γΔt`);
/// 2. [`Llm::interface_solve`]: `z = H⁻¹[−G Ẋ_f; h(t_{n+1}); 0]` (eq 9), `H` factorized once;
/// 3. [`Llm::link_update`]: `Ẋ = Ẋ_f + D⁻¹BΛ`, `X = X_f + c D⁻¹BΛ` (eqs 5, 7), and for
///    generalized-α `V = V_f + (α_f/α_m) D⁻¹BΛ` — the link operator ℚ of PG-α with one
///    substep (Abbiati et al. 2019, eqs 32–33), so the interface operator `G D⁻¹ B` keeps the form
///    of eq 9 and the scheme stays second order for linear problems.
///
/// The start is consistent (coupled accelerations and `Λ_0` from the DAE at the acceleration
/// level), so that for linear models LLM-trapezoid reproduces the monolithic trapezoid and
/// LLM-G-α the monolithic MG-α to round-off.
pub struct Llm {
    parts: Vec<Partition>,
    runs: Vec<LlmRun>,
    global: Vec<DofRef>,
    imposed: Vec<(usize, ImposedMotion)>,
    /// The Steklov–Poincaré operator `H` of eq 9.
    pub h: DMatrix<f64>,
    operator: SteklovPoincare,
    z: DVector<f64>,
    lambda: DVector<f64>,
    /// Initial multipliers `[Λ^(1); …; Λ^(n); Λ^c]` of the consistent start.
    pub lambda0: DVector<f64>,
    n_lambda: usize,
    corrections: usize,
    params: AlphaParameters,
    dt: f64,
    clock: StepClock,
}

impl Llm {
    /// Build from the element partitions and the model's imposed motions, factorize `D^(i)`
    /// and `H`, and start consistently at `t0` (`settings`: ρ∞ of the basic solver, Δt,
    /// corrections, `t0`).
    pub fn new(
        ep: ElementPartitions,
        motions: &[ImposedMotion],
        settings: &StepSettings,
    ) -> Result<Self, String> {
        let (rho_inf, dt, corrections, t0) = (
            settings.rho_inf,
            settings.time_step,
            settings.corrections,
            settings.t0,
        );
        let ElementPartitions {
            mut parts,
            global,
            coupled,
            imposed,
            ..
        } = ep;
        let params = AlphaParameters::new(rho_inf);
        let ng = global.len();
        let nc = imposed.len();
        let mut runs = Vec::new();
        let mut offset = 0;
        for (part, rows) in parts.iter().zip(coupled) {
            let stepper = AlphaStepper::new(part, params, dt, 1)
                .map_err(|e| format!("element `{}`: {e}", part.state.name))?;
            let size = part.state.size();
            let n = part.state.n_dofs();
            let mut link = DMatrix::zeros(size, rows.len());
            let mut col = DVector::zeros(size);
            for (b, (row, _)) in rows.iter().enumerate() {
                col.fill(0.0);
                col[n + row] = 1.0;
                stepper.solve_d(&mut col);
                link.set_column(b, &col);
            }
            let m = rows.len();
            runs.push(LlmRun {
                stepper,
                coupled: AlphaState::zeros(size),
                free: AlphaState::zeros(size),
                link,
                coupled_rows: rows,
                offset,
                load: DVector::zeros(size),
                res: DVector::zeros(size),
                tmp: DVector::zeros(size),
            });
            offset += m;
        }
        let n_lambda = offset;
        let big = n_lambda + nc + ng;
        // H of eq 9.
        let mut h = DMatrix::zeros(big, big);
        let xg = n_lambda + nc;
        for run in &runs {
            for (a, (row, g)) in run.coupled_rows.iter().enumerate() {
                for b in 0..run.coupled_rows.len() {
                    h[(run.offset + a, run.offset + b)] = run.link[(*row, b)];
                }
                h[(run.offset + a, xg + g)] = -1.0; // Ḡ^(i)
                h[(xg + g, run.offset + a)] = -1.0; // B̄^(i) = Ḡ^(i)ᵀ (E31)
            }
        }
        for (c, (g, _)) in imposed.iter().enumerate() {
            h[(n_lambda + c, xg + g)] = -1.0; // Ḡ^c
            h[(xg + g, n_lambda + c)] = -1.0; // B̄^c = Ḡ^cᵀ
        }
        let operator = SteklovPoincare::new(&h).ok_or(
            "the Steklov-Poincaré operator H of the element partitions is singular \
             (check the connectivity: every interface DOF needs mass)",
        )?;
        let imposed: Vec<(usize, ImposedMotion)> = imposed
            .into_iter()
            .map(|(g, k)| (g, motions[k].clone()))
            .collect();
        let lambda0 = consistent_start(&mut parts, &mut runs, ng, &imposed, n_lambda, t0)?;
        Ok(Self {
            parts,
            runs,
            global,
            imposed,
            h,
            operator,
            z: DVector::zeros(big),
            lambda: lambda0.clone(),
            lambda0,
            n_lambda,
            corrections: corrections.max(1),
            params,
            dt,
            clock: StepClock::new(t0, dt),
        })
    }

    /// The generalized-α parameters of the basic solver (ρ∞ = 1: trapezoidal).
    pub fn parameters(&self) -> AlphaParameters {
        self.params
    }

    /// Per-element runs (states, link operators).
    pub fn runs(&self) -> &[LlmRun] {
        &self.runs
    }

    /// Generalized interface DOFs `X^g`.
    pub fn global_dofs(&self) -> &[DofRef] {
        &self.global
    }

    /// Global interface rates `Ẋ^g_n` (velocities of the interface DOFs).
    pub fn global_rates(&self) -> &[f64] {
        &self.z.as_slice()[self.n_lambda + self.imposed.len()..]
    }

    /// Number of element multipliers (without the imposed-motion multipliers `Λ^c`).
    pub fn n_element_multipliers(&self) -> usize {
        self.n_lambda
    }

    /// Phase 1: free step of element partition `k` from `t_n` to `t_{n+1}` (eq 6). A physical
    /// element's provider is commanded once, at the predictor.
    pub fn free_step(&mut self, k: usize) -> Result<(), StepError> {
        let t_next = self.time() + self.dt;
        let LlmRun {
            stepper,
            coupled,
            free,
            ..
        } = &mut self.runs[k];
        stepper
            .step(&mut self.parts[k], coupled, t_next, None, free)
            .map_err(|e| StepError::from_port(&self.parts[k].state.name, e))
    }

    /// Phase 2: the interface problem of eq 9 at `t_{n+1}`. Allocation-free.
    pub fn interface_solve(&mut self) {
        let t_next = self.time() + self.dt;
        self.z.fill(0.0);
        for run in &self.runs {
            for (a, (row, _)) in run.coupled_rows.iter().enumerate() {
                self.z[run.offset + a] = -run.free.ydot[*row]; // −G^(i) Ẋ_f
            }
        }
        for (c, (_, m)) in self.imposed.iter().enumerate() {
            self.z[self.n_lambda + c] = -m.velocity(t_next); // h = −ẇ (E33)
        }
        self.operator.solve_mut(&mut self.z);
    }

    /// Phase 3: link update and coupled solution (eqs 5, 7), then `corrections − 1` coupled
    /// fixed-`D` corrections ([`Llm::correct`]); advance to `t_{n+1}`.
    pub fn link_update(&mut self) -> Result<(), StepError> {
        self.link(false);
        for _ in 1..self.corrections {
            self.correct();
            self.interface_solve();
            self.link(true);
        }
        self.clock.advance();
        let t = self.time();
        let n = self.clock.steps();
        check_finite(self.lambda.as_slice(), "localized multipliers", t, n)?;
        for run in &self.runs {
            check_finite(run.coupled.y.as_slice(), "state", t, n)?;
        }
        Ok(())
    }

    /// One coupled fixed-`D` correction for nonlinear elements (ALGORITHMS.md E38, applied to
    /// the *coupled* state, since the free states of the LLM scheme are far from it): each
    /// numerical element's new free rate is `Ẋ + D⁻¹(F + BΛ − MẊ − R(X̃ + cẊ))`; the interface
    /// solve then gives the multiplier increment. Physical elements are not re-commanded
    /// (a specimen cannot be reverted): their free rate is their coupled one.
    pub fn correct(&mut self) {
        let t_next = self.time() + self.dt;
        let c = self.params.c(self.dt);
        let wv = self.params.alpha_f / self.params.alpha_m;
        for (run, part) in self.runs.iter_mut().zip(self.parts.iter_mut()) {
            run.free.assign(&run.coupled);
            if part.physical.is_some() {
                continue;
            }
            let n = part.state.n_dofs();
            part.state.load(t_next, run.load.as_mut_slice());
            for (a, (row, _)) in run.coupled_rows.iter().enumerate() {
                run.load[n + row] += self.lambda[run.offset + a];
            }
            part.state.residual(
                run.coupled.y.as_slice(),
                run.res.as_mut_slice(),
                &mut part.ws,
            );
            part.state
                .mass_times(run.coupled.ydot.as_slice(), run.tmp.as_mut_slice());
            run.load -= &run.res;
            run.load -= &run.tmp;
            run.stepper.solve_d(&mut run.load);
            run.free.ydot += &run.load;
            run.free.y.axpy(c, &run.load, 1.0);
            run.free.v.axpy(wv, &run.load, 1.0);
        }
    }

    fn link(&mut self, accumulate: bool) {
        let c = self.params.c(self.dt);
        let wv = self.params.alpha_f / self.params.alpha_m;
        for run in &mut self.runs {
            let m = run.coupled_rows.len();
            let lam = self.z.rows(run.offset, m);
            run.coupled.ydot.copy_from(&run.free.ydot);
            run.coupled.ydot.gemv(1.0, &run.link, &lam, 1.0);
            run.coupled.y.copy_from(&run.free.y);
            run.coupled.y.gemv(c, &run.link, &lam, 1.0);
            run.coupled.v.copy_from(&run.free.v);
            run.coupled.v.gemv(wv, &run.link, &lam, 1.0);
        }
        let nl = self.lambda.len();
        if accumulate {
            self.lambda += self.z.rows(0, nl);
        } else {
            self.lambda.copy_from(&self.z.rows(0, nl));
        }
    }

    /// Displacement of the first element copy of global DOF `g`.
    fn global_displacement(&self, g: usize) -> f64 {
        for run in &self.runs {
            for (row, gg) in &run.coupled_rows {
                if *gg == g {
                    return run.coupled.y[*row];
                }
            }
        }
        f64::NAN
    }
}

/// Coupled start: accelerations and `Λ_0` from the DAE (3) differentiated once (copies'
/// accelerations equal the global ones, imposed DOFs follow the prescribed acceleration), then
/// `V_0 = Ẋ_0` (Abbiati et al. 2019; ALGORITHMS.md A1). Massless imposed copies take the prescribed
/// acceleration.
fn consistent_start(
    parts: &mut [Partition],
    runs: &mut [LlmRun],
    ng: usize,
    imposed: &[(usize, ImposedMotion)],
    n_lambda: usize,
    t0: f64,
) -> Result<DVector<f64>, String> {
    let nc = imposed.len();
    let nd: usize = parts.iter().map(|p| p.state.n_dofs()).sum();
    let big = nd + n_lambda + nc + ng;
    let mut a = DMatrix::zeros(big, big);
    let mut b = DVector::zeros(big);
    let mut residuals = Vec::new();
    let mut off = 0;
    let xg = nd + n_lambda + nc;
    for (part, run) in parts.iter_mut().zip(runs.iter()) {
        let n = part.state.n_dofs();
        let size = part.state.size();
        let mut f = DVector::zeros(size);
        let mut r = DVector::zeros(size);
        part.state.load(t0, f.as_mut_slice());
        let y0 = part.state.y0.clone();
        part.residual_at_rest(t0, y0.as_slice(), r.as_mut_slice())
            .map_err(|e| format!("element `{}`: {e}", part.state.name))?;
        let fr = &f - &r;
        for i in 0..n {
            for j in 0..n {
                a[(off + i, off + j)] = part.state.mass()[(i, j)];
            }
            b[off + i] = fr[n + i];
        }
        for (k, (row, g)) in run.coupled_rows.iter().enumerate() {
            let l = nd + run.offset + k;
            a[(off + row, l)] = -1.0; // − B Λ
            a[(l, off + row)] = 1.0; // copy acceleration …
            a[(l, xg + g)] = -1.0; // … equals the global one
            a[(xg + g, l)] = -1.0; // balance
        }
        residuals.push((off, fr));
        off += n;
    }
    for (c, (g, m)) in imposed.iter().enumerate() {
        a[(nd + n_lambda + c, xg + g)] = -1.0;
        b[nd + n_lambda + c] = -m.acceleration(t0);
        a[(xg + g, nd + n_lambda + c)] = -1.0;
    }
    let x = a
        .lu()
        .solve(&b)
        .ok_or("the coupled start is singular: some interface DOF has no mass")?;
    for ((part, run), (off, fr)) in parts.iter().zip(runs.iter_mut()).zip(residuals) {
        let n = part.state.n_dofs();
        let size = part.state.size();
        let mut ydot = fr.clone();
        for i in 0..n {
            ydot[i] = part.state.y0[n + i];
            ydot[n + i] = x[off + i];
        }
        run.coupled.y.copy_from(&part.state.y0);
        run.coupled.ydot.copy_from(&ydot);
        run.coupled.v.copy_from(&ydot);
        run.free.assign(&run.coupled.clone());
        let _ = size;
    }
    Ok(x.rows(nd, n_lambda + nc).clone_owned())
}

impl TimeIntegrator for Llm {
    fn name(&self) -> &'static str {
        "llm"
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
        for k in 0..self.runs.len() {
            self.free_step(k)?;
        }
        self.interface_solve();
        self.link_update()
    }
    fn partitions(&self) -> &[Partition] {
        &self.parts
    }
    fn set_external_load(
        &mut self,
        partition: usize,
        dof: usize,
        value: f64,
    ) -> Result<(), String> {
        super::set_external_load_in(&mut self.parts, partition, dof, value)
    }
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn crate::physical::LabControl)) {
        super::labs_of(&mut self.parts, f)
    }
    fn state(&self, p: usize) -> &[f64] {
        self.runs[p].coupled.y.as_slice()
    }
    fn rate(&self, p: usize) -> &[f64] {
        self.runs[p].coupled.ydot.as_slice()
    }
    fn multipliers(&self) -> &[f64] {
        self.lambda.as_slice()
    }
    fn initial_multipliers(&self) -> &[f64] {
        self.lambda0.as_slice()
    }
    fn energy_source(&self, _p: usize) -> super::EnergySource {
        super::EnergySource::PartitionState
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        let Self { parts, runs, .. } = self;
        parts[p].energy(runs[p].coupled.y.as_slice())
    }
    fn state_len(&self) -> usize {
        self.runs.iter().map(|r| r.coupled.flat_len()).sum()
    }
    fn export_state(&self, out: &mut [f64]) {
        let mut o = 0;
        for r in &self.runs {
            let l = r.coupled.flat_len();
            r.coupled.export(&mut out[o..o + l]);
            o += l;
        }
    }
    fn import_state(&mut self, x: &[f64]) {
        let mut o = 0;
        for r in &mut self.runs {
            let l = r.coupled.flat_len();
            r.coupled.import(&x[o..o + l]);
            o += l;
        }
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
    /// The localized multipliers `Λ^(i)` (eq 3a: `+Λ` on the element copy, `−Λ` through
    /// `B̄ = Ḡᵀ` on the generalized interface DOF, E31) and the imposed-motion multipliers
    /// `Λ^c` (eq 3c–3d: the support reaction on the structure is `−Λ^c`).
    fn multiplier_info(&self) -> Vec<super::MultiplierInfo> {
        let mut out = Vec::new();
        for (run, part) in self.runs.iter().zip(&self.parts) {
            for (a, (row, g)) in run.coupled_rows.iter().enumerate() {
                let d = &part.state.dofs[*row];
                let xg = &self.global[*g];
                out.push(super::MultiplierInfo {
                    dof: d.clone(),
                    plus: part.state.name.clone(),
                    minus: format!("interface DOF {}.{}", xg.node, xg.dof),
                    lambda0: self.lambda0.get(run.offset + a).copied(),
                    channel: format!("lambda.{}.{}.{}", part.state.name, d.node, d.dof),
                    kind: "localized",
                });
            }
        }
        for (c, (g, m)) in self.imposed.iter().enumerate() {
            let d = &self.global[*g];
            out.push(super::MultiplierInfo {
                dof: d.clone(),
                plus: format!("imposed motion `{}`", m.name),
                minus: format!("interface DOF {}.{}", d.node, d.dof),
                lambda0: self.lambda0.get(self.n_lambda + c).copied(),
                channel: format!("reaction.{}.{}", d.node, d.dof),
                kind: "imposed",
            });
        }
        out
    }
    fn extra_channels(&self) -> Vec<(String, Quantity, String)> {
        let mut out = Vec::new();
        for (run, part) in self.runs.iter().zip(&self.parts) {
            for (row, _) in &run.coupled_rows {
                let d = &part.state.dofs[*row];
                out.push((
                    format!("lambda.{}.{}.{}", part.state.name, d.node, d.dof),
                    Quantity::Force,
                    d.dof.to_string(),
                ));
            }
        }
        for (g, _) in &self.imposed {
            let d = &self.global[*g];
            out.push((
                format!("reaction.{}.{}", d.node, d.dof),
                Quantity::Force,
                d.dof.to_string(),
            ));
        }
        for (g, _) in &self.imposed {
            let d = &self.global[*g];
            out.push((
                format!("imposed_u.{}.{}", d.node, d.dof),
                Quantity::Displacement,
                d.dof.to_string(),
            ));
        }
        for (g, _) in &self.imposed {
            let d = &self.global[*g];
            out.push((
                format!("drift.{}.{}", d.node, d.dof),
                Quantity::Displacement,
                d.dof.to_string(),
            ));
        }
        out
    }
    fn extra_values(&self, out: &mut [f64]) {
        let t = self.time();
        let nl = self.n_lambda;
        let nc = self.imposed.len();
        out[..nl].copy_from_slice(&self.lambda.as_slice()[..nl]);
        for (c, (g, m)) in self.imposed.iter().enumerate() {
            let d = m.displacement(t);
            out[nl + c] = -self.lambda[nl + c]; // support force on the structure = −Λ^c
            out[nl + nc + c] = d;
            out[nl + 2 * nc + c] = self.global_displacement(*g) - d;
        }
    }
}
