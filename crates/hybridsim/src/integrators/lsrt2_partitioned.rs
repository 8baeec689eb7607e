//! Partitioned LSRT2 with the acceleration-continuity constraint and explicit Lagrange
//! multipliers at both stages, every subdomain at the same step (Bursi et al. 2011, §3,
//! eqs 5–18, with ALGORITHMS.md E20: `−γJk1` outside `(A^i)⁻¹[…]` in eq 17, and `(C^i)ᵀ` in
//! eqs 14 and 17).
//!
//! Also the per-subdomain machinery that the interfield parallel procedure
//! ([`super::Lsrt2Interfield`]) shares: [`Subdomain`] (its Rosenbrock operators, free
//! accelerations, stage buffers), the explicit multiplier `Λ = −H⁻¹ Σ G^i a^i` and the
//! end-of-step projection.

use super::{check_finite, StepClock, StepError, StepSettings, TimeIntegrator};
use crate::assembly::{ConstraintLevel, Interface, Partition, SteklovPoincare};
use crate::model::Lsrt2Projection;
use nalgebra::{DMatrix, DVector, Dyn, LU};

/// How a subdomain's restoring force is obtained at an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eval {
    /// Measure the specimen at rest (the start).
    AtRest,
    /// Command the specimen at this state (one controller tick).
    Command,
    /// Use the specimen force stored in the buffer passed in (no command).
    Stored,
}

/// One subdomain `i` of a partitioned LSRT2 scheme in the state-space form
/// `M^i Ẏ^i + R^i(Y^i) = F^i(t) + L^i Λ` (the paper's `A^i ẏ^i = F^i + (C^i)ᵀΛ`), with the
/// constant Jacobian `J^i = −(M^i)⁻¹ J0^i`, so that `W_i⁻¹ (M^i)⁻¹ = (M^i + γh J0^i)⁻¹ = D_i⁻¹`.
#[allow(missing_docs)]
pub(crate) struct Subdomain {
    /// `D = M + γ h J0` factorized, for the step `h` of the ss = 1 scheme.
    pub d_lu: LU<f64, Dyn, Dyn>,
    /// `D` for the interfield cycle (coarse: 4Δt; fine: Δt/ss), when used.
    pub d_cycle: Option<LU<f64, Dyn, Dyn>>,
    /// `M` factorized.
    pub m_lu: LU<f64, Dyn, Dyn>,
    /// `L` (size × n_Λ, on the momentum rows): the paper's `(C^i)ᵀ`.
    pub l: DMatrix<f64>,
    /// `M⁻¹ L`: how the multipliers accelerate this subdomain.
    pub ml: DMatrix<f64>,
    /// Current state `Y`.
    pub y: DVector<f64>,
    /// `F − R` at the last evaluation (specimen force included).
    pub f: DVector<f64>,
    /// Free acceleration `a = M⁻¹ (F − R)` at the last evaluation.
    pub a: DVector<f64>,
    /// Rate `Ẏ = a + M⁻¹ L Λ` at `t_n` (output).
    pub rate: DVector<f64>,
    /// Specimen force at `y` (physical subdomains; length n).
    pub specimen: DVector<f64>,
    pub k1: DVector<f64>,
    pub k2: DVector<f64>,
    pub stage: DVector<f64>,
    pub load: DVector<f64>,
    pub res: DVector<f64>,
}

impl Subdomain {
    /// Factorize `M` and `D = M + γ h J0` of `part`, with `M⁻¹ L` of its couplings.
    pub fn new(
        part: &Partition,
        k: usize,
        interface: &Interface,
        gamma: f64,
        h: f64,
    ) -> Result<Self, String> {
        let st = &part.state;
        let size = st.size();
        let n = st.n_dofs();
        let d_lu = d_operator(part, gamma, h)?;
        let m_lu = st.big_mass().lu();
        let l = interface.l_matrix(k, n, size);
        let ml = m_lu
            .solve(&l)
            .ok_or_else(|| format!("substructure `{}`: singular mass matrix", st.name))?;
        let z = || DVector::zeros(size);
        Ok(Self {
            d_lu,
            d_cycle: None,
            m_lu,
            l,
            ml,
            y: st.y0.clone(),
            f: z(),
            a: z(),
            rate: z(),
            specimen: DVector::zeros(n),
            k1: z(),
            k2: z(),
            stage: z(),
            load: z(),
            res: z(),
        })
    }
}

/// `D = M + γ h J0` of `part`, factorized.
pub(crate) fn d_operator(
    part: &Partition,
    gamma: f64,
    h: f64,
) -> Result<LU<f64, Dyn, Dyn>, String> {
    let st = &part.state;
    let d = st.big_mass() + st.j0() * (gamma * h);
    let lu = d.lu();
    if lu.is_invertible() {
        Ok(lu)
    } else {
        Err(format!(
            "substructure `{}`: D = M + γh·J0 is singular",
            st.name
        ))
    }
}

/// `F(t) − R(y)` of `part` into `f` and `a = M⁻¹ f`, the specimen force of a physical
/// partition taken as `how` says (commanded at `t`, measured at rest, or read from
/// `specimen`) and left in `specimen`. Allocation-free.
#[allow(clippy::too_many_arguments)]
pub(crate) fn evaluate(
    part: &mut Partition,
    m_lu: &LU<f64, Dyn, Dyn>,
    y: &DVector<f64>,
    t: f64,
    how: Eval,
    load: &mut DVector<f64>,
    res: &mut DVector<f64>,
    specimen: &mut DVector<f64>,
    f: &mut DVector<f64>,
    a: &mut DVector<f64>,
) -> Result<(), StepError> {
    let n = part.state.n_dofs();
    part.state.load(t, load.as_mut_slice());
    part.residual(y.as_slice(), res.as_mut_slice());
    if let Some(port) = part.physical.as_mut() {
        match how {
            Eval::AtRest => {
                let force = port
                    .measure_at_rest(t, y.as_slice())
                    .map_err(|e| StepError::from_port(&part.state.name, e))?;
                specimen.as_mut_slice().copy_from_slice(force);
            }
            Eval::Command => {
                let tick = port.tick(t);
                let force = port
                    .command(tick, y.as_slice())
                    .map_err(|e| StepError::from_port(&part.state.name, e))?;
                specimen.as_mut_slice().copy_from_slice(force);
            }
            Eval::Stored => {}
        }
        for (r, s) in res.as_mut_slice()[n..2 * n]
            .iter_mut()
            .zip(specimen.as_slice())
        {
            *r += s;
        }
    }
    f.copy_from(load);
    *f -= &*res;
    a.copy_from(f);
    m_lu.solve_mut(a);
    Ok(())
}

/// The interface of the Rosenbrock family: acceleration continuity `Σ G^i a^i = 0`
/// (Bursi et al. 2011, eq 6), with `H = Σ G^i (M^i)⁻¹ (G^i)ᵀ` (eq 14 with E20's `(C^i)ᵀ`)
/// factorized once, and the multipliers it gives.
pub(crate) struct Coupler {
    /// The shared DOFs and signed Boolean couplings (level: acceleration).
    pub interface: Interface,
    op: SteklovPoincare,
    gap: DVector<f64>,
}

impl Coupler {
    /// The interface of `parts` with `H` assembled and factorized.
    pub fn new(parts: &[Partition]) -> Result<Self, String> {
        let mut interface = Interface::new(parts, ConstraintLevel::Acceleration);
        let nl = interface.len();
        if nl == 0 {
            return Err("the substructures share no DOF: there is no interface".into());
        }
        let mut h = DMatrix::zeros(nl, nl);
        for (k, part) in parts.iter().enumerate() {
            let st = &part.state;
            let (n, size) = (st.n_dofs(), st.size());
            let g = interface.g_matrix(k, n, size);
            let l = interface.l_matrix(k, n, size);
            let ml = st
                .big_mass()
                .lu()
                .solve(&l)
                .ok_or_else(|| format!("substructure `{}`: singular mass matrix", st.name))?;
            h += g * ml;
        }
        let op =
            SteklovPoincare::new(&h).ok_or("the interface operator H = Σ G M⁻¹ Gᵀ is singular")?;
        interface.set_operator(h);
        Ok(Self {
            interface,
            op,
            gap: DVector::zeros(nl),
        })
    }

    /// Number of multipliers.
    pub fn len(&self) -> usize {
        self.gap.len()
    }

    /// Start accumulating `Σ G^i v^i`.
    pub fn begin(&mut self) {
        self.gap.fill(0.0);
    }

    /// Add partition `k`'s vector `v` read at rows `offset + row` of its shared DOFs
    /// (`offset = n` reads the acceleration rows of `Ẏ` or the velocities of `Y`, `0` the
    /// displacements of `Y`).
    pub fn add(&mut self, k: usize, v: &DVector<f64>, offset: usize) {
        for c in &self.interface.couplings[k] {
            self.gap[c.lambda] += c.sign * v[offset + c.row];
        }
    }

    /// [`Coupler::add`] of `w v`.
    pub fn add_scaled(&mut self, k: usize, v: &DVector<f64>, offset: usize, w: f64) {
        for c in &self.interface.couplings[k] {
            self.gap[c.lambda] += w * c.sign * v[offset + c.row];
        }
    }

    /// `out = −H⁻¹ Σ G^i v^i` (eqs 13, 16). Allocation-free.
    pub fn solve(&self, out: &mut DVector<f64>) {
        out.copy_from(&self.gap);
        self.op.solve_mut(out);
        out.neg_mut();
    }
}

/// Which rows of `Y` a projection corrects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Displacement,
    Velocity,
}

/// The levels of `p`, displacements first.
pub(crate) fn projection_levels(p: Lsrt2Projection) -> &'static [Level] {
    match p {
        Lsrt2Projection::None => &[],
        Lsrt2Projection::Velocity => &[Level::Velocity],
        Lsrt2Projection::DisplacementVelocity => &[Level::Displacement, Level::Velocity],
    }
}

/// `y ← y + M⁻¹ L μ` on the rows of `level`: the velocity rows of `M⁻¹L` are `m⁻¹ Sᵀ`
/// (its other rows are zero), applied to the velocities or to the displacements.
pub(crate) fn apply_projection(
    y: &mut DVector<f64>,
    ml: &DMatrix<f64>,
    n: usize,
    level: Level,
    mu: &DVector<f64>,
) {
    let target = match level {
        Level::Displacement => 0,
        Level::Velocity => n,
    };
    for i in 0..n {
        let mut acc = 0.0;
        for (c, m) in mu.iter().enumerate() {
            acc += ml[(n + i, c)] * m;
        }
        y[target + i] += acc;
    }
}

/// The offset of `level`'s rows in `Y` for [`Coupler::add`].
pub(crate) fn level_offset(level: Level, n: usize) -> usize {
    match level {
        Level::Displacement => 0,
        Level::Velocity => n,
    }
}

/// The at-rest evaluation of a subdomain at its `y`.
pub(crate) fn start_eval(
    part: &mut Partition,
    s: &mut Subdomain,
    t0: f64,
) -> Result<(), StepError> {
    let Subdomain {
        m_lu,
        y,
        f,
        a,
        specimen,
        load,
        res,
        ..
    } = s;
    evaluate(part, m_lu, y, t0, Eval::AtRest, load, res, specimen, f, a)
}

/// Evaluate subdomain `s` at its own `y` (`how` for the specimen).
pub(crate) fn eval_own(
    part: &mut Partition,
    s: &mut Subdomain,
    t: f64,
    how: Eval,
) -> Result<(), StepError> {
    let Subdomain {
        m_lu,
        y,
        f,
        a,
        specimen,
        load,
        res,
        ..
    } = s;
    evaluate(part, m_lu, y, t, how, load, res, specimen, f, a)
}

/// Evaluate subdomain `s` at its `stage` (`how` for the specimen).
pub(crate) fn eval_stage(
    part: &mut Partition,
    s: &mut Subdomain,
    t: f64,
    how: Eval,
) -> Result<(), StepError> {
    let Subdomain {
        m_lu,
        stage,
        f,
        a,
        specimen,
        load,
        res,
        ..
    } = s;
    evaluate(part, m_lu, stage, t, how, load, res, specimen, f, a)
}

/// `Λ` from the subdomains' free accelerations `a` (eqs 13, 16).
pub(crate) fn lambda_of(
    parts: &[Partition],
    subs: &[Subdomain],
    coupler: &mut Coupler,
    lambda: &mut DVector<f64>,
) {
    coupler.begin();
    for (k, (s, p)) in subs.iter().zip(parts).enumerate() {
        coupler.add(k, &s.a, p.state.n_dofs());
    }
    coupler.solve(lambda);
}

/// The rates `Ẏ = a + M⁻¹LΛ` of every subdomain.
pub(crate) fn update_rates(subs: &mut [Subdomain], lambda: &DVector<f64>) {
    for s in subs.iter_mut() {
        s.rate.copy_from(&s.a);
        s.rate.gemv(1.0, &s.ml, lambda, 1.0);
    }
}

/// Project every subdomain's `y` onto compatible interface displacements and/or velocities,
/// mass-weighted: `y ← y + M⁻¹ L μ`, `μ = −H⁻¹ Σ G y` (Bursi et al. 2011, §6, for the
/// velocities; Bauchau and Laulusa 2008 for position and velocity projections).
/// `mu` is a workspace of length n_Λ. Allocation-free.
pub(crate) fn project_all(
    parts: &[Partition],
    subs: &mut [Subdomain],
    coupler: &mut Coupler,
    projection: Lsrt2Projection,
    mu: &mut DVector<f64>,
) {
    for &level in projection_levels(projection) {
        coupler.begin();
        for (k, (s, p)) in subs.iter().zip(parts).enumerate() {
            coupler.add(k, &s.y, level_offset(level, p.state.n_dofs()));
        }
        coupler.solve(mu);
        for (s, p) in subs.iter_mut().zip(parts) {
            apply_projection(&mut s.y, &s.ml, p.state.n_dofs(), level, mu);
        }
    }
}

/// One ss = 1 step of size `h` from `t` of every subdomain in `parts`/`subs` (eqs 13–18).
/// On entry each subdomain's `f`, `a` are the evaluation at its `y` and `t`, and `lambda` is
/// `Λ(t)`; on return `y` is advanced (and projected), `f`, `a`, `lambda` and the rates are
/// at `t + h`, the physical subdomains commanded at `t + h/2` and `t + h`. `d_cycle` picks
/// each subdomain's cycle operator instead of its ss = 1 one. Allocation-free.
#[allow(clippy::too_many_arguments)]
pub(crate) fn partitioned_step(
    parts: &mut [Partition],
    subs: &mut [Subdomain],
    coupler: &mut Coupler,
    lambda: &mut DVector<f64>,
    mu: &mut DVector<f64>,
    t: f64,
    h: f64,
    gamma: f64,
    projection: Lsrt2Projection,
) -> Result<(), StepError> {
    // Stage 1 (eq 14): k1 = h D⁻¹ (f + LΛ_k), stage y + k1/2.
    for s in subs.iter_mut() {
        s.k1.copy_from(&s.f);
        s.k1.gemv(1.0, &s.l, lambda, 1.0);
        s.d_lu.solve_mut(&mut s.k1);
        s.k1 *= h;
        s.stage.copy_from(&s.y);
        s.stage.axpy(0.5, &s.k1, 1.0);
    }
    // Exchange 2 (eqs 15–16): the stage states, Λ_{k+½}.
    for (p, s) in parts.iter_mut().zip(subs.iter_mut()) {
        eval_stage(p, s, t + 0.5 * h, Eval::Command)?;
    }
    lambda_of(parts, subs, coupler, lambda);
    // Stage 2 (eqs 17–18 with E20).
    for (p, s) in parts.iter().zip(subs.iter_mut()) {
        s.k2.copy_from(&s.f);
        s.k2.gemv(1.0, &s.l, lambda, 1.0);
        s.k2.gemv(gamma, p.state.j0(), &s.k1, 1.0);
        s.d_lu.solve_mut(&mut s.k2);
        s.k2 *= h;
        s.y += &s.k2;
    }
    project_all(parts, subs, coupler, projection, mu);
    // Exchange 1 of the next step (eq 13): the new states, Λ_{k+1}.
    for (p, s) in parts.iter_mut().zip(subs.iter_mut()) {
        eval_own(p, s, t + h, Eval::Command)?;
    }
    lambda_of(parts, subs, coupler, lambda);
    update_rates(subs, lambda);
    Ok(())
}

/// The ss = 1 partitioned LSRT2 (Bursi et al. 2011, §3, eqs 13–18): per step `h`
///
/// 1. `Λ_k = −H⁻¹ Σ G^i a^i(y_k)` (eq 13, `a^i = (M^i)⁻¹(F^i − R^i)`);
/// 2. `k1^i = h D_i⁻¹ (F^i − R^i + L^i Λ_k)`, `y^i_{k+½} = y^i_k + k1^i/2` (eq 14);
/// 3. `Λ_{k+½}` from `a^i(y^i_{k+½}, t_k + h/2)` (eq 16);
/// 4. `k2^i = h D_i⁻¹ (F^i − R^i + L^i Λ_{k+½} + γ J0^i k1^i)`, `y^i_{k+1} = y^i_k + k2^i`
///    (eqs 17–18 with E20: `−γJk1` outside `(A^i)⁻¹[…]`, i.e. `+γ J0 k1` once multiplied by
///    `M`).
///
/// Two data exchanges per step. A physical partition is commanded at each stage state, at
/// `t_k + h/2` and `t_{k+1}` (one command per controller tick of `h/2`); the stage-1 force of
/// a step is the one commanded at the end of the step before (measured at rest for the
/// first). Acceleration continuity leaves the interface velocities and displacements free
/// to drift; `projection` corrects them at the end of each step.
pub struct Lsrt2Partitioned {
    parts: Vec<Partition>,
    subs: Vec<Subdomain>,
    coupler: Coupler,
    lambda: DVector<f64>,
    lambda0: DVector<f64>,
    mu: DVector<f64>,
    gamma: f64,
    projection: Lsrt2Projection,
    clock: StepClock,
}

impl Lsrt2Partitioned {
    /// Build on `parts` (at least two, sharing DOFs; any may be physical) with `settings`
    /// (`lsrt2_gamma`, Δt, `projection`, `t0`), measuring the physical ones at rest.
    pub fn new(mut parts: Vec<Partition>, settings: &StepSettings) -> Result<Self, String> {
        if parts.len() < 2 {
            return Err("the partitioned LSRT2 needs at least two substructures".into());
        }
        let (gamma, h, t0) = (settings.lsrt2_gamma, settings.time_step, settings.t0);
        let mut coupler = Coupler::new(&parts)?;
        let mut subs = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            subs.push(Subdomain::new(part, k, &coupler.interface, gamma, h)?);
        }
        for (part, s) in parts.iter_mut().zip(subs.iter_mut()) {
            // A safety event at rest latches in the layer; the first command reports it.
            match start_eval(part, s, t0) {
                Ok(()) | Err(StepError::Safety(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        let nl = coupler.len();
        let mut lambda = DVector::zeros(nl);
        lambda_of(&parts, &subs, &mut coupler, &mut lambda);
        update_rates(&mut subs, &lambda);
        Ok(Self {
            parts,
            subs,
            coupler,
            lambda0: lambda.clone(),
            lambda,
            mu: DVector::zeros(nl),
            gamma,
            projection: settings.projection,
            clock: StepClock::new(t0, h),
        })
    }

    /// The projection applied at the end of each step.
    pub fn projection(&self) -> Lsrt2Projection {
        self.projection
    }

    fn physical_len(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| p.physical.is_some())
            .map(|p| p.state.n_dofs())
            .sum()
    }
}

impl TimeIntegrator for Lsrt2Partitioned {
    fn name(&self) -> &'static str {
        "lsrt2-partitioned"
    }
    fn time(&self) -> f64 {
        self.clock.time()
    }
    fn steps_taken(&self) -> u64 {
        self.clock.steps()
    }
    fn time_step(&self) -> f64 {
        self.clock.dt()
    }
    fn step(&mut self) -> Result<(), StepError> {
        let (t, h) = (self.time(), self.clock.dt());
        partitioned_step(
            &mut self.parts,
            &mut self.subs,
            &mut self.coupler,
            &mut self.lambda,
            &mut self.mu,
            t,
            h,
            self.gamma,
            self.projection,
        )?;
        self.clock.advance();
        let (t1, n) = (self.time(), self.clock.steps());
        check_finite(self.lambda.as_slice(), "interface multipliers", t1, n)?;
        for s in &self.subs {
            check_finite(s.y.as_slice(), "state", t1, n)?;
        }
        Ok(())
    }
    fn partitions(&self) -> &[Partition] {
        &self.parts
    }
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn crate::physical::LabControl)) {
        super::labs_of(&mut self.parts, f)
    }
    fn state(&self, p: usize) -> &[f64] {
        self.subs[p].y.as_slice()
    }
    fn rate(&self, p: usize) -> &[f64] {
        self.subs[p].rate.as_slice()
    }
    fn multipliers(&self) -> &[f64] {
        self.lambda.as_slice()
    }
    fn initial_multipliers(&self) -> &[f64] {
        self.lambda0.as_slice()
    }
    fn interface(&self) -> Option<&Interface> {
        Some(&self.coupler.interface)
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        let Self { parts, subs, .. } = self;
        parts[p].energy(subs[p].y.as_slice())
    }
    /// `[Y^i]` of every partition, then the last measured specimen force of every physical
    /// one (the algorithmic memory of a specimen, which cannot be re-measured on import).
    fn state_len(&self) -> usize {
        self.subs.iter().map(|s| s.y.len()).sum::<usize>() + self.physical_len()
    }
    fn export_state(&self, out: &mut [f64]) {
        let mut o = 0;
        for s in &self.subs {
            out[o..o + s.y.len()].copy_from_slice(s.y.as_slice());
            o += s.y.len();
        }
        for (p, s) in self.parts.iter().zip(&self.subs) {
            if p.physical.is_some() {
                let n = s.specimen.len();
                out[o..o + n].copy_from_slice(s.specimen.as_slice());
                o += n;
            }
        }
    }
    fn import_state(&mut self, x: &[f64]) {
        let mut o = 0;
        for s in &mut self.subs {
            let l = s.y.len();
            s.y.copy_from_slice(&x[o..o + l]);
            o += l;
        }
        for (p, s) in self.parts.iter().zip(self.subs.iter_mut()) {
            if p.physical.is_some() {
                let n = s.specimen.len();
                s.specimen.copy_from_slice(&x[o..o + n]);
                o += n;
            }
        }
        let t = self.time();
        for (p, s) in self.parts.iter_mut().zip(self.subs.iter_mut()) {
            // Computed elements are re-evaluated; the specimen force is the imported one.
            let _ = eval_own(p, s, t, Eval::Stored);
        }
        lambda_of(&self.parts, &self.subs, &mut self.coupler, &mut self.lambda);
        update_rates(&mut self.subs, &self.lambda);
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
}
