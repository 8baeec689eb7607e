//! Recorded channels: names with units, filled from an integrator without allocating.

use crate::assembly::ElementWorkspace;
use crate::elements::Quantity;
use crate::integrators::TimeIntegrator;
use crate::model::Model;
use crate::units::Units;

/// A recorded column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Name, e.g. `u.ns.2.x`.
    pub name: String,
    /// Unit, e.g. `m`.
    pub unit: String,
}

impl Column {
    /// `name[unit]`, the CSV header form.
    pub fn header(&self) -> String {
        format!("{}[{}]", self.name, self.unit)
    }
}

#[derive(Debug, Clone)]
enum Channel {
    Time,
    U(usize, usize),
    V(usize, usize),
    AbsAcc(usize, usize),
    State(usize, usize),
    Lambda(usize),
    GapU(usize),
    GapV(usize),
    ElementForce {
        part: usize,
        slot: usize,
        len: usize,
    },
    Measured(usize, usize),
    Deformation(usize, usize),
    Dissipated(usize, usize),
    Provider {
        part: usize,
        len: usize,
    },
    Energy(usize),
    /// The integrator's own channels ([`TimeIntegrator::extra_channels`]); written by the
    /// last column of the group (`len > 0`).
    Extra {
        len: usize,
    },
}

/// Fills rows of recorded values; column layout fixed at construction.
pub struct Recorder {
    columns: Vec<Column>,
    channels: Vec<Channel>,
    workspaces: Vec<ElementWorkspace>,
    scratch: Vec<f64>,
}

/// The unit of quantity `q` on DOF `dof` in the model's `units` (the `[unit]` of a column
/// header: rotations take angular units).
pub fn unit_of(units: &Units, q: Quantity, dof: &str) -> String {
    match q {
        Quantity::Force => units.force_unit(dof),
        Quantity::Displacement => units.displacement_unit(dof),
        Quantity::Velocity => units.velocity_unit(dof),
        Quantity::Energy => units.energy_unit(),
        Quantity::Dimensionless => "-".into(),
        Quantity::Stiffness => {
            format!("{}/{}", units.force_unit(dof), units.displacement_unit(dof))
        }
    }
}

impl Recorder {
    /// Lay out the columns for `model` integrated by `integrator`.
    pub fn new(model: &Model, integrator: &dyn TimeIntegrator) -> Self {
        let u = &model.units;
        let mut columns = vec![Column {
            name: "time".into(),
            unit: u.time.clone(),
        }];
        let mut channels = vec![Channel::Time];
        let push = |cols: &mut Vec<Column>,
                    chans: &mut Vec<Channel>,
                    name: String,
                    unit: String,
                    ch: Channel| {
            cols.push(Column { name, unit });
            chans.push(ch);
        };
        let parts = integrator.partitions();
        let mut max_scratch = 0;
        for (p, part) in parts.iter().enumerate() {
            let st = &part.state;
            let x = &st.name;
            for (i, d) in st.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("u.{x}.{}.{}", d.node, d.dof),
                    u.displacement_unit(&d.dof),
                    Channel::U(p, i),
                );
            }
            for (i, d) in st.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("v.{x}.{}.{}", d.node, d.dof),
                    u.velocity_unit(&d.dof),
                    Channel::V(p, i),
                );
            }
            for (i, d) in st.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("a_abs.{x}.{}.{}", d.node, d.dof),
                    u.acceleration_unit(&d.dof),
                    Channel::AbsAcc(p, i),
                );
            }
            if model.output.elements {
                for (si, slot) in st.slots.iter().enumerate() {
                    let e = &slot.element;
                    let is_mass = e.mass().is_some()
                        && e.linear_stiffness().is_some_and(|k| k.amax() == 0.0)
                        && e.kind() == "mass";
                    if is_mass {
                        continue;
                    }
                    for d in e.dofs() {
                        push(
                            &mut columns,
                            &mut channels,
                            format!("force.{}.{}.{}", slot.name, d.node, d.dof),
                            u.force_unit(&d.dof),
                            Channel::ElementForce {
                                part: p,
                                slot: si,
                                len: 0,
                            },
                        );
                    }
                    if let Some(Channel::ElementForce { len, .. }) = channels.last_mut() {
                        *len = e.dofs().len();
                    }
                    // Mark only the first column of the group as the writer; others are skipped.
                    let n = e.dofs().len();
                    let k = channels.len();
                    for c in &mut channels[k - n..k - 1] {
                        *c = Channel::ElementForce {
                            part: p,
                            slot: si,
                            len: 0,
                        };
                    }
                    max_scratch = max_scratch.max(n);
                    if e.n_states() > 0 {
                        let zeros = vec![0.0; e.dofs().len()];
                        let dof = e.dofs().first().map(|d| d.dof.clone()).unwrap_or_default();
                        if e.deformation(&zeros).is_some() {
                            push(
                                &mut columns,
                                &mut channels,
                                format!("deformation.{}", slot.name),
                                u.displacement_unit(&dof),
                                Channel::Deformation(p, si),
                            );
                        }
                        let zs = vec![0.0; e.n_states()];
                        if e.dissipated_energy(&zeros, &zs).is_some() {
                            push(
                                &mut columns,
                                &mut channels,
                                format!("dissipated.{}", slot.name),
                                u.energy_unit(),
                                Channel::Dissipated(p, si),
                            );
                        }
                    }
                    for (j, name) in e.state_names().iter().enumerate() {
                        let dof = e.dofs().first().map(|d| d.dof.clone()).unwrap_or_default();
                        push(
                            &mut columns,
                            &mut channels,
                            format!("state.{}.{}", slot.name, name),
                            unit_of(u, e.state_quantity(j), &dof),
                            Channel::State(p, 2 * st.n_dofs() + slot.state_offset + j),
                        );
                    }
                }
            }
            if let Some(pr) = part.physical.as_ref().map(|p| p.substructure()) {
                for (i, d) in st.dofs.iter().enumerate() {
                    push(
                        &mut columns,
                        &mut channels,
                        format!("measured.{x}.{}.{}", d.node, d.dof),
                        u.force_unit(&d.dof),
                        Channel::Measured(p, i),
                    );
                }
                if model.output.elements {
                    let names = pr.channel_names();
                    let n = names.len();
                    for (k, (name, q, dof)) in names.into_iter().enumerate() {
                        let ch = if k + 1 == n {
                            Channel::Provider { part: p, len: n }
                        } else {
                            Channel::Provider { part: p, len: 0 }
                        };
                        push(&mut columns, &mut channels, name, unit_of(u, q, &dof), ch);
                    }
                    max_scratch = max_scratch.max(n);
                }
            }
        }
        if let Some(iface) = integrator.interface() {
            for (k, d) in iface.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("lambda.{}.{}", d.dof.node, d.dof.dof),
                    u.force_unit(&d.dof.dof),
                    Channel::Lambda(k),
                );
            }
            for (k, d) in iface.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("gap_u.{}.{}", d.dof.node, d.dof.dof),
                    u.displacement_unit(&d.dof.dof),
                    Channel::GapU(k),
                );
            }
            for (k, d) in iface.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("gap_v.{}.{}", d.dof.node, d.dof.dof),
                    u.velocity_unit(&d.dof.dof),
                    Channel::GapV(k),
                );
            }
        }
        let extra = integrator.extra_channels();
        let n_extra = extra.len();
        for (k, (name, q, dof)) in extra.into_iter().enumerate() {
            let len = if k + 1 == n_extra { n_extra } else { 0 };
            push(
                &mut columns,
                &mut channels,
                name,
                unit_of(u, q, &dof),
                Channel::Extra { len },
            );
        }
        max_scratch = max_scratch.max(n_extra);
        if model.output.energy {
            for (p, part) in parts.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("energy.{}", part.state.name),
                    u.energy_unit(),
                    Channel::Energy(p),
                );
            }
        }
        let workspaces = parts.iter().map(|p| p.state.workspace()).collect();
        Self {
            columns,
            channels,
            workspaces,
            scratch: vec![0.0; max_scratch.max(1)],
        }
    }

    /// The columns.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Fill `row` (length of [`Recorder::columns`]) from the integrator's current state.
    /// Allocation-free.
    pub fn record(&mut self, integ: &mut dyn TimeIntegrator, row: &mut [f64]) {
        let t = integ.time();
        let mut c = 0;
        while c < self.channels.len() {
            let ch = self.channels[c].clone();
            match ch {
                Channel::Time => row[c] = t,
                Channel::U(p, i) => row[c] = integ.state(p)[i],
                Channel::V(p, i) => {
                    let n = integ.partitions()[p].state.n_dofs();
                    row[c] = integ.state(p)[n + i];
                }
                Channel::AbsAcc(p, i) => {
                    let st = &integ.partitions()[p].state;
                    let n = st.n_dofs();
                    row[c] = integ.rate(p)[n + i] + st.ground_acceleration(i, t);
                }
                Channel::State(p, k) => row[c] = integ.state(p)[k],
                Channel::ElementForce { part, slot, len } => {
                    if len > 0 {
                        let st = &integ.partitions()[part].state;
                        let y = integ.state(part);
                        st.element_force(
                            slot,
                            y,
                            &mut self.scratch[..len],
                            &mut self.workspaces[part],
                        );
                        row[c + 1 - len..=c].copy_from_slice(&self.scratch[..len]);
                    }
                }
                Channel::Measured(p, i) => {
                    row[c] = integ.partitions()[p]
                        .physical
                        .as_ref()
                        .map_or(f64::NAN, |port| port.measured()[i])
                }
                Channel::Deformation(p, slot) | Channel::Dissipated(p, slot) => {
                    let st = &integ.partitions()[p].state;
                    let (d, e) = st.element_deformation_and_dissipation(
                        slot,
                        integ.state(p),
                        &mut self.workspaces[p],
                    );
                    let v = if matches!(ch, Channel::Deformation(..)) {
                        d
                    } else {
                        e
                    };
                    row[c] = v.unwrap_or(f64::NAN);
                }
                Channel::Provider { part, len } => {
                    if len > 0 {
                        if let Some(pr) = integ.partitions()[part]
                            .physical
                            .as_ref()
                            .map(|p| p.substructure())
                        {
                            pr.channels(&mut self.scratch[..len]);
                            row[c + 1 - len..=c].copy_from_slice(&self.scratch[..len]);
                        }
                    }
                }
                Channel::Lambda(k) => row[c] = integ.multipliers()[k],
                Channel::GapU(k) | Channel::GapV(k) => {
                    let iface = integ.interface().expect("interface");
                    let d = &iface.dofs[k];
                    let off = if matches!(ch, Channel::GapU(_)) { 0 } else { 1 };
                    let val = |p: usize| {
                        let st = &integ.partitions()[p].state;
                        let n = st.n_dofs();
                        let i = st.dofs.iter().position(|x| *x == d.dof).unwrap_or(0);
                        integ.state(p)[off * n + i]
                    };
                    row[c] = val(d.plus) - val(d.minus);
                }
                Channel::Energy(p) => row[c] = integ.energy(p).unwrap_or(f64::NAN),
                Channel::Extra { len } => {
                    if len > 0 {
                        integ.extra_values(&mut self.scratch[..len]);
                        row[c + 1 - len..=c].copy_from_slice(&self.scratch[..len]);
                    }
                }
            }
            c += 1;
        }
    }
}
