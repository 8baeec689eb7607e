//! Total mechanical energy history and drift (Abbiati et al. 2019, Fig 9; ALGORITHMS.md A2: PG-α
//! with ρ∞ = 1 conserves the energy of an undamped free vibration, exactly for ss = 1 and
//! without drift for ss > 1; ρ∞ < 1 dissipates).
//!
//! The total is the sum over partitions of [`TimeIntegrator::energy`] (kinetic plus stored
//! energy of each partition with its own DOF copies; split masses make the sum the energy of
//! the coupled structure). Drift is meaningful for free vibration; with loads the history
//! includes the work done on the structure.

use super::AnalysisError;
use crate::integrators::{self, TimeIntegrator};
use crate::model::Model;

/// Energy history of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyReport {
    /// Scheme name.
    pub scheme: String,
    /// Partition names.
    pub partitions: Vec<String>,
    /// Sample times.
    pub times: Vec<f64>,
    /// Energy of each partition at each sample (`[sample][partition]`).
    pub partition_energy: Vec<Vec<f64>>,
    /// Total energy at each sample.
    pub total: Vec<f64>,
    /// Whether the model has loads or ground motions (drift is then not a conservation
    /// measure).
    pub forced: bool,
}

impl EnergyReport {
    /// Initial total energy.
    pub fn initial(&self) -> f64 {
        self.total.first().copied().unwrap_or(0.0)
    }
    /// Reference magnitude of the relative drift: |E0|, or max |E| when E0 = 0.
    pub fn scale(&self) -> f64 {
        let e0 = self.initial().abs();
        if e0 > 0.0 {
            e0
        } else {
            self.total
                .iter()
                .fold(0.0f64, |m, e| m.max(e.abs()))
                .max(f64::MIN_POSITIVE)
        }
    }
    /// `(E_n − E_0)/scale` at each sample.
    pub fn relative_drift(&self) -> Vec<f64> {
        let (e0, s) = (self.initial(), self.scale());
        self.total.iter().map(|e| (e - e0) / s).collect()
    }
    /// Largest |relative drift|.
    pub fn max_relative_drift(&self) -> f64 {
        self.relative_drift()
            .iter()
            .fold(0.0f64, |m, d| m.max(d.abs()))
    }
    /// Relative drift at the last sample.
    pub fn final_relative_drift(&self) -> f64 {
        self.relative_drift().last().copied().unwrap_or(0.0)
    }
    /// Least-squares trend of the relative drift per unit time (secular drift rate).
    pub fn drift_rate(&self) -> f64 {
        let d = self.relative_drift();
        let n = d.len() as f64;
        if d.len() < 2 {
            return 0.0;
        }
        let mt = self.times.iter().sum::<f64>() / n;
        let md = d.iter().sum::<f64>() / n;
        let sxy: f64 = self
            .times
            .iter()
            .zip(&d)
            .map(|(t, e)| (t - mt) * (e - md))
            .sum();
        let sxx: f64 = self.times.iter().map(|t| (t - mt).powi(2)).sum();
        if sxx > 0.0 {
            sxy / sxx
        } else {
            0.0
        }
    }
}

/// Run the model for its duration and record the energy every `every` coarse steps.
pub fn energy_history(model: &Model, every: u64) -> Result<EnergyReport, AnalysisError> {
    let mut integ = integrators::build(model)?;
    let partitions: Vec<String> = integ
        .partitions()
        .iter()
        .map(|p| p.state.name.clone())
        .collect();
    let every = every.max(1);
    let n = model.analysis.n_steps();
    let mut report = EnergyReport {
        scheme: integ.name().to_string(),
        partitions,
        times: Vec::new(),
        partition_energy: Vec::new(),
        total: Vec::new(),
        forced: !model.loads.is_empty() || !model.ground_motions.is_empty(),
    };
    sample(model, integ.as_mut(), &mut report)?;
    for k in 1..=n {
        integ.step()?;
        if k % every == 0 || k == n {
            sample(model, integ.as_mut(), &mut report)?;
        }
    }
    Ok(report)
}

fn sample(
    model: &Model,
    integ: &mut dyn TimeIntegrator,
    report: &mut EnergyReport,
) -> Result<(), AnalysisError> {
    let mut row = Vec::with_capacity(report.partitions.len());
    for p in 0..report.partitions.len() {
        let e = integ.energy(p).ok_or_else(|| {
            AnalysisError::input(
                model,
                format!("substructure.{}", report.partitions[p]),
                "the energy is not available: an element of this substructure neither \
                 stores energy nor tracks the work it absorbs",
            )
        })?;
        row.push(e);
    }
    report.total.push(row.iter().sum());
    report.partition_energy.push(row);
    report.times.push(integ.time());
    Ok(())
}
