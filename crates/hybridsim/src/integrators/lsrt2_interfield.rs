//! Interfield parallel LSRT2 with subcycling (Bursi et al. 2011, §4, eqs 19–31, read as in
//! ALGORITHMS.md A5 with the errata E21: eq 19's `𝐀_{i−2}` is `Λ_{i−2}`, eq 21's `y^A_i` is a
//! stage value, eq 24 reads `y^A_{i+2} = y^A_{i−2} + k2^A`, eq 28's subscript is
//! `i + (2j−1)/(2ss)`, eq 31's target is `y^B_{i+j/ss}`).

use super::lsrt2_partitioned::{
    eval_own, eval_stage, evaluate, lambda_of, partitioned_step, project_all, start_eval,
    update_rates, Coupler, Eval, Subdomain,
};
use super::{check_finite, StepClock, StepError, StepSettings, TimeIntegrator};
use crate::assembly::{Interface, Partition};
use crate::model::Lsrt2Projection;
use nalgebra::DVector;

/// The interfield parallel procedure: the coarse subdomain A steps `Δt_A = 4Δt` as four
/// interleaved LSRT2 processes offset by Δt (one new `y^A` per exchange step Δt), the fine
/// subdomains B step `Δt_B = Δt/ss` with A linearly interpolated, both in parallel. Cycle `i`
/// (from `t_i` to `t_{i+1}`, one [`TimeIntegrator::step`]):
///
/// - A (eqs 19–24): `Λ_{i−2} = Λ(y^A_{i−2}, y^B_{i−2})`, `k1^A = 4Δt D_A⁻¹(f^A + L^AΛ_{i−2})`,
///   stage `ŷ^A_i = y^A_{i−2} + k1^A/2`, `Λ_i = Λ(ŷ^A_i, y^B_i)`,
///   `k2^A = 4Δt D_A⁻¹(f^A(ŷ^A_i) + L^AΛ_i + γJ0^A k1^A)`, `y^A_{i+2} = y^A_{i−2} + k2^A` (E21);
/// - B (eqs 25–31), for `j = 1..ss`: `Λ` from B's state and A interpolated between the stored
///   `y^A_i`, `y^A_{i+1}` at `t_{i+(j−1)/ss}`, `k1^B`, stage, `Λ` at `t_{i+(2j−1)/(2ss)}`,
///   `k2^B`, `y^B_{i+j/ss}` — the ss = 1 scheme's stages with `h = Δt/ss`.
///
/// The state carried from cycle to cycle is the paper's eq 34,
/// `X_i = [y^A_{i−2}, y^B_{i−2}, y^A_{i−1}, y^B_{i−1}, y^A_i, y^B_i, y^A_{i+1}]` (8n_A + 6n_B
/// for one DOF each: 14), followed by the measured specimen forces of physical fine subdomains
/// at the three B levels (A needs B's free acceleration at `y^B_{i−2}` and `y^B_i`, which a
/// specimen cannot give again).
///
/// The procedure is not self-starting (§4, last paragraph): the first two steps are the
/// ss = 1 scheme ([`super::Lsrt2Partitioned`]) on every subdomain with `h = Δt/ss`, and the
/// coarse subdomain is then taken one exchange step ahead, to `y^A_3`, by the same scheme on A
/// alone with the fine subdomains' interface accelerations extrapolated linearly from `t_1`,
/// `t_2` (second order; the specimen is never commanded out of time order).
///
/// A physical fine subdomain is commanded at each of its stage states, `2ss` commands per
/// step at `Δt/(2ss)` intervals; the coarse subdomain must be numerical. `projection`
/// corrects `y^A_{i+1}` and `y^B_{i+1}` at the end of each cycle (§6).
pub struct Lsrt2Interfield {
    parts: Vec<Partition>,
    subs: Vec<Subdomain>,
    coupler: Coupler,
    coarse: usize,
    lambda: DVector<f64>,
    lambda0: DVector<f64>,
    mu: DVector<f64>,
    gamma: f64,
    dt: f64,
    ss: usize,
    projection: Lsrt2Projection,
    clock: StepClock,
    /// `y^A_{i−2}, y^A_{i−1}, y^A_i, y^A_{i+1}`.
    ya: [DVector<f64>; 4],
    /// `y^A_{i+2}` being built.
    ya_next: DVector<f64>,
    /// Per partition (empty for the coarse one): `y^B` at `i−2, i−1, i`.
    yb: Vec<[DVector<f64>; 3]>,
    /// Free accelerations `a^B` at those levels.
    ab: Vec<[DVector<f64>; 3]>,
    /// Specimen forces at those levels (physical fine subdomains).
    sb: Vec<[DVector<f64>; 3]>,
    /// Whether the cycles have started (after the start-up, or after an import).
    cycling: bool,
}

impl Lsrt2Interfield {
    /// Build on `parts` with `settings`: Δt (the exchange step; `Δt_A = 4Δt`), ss (`Δt_B =
    /// Δt/ss`), `lsrt2_gamma`, `projection`, `coarse` (default: the first numerical
    /// partition), `t0`.
    pub fn new(mut parts: Vec<Partition>, settings: &StepSettings) -> Result<Self, String> {
        if parts.len() < 2 {
            return Err("the interfield LSRT2 needs at least two substructures".into());
        }
        let (gamma, dt, t0) = (settings.lsrt2_gamma, settings.time_step, settings.t0);
        let ss = settings.subcycles.max(1);
        let coarse = match settings.coarse {
            Some(c) if c < parts.len() => c,
            Some(c) => return Err(format!("coarse substructure index {c} out of range")),
            None => parts
                .iter()
                .position(|p| !p.state.physical)
                .ok_or("the interfield LSRT2 needs a numerical (coarse) substructure")?,
        };
        if parts[coarse].physical.is_some() || parts[coarse].state.physical {
            return Err(format!(
                "the coarse substructure `{}` is physical: its four interleaved processes \
                 evaluate the restoring force two exchange steps ahead of the fine ones, which \
                 a specimen commanded once per controller tick cannot follow; make a numerical \
                 substructure the coarse one",
                parts[coarse].state.name
            ));
        }
        let mut coupler = Coupler::new(&parts)?;
        let h = dt / ss as f64;
        let mut subs = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            let mut s = Subdomain::new(part, k, &coupler.interface, gamma, h)?;
            if k == coarse {
                s.d_cycle = Some(super::lsrt2_partitioned::d_operator(part, gamma, 4.0 * dt)?);
            }
            subs.push(s);
        }
        for (part, s) in parts.iter_mut().zip(subs.iter_mut()) {
            match start_eval(part, s, t0) {
                Ok(()) | Err(StepError::Safety(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        let nl = coupler.len();
        let mut lambda = DVector::zeros(nl);
        lambda_of(&parts, &subs, &mut coupler, &mut lambda);
        update_rates(&mut subs, &lambda);
        let levels = |k: usize, v: &dyn Fn(&Subdomain) -> DVector<f64>| -> [DVector<f64>; 3] {
            if k == coarse {
                [DVector::zeros(0), DVector::zeros(0), DVector::zeros(0)]
            } else {
                let x = v(&subs[k]);
                [x.clone(), x.clone(), x]
            }
        };
        let yb = (0..parts.len())
            .map(|k| levels(k, &|s| s.y.clone()))
            .collect();
        let ab = (0..parts.len())
            .map(|k| levels(k, &|s| s.a.clone()))
            .collect();
        let sb = (0..parts.len())
            .map(|k| levels(k, &|s| s.specimen.clone()))
            .collect();
        let y0 = subs[coarse].y.clone();
        Ok(Self {
            ya: [y0.clone(), y0.clone(), y0.clone(), y0.clone()],
            ya_next: y0,
            yb,
            ab,
            sb,
            parts,
            subs,
            coupler,
            coarse,
            lambda0: lambda.clone(),
            lambda,
            mu: DVector::zeros(nl),
            gamma,
            dt,
            ss,
            projection: settings.projection,
            clock: StepClock::new(t0, dt),
            cycling: false,
        })
    }

    /// Index of the coarse partition.
    pub fn coarse(&self) -> usize {
        self.coarse
    }

    /// Subcycles ss of the fine subdomains.
    pub fn subcycles(&self) -> usize {
        self.ss
    }

    /// Shift the fine histories by one level, the newest from the subdomains' current
    /// evaluation. Allocation-free.
    fn push_fine_levels(&mut self) {
        for (k, s) in self.subs.iter().enumerate() {
            if k == self.coarse {
                continue;
            }
            self.yb[k].rotate_left(1);
            self.yb[k][2].copy_from(&s.y);
            self.ab[k].rotate_left(1);
            self.ab[k][2].copy_from(&s.a);
            self.sb[k].rotate_left(1);
            self.sb[k][2].copy_from(&s.specimen);
        }
    }

    /// One start-up step (the ss = 1 scheme, ss substeps of Δt/ss on every subdomain).
    fn startup_step(&mut self) -> Result<(), StepError> {
        let t = self.time();
        let h = self.dt / self.ss as f64;
        for j in 0..self.ss {
            partitioned_step(
                &mut self.parts,
                &mut self.subs,
                &mut self.coupler,
                &mut self.lambda,
                &mut self.mu,
                t + j as f64 * h,
                h,
                self.gamma,
                self.projection,
            )?;
        }
        self.push_fine_levels();
        // [i−2, i−1, i, i+1] with the new i; y^A_{i+1} is not known yet during the start-up.
        self.ya.rotate_left(1);
        self.ya[2].copy_from(&self.subs[self.coarse].y);
        Ok(())
    }

    /// `coupler` ← `Σ G a` of the fine subdomains at level blend `(1 + θ) a_2 − θ a_1`
    /// (θ = 0: level 2 only), or at a history level `level` (θ ignored) when `Some`.
    fn add_fine(&mut self, level: Option<usize>, theta: f64) {
        for (k, p) in self.parts.iter().enumerate() {
            if k == self.coarse {
                continue;
            }
            let n = p.state.n_dofs();
            match level {
                Some(l) => self.coupler.add(k, &self.ab[k][l], n),
                None => {
                    self.coupler.add_scaled(k, &self.ab[k][2], n, 1.0 + theta);
                    self.coupler.add_scaled(k, &self.ab[k][1], n, -theta);
                }
            }
        }
    }

    /// Take the coarse subdomain from `y^A_2` (its current state) to `y^A_3` alone, with the
    /// ss = 1 scheme (ss substeps), the fine interface accelerations extrapolated linearly
    /// from levels 1 and 2. Allocation-free.
    fn coarse_ahead(&mut self) -> Result<(), StepError> {
        let c = self.coarse;
        let t2 = self.time();
        let h = self.dt / self.ss as f64;
        let nc = self.parts[c].state.n_dofs();
        for j in 0..self.ss {
            let t = t2 + j as f64 * h;
            {
                let s = &mut self.subs[c];
                eval_own(&mut self.parts[c], s, t, Eval::Stored)?;
            }
            self.coupler.begin();
            self.coupler.add(c, &self.subs[c].a, nc);
            self.add_fine(None, (t - t2) / self.dt);
            self.coupler.solve(&mut self.lambda);
            let s = &mut self.subs[c];
            s.k1.copy_from(&s.f);
            s.k1.gemv(1.0, &s.l, &self.lambda, 1.0);
            s.d_lu.solve_mut(&mut s.k1);
            s.k1 *= h;
            s.stage.copy_from(&s.y);
            s.stage.axpy(0.5, &s.k1, 1.0);
            eval_stage(&mut self.parts[c], s, t + 0.5 * h, Eval::Stored)?;
            self.coupler.begin();
            self.coupler.add(c, &self.subs[c].a, nc);
            self.add_fine(None, (t + 0.5 * h - t2) / self.dt);
            self.coupler.solve(&mut self.lambda);
            let s = &mut self.subs[c];
            s.k2.copy_from(&s.f);
            s.k2.gemv(1.0, &s.l, &self.lambda, 1.0);
            s.k2.gemv(self.gamma, self.parts[c].state.j0(), &s.k1, 1.0);
            s.d_lu.solve_mut(&mut s.k2);
            s.k2 *= h;
            s.y += &s.k2;
        }
        self.ya[3].copy_from(&self.subs[c].y);
        self.subs[c].y.copy_from(&self.ya[2]);
        Ok(())
    }

    /// Evaluate the coarse subdomain at `y^A` interpolated as `(1 − θ) y^A_i + θ y^A_{i+1}`
    /// at `t` (into its `stage`, `f`, `a`). Allocation-free.
    fn coarse_interpolated(&mut self, theta: f64, t: f64) -> Result<(), StepError> {
        let c = self.coarse;
        let s = &mut self.subs[c];
        s.stage.copy_from(&self.ya[2]);
        s.stage.axpy(theta, &self.ya[3], 1.0 - theta);
        eval_stage(&mut self.parts[c], s, t, Eval::Stored)
    }

    /// `Λ` from the coarse `a` and every fine subdomain's current `a`.
    fn lambda_current(&mut self) {
        lambda_of(&self.parts, &self.subs, &mut self.coupler, &mut self.lambda);
    }

    /// One cycle `i` (eqs 19–31), from `t_i` to `t_{i+1}`.
    fn cycle(&mut self) -> Result<(), StepError> {
        let c = self.coarse;
        let ti = self.time();
        let (dt, gamma) = (self.dt, self.gamma);
        let nc = self.parts[c].state.n_dofs();
        // Subdomain A: one LSRT2 step of 4Δt from t_{i−2} (eqs 19–24).
        {
            let s = &mut self.subs[c];
            let Subdomain {
                m_lu,
                f,
                a,
                specimen,
                load,
                res,
                ..
            } = s;
            evaluate(
                &mut self.parts[c],
                m_lu,
                &self.ya[0],
                ti - 2.0 * dt,
                Eval::Stored,
                load,
                res,
                specimen,
                f,
                a,
            )?;
        }
        self.coupler.begin();
        self.coupler.add(c, &self.subs[c].a, nc);
        self.add_fine(Some(0), 0.0);
        self.coupler.solve(&mut self.lambda);
        let ha = 4.0 * dt;
        {
            let s = &mut self.subs[c];
            let d = s.d_cycle.as_ref().expect("coarse cycle operator");
            s.k1.copy_from(&s.f);
            s.k1.gemv(1.0, &s.l, &self.lambda, 1.0);
            d.solve_mut(&mut s.k1);
            s.k1 *= ha;
            s.stage.copy_from(&self.ya[0]);
            s.stage.axpy(0.5, &s.k1, 1.0);
            eval_stage(&mut self.parts[c], s, ti, Eval::Stored)?;
        }
        self.coupler.begin();
        self.coupler.add(c, &self.subs[c].a, nc);
        self.add_fine(Some(2), 0.0);
        self.coupler.solve(&mut self.lambda);
        {
            let s = &mut self.subs[c];
            let d = s.d_cycle.as_ref().expect("coarse cycle operator");
            s.k2.copy_from(&s.f);
            s.k2.gemv(1.0, &s.l, &self.lambda, 1.0);
            s.k2.gemv(gamma, self.parts[c].state.j0(), &s.k1, 1.0);
            d.solve_mut(&mut s.k2);
            s.k2 *= ha;
            self.ya_next.copy_from(&self.ya[0]);
            self.ya_next += &s.k2;
        }
        // Subdomains B: ss substeps of Δt/ss with A interpolated (eqs 25–31). Their `a`
        // is at y^B_i on entry.
        let ss = self.ss;
        let h = dt / ss as f64;
        for j in 1..=ss {
            let t = ti + (j - 1) as f64 * h;
            self.coarse_interpolated((j - 1) as f64 / ss as f64, t)?;
            self.lambda_current();
            for (k, (p, s)) in self.parts.iter_mut().zip(self.subs.iter_mut()).enumerate() {
                if k == c {
                    continue;
                }
                s.k1.copy_from(&s.f);
                s.k1.gemv(1.0, &s.l, &self.lambda, 1.0);
                s.d_lu.solve_mut(&mut s.k1);
                s.k1 *= h;
                s.stage.copy_from(&s.y);
                s.stage.axpy(0.5, &s.k1, 1.0);
                eval_stage(p, s, t + 0.5 * h, Eval::Command)?;
            }
            self.coarse_interpolated((2 * j - 1) as f64 / (2 * ss) as f64, t + 0.5 * h)?;
            self.lambda_current();
            for (k, (p, s)) in self.parts.iter_mut().zip(self.subs.iter_mut()).enumerate() {
                if k == c {
                    continue;
                }
                s.k2.copy_from(&s.f);
                s.k2.gemv(1.0, &s.l, &self.lambda, 1.0);
                s.k2.gemv(gamma, p.state.j0(), &s.k1, 1.0);
                s.d_lu.solve_mut(&mut s.k2);
                s.k2 *= h;
                s.y += &s.k2;
                if j < ss {
                    eval_own(p, s, t + h, Eval::Command)?;
                }
            }
        }
        // Shift A: [i−1, i, i+1, i+2].
        self.ya.rotate_left(1);
        self.ya[3].copy_from(&self.ya_next);
        // Project the pair at t_{i+1} (§6), then the exchange at t_{i+1}.
        let t1 = ti + dt;
        self.subs[c].y.copy_from(&self.ya[2]);
        project_all(
            &self.parts,
            &mut self.subs,
            &mut self.coupler,
            self.projection,
            &mut self.mu,
        );
        self.ya[2].copy_from(&self.subs[c].y);
        for (k, (p, s)) in self.parts.iter_mut().zip(self.subs.iter_mut()).enumerate() {
            let how = if k == c { Eval::Stored } else { Eval::Command };
            eval_own(p, s, t1, how)?;
        }
        self.push_fine_levels();
        self.lambda_current();
        update_rates(&mut self.subs, &self.lambda);
        Ok(())
    }

    fn physical_len(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| p.physical.is_some())
            .map(|p| 3 * p.state.n_dofs())
            .sum()
    }
}

impl TimeIntegrator for Lsrt2Interfield {
    fn name(&self) -> &'static str {
        "lsrt2-interfield"
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
        if self.cycling {
            self.cycle()?;
        } else {
            self.startup_step()?;
            if self.clock.steps() == 1 {
                self.clock.advance();
                self.coarse_ahead()?;
                self.cycling = true;
                // The exchange at t_2 for the outputs.
                let c = self.coarse;
                let t = self.time();
                eval_own(&mut self.parts[c], &mut self.subs[c], t, Eval::Stored)?;
                self.lambda_current();
                update_rates(&mut self.subs, &self.lambda);
                return self.check();
            }
        }
        self.clock.advance();
        self.check()
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
    fn energy_source(&self, _p: usize) -> super::EnergySource {
        super::EnergySource::PartitionState
    }
    fn energy(&mut self, p: usize) -> Option<f64> {
        let Self { parts, subs, .. } = self;
        parts[p].energy(subs[p].y.as_slice())
    }
    /// Eq 34's `X_i` (each level: the coarse state, then every fine one in partition order;
    /// then `y^A_{i+1}`), followed by the three levels of specimen force of every physical
    /// fine subdomain.
    fn state_len(&self) -> usize {
        let (ca, fine): (usize, usize) = (
            self.subs[self.coarse].y.len(),
            (0..self.subs.len())
                .filter(|k| *k != self.coarse)
                .map(|k| self.subs[k].y.len())
                .sum(),
        );
        4 * ca + 3 * fine + self.physical_len()
    }
    fn export_state(&self, out: &mut [f64]) {
        let mut o = 0;
        let mut put = |v: &DVector<f64>, o: &mut usize| {
            out[*o..*o + v.len()].copy_from_slice(v.as_slice());
            *o += v.len();
        };
        for level in 0..3 {
            put(&self.ya[level], &mut o);
            for k in (0..self.subs.len()).filter(|k| *k != self.coarse) {
                put(&self.yb[k][level], &mut o);
            }
        }
        put(&self.ya[3], &mut o);
        for (k, p) in self.parts.iter().enumerate() {
            if k != self.coarse && p.physical.is_some() {
                for level in 0..3 {
                    put(&self.sb[k][level], &mut o);
                }
            }
        }
    }
    fn import_state(&mut self, x: &[f64]) {
        let mut o = 0;
        let take = |v: &mut DVector<f64>, o: &mut usize| {
            let l = v.len();
            v.copy_from_slice(&x[*o..*o + l]);
            *o += l;
        };
        for level in 0..3 {
            take(&mut self.ya[level], &mut o);
            for k in 0..self.subs.len() {
                if k != self.coarse {
                    take(&mut self.yb[k][level], &mut o);
                }
            }
        }
        take(&mut self.ya[3], &mut o);
        for k in 0..self.parts.len() {
            if k != self.coarse && self.parts[k].physical.is_some() {
                for level in 0..3 {
                    take(&mut self.sb[k][level], &mut o);
                }
            }
        }
        // Re-evaluate the fine levels (computed elements; the specimen forces imported).
        let t = self.time();
        for k in 0..self.parts.len() {
            if k == self.coarse {
                continue;
            }
            for level in 0..3 {
                let tl = t - (2 - level) as f64 * self.dt;
                let s = &mut self.subs[k];
                s.y.copy_from(&self.yb[k][level]);
                s.specimen.copy_from(&self.sb[k][level]);
                let _ = eval_own(&mut self.parts[k], s, tl, Eval::Stored);
                self.ab[k][level].copy_from(&self.subs[k].a);
            }
        }
        let c = self.coarse;
        self.subs[c].y.copy_from(&self.ya[2]);
        let _ = eval_own(&mut self.parts[c], &mut self.subs[c], t, Eval::Stored);
        self.lambda_current();
        update_rates(&mut self.subs, &self.lambda);
        self.cycling = true;
    }
    fn set_time(&mut self, t: f64) {
        self.clock.set_time(t);
    }
}

impl Lsrt2Interfield {
    fn check(&self) -> Result<(), StepError> {
        let (t, n) = (self.time(), self.clock.steps());
        check_finite(self.lambda.as_slice(), "interface multipliers", t, n)?;
        for s in &self.subs {
            check_finite(s.y.as_slice(), "state", t, n)?;
        }
        check_finite(self.ya[3].as_slice(), "state", t, n)
    }
}
