//! Spectral analysis of any scheme from its numerically built amplification matrix.
//!
//! For each Ω = ω_ref Δt of a sweep the model is rebuilt with that Δt (all modal frequencies
//! scale together, Ω_i = ω_i Δt), the amplification matrix 𝔸 of one coarse step is built by
//! stepping each basis vector of the scheme's *full* flat algorithmic state
//! ([`amplification_matrix`]; Abbiati et al. 2019, eq 17 — for PG-α the partitions' `[Y; Ẏ; V]` and
//! the remembered `Λ_n`), and its eigenvalues λ give:
//!
//! - the spectral radius ρ(𝔸) = max |λ| (Abbiati et al. 2019, Fig 2);
//! - per mode i with Ω_i ≤ π, the principal root (the eigenvalue closest to e^{iΩ_i}), its
//!   discrete frequency Ω̄ = |arg λ| and damping ζ̄ = −ln|λ|/Ω̄
//!   (Abbiati et al. 2019, eq 22, eq 18 read as in ALGORITHMS.md E7: λ ≈ exp(Ω̄(−ζ̄ ± i))), and the
//!   frequency error (Ω̄ − Ω)/Ω̄ (E16);
//! - the *constraint-drift* modes of partitioned schemes: PG-α enforces interface
//!   compatibility on velocities only (Abbiati et al. 2019, eq 23c), so the displacement gap
//!   between the interface copies is carried unchanged from step to step — an exactly unit
//!   eigenvalue at every Ω. They are identified without any per-scheme algebra: the null space
//!   of 𝔸 − I is computed (SVD of the balanced matrix), each null vector is imported into the
//!   integrator, and those with a non-zero interface displacement gap ([`super::interface_gap`])
//!   are drift modes (a rigid-body mode of the structure has no gap). They are reported apart, and
//!   ρ without them shows the ρ∞ trend.
//!
//! Laboratory inputs: `estimate_ratio` sets the estimated physical stiffness used for `D^P`
//! and `H` to that multiple of the specimen's true zero-state stiffness, and `delay_ticks`
//! delays the measured specimen force by k provider commands (k Δt^P) through a
//! [`DelayedProvider`], whose delay line is appended to the flat state by [`WithDelayLines`]
//! so that it is part of 𝔸.

use super::{max_displacement, AnalysisError};
use crate::assembly::{build_partitions, linearize, Grouping};
use crate::elements::zero_state_tangent;
use crate::integrators::StepError;
use crate::integrators::{self, PgAlpha, TimeIntegrator};
use crate::model::{Estimate, IntegratorKind, Model, Role};
use crate::physical::{PhysicalSubstructure, PortError, Tick};
use nalgebra::{Complex, DMatrix};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Which frequency Ω = ωΔt refers to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrequencyReference {
    /// Mode `i` (1-based) of the linearized coupled model (undamped).
    Mode(usize),
    /// An explicit circular frequency (rad per model time unit).
    Omega(f64),
}

/// Options of a spectral sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralOptions {
    /// The values of Ω = ω_ref Δt.
    pub omegas: Vec<f64>,
    /// What ω_ref is.
    pub reference: FrequencyReference,
    /// Estimated / true stiffness of every physical substructure (`None`: the model's
    /// estimate as written).
    pub estimate_ratio: Option<f64>,
    /// Loop delay in provider commands (ticks of Δt^P); PG-α only.
    pub delay_ticks: usize,
    /// ρ above `1 + tolerance` is flagged unstable.
    pub tolerance: f64,
}

impl Default for SpectralOptions {
    fn default() -> Self {
        Self {
            omegas: log_sweep(1e-2, 1e3, 61),
            reference: FrequencyReference::Mode(1),
            estimate_ratio: None,
            delay_ticks: 0,
            tolerance: 1e-10,
        }
    }
}

/// `points` values from `min` to `max`, evenly spaced in log scale.
pub fn log_sweep(min: f64, max: f64, points: usize) -> Vec<f64> {
    if points <= 1 {
        return vec![min];
    }
    let (a, b) = (min.ln(), max.ln());
    (0..points)
        .map(|i| (a + (b - a) * i as f64 / (points - 1) as f64).exp())
        .collect()
}

/// What an eigenvalue of 𝔸 is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// A constraint-drift mode (unit eigenvalue with an interface displacement gap).
    Drift,
    /// The principal root of mode `i` (1-based).
    Principal(usize),
    /// Spurious, delay or higher roots.
    Other,
}

/// The principal root of one mode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModalRoot {
    /// Mode (1-based).
    pub mode: usize,
    /// Ω_i = ω_i Δt.
    pub omega: f64,
    /// The eigenvalue (NaN when Ω_i > π: the root is aliased).
    pub lambda: Complex<f64>,
    /// Ω̄ = |arg λ| (eq 22a).
    pub omega_bar: f64,
    /// ζ̄ = −ln|λ|/Ω̄ (eq 22b).
    pub zeta_bar: f64,
    /// (Ω̄ − Ω)/Ω̄ (Abbiati et al. 2019, Fig 3a, E16).
    pub frequency_error: f64,
}

/// The spectral properties at one Ω.
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralPoint {
    /// Ω = ω_ref Δt.
    pub omega: f64,
    /// Δt^N.
    pub dt: f64,
    /// Every eigenvalue of 𝔸 with its classification, by decreasing modulus.
    pub roots: Vec<(Complex<f64>, RootKind)>,
    /// ρ(𝔸), drift modes included.
    pub rho: f64,
    /// ρ over the non-drift eigenvalues.
    pub rho_without_drift: f64,
    /// Number of constraint-drift modes.
    pub drift_modes: usize,
    /// max |λ − 1| over the drift modes (0 when none).
    pub drift_deviation: f64,
    /// Principal roots of the modes with Ω_i ≤ π.
    pub modal: Vec<ModalRoot>,
    /// ρ ≤ 1 + tolerance.
    pub stable: bool,
}

/// The result of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralReport {
    /// Scheme name.
    pub scheme: String,
    /// ρ∞ of the model.
    pub rho_inf: f64,
    /// Subcycles ss.
    pub subcycles: usize,
    /// ω_ref (rad per model time unit).
    pub reference_omega: f64,
    /// What ω_ref is, in words.
    pub reference_label: String,
    /// Undamped circular frequencies of the linearized coupled model.
    pub mode_omegas: Vec<f64>,
    /// Estimated / true physical stiffness applied (None: model estimate).
    pub estimate_ratio: Option<f64>,
    /// Loop delay in ticks of Δt^P.
    pub delay_ticks: usize,
    /// Length of the flat state (size of 𝔸).
    pub state_len: usize,
    /// The sweep.
    pub points: Vec<SpectralPoint>,
    /// Tolerance of the stability flag.
    pub tolerance: f64,
    /// Nonlinear elements analysed through their tangent at rest
    /// ([`super::linearized_at_rest`]); empty for a linear model.
    pub linearized_elements: Vec<String>,
}

impl SpectralReport {
    /// Largest ρ over the sweep.
    pub fn max_rho(&self) -> f64 {
        self.points.iter().map(|p| p.rho).fold(0.0, f64::max)
    }
    /// Largest ρ without drift modes over the sweep.
    pub fn max_rho_without_drift(&self) -> f64 {
        self.points
            .iter()
            .map(|p| p.rho_without_drift)
            .fold(0.0, f64::max)
    }
    /// Whether ρ ≤ 1 + tolerance at every Ω.
    pub fn stable(&self) -> bool {
        self.points.iter().all(|p| p.stable)
    }
    /// The Ω values where ρ > 1 + tolerance.
    pub fn unstable_omegas(&self) -> Vec<f64> {
        self.points
            .iter()
            .filter(|p| !p.stable)
            .map(|p| p.omega)
            .collect()
    }
}

/// Undamped circular frequencies of the linearized coupled model, ascending, with the
/// imposed-motion DOFs restrained (as the scheme's homogeneous problem has them).
pub fn mode_omegas(model: &Model) -> Result<Vec<f64>, AnalysisError> {
    let lin = linearize(&super::free_vibration(model));
    let modes = crate::modal::modes(&lin.m, &lin.k)
        .map_err(|e| AnalysisError::input(model, "element", format!("no modes: {e}")))?;
    Ok(modes.omega)
}

/// The true zero-state stiffness and damping of the specimen elements of physical
/// substructure `k`, over their DOFs.
pub fn true_specimen_estimate(model: &Model, k: usize) -> Option<Estimate> {
    let mut dofs = Vec::new();
    for e in model
        .elements
        .iter()
        .filter(|e| e.substructure as usize == k && e.role == Role::Specimen)
    {
        for d in e.element.dofs() {
            if !model.is_fixed(d) && !dofs.contains(d) {
                dofs.push(d.clone());
            }
        }
    }
    if dofs.is_empty() {
        return None;
    }
    let n = dofs.len();
    let mut stiffness = DMatrix::zeros(n, n);
    let mut damping = DMatrix::zeros(n, n);
    for e in model
        .elements
        .iter()
        .filter(|e| e.substructure as usize == k && e.role == Role::Specimen)
    {
        let t = zero_state_tangent(e.element.as_ref());
        let ed = e.element.dofs();
        let ne = ed.len();
        let map: Vec<Option<usize>> = ed
            .iter()
            .map(|d| dofs.iter().position(|x| x == d))
            .collect();
        for (i, mi) in map.iter().enumerate() {
            let Some(a) = mi else { continue };
            for (j, mj) in map.iter().enumerate() {
                let Some(b) = mj else { continue };
                stiffness[(*a, *b)] += t[(i, j)];
                damping[(*a, *b)] += t[(i, ne + j)];
            }
        }
    }
    Some(Estimate {
        dofs,
        stiffness,
        damping,
    })
}

/// Apply an estimated/true stiffness ratio to every physical substructure of `model`.
pub fn scale_estimates(model: &mut Model, ratio: f64) -> Result<(), AnalysisError> {
    if !(ratio.is_finite() && ratio > 0.0) {
        return Err(AnalysisError::input(
            model,
            "estimate_ratio",
            format!("must be a positive number, found {ratio}"),
        ));
    }
    let mut any = false;
    for k in 0..model.substructures.len() {
        if !model.substructures[k].physical {
            continue;
        }
        let Some(mut est) = true_specimen_estimate(model, k) else {
            continue;
        };
        est.stiffness *= ratio;
        model.substructures[k].estimate = Some(est);
        any = true;
    }
    if !any {
        return Err(AnalysisError::input(
            model,
            "estimate_ratio",
            "the model has no physical substructure with specimen elements, so there is no \
             estimated stiffness to scale",
        ));
    }
    Ok(())
}

/// A delay line of `ticks` force vectors of length `n`, shared between a
/// [`DelayedProvider`] (which pushes and pops one vector per command) and the analysis
/// (which exports and imports it as part of the flat state).
///
/// Cells are atomics so that the two owners need no lock; pushing is allocation-free.
#[derive(Debug)]
pub struct DelayLine {
    ticks: usize,
    n: usize,
    cells: Box<[AtomicU64]>,
    head: AtomicUsize,
}

impl DelayLine {
    /// A zero delay line.
    pub fn new(ticks: usize, n: usize) -> Arc<Self> {
        Arc::new(Self {
            ticks,
            n,
            cells: (0..ticks * n).map(|_| AtomicU64::new(0)).collect(),
            head: AtomicUsize::new(0),
        })
    }

    /// Number of stored values (`ticks × n`).
    pub fn len(&self) -> usize {
        self.ticks * self.n
    }

    /// Whether the line stores nothing (zero delay).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, slot: usize, i: usize) -> f64 {
        f64::from_bits(self.cells[slot * self.n + i].load(Ordering::Relaxed))
    }

    fn put(&self, slot: usize, i: usize, x: f64) {
        self.cells[slot * self.n + i].store(x.to_bits(), Ordering::Relaxed);
    }

    /// Push `fresh` and return in `out` the vector pushed `ticks` calls ago (`out = fresh`
    /// for a zero delay). Allocation-free.
    pub fn exchange(&self, fresh: &[f64], out: &mut [f64]) {
        if self.ticks == 0 {
            out.copy_from_slice(fresh);
            return;
        }
        let h = self.head.load(Ordering::Relaxed);
        for i in 0..self.n {
            out[i] = self.get(h, i);
            self.put(h, i, fresh[i]);
        }
        self.head.store((h + 1) % self.ticks, Ordering::Relaxed);
    }

    /// Fill every slot with `f` (a steady history).
    pub fn fill(&self, f: &[f64]) {
        for s in 0..self.ticks {
            for (i, x) in f.iter().enumerate().take(self.n) {
                self.put(s, i, *x);
            }
        }
    }

    /// Export oldest first.
    pub fn export(&self, out: &mut [f64]) {
        let h = self.head.load(Ordering::Relaxed);
        for k in 0..self.ticks {
            let s = (h + k) % self.ticks;
            for i in 0..self.n {
                out[k * self.n + i] = self.get(s, i);
            }
        }
    }

    /// Import oldest first.
    pub fn import(&self, x: &[f64]) {
        self.head.store(0, Ordering::Relaxed);
        for k in 0..self.ticks {
            for i in 0..self.n {
                self.put(k, i, x[k * self.n + i]);
            }
        }
    }
}

/// A restoring-force provider whose measured force arrives `k` commands late: at each
/// command the inner provider is commanded, its force enters the [`DelayLine`], and the force
/// of `k` commands ago is returned. It models a loop delay of `k Δt^P` (actuator and
/// communication lag) inside the amplification matrix. Allocation-free after construction.
pub struct DelayedProvider {
    inner: Box<dyn PhysicalSubstructure>,
    line: Arc<DelayLine>,
    fresh: Vec<f64>,
}

impl DelayedProvider {
    /// Wrap `inner` (over `line`'s `n` DOFs).
    pub fn new(inner: Box<dyn PhysicalSubstructure>, line: Arc<DelayLine>) -> Self {
        let n = line.n;
        Self {
            inner,
            line,
            fresh: vec![0.0; n],
        }
    }
}

impl PhysicalSubstructure for DelayedProvider {
    fn describe(&self) -> String {
        format!(
            "{} delayed by {} command(s)",
            self.inner.describe(),
            self.line.ticks
        )
    }
    fn measure_at_rest(
        &mut self,
        t: f64,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        self.inner.measure_at_rest(t, u, v, force)?;
        self.line.fill(force);
        Ok(())
    }
    fn command(
        &mut self,
        tick: &Tick,
        u: &[f64],
        v: &[f64],
        force: &mut [f64],
    ) -> Result<(), PortError> {
        self.inner.command(tick, u, v, &mut self.fresh)?;
        self.line.exchange(&self.fresh, force);
        Ok(())
    }
}

/// A [`TimeIntegrator`] whose flat state is the inner integrator's followed by the contents
/// of its providers' delay lines, so that [`amplification_matrix`] includes the delay.
pub struct WithDelayLines {
    inner: Box<dyn TimeIntegrator>,
    lines: Vec<Arc<DelayLine>>,
}

impl WithDelayLines {
    /// Wrap `inner`, whose providers push into `lines`.
    pub fn new(inner: Box<dyn TimeIntegrator>, lines: Vec<Arc<DelayLine>>) -> Self {
        Self { inner, lines }
    }
}

impl TimeIntegrator for WithDelayLines {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn time(&self) -> f64 {
        self.inner.time()
    }
    fn steps_taken(&self) -> u64 {
        self.inner.steps_taken()
    }
    fn time_step(&self) -> f64 {
        self.inner.time_step()
    }
    fn step(&mut self) -> Result<(), StepError> {
        self.inner.step()
    }
    fn partitions(&self) -> &[crate::assembly::Partition] {
        self.inner.partitions()
    }
    fn for_each_lab(&mut self, f: &mut dyn FnMut(usize, &mut dyn crate::physical::LabControl)) {
        self.inner.for_each_lab(f)
    }
    fn state(&self, p: usize) -> &[f64] {
        self.inner.state(p)
    }
    fn rate(&self, p: usize) -> &[f64] {
        self.inner.rate(p)
    }
    fn multipliers(&self) -> &[f64] {
        self.inner.multipliers()
    }
    fn initial_multipliers(&self) -> &[f64] {
        self.inner.initial_multipliers()
    }
    fn interface(&self) -> Option<&crate::assembly::Interface> {
        self.inner.interface()
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        self.inner.energy(p)
    }
    fn state_len(&self) -> usize {
        self.inner.state_len() + self.lines.iter().map(|l| l.len()).sum::<usize>()
    }
    fn export_state(&self, out: &mut [f64]) {
        let mut o = self.inner.state_len();
        self.inner.export_state(&mut out[..o]);
        for l in &self.lines {
            l.export(&mut out[o..o + l.len()]);
            o += l.len();
        }
    }
    fn import_state(&mut self, x: &[f64]) {
        let mut o = self.inner.state_len();
        self.inner.import_state(&x[..o]);
        for l in &self.lines {
            l.import(&x[o..o + l.len()]);
            o += l.len();
        }
    }
    fn set_time(&mut self, t: f64) {
        self.inner.set_time(t)
    }
}

/// Build the integrator of `model` (free vibration, time step `dt`) with the lab inputs
/// of `opts` applied.
pub fn build_for_analysis(
    model: &Model,
    dt: f64,
    opts: &SpectralOptions,
) -> Result<Box<dyn TimeIntegrator>, AnalysisError> {
    let mut m = super::free_vibration(model);
    m.analysis.time_step = dt;
    m.analysis.duration = dt;
    if let Some(r) = opts.estimate_ratio {
        scale_estimates(&mut m, r)?;
    }
    if opts.delay_ticks == 0 {
        return Ok(integrators::build(&m)?);
    }
    if m.analysis.integrator != IntegratorKind::PgAlpha {
        return Err(AnalysisError::input(
            &m,
            "delay",
            format!(
                "a loop delay acts on a physical substructure's measured force; the scheme `{}` \
                 has none (use integrator = \"pg-alpha\")",
                m.analysis.integrator.name()
            ),
        ));
    }
    let mut parts = build_partitions(&m, Grouping::Partitioned)?;
    let mut lines = Vec::new();
    for p in parts.iter_mut() {
        if let Some(port) = p.physical.as_mut() {
            let line = DelayLine::new(opts.delay_ticks, p.state.n_dofs());
            let delayed = line.clone();
            port.map_substructure(|inner| Box::new(DelayedProvider::new(inner, delayed)));
            lines.push(line);
        }
    }
    let a = &m.analysis;
    let pg = PgAlpha::new(
        parts,
        &crate::integrators::StepSettings {
            time_step: dt,
            ..crate::integrators::StepSettings::from_analysis(a)
        },
    )
    .map_err(|e| AnalysisError::input(&m, "analysis", e))?;
    Ok(Box::new(WithDelayLines::new(Box::new(pg), lines)))
}

/// Diagonal similarity `B = D⁻¹ A D` balancing rows against columns, returning `(B, d)`:
/// nalgebra's modified Parlett–Reinsch balancing (radix 2, 2-norms; James, Langou & Lowery
/// 2014). Eigenvalues are unchanged and better conditioned; the states mix displacements,
/// velocities and forces of very different magnitudes. A matrix whose squared Frobenius norm
/// is not finite is returned as it is (`d = 1`): the balancing would not terminate on it.
pub fn balance(a: &DMatrix<f64>) -> (DMatrix<f64>, Vec<f64>) {
    let mut b = a.clone();
    if !a.norm_squared().is_finite() {
        return (b, vec![1.0; a.nrows()]);
    }
    let d = nalgebra::linalg::balancing::balance_parlett_reinsch(&mut b);
    (b, d.iter().copied().collect())
}

/// Number of constraint-drift modes of `a` (the amplification matrix of `integrator`): the
/// rank of the interface displacement gaps over the null space of `a − I`.
fn drift_modes(a: &DMatrix<f64>, integrator: &mut dyn TimeIntegrator) -> usize {
    if integrator.interface().is_none() {
        return 0;
    }
    let n = a.nrows();
    let (b, d) = balance(a);
    let shifted = &b - DMatrix::<f64>::identity(n, n);
    let scale = b.amax().max(1.0);
    let svd = shifted.svd(false, true);
    let Some(vt) = svd.v_t else { return 0 };
    let mut saved = vec![0.0; n];
    integrator.export_state(&mut saved);
    let mut columns: Vec<Vec<f64>> = Vec::new();
    let mut x = vec![0.0; n];
    for (k, s) in svd.singular_values.iter().enumerate() {
        if *s > 1e-9 * scale {
            continue;
        }
        for i in 0..n {
            x[i] = d[i] * vt[(k, i)];
        }
        integrator.import_state(&x);
        let u = max_displacement(integrator);
        let gap = super::interface_gap(integrator);
        if u > 0.0 {
            columns.push(gap.iter().map(|g| g / u).collect());
        }
    }
    integrator.import_state(&saved);
    if columns.is_empty() {
        return 0;
    }
    let nl = columns[0].len();
    let g = DMatrix::from_fn(nl, columns.len(), |i, j| columns[j][i]);
    g.singular_values().iter().filter(|s| **s > 1e-6).count()
}

/// Eigenvalues of `a` (balanced first), by a real Schur decomposition with an iteration
/// limit; `None` when it does not converge.
pub fn eigenvalues(a: &DMatrix<f64>) -> Option<Vec<Complex<f64>>> {
    let (b, _) = balance(a);
    // The QR iteration's deflation test is relative to the neighbouring diagonal entries;
    // loosen it step by step when the strictest one stalls (round-off level in any case),
    // on the balanced matrix first: its eigenvalues are the accurate ones.
    for m in [&b, a] {
        for eps in [1.0, 16.0, 256.0, 4096.0] {
            if let Some(schur) = m.clone().try_schur(eps * f64::EPSILON, 20_000) {
                return Some(schur.complex_eigenvalues().iter().copied().collect());
            }
        }
    }
    None
}

/// The principal root of each mode at the previous Ω of a sweep, `(Ω_i, λ)`, for the
/// continuation that follows every principal root from Ω → 0.
type Followed = Vec<Option<(f64, Complex<f64>)>>;

/// Where the principal root of a mode is expected at `Ω_i = om`: the exact root `e^{iΩ_i}` when
/// nothing was followed yet (Ω → 0, where the principal root of a consistent scheme tends to it),
/// else the previous root `λ_prev` carried to `om` as `λ_prev^(om/Ω_prev)` (a root whose
/// frequency and damping errors change slowly with Ω moves that way along the sweep).
fn predicted_root(om: f64, previous: Option<(f64, Complex<f64>)>) -> Complex<f64> {
    match previous {
        Some((om_prev, l)) if om_prev > 0.0 && l.norm() > 0.0 => {
            let r = om / om_prev;
            let (modulus, arg) = (l.norm(), l.arg().abs());
            Complex::from_polar(modulus.powf(r), (arg * r).min(std::f64::consts::PI))
        }
        _ => Complex::new(om.cos(), om.sin()),
    }
}

/// Analyse one amplification matrix at Ω (`omega`) with time step `dt`; `followed` carries the
/// principal roots from the previous (smaller) Ω of the sweep and is updated.
fn analyse_point(
    a: &DMatrix<f64>,
    integrator: &mut dyn TimeIntegrator,
    omega: f64,
    dt: f64,
    mode_omegas: &[f64],
    tolerance: f64,
    followed: &mut Followed,
) -> Option<SpectralPoint> {
    let lambdas = eigenvalues(a)?;
    let n_drift = drift_modes(a, integrator);
    let mut roots: Vec<(Complex<f64>, RootKind)> =
        lambdas.iter().map(|l| (*l, RootKind::Other)).collect();
    // The drift modes: the n_drift eigenvalues closest to 1.
    let mut by_distance: Vec<usize> = (0..roots.len()).collect();
    by_distance.sort_by(|i, j| {
        (roots[*i].0 - 1.0)
            .norm()
            .total_cmp(&(roots[*j].0 - 1.0).norm())
    });
    let mut drift_deviation: f64 = 0.0;
    for &i in by_distance.iter().take(n_drift) {
        roots[i].1 = RootKind::Drift;
        drift_deviation = drift_deviation.max((roots[i].0 - 1.0).norm());
    }
    let mut modal = Vec::new();
    for (mi, w) in mode_omegas.iter().enumerate() {
        let om = w * dt;
        if *w <= 0.0 || om > std::f64::consts::PI {
            continue;
        }
        let target = predicted_root(om, followed.get(mi).copied().flatten());
        let best = roots
            .iter()
            .enumerate()
            .filter(|(_, (l, k))| *k == RootKind::Other && l.im >= -1e-14)
            .min_by(|(_, (a, _)), (_, (b, _))| (a - target).norm().total_cmp(&(b - target).norm()))
            .map(|(i, _)| i);
        let Some(i) = best else { continue };
        let lambda = roots[i].0;
        if roots[i].1 == RootKind::Other {
            roots[i].1 = RootKind::Principal(mi + 1);
        }
        if let Some(slot) = followed.get_mut(mi) {
            *slot = Some((om, Complex::new(lambda.re, lambda.im.abs())));
        }
        let omega_bar = lambda.arg().abs();
        let zeta_bar = -lambda.norm().ln() / omega_bar;
        modal.push(ModalRoot {
            mode: mi + 1,
            omega: om,
            lambda,
            omega_bar,
            zeta_bar,
            frequency_error: (omega_bar - om) / omega_bar,
        });
    }
    roots.sort_by(|a, b| b.0.norm().total_cmp(&a.0.norm()));
    let rho = roots.iter().map(|r| r.0.norm()).fold(0.0, f64::max);
    let rho_without_drift = roots
        .iter()
        .filter(|r| r.1 != RootKind::Drift)
        .map(|r| r.0.norm())
        .fold(0.0, f64::max);
    Some(SpectralPoint {
        omega,
        dt,
        roots,
        rho,
        rho_without_drift,
        drift_modes: n_drift,
        drift_deviation,
        modal,
        stable: rho <= 1.0 + tolerance,
    })
}

/// Check that one step is linear in the flat state: `step(x) = 𝔸 x` for a fixed probe.
fn check_linear_step(
    model: &Model,
    a: &DMatrix<f64>,
    integrator: &mut dyn TimeIntegrator,
) -> Result<(), AnalysisError> {
    let n = a.nrows();
    let t0 = integrator.time();
    let mut saved = vec![0.0; n];
    integrator.export_state(&mut saved);
    let mut worst: f64 = 0.0;
    for scale in [1e-3, 1e2] {
        let x: Vec<f64> = (0..n)
            .map(|i| scale * (1.0 + 0.5 * (1.3 * (i as f64 + 1.0)).sin()))
            .collect();
        integrator.import_state(&x);
        integrator.set_time(t0);
        integrator.step()?;
        let mut y = vec![0.0; n];
        integrator.export_state(&mut y);
        let ax = a * nalgebra::DVector::from_column_slice(&x);
        let norm = ax.amax().max(f64::MIN_POSITIVE);
        for i in 0..n {
            worst = worst.max((y[i] - ax[i]).abs() / norm);
        }
    }
    integrator.import_state(&saved);
    integrator.set_time(t0);
    if worst > 1e-8 {
        return Err(AnalysisError::input(
            model,
            "element",
            format!(
                "the step is not linear in the state (relative superposition error {worst:.2e}): \
                 the spectral analysis needs a linear model (no hysteretic or nonlinear elements)"
            ),
        ));
    }
    Ok(())
}

/// Run a spectral sweep of the model's configured scheme.
pub fn spectral_sweep(
    model: &Model,
    opts: &SpectralOptions,
) -> Result<SpectralReport, AnalysisError> {
    if opts.omegas.is_empty() || opts.omegas.iter().any(|o| !(o.is_finite() && *o > 0.0)) {
        return Err(AnalysisError::input(
            model,
            "omega",
            "the sweep needs positive, finite values of Ω = ωΔt",
        ));
    }
    let (linearized, linearized_elements) = super::linearized_at_rest(model);
    let model = &linearized;
    let omegas_modes = mode_omegas(model)?;
    let (reference_omega, reference_label) = match opts.reference {
        FrequencyReference::Mode(i) => {
            let w = omegas_modes
                .get(i.wrapping_sub(1))
                .copied()
                .ok_or_else(|| {
                    AnalysisError::input(
                        model,
                        "mode",
                        format!(
                            "mode {i} does not exist: the linearized coupled model has {} mode(s)",
                            omegas_modes.len()
                        ),
                    )
                })?;
            (w, format!("mode {i} of the linearized coupled model"))
        }
        FrequencyReference::Omega(w) => (w, "given frequency".to_string()),
    };
    if !(reference_omega.is_finite() && reference_omega > 0.0) {
        return Err(AnalysisError::input(
            model,
            "mode",
            format!("the reference frequency must be positive, found {reference_omega} (a rigid-body mode?)"),
        ));
    }
    // The principal root of each mode is followed continuously from Ω → 0: the sweep is
    // analysed in increasing Ω, preceded by tracking-only points from Ω = 0.01 when it starts
    // higher (at large Ω a spurious root can lie closer to e^{iΩ} than the principal root does:
    // the generalized-α spurious root near −ρ∞ does so from Ω ≈ 2.45 at ρ∞ = 1).
    let mut order: Vec<usize> = (0..opts.omegas.len()).collect();
    order.sort_by(|i, j| opts.omegas[*i].total_cmp(&opts.omegas[*j]));
    let first = opts.omegas[order[0]];
    let start = 1e-2;
    let mut lead_in = Vec::new();
    if first > start * 1.5 {
        let n = ((first / start).ln() / 1.2f64.ln()).ceil() as usize;
        lead_in = log_sweep(start, first, n.max(2) + 1);
        lead_in.pop();
    }
    let mut followed: Followed = vec![None; omegas_modes.len()];
    let mut points: Vec<Option<SpectralPoint>> = vec![None; opts.omegas.len()];
    let mut state_len = 0;
    let mut scheme = String::new();
    let steps: Vec<(Option<usize>, f64)> = lead_in
        .iter()
        .map(|o| (None, *o))
        .chain(order.iter().map(|k| (Some(*k), opts.omegas[*k])))
        .collect();
    for (n, (slot, om)) in steps.into_iter().enumerate() {
        let dt = om / reference_omega;
        let mut integ = build_for_analysis(model, dt, opts)?;
        let a = amplification_matrix(integ.as_mut())?;
        if n == 0 {
            check_linear_step(model, &a, integ.as_mut())?;
            state_len = a.nrows();
            scheme = integ.name().to_string();
        }
        let point = analyse_point(
            &a,
            integ.as_mut(),
            om,
            dt,
            &omegas_modes,
            opts.tolerance,
            &mut followed,
        )
        .ok_or_else(|| {
            AnalysisError::input(
                model,
                "omega",
                format!("the eigenvalues of the amplification matrix at Ω = {om} did not converge"),
            )
        })?;
        if let Some(k) = slot {
            points[k] = Some(point);
        }
    }
    let points: Vec<SpectralPoint> = points.into_iter().flatten().collect();
    Ok(SpectralReport {
        scheme,
        rho_inf: model.analysis.rho_inf,
        subcycles: model.analysis.subcycles,
        reference_omega,
        reference_label,
        mode_omegas: omegas_modes,
        estimate_ratio: opts.estimate_ratio,
        delay_ticks: opts.delay_ticks,
        state_len,
        points,
        tolerance: opts.tolerance,
        linearized_elements,
    })
}

/// The amplification matrix of the model's scheme at time step `dt` with the lab inputs of
/// `opts` (free vibration).
pub fn amplification_at(
    model: &Model,
    dt: f64,
    opts: &SpectralOptions,
) -> Result<DMatrix<f64>, AnalysisError> {
    let mut integ = build_for_analysis(model, dt, opts)?;
    Ok(amplification_matrix(integ.as_mut())?)
}

/// The amplification matrix `𝔸` of one step of any integrator, built numerically by stepping
/// each basis vector of its flat algorithmic state from `t` (Abbiati et al. 2019, eq 17, without
/// per-scheme algebra). Only meaningful for linear models without external load.
pub fn amplification_matrix(
    integrator: &mut dyn TimeIntegrator,
) -> Result<DMatrix<f64>, StepError> {
    let n = integrator.state_len();
    let t0 = integrator.time();
    let mut saved = vec![0.0; n];
    integrator.export_state(&mut saved);
    let mut a = DMatrix::zeros(n, n);
    let mut e = vec![0.0; n];
    let mut out = vec![0.0; n];
    for j in 0..n {
        e.iter_mut().for_each(|x| *x = 0.0);
        e[j] = 1.0;
        integrator.import_state(&e);
        integrator.set_time(t0);
        integrator.step()?;
        integrator.export_state(&mut out);
        for i in 0..n {
            a[(i, j)] = out[i];
        }
    }
    integrator.import_state(&saved);
    integrator.set_time(t0);
    Ok(a)
}

/// Spectral radius of a square matrix (NaN when the eigenvalue iteration does not converge;
/// the Schur iteration is capped, see [`eigenvalues`]).
pub fn spectral_radius(a: &DMatrix<f64>) -> f64 {
    match eigenvalues(a) {
        Some(ev) => ev.iter().map(|z| z.norm()).fold(0.0, f64::max),
        None => f64::NAN,
    }
}
