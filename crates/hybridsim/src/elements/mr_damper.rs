//! Magnetorheological (MR) damper, the phenomenological model of Spencer, Dyke, Sain and Carlson
//! (1997) (issue 17).

use super::declare::{impl_declared, Declared, Param, Rule};
use super::switching::{abs, abs_pow, deformation, re, scatter_force};
use super::{DofRef, Element, ElementLaw, Quantity, Scalar};
use std::sync::Arc;

/// MR damper between two nodes (or a node and the ground) on one DOF direction: the modified
/// Bouc–Wen model of Spencer et al. (1997).
///
/// With `x = u1 − u2` the damper displacement and `y` the internal displacement of the
/// dashpot `c1`,
///
/// - `F = c1 ẏ + k1 (x − x0)`,
/// - `ẏ = [α z + c0 ẋ + k0 (x − y)]/(c0 + c1)`,
/// - `ż = −γ |ẋ − ẏ| z |z|^{n−1} − β (ẋ − ẏ) |z|^n + A (ẋ − ẏ)`,
///
/// where the Bouc–Wen evolutionary variable `z` (a length) gives the hysteresis, the dashpot
/// `c0` the viscous behaviour at large velocities, `c1` the roll-off at low velocities, `k0`
/// the stiffness at large velocities and `k1` the accumulator stiffness. The field-dependent
/// coefficients follow the filtered voltage `u`:
///
/// `α = αa + αb u`, `c0 = c0a + c0b u`, `c1 = c1a + c1b u`, `u̇ = −η (u − v)`,
///
/// the first-order filter modelling the MR fluid's reaching rheological equilibrium and the
/// current driver's dynamics, `v` the command voltage.
///
/// **Command voltage.** A constant `voltage` or a piecewise-linear time history
/// `voltage_points = [[t, V], …]` (held at its first and last values outside its times). The
/// time is an extra state (`ṫ = 1`, starting at 0 with the run or the driven history). A
/// controller (clipped-optimal or on/off control, Dyke et al. 1996) would drive the damper
/// through [`Element::set_parameter`]`("voltage", v)` each control step — the run-time
/// parameter path of online model updating — or, inside a lab, as a command signal; the filter
/// state `u` carries over, so a command jump reaches the fluid with the time constant `1/η`.
///
/// **Parameters** (the paper's Table 1 values for its 3 kN prototype damper, in SI units:
/// `c0a` = 2100 N·s/m, `c0b` = 350 N·s/(m·V), `k0` = 4690 N/m, `c1a` = 28 300 N·s/m, `c1b` =
/// 295 N·s/(m·V), `k1` = 500 N/m, `x0` = 0.143 m, `alpha_a` = 14 000 N/m, `alpha_b` =
/// 69 500 N/(m·V), `gamma` = `beta` = 3.63e6 m⁻², `A` = 301, `n` = 2, `eta` = 190 s⁻¹).
/// `x0` (default 0) is the initial displacement of the accumulator spring: the paper's value
/// adds the constant force `−k1 x0` (a preload); with the default the damper is at rest
/// with zero force.
///
/// **Extra states**: `y` (displacement), `z` (displacement), `u` (filtered voltage, starting
/// at 0), `time` and `e`, the absorbed energy `ė = F ẋ`. Dissipated energy: `e` minus the
/// energy of the springs, `½ k0 (x − y)² + ½ k1 [(x − x0)² − x0²]`, and of the hysteretic part
/// `α z²/(2A)` at the current voltage.
#[derive(Debug, Clone)]
pub struct MrDamper {
    dofs: super::PairDofs,
    /// `c0a`, `c0b`.
    pub c0: [f64; 2],
    /// `k0`.
    pub k0: f64,
    /// `c1a`, `c1b`.
    pub c1: [f64; 2],
    /// `k1`.
    pub k1: f64,
    /// `x0`.
    pub x0: f64,
    /// `αa`, `αb`.
    pub alpha: [f64; 2],
    /// `γ`.
    pub gamma: f64,
    /// `β`.
    pub beta: f64,
    /// `A`.
    pub a: f64,
    /// `n`.
    pub n: f64,
    /// Filter rate `η`.
    pub eta: f64,
    /// Constant command voltage (used when there is no time history).
    pub voltage: f64,
    /// Command voltage history `(t, V)`, times strictly increasing.
    voltage_points: Option<Arc<[(f64, f64)]>>,
}

impl Declared for MrDamper {
    const KIND: &'static str = "mr_damper";
    #[rustfmt::skip]
    const PARAMETERS: &'static [Param<Self>] = &[
        Param::new("c0a", "F·T/L", Rule::NonNegative, |e| e.c0[0], |e, x| e.c0[0] = x),
        Param::new("c0b", "F·T/(L·V)", Rule::NonNegative, |e| e.c0[1], |e, x| e.c0[1] = x),
        Param::new("k0", "F/L", Rule::NonNegative, |e| e.k0, |e, x| e.k0 = x),
        Param::new("c1a", "F·T/L", Rule::Positive, |e| e.c1[0], |e, x| e.c1[0] = x),
        Param::new("c1b", "F·T/(L·V)", Rule::NonNegative, |e| e.c1[1], |e, x| e.c1[1] = x),
        Param::new("k1", "F/L", Rule::NonNegative, |e| e.k1, |e, x| e.k1 = x),
        Param::optional("x0", "L", Rule::Finite, 0.0, |e| e.x0, |e, x| e.x0 = x),
        Param::new("alpha_a", "F/L", Rule::NonNegative, |e| e.alpha[0], |e, x| e.alpha[0] = x),
        Param::new("alpha_b", "F/(L·V)", Rule::NonNegative, |e| e.alpha[1], |e, x| e.alpha[1] = x),
        Param::new("gamma", "1/L^n", Rule::Finite, |e| e.gamma, |e, x| e.gamma = x),
        Param::new("beta", "1/L^n", Rule::Finite, |e| e.beta, |e, x| e.beta = x),
        Param::new("A", "-", Rule::Positive, |e| e.a, |e, x| e.a = x),
        Param::optional("n", "-", Rule::AtLeastOne, 2.0, |e| e.n, |e, x| e.n = x),
        Param::new("eta", "1/T", Rule::Positive, |e| e.eta, |e, x| e.eta = x),
        Param::optional("voltage", "V", Rule::NonNegative, 0.0, |e| e.voltage, |e, x| e.voltage = x),
    ];
    const STATES: &'static [(&'static str, Quantity)] = &[
        ("y", Quantity::Displacement),
        ("z", Quantity::Displacement),
        ("u", Quantity::Dimensionless),
        ("time", Quantity::Dimensionless),
        ("e", Quantity::Energy),
    ];
    fn blank(dofs: Vec<DofRef>) -> Self {
        Self {
            dofs: dofs.into(),
            c0: [0.0; 2],
            k0: 0.0,
            c1: [0.0; 2],
            k1: 0.0,
            x0: 0.0,
            alpha: [0.0; 2],
            gamma: 0.0,
            beta: 0.0,
            a: 0.0,
            n: 0.0,
            eta: 0.0,
            voltage: 0.0,
            voltage_points: None,
        }
    }
    fn check_joint(&self) -> Result<(), (&'static str, String)> {
        if self.beta + self.gamma <= 0.0 {
            return Err((
                "gamma",
                format!(
                    "`beta` + `gamma` must be > 0 for a bounded hysteretic force, found {} + {}",
                    self.beta, self.gamma
                ),
            ));
        }
        Ok(())
    }
}

/// Check a voltage history: at least one point, finite, times strictly increasing, voltages
/// ≥ 0. The error names the point (`[i]`) and the reason.
pub fn check_voltage_points(points: &[(f64, f64)]) -> Result<(), String> {
    if points.is_empty() {
        return Err("must hold at least one [t, V] point".into());
    }
    for (i, &(t, v)) in points.iter().enumerate() {
        if !t.is_finite() || !v.is_finite() {
            return Err(format!("[{i}] must be finite, found [{t}, {v}]"));
        }
        if v < 0.0 {
            return Err(format!("[{i}] voltage must not be negative, found {v}"));
        }
        if i > 0 && t <= points[i - 1].0 {
            return Err(format!(
                "[{i}] times must increase strictly, found {t} after {}",
                points[i - 1].0
            ));
        }
    }
    Ok(())
}

impl MrDamper {
    /// An MR damper from the parameter values in the order of the model-file keys
    /// (`c0a, c0b, k0, c1a, c1b, k1, x0, alpha_a, alpha_b, gamma, beta, A, n, eta, voltage`)
    /// and an optional voltage history; checks every value.
    pub fn new(
        dofs: Vec<DofRef>,
        values: [f64; 15],
        voltage_points: Option<Vec<(f64, f64)>>,
    ) -> Result<Self, String> {
        let mut e: Self = super::declare::with_values(dofs, &values)?;
        e.set_voltage_points(voltage_points)
            .map_err(|r| format!("`voltage_points` {r}"))?;
        Ok(e)
    }

    /// The damper of Spencer et al. (1997), Table 1, in SI units, at constant `voltage`, with
    /// the accumulator offset `x0 = 0.143 m` of the paper.
    pub fn spencer_1997(dofs: Vec<DofRef>, voltage: f64) -> Result<Self, String> {
        Self::new(
            dofs,
            [
                2100.0, 350.0, 4690.0, 28300.0, 295.0, 500.0, 0.143, 14000.0, 69500.0, 3.63e6,
                3.63e6, 301.0, 2.0, 190.0, voltage,
            ],
            None,
        )
    }

    /// Replace the voltage history (`None`: the constant `voltage`).
    pub fn set_voltage_points(&mut self, points: Option<Vec<(f64, f64)>>) -> Result<(), String> {
        if let Some(p) = &points {
            check_voltage_points(p)?;
        }
        self.voltage_points = points.map(Arc::from);
        Ok(())
    }

    /// The voltage history, if any.
    pub fn voltage_points(&self) -> Option<&[(f64, f64)]> {
        self.voltage_points.as_deref()
    }

    /// Command voltage at time `t` (allocation-free).
    pub fn command<T: Scalar>(&self, t: T) -> T {
        let Some(p) = self.voltage_points.as_deref() else {
            return t * 0.0 + self.voltage;
        };
        let tr = re(t);
        let k = p.partition_point(|&(ti, _)| ti <= tr);
        if k == 0 {
            return t * 0.0 + p[0].1;
        }
        if k == p.len() {
            return t * 0.0 + p[k - 1].1;
        }
        let (t0, v0) = p[k - 1];
        let (t1, v1) = p[k];
        (t - t0) * ((v1 - v0) / (t1 - t0)) + v0
    }
}

impl ElementLaw for MrDamper {
    fn law<T: Scalar>(&self, u: &[T], v: &[T], s: &[T], r: &mut [T], sdot: &mut [T]) {
        let x = deformation(u);
        let xd = deformation(v);
        let (y, z, uf, time) = (s[0], s[1], s[2], s[3]);
        let alpha = uf * self.alpha[1] + self.alpha[0];
        let c0 = uf * self.c0[1] + self.c0[0];
        let c1 = uf * self.c1[1] + self.c1[0];
        let ydot = (alpha * z + c0 * xd + (x - y) * self.k0) / (c0 + c1);
        let w = xd - ydot;
        let zn = abs_pow(z, self.n);
        let zn1 = if self.n == 1.0 {
            z
        } else {
            z * abs_pow(z, self.n - 1.0)
        };
        sdot[0] = ydot;
        sdot[1] = -(abs(w) * zn1 * self.gamma) - w * zn * self.beta + w * self.a;
        sdot[2] = -(uf - self.command(time)) * self.eta;
        sdot[3] = T::from(1.0) + x * 0.0;
        let f = c1 * ydot + (x - self.x0) * self.k1;
        sdot[4] = f * xd;
        scatter_force(r, f);
    }
}

impl Element for MrDamper {
    impl_declared!();
    fn dissipated_energy(&self, u: &[f64], s: &[f64]) -> Option<f64> {
        let x = deformation(u);
        let alpha = self.alpha[0] + self.alpha[1] * s[2];
        let springs = 0.5 * self.k0 * (x - s[0]).powi(2)
            + 0.5 * self.k1 * ((x - self.x0).powi(2) - self.x0 * self.x0);
        Some(s[4] - springs - alpha * s[1] * s[1] / (2.0 * self.a))
    }
    fn driver_substep(&self) -> Option<f64> {
        // 1/20 of the Bouc–Wen "yield" displacement z_u/A, z_u = (A/(β+γ))^{1/n}.
        let zu = (self.a / (self.beta + self.gamma)).powf(1.0 / self.n);
        Some(0.05 * zu / self.a)
    }
}
