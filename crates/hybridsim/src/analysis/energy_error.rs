//! The cumulative energy error `E_c` of a simulated response against a reference response
//! (Hung and El-Tawil 2009, eq 18, after Hung and El-Tawil's earlier definition):
//!
//! ```text
//! E_c(n) = Σ_{j=1}^{n} | r_j^ref · (d_j − d_j^ref) |
//! ```
//!
//! `d_j` is the displacement of the node of interest after step `j` of the run under study
//! (a hybrid test, FOM, OSM, …), `d_j^ref` the same displacement of the reference run (in the
//! paper the whole structure simulated numerically; here typically the monolithic scheme at a
//! finer time step, sampled at the run's times) and `r_j^ref` the reference's restoring force
//! at that node. Each term is the work the reference force would do over the displacement
//! error, so `E_c` is in force × length and grows with both the size and the duration of the
//! error. The sum starts at the first step (`j = 1`): the initial conditions are common.
//!
//! `E_c` only ranks runs of the same problem against the same reference: it is not normalized,
//! and a constant offset of the displacement (a residual drift) accumulates every step.

/// Why the inputs of [`cumulative_energy_error`] cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnergyErrorInput {
    /// The three series do not have the same length.
    #[error(
        "the series differ in length: {displacement} displacements, {reference} reference \
         displacements, {force} reference forces"
    )]
    Lengths {
        /// Samples of `d`.
        displacement: usize,
        /// Samples of `d_ref`.
        reference: usize,
        /// Samples of `r_ref`.
        force: usize,
    },
    /// A value is NaN or infinite.
    #[error("step {step}: {what} is not finite")]
    NotFinite {
        /// 1-based step `j`.
        step: usize,
        /// Which series.
        what: &'static str,
    },
}

/// The running sum `E_c(1), …, E_c(n)` of eq 18 for the samples `d[j−1]`, `d_ref[j−1]`,
/// `r_ref[j−1]` of steps `j = 1…n` (pass the series without their initial values).
pub fn energy_error_history(
    d: &[f64],
    d_ref: &[f64],
    r_ref: &[f64],
) -> Result<Vec<f64>, EnergyErrorInput> {
    if d.len() != d_ref.len() || d.len() != r_ref.len() {
        return Err(EnergyErrorInput::Lengths {
            displacement: d.len(),
            reference: d_ref.len(),
            force: r_ref.len(),
        });
    }
    let mut sum = 0.0;
    let mut out = Vec::with_capacity(d.len());
    for (j, ((d, dr), r)) in d.iter().zip(d_ref).zip(r_ref).enumerate() {
        for (v, what) in [
            (*d, "the displacement"),
            (*dr, "the reference displacement"),
            (*r, "the reference force"),
        ] {
            if !v.is_finite() {
                return Err(EnergyErrorInput::NotFinite { step: j + 1, what });
            }
        }
        sum += (r * (d - dr)).abs();
        out.push(sum);
    }
    Ok(out)
}

/// `E_c(n)` of eq 18: the last value of [`energy_error_history`] (0 for no steps).
pub fn cumulative_energy_error(
    d: &[f64],
    d_ref: &[f64],
    r_ref: &[f64],
) -> Result<f64, EnergyErrorInput> {
    Ok(energy_error_history(d, d_ref, r_ref)?
        .last()
        .copied()
        .unwrap_or(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_the_absolute_work_of_the_reference_force() {
        let d = [1.0, 2.0, 0.0];
        let d_ref = [0.5, 2.5, 1.0];
        let r_ref = [2.0, -4.0, 3.0];
        // |2·0.5| + |−4·(−0.5)| + |3·(−1)| = 1 + 2 + 3
        assert_eq!(
            energy_error_history(&d, &d_ref, &r_ref).unwrap(),
            vec![1.0, 3.0, 6.0]
        );
        assert_eq!(cumulative_energy_error(&d, &d_ref, &r_ref).unwrap(), 6.0);
        assert_eq!(cumulative_energy_error(&[], &[], &[]).unwrap(), 0.0);
    }

    #[test]
    fn rejects_unequal_or_non_finite_series() {
        assert!(matches!(
            cumulative_energy_error(&[1.0], &[1.0, 2.0], &[1.0]),
            Err(EnergyErrorInput::Lengths { .. })
        ));
        assert_eq!(
            cumulative_energy_error(&[1.0, f64::NAN], &[1.0, 2.0], &[1.0, 1.0]),
            Err(EnergyErrorInput::NotFinite {
                step: 2,
                what: "the displacement"
            })
        );
    }
}
