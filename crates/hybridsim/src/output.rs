//! Recorded channels: names with units, filled from an integrator without allocating.

use crate::assembly::ElementWorkspace;
use crate::elements::Quantity;
use crate::integrators::{EnergySource, TimeIntegrator};
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

/// Where a recorded column's value comes from. Indices are 32-bit so that a channel is 16
/// bytes (a wide model records about seven columns a DOF; with `u32` indices a channel was
/// 32 bytes, 2.2 MB of a 10⁴-DOF chain's start-up, issue 20).
#[derive(Debug, Clone, Copy)]
///
/// The nodal and state channels hold, third, the length of the run of columns of the same
/// kind and partition with consecutive indices that starts at them (at least 1), so that a row
/// copies each run as a slice instead of matching every column (issue 20: the match per
/// column was a quarter of the recorder's time on a 10³-DOF frame).
enum Channel {
    Time,
    U(u32, u32, u32),
    V(u32, u32, u32),
    AbsAcc(u32, u32, u32),
    State(u32, u32, u32),
    Lambda(u32),
    GapU(u32),
    GapV(u32),
    /// An element's forces, one column a DOF; the group's first column holds its `len` and
    /// writes the group, the others hold `len = 0`.
    ElementForce {
        part: u32,
        slot: u32,
        len: u32,
    },
    Measured(u32, u32),
    Deformation(u32, u32),
    Dissipated(u32, u32),
    Provider {
        part: u32,
        len: u32,
    },
    Energy(u32),
    /// The integrator's own channels ([`TimeIntegrator::extra_channels`]); written by the
    /// last column of the group (`len > 0`).
    Extra {
        len: u32,
    },
}

// A channel stays 16 bytes (a tag and at most three 32-bit indices).
const _: () = assert!(std::mem::size_of::<Channel>() == 16);

/// A recorder index as stored in a [`Channel`]. A model with 2³² DOFs, slots or states could not
/// be held in memory, so the conversion cannot fail for a model that was built.
fn ix(i: usize) -> u32 {
    u32::try_from(i).expect("a recorder index beyond 2³²")
}

/// The names and units of the columns, packed: every name in one text, the distinct units
/// once each. A wide model records about seven columns a DOF; one `String` per name and per
/// unit was about 700 bytes a DOF of the start-up memory (issue 20). The [`Column`]s are
/// made from it on demand.
#[derive(Debug, Clone, Default)]
struct ColumnNames {
    /// The names, one after the other.
    text: String,
    /// End of each column's name in `text`.
    ends: Vec<usize>,
    /// The distinct units.
    units: Vec<String>,
    /// Index into `units` of each column's unit.
    unit_of: Vec<u32>,
}

impl ColumnNames {
    fn push(&mut self, name: &str, unit: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
        let k = match self.units.iter().position(|u| u == unit) {
            Some(k) => k,
            None => {
                self.units.push(unit.to_string());
                self.units.len() - 1
            }
        };
        self.unit_of.push(k as u32);
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn name(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    fn unit(&self, i: usize) -> &str {
        &self.units[self.unit_of[i] as usize]
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.unit_of.shrink_to_fit();
    }
}

/// Fills rows of recorded values; column layout fixed at construction.
pub struct Recorder {
    columns: ColumnNames,
    channels: Vec<Channel>,
    workspaces: Vec<ElementWorkspace>,
    scratch: Vec<f64>,
    snapshot: RecorderSnapshot,
    /// The row split at a pipelined runner's hand-off ([`Recorder::split_at_handoff`]).
    handoff: Option<HandOff>,
}

/// The partitions that leave the link thread at a pipelined runner's hand-off, before the
/// rest of their step's row is made, and what the row keeps of them meanwhile.
#[derive(Debug, Clone)]
struct HandOff {
    /// Per partition: filled at the hand-off.
    early: Vec<bool>,
    /// Per gap channel, in column order: the plus and minus sides' values taken at the
    /// hand-off (where that side is early).
    gaps: Vec<[f64; 2]>,
    /// The early partitions' capture of the coming step, swapped into the recorder's
    /// snapshot when the rest of the step is captured (a step that fails between the two
    /// leaves the last complete capture in place).
    pending: Vec<PartitionSnapshot>,
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
        let mut columns = ColumnNames::default();
        columns.push("time", &u.time);
        let mut channels = vec![Channel::Time];
        let push = |cols: &mut ColumnNames,
                    chans: &mut Vec<Channel>,
                    name: String,
                    unit: String,
                    ch: Channel| {
            cols.push(&name, &unit);
            chans.push(ch);
        };
        let parts = integrator.partitions();
        let selection = model.output.selection.as_ref();
        let mut max_scratch = 0;
        for (p, part) in parts.iter().enumerate() {
            let st = &part.state;
            let x = &st.name;
            let kept = kept_dofs(selection, part, integrator);
            let dofs = || st.dofs.iter().enumerate().filter(|(i, _)| kept[*i]);
            for (i, d) in dofs() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("u.{x}.{}.{}", d.node, d.dof),
                    u.displacement_unit(&d.dof),
                    Channel::U(ix(p), ix(i), 1),
                );
            }
            for (i, d) in dofs() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("v.{x}.{}.{}", d.node, d.dof),
                    u.velocity_unit(&d.dof),
                    Channel::V(ix(p), ix(i), 1),
                );
            }
            for (i, d) in dofs() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("a_abs.{x}.{}.{}", d.node, d.dof),
                    u.acceleration_unit(&d.dof),
                    Channel::AbsAcc(ix(p), ix(i), 1),
                );
            }
            if model.output.elements {
                for (si, slot) in st.slots.iter().enumerate() {
                    let e = &slot.element;
                    let is_mass = e.mass().is_some()
                        && e.linear_stiffness().is_some_and(|k| k.amax() == 0.0)
                        && e.kind() == "mass";
                    if is_mass || !selection.is_none_or(|s| s.has_element_slot(slot.name())) {
                        continue;
                    }
                    for d in e.dofs() {
                        push(
                            &mut columns,
                            &mut channels,
                            format!("force.{}.{}.{}", slot.name(), d.node, d.dof),
                            u.force_unit(&d.dof),
                            Channel::ElementForce {
                                part: ix(p),
                                slot: ix(si),
                                len: 0,
                            },
                        );
                    }
                    // The group's first column writes the group; the others are skipped.
                    let n = e.dofs().len();
                    let k = channels.len();
                    if let Some(Channel::ElementForce { len, .. }) = channels.get_mut(k - n) {
                        *len = ix(n);
                    }
                    if e.n_states() > 0 {
                        let zeros = vec![0.0; e.dofs().len()];
                        let dof = e.dofs().first().map(|d| d.dof.as_str()).unwrap_or("");
                        if e.deformation(&zeros).is_some() {
                            push(
                                &mut columns,
                                &mut channels,
                                format!("deformation.{}", slot.name()),
                                u.displacement_unit(dof),
                                Channel::Deformation(ix(p), ix(si)),
                            );
                        }
                        let zs = vec![0.0; e.n_states()];
                        if e.dissipated_energy(&zeros, &zs).is_some() {
                            push(
                                &mut columns,
                                &mut channels,
                                format!("dissipated.{}", slot.name()),
                                u.energy_unit(),
                                Channel::Dissipated(ix(p), ix(si)),
                            );
                        }
                    }
                    for (j, name) in e.state_names().iter().enumerate() {
                        let dof = e.dofs().first().map(|d| d.dof.as_str()).unwrap_or("");
                        push(
                            &mut columns,
                            &mut channels,
                            format!("state.{}.{}", slot.name(), name),
                            unit_of(u, e.state_quantity(j), dof),
                            Channel::State(ix(p), ix(2 * st.n_dofs() + slot.state_offset() + j), 1),
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
                        Channel::Measured(ix(p), ix(i)),
                    );
                }
                if model.output.elements {
                    let names = pr.channel_names();
                    let n = names.len();
                    for (k, (name, q, dof)) in names.into_iter().enumerate() {
                        let ch = if k + 1 == n {
                            Channel::Provider {
                                part: ix(p),
                                len: ix(n),
                            }
                        } else {
                            Channel::Provider {
                                part: ix(p),
                                len: 0,
                            }
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
                    Channel::Lambda(ix(k)),
                );
            }
            for (k, d) in iface.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("gap_u.{}.{}", d.dof.node, d.dof.dof),
                    u.displacement_unit(&d.dof.dof),
                    Channel::GapU(ix(k)),
                );
            }
            for (k, d) in iface.dofs.iter().enumerate() {
                push(
                    &mut columns,
                    &mut channels,
                    format!("gap_v.{}.{}", d.dof.node, d.dof.dof),
                    u.velocity_unit(&d.dof.dof),
                    Channel::GapV(ix(k)),
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
                Channel::Extra { len: ix(len) },
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
                    Channel::Energy(ix(p)),
                );
            }
        }
        mark_runs(&mut channels);
        columns.shrink_to_fit();
        channels.shrink_to_fit();
        // Each partition's workspace gathers the slots the passes over it gather and the
        // elements whose forces, deformations or dissipations are recorded.
        let recorded = |part: usize| {
            channels.iter().filter_map(move |c| match *c {
                Channel::ElementForce { part: p, slot, .. }
                | Channel::Deformation(p, slot)
                | Channel::Dissipated(p, slot)
                    if p as usize == part =>
                {
                    Some(slot as usize)
                }
                _ => None,
            })
        };
        let workspaces = parts
            .iter()
            .enumerate()
            .map(|(k, p)| p.state.workspace_for(recorded(k)))
            .collect();
        let snapshot = RecorderSnapshot::new(integrator, &channels);
        Self {
            columns,
            channels,
            workspaces,
            scratch: vec![0.0; max_scratch.max(1)],
            snapshot,
            handoff: None,
        }
    }

    /// Split every row and capture at a pipelined runner's hand-off (docs/realtime-pipeline.md):
    /// the columns that read only the partitions `early` selects (their nodal, element, port,
    /// provider and energy columns, and their side of the interface gaps) are filled by
    /// [`Recorder::record_early`] while those partitions are on the calling thread, the rest
    /// (time, multipliers, the scheme's channels, the other partitions, the gaps) by
    /// [`Recorder::record_rest`] after they have left; the row is the one
    /// [`Recorder::record`] gives, bit for bit (the same arithmetic on the same values).
    /// Likewise [`Recorder::capture_early`] and [`Recorder::capture_rest`]. Allocates.
    pub fn split_at_handoff(&mut self, early: &[bool]) {
        let n_gaps = self
            .channels
            .iter()
            .filter(|c| matches!(c, Channel::GapU(_) | Channel::GapV(_)))
            .count();
        let pending = self
            .snapshot
            .parts
            .iter()
            .enumerate()
            .map(|(p, snap)| {
                if early.get(p).copied().unwrap_or(false) {
                    snap.clone()
                } else {
                    PartitionSnapshot::default()
                }
            })
            .collect();
        self.handoff = Some(HandOff {
            early: (0..self.snapshot.parts.len())
                .map(|p| early.get(p).copied().unwrap_or(false))
                .collect(),
            gaps: vec![[f64::NAN; 2]; n_gaps],
            pending,
        });
    }

    /// The columns of the early partitions ([`Recorder::split_at_handoff`]) into `row`, the
    /// others untouched; nothing without a split. Allocation-free.
    pub fn record_early(&mut self, integ: &mut dyn TimeIntegrator, row: &mut [f64]) {
        if let Some(h) = self.handoff.as_mut() {
            fill(
                &self.channels,
                &mut self.workspaces,
                &mut self.scratch,
                &mut Live(integ),
                row,
                Select::Early(&h.early, &mut h.gaps),
            );
        }
    }

    /// The rest of the row after [`Recorder::record_early`] (without a split, the whole row, as
    /// [`Recorder::record`]); the early partitions are not read. Allocation-free.
    pub fn record_rest(&mut self, integ: &mut dyn TimeIntegrator, row: &mut [f64]) {
        let select = match self.handoff.as_ref() {
            Some(h) => Select::Rest(&h.early, &h.gaps),
            None => Select::All,
        };
        fill(
            &self.channels,
            &mut self.workspaces,
            &mut self.scratch,
            &mut Live(integ),
            row,
            select,
        );
    }

    /// The rest of a row's values ([`Recorder::record_rest`]'s columns) copied into the
    /// capture, for [`Recorder::record_rest_captured`] once the integrator's other partitions
    /// may have moved on (a pipelined runner sends the numerical job of the next step before
    /// the row is made). Without a split, the whole capture. Allocation-free.
    pub fn capture_rest_for_row(&mut self, integ: &mut dyn TimeIntegrator) {
        match self.handoff.as_ref() {
            Some(h) => self.snapshot.capture_where(integ, &h.early, false),
            None => self.snapshot.capture(integ),
        }
    }

    /// [`Recorder::record_rest`] from the values [`Recorder::capture_rest_for_row`] copied (the
    /// structure comes from `integ`, whose non-early partitions must be on the calling thread;
    /// the early ones are not read); the same bits as [`Recorder::record_rest`] at the
    /// capture. Allocation-free.
    pub fn record_rest_captured(&mut self, integ: &dyn TimeIntegrator, row: &mut [f64]) {
        let select = match self.handoff.as_ref() {
            Some(h) => Select::Rest(&h.early, &h.gaps),
            None => Select::All,
        };
        fill(
            &self.channels,
            &mut self.workspaces,
            &mut self.scratch,
            &mut Captured {
                snapshot: &self.snapshot,
                integ,
            },
            row,
            select,
        );
    }

    /// [`Recorder::capture`] of the early partitions only, kept aside until
    /// [`Recorder::capture_rest`]; nothing without a split. Allocation-free.
    pub fn capture_early(&mut self, integ: &mut dyn TimeIntegrator) {
        if let Some(h) = self.handoff.as_mut() {
            for (p, snap) in h.pending.iter_mut().enumerate() {
                if h.early[p] {
                    snap.capture(integ, p);
                    snap.capture_energy(integ, p);
                }
            }
        }
    }

    /// The rest of [`Recorder::capture`] after [`Recorder::capture_early`] (the early
    /// partitions are not read; their capture is swapped in); without a split, the whole
    /// capture. Allocation-free.
    pub fn capture_rest(&mut self, integ: &mut dyn TimeIntegrator) {
        match self.handoff.as_mut() {
            Some(h) => {
                self.snapshot.capture_where(integ, &h.early, false);
                for (p, pending) in h.pending.iter_mut().enumerate() {
                    if h.early[p] {
                        std::mem::swap(&mut self.snapshot.parts[p], pending);
                    }
                }
            }
            None => self.snapshot.capture(integ),
        }
    }

    /// The columns, made from the packed names (allocates every name: for the number of
    /// columns use [`Recorder::n_columns`], for a CSV header [`Recorder::header`]).
    pub fn columns(&self) -> Vec<Column> {
        (0..self.columns.len()).map(|i| self.column(i)).collect()
    }

    /// Number of columns (the length of a row).
    pub fn n_columns(&self) -> usize {
        self.columns.len()
    }

    /// Column `i`.
    pub fn column(&self, i: usize) -> Column {
        Column {
            name: self.columns.name(i).to_string(),
            unit: self.columns.unit(i).to_string(),
        }
    }

    /// Name of column `i` (e.g. `u.ns.2.x`).
    pub fn column_name(&self, i: usize) -> &str {
        self.columns.name(i)
    }

    /// Unit of column `i` (e.g. `m`).
    pub fn column_unit(&self, i: usize) -> &str {
        self.columns.unit(i)
    }

    /// The `name[unit]` header of every column ([`Column::header`]).
    pub fn headers(&self) -> Vec<String> {
        (0..self.columns.len())
            .map(|i| format!("{}[{}]", self.columns.name(i), self.columns.unit(i)))
            .collect()
    }

    /// The CSV header line: the `name[unit]` of every column, separated by commas, written
    /// into one string (no per-column strings).
    pub fn header(&self) -> String {
        let mut line = String::with_capacity(self.columns.text.len() + 8 * self.columns.len());
        for i in 0..self.columns.len() {
            if i > 0 {
                line.push(',');
            }
            line.push_str(self.columns.name(i));
            line.push('[');
            line.push_str(self.columns.unit(i));
            line.push(']');
        }
        line
    }

    /// Fill `row` (length of [`Recorder::columns`]) from the integrator's current state.
    /// Allocation-free.
    pub fn record(&mut self, integ: &mut dyn TimeIntegrator, row: &mut [f64]) {
        fill(
            &self.channels,
            &mut self.workspaces,
            &mut self.scratch,
            &mut Live(integ),
            row,
            Select::All,
        );
    }

    /// Copy what [`Recorder::record`] reads from the integrator (time, states, relative
    /// accelerations, the ports' measured forces and channels, multipliers, the scheme's own
    /// channels, energies) into buffers allocated with the recorder, to be turned into a row
    /// later by [`Recorder::record_captured`], which gives the row `record` would have given
    /// now, bit for bit. A few copies instead of a row's evaluation (element forces, ground
    /// motion): the run loop takes one after every step of a lab run, whose failed step would
    /// leave the integrator and the ports inside that step. Element channels are evaluated
    /// from the captured state when the row is made, with the elements' parameters of that
    /// moment (they change only between steps, before the capture). Allocation-free.
    pub fn capture(&mut self, integ: &mut dyn TimeIntegrator) {
        self.snapshot.capture(integ);
    }

    /// Fill `row` from the last [`Recorder::capture`] (the integrator gives only the structure:
    /// partitions, elements, ground motion, interface). Allocation-free.
    pub fn record_captured(&mut self, integ: &dyn TimeIntegrator, row: &mut [f64]) {
        fill(
            &self.channels,
            &mut self.workspaces,
            &mut self.scratch,
            &mut Captured {
                snapshot: &self.snapshot,
                integ,
            },
            row,
            Select::All,
        );
    }
}

/// Set the run length of every nodal and state channel: the number of columns from it on of
/// the same kind and partition whose indices follow one another.
fn mark_runs(channels: &mut [Channel]) {
    for c in (0..channels.len()).rev() {
        let next = channels.get(c + 1).copied();
        let follows = |p: u32, i: u32, q: u32, j: u32| p == q && i.checked_add(1) == Some(j);
        let run = |r: u32| r.checked_add(1).unwrap_or(1);
        channels[c] = match (channels[c], next) {
            (Channel::U(p, i, _), Some(Channel::U(q, j, r))) if follows(p, i, q, j) => {
                Channel::U(p, i, run(r))
            }
            (Channel::V(p, i, _), Some(Channel::V(q, j, r))) if follows(p, i, q, j) => {
                Channel::V(p, i, run(r))
            }
            (Channel::AbsAcc(p, i, _), Some(Channel::AbsAcc(q, j, r))) if follows(p, i, q, j) => {
                Channel::AbsAcc(p, i, run(r))
            }
            (Channel::State(p, i, _), Some(Channel::State(q, j, r))) if follows(p, i, q, j) => {
                Channel::State(p, i, run(r))
            }
            (ch, _) => ch,
        };
    }
}

/// Which of `part`'s DOFs get nodal columns (`u`, `v`, `a_abs`): those `selection` selects,
/// and always every DOF a physical specimen or the interface uses (a partition behind a port
/// without a known specimen map keeps all of its DOFs).
fn kept_dofs(
    selection: Option<&crate::model::OutputSelection>,
    part: &crate::assembly::Partition,
    integrator: &dyn TimeIntegrator,
) -> Vec<bool> {
    let st = &part.state;
    let Some(selection) = selection else {
        return vec![true; st.dofs.len()];
    };
    let mut kept: Vec<bool> = st
        .dofs
        .iter()
        .map(|d| selection.has_dof(d.node, &d.dof))
        .collect();
    if part.physical.is_some() && part.specimen.is_empty() {
        kept.fill(true);
    }
    for (_, map) in &part.specimen {
        for &i in map.iter().flatten() {
            kept[i] = true;
        }
    }
    if let Some(iface) = integrator.interface() {
        for d in &iface.dofs {
            if let Some(i) = st.dofs.iter().position(|x| *x == d.dof) {
                kept[i] = true;
            }
        }
    }
    kept
}

/// Copy `src` into `dst`, reusing its storage (allocation-free when the lengths agree, as they
/// do for an integrator's fixed-size state).
fn copy_into(dst: &mut Vec<f64>, src: &[f64]) {
    if dst.len() == src.len() {
        dst.copy_from_slice(src);
    } else {
        dst.clear();
        dst.extend_from_slice(src);
    }
}

/// The per-partition part of a [`RecorderSnapshot`].
#[derive(Debug, Clone, Default)]
struct PartitionSnapshot {
    state: Vec<f64>,
    /// `Ẏ[n..2n]`.
    acceleration: Vec<f64>,
    /// The port's measured force, when there is a port.
    measured: Option<Vec<f64>>,
    /// The physical substructure's channels (empty when not recorded).
    provider: Vec<f64>,
    /// Whether the partition's energy is recorded, and how it is captured.
    wants_energy: bool,
    energy_source: EnergySource,
    /// The energy ([`EnergySource::Integrator`]) or the laboratory's accumulated part of it
    /// ([`crate::assembly::Partition::held_energy`], for the other sources) when the state was copied; the
    /// state functions are evaluated from the copied state only when a row is made.
    energy: Option<f64>,
}

/// What [`Recorder::record`] reads from an integrator, copied by [`Recorder::capture`].
#[derive(Debug, Clone, Default)]
struct RecorderSnapshot {
    time: f64,
    parts: Vec<PartitionSnapshot>,
    multipliers: Vec<f64>,
    extra: Vec<f64>,
}

impl RecorderSnapshot {
    /// Buffers sized for `integ` and the recorded `channels`.
    fn new(integ: &dyn TimeIntegrator, channels: &[Channel]) -> Self {
        let parts = integ
            .partitions()
            .iter()
            .enumerate()
            .map(|(p, part)| {
                let n = part.state.n_dofs();
                let provider = channels
                    .iter()
                    .find_map(|c| match c {
                        Channel::Provider { part, len } if *part as usize == p && *len > 0 => {
                            Some(*len as usize)
                        }
                        _ => None,
                    })
                    .unwrap_or(0);
                PartitionSnapshot {
                    state: integ.state(p).to_vec(),
                    acceleration: integ.rate(p).get(n..2 * n).unwrap_or(&[]).to_vec(),
                    measured: part.physical.as_ref().map(|port| port.measured().to_vec()),
                    provider: vec![0.0; provider],
                    wants_energy: channels
                        .iter()
                        .any(|c| matches!(c, Channel::Energy(q) if *q as usize == p)),
                    energy_source: integ.energy_source(p),
                    energy: None,
                }
            })
            .collect();
        let n_extra = channels
            .iter()
            .find_map(|c| match c {
                Channel::Extra { len } if *len > 0 => Some(*len as usize),
                _ => None,
            })
            .unwrap_or(0);
        Self {
            time: integ.time(),
            parts,
            multipliers: integ.multipliers().to_vec(),
            extra: vec![0.0; n_extra],
        }
    }

    /// Copy the integrator's current values (in the order [`fill`] reads them: the energies
    /// last). Allocation-free.
    fn capture(&mut self, integ: &mut dyn TimeIntegrator) {
        self.capture_where(integ, &[], true);
    }

    /// [`RecorderSnapshot::capture`] of the partitions `p` with `early[p] == early` (a
    /// partition beyond `early` counts as not early) and of everything the integrator holds
    /// itself (time, multipliers, the scheme's channels) when `early` is false.
    fn capture_where(&mut self, integ: &mut dyn TimeIntegrator, early: &[bool], which: bool) {
        let chosen = |p: usize| early.get(p).copied().unwrap_or(false) == which;
        let all = early.is_empty();
        if all || !which {
            self.time = integ.time();
        }
        for (p, snap) in self.parts.iter_mut().enumerate() {
            if all || chosen(p) {
                snap.capture(integ, p);
            }
        }
        if all || !which {
            copy_into(&mut self.multipliers, integ.multipliers());
            if !self.extra.is_empty() {
                integ.extra_values(&mut self.extra);
            }
        }
        for (p, snap) in self.parts.iter_mut().enumerate() {
            if all || chosen(p) {
                snap.capture_energy(integ, p);
            }
        }
    }
}

impl PartitionSnapshot {
    /// Copy partition `p`'s state, relative accelerations, measured forces and provider
    /// channels. Allocation-free once sized.
    fn capture(&mut self, integ: &dyn TimeIntegrator, p: usize) {
        copy_into(&mut self.state, integ.state(p));
        let part = &integ.partitions()[p];
        let n = part.state.n_dofs();
        copy_into(
            &mut self.acceleration,
            integ.rate(p).get(n..2 * n).unwrap_or(&[]),
        );
        match (part.physical.as_ref(), self.measured.as_mut()) {
            (Some(port), Some(measured)) => {
                copy_into(measured, port.measured());
                if !self.provider.is_empty() {
                    port.substructure().channels(&mut self.provider);
                }
            }
            (Some(port), None) => self.measured = Some(port.measured().to_vec()),
            (None, _) => self.measured = None,
        }
    }

    /// Partition `p`'s energy, or what of it is not a function of the copied state.
    fn capture_energy(&mut self, integ: &mut dyn TimeIntegrator, p: usize) {
        if self.wants_energy {
            // Only what is not a function of the copied state is read now: the energy
            // of a partition is `½ vᵀ M v` plus the elements' stored energies and
            // absorbed-energy states (all functions of the state, integrated with it
            // every step), plus the work the laboratory accumulates at its own ticks.
            self.energy = match self.energy_source {
                EnergySource::Integrator => integ.energy(p),
                EnergySource::PartitionState | EnergySource::Specimen => {
                    integ.partitions()[p].held_energy()
                }
            };
        }
    }
}

/// A [`RecorderSnapshot`] over the integrator's structure.
struct Captured<'a> {
    snapshot: &'a RecorderSnapshot,
    integ: &'a dyn TimeIntegrator,
}

impl RowSource for Captured<'_> {
    fn integrator(&self) -> &dyn TimeIntegrator {
        self.integ
    }
    fn time(&self) -> f64 {
        self.snapshot.time
    }
    fn state(&self, p: usize) -> &[f64] {
        &self.snapshot.parts[p].state
    }
    fn accelerations(&self, p: usize) -> &[f64] {
        &self.snapshot.parts[p].acceleration
    }
    fn measured(&self, p: usize, i: usize) -> f64 {
        self.snapshot.parts[p]
            .measured
            .as_ref()
            .map_or(f64::NAN, |m| m[i])
    }
    fn provider(&self, p: usize, out: &mut [f64]) -> bool {
        let snap = &self.snapshot.parts[p];
        if snap.measured.is_none() {
            return false;
        }
        out.copy_from_slice(&snap.provider[..out.len()]);
        true
    }
    fn multipliers(&self) -> &[f64] {
        &self.snapshot.multipliers
    }
    fn energy(&mut self, p: usize, ws: &mut ElementWorkspace) -> Option<f64> {
        let snap = &self.snapshot.parts[p];
        match snap.energy_source {
            EnergySource::Integrator | EnergySource::Specimen => snap.energy,
            EnergySource::PartitionState => {
                self.integ.partitions()[p].energy_at(&snap.state, snap.energy, ws)
            }
        }
    }
    fn extra(&self, out: &mut [f64]) {
        out.copy_from_slice(&self.snapshot.extra[..out.len()]);
    }
}

/// Where a row's values are read: the integrator ([`Live`]) or a [`RecorderSnapshot`]
/// ([`Captured`]). The structure (partitions, elements, ground motion, interface) always
/// comes from the integrator.
trait RowSource {
    fn integrator(&self) -> &dyn TimeIntegrator;
    fn time(&self) -> f64;
    fn state(&self, p: usize) -> &[f64];
    /// `Ẏ[n..2n]` of partition `p` (the relative accelerations of its DOFs).
    fn accelerations(&self, p: usize) -> &[f64];
    /// The port's measured force on DOF `i` (NaN without a port).
    fn measured(&self, p: usize, i: usize) -> f64;
    /// The physical substructure's channels; `false` without one.
    fn provider(&self, p: usize, out: &mut [f64]) -> bool;
    fn multipliers(&self) -> &[f64];
    /// The energy of partition `p`, with the recorder's scratch `ws` of that partition.
    fn energy(&mut self, p: usize, ws: &mut ElementWorkspace) -> Option<f64>;
    fn extra(&self, out: &mut [f64]);
}

/// The integrator's current state.
struct Live<'a>(&'a mut dyn TimeIntegrator);

impl RowSource for Live<'_> {
    fn integrator(&self) -> &dyn TimeIntegrator {
        &*self.0
    }
    fn time(&self) -> f64 {
        self.0.time()
    }
    fn state(&self, p: usize) -> &[f64] {
        self.0.state(p)
    }
    fn accelerations(&self, p: usize) -> &[f64] {
        let n = self.0.partitions()[p].state.n_dofs();
        &self.0.rate(p)[n..2 * n]
    }
    fn measured(&self, p: usize, i: usize) -> f64 {
        self.0.partitions()[p]
            .physical
            .as_ref()
            .map_or(f64::NAN, |port| port.measured()[i])
    }
    fn provider(&self, p: usize, out: &mut [f64]) -> bool {
        match self.0.partitions()[p].physical.as_ref() {
            Some(port) => {
                port.substructure().channels(out);
                true
            }
            None => false,
        }
    }
    fn multipliers(&self) -> &[f64] {
        self.0.multipliers()
    }
    fn energy(&mut self, p: usize, _ws: &mut ElementWorkspace) -> Option<f64> {
        self.0.energy(p)
    }
    fn extra(&self, out: &mut [f64]) {
        self.0.extra_values(out)
    }
}

/// Which columns [`fill`] fills: all, or one side of a hand-off ([`HandOff`]): the early
/// partitions' columns (and their sides of the gaps, kept), or the rest.
enum Select<'a> {
    All,
    Early(&'a [bool], &'a mut [[f64; 2]]),
    Rest(&'a [bool], &'a [[f64; 2]]),
}

/// The partition a channel reads, if it reads one only.
fn owner(ch: Channel) -> Option<usize> {
    match ch {
        Channel::U(p, ..)
        | Channel::V(p, ..)
        | Channel::AbsAcc(p, ..)
        | Channel::State(p, ..)
        | Channel::Measured(p, _)
        | Channel::Deformation(p, _)
        | Channel::Dissipated(p, _)
        | Channel::Energy(p)
        | Channel::ElementForce { part: p, .. }
        | Channel::Provider { part: p, .. } => Some(p as usize),
        Channel::Time
        | Channel::Lambda(_)
        | Channel::GapU(_)
        | Channel::GapV(_)
        | Channel::Extra { .. } => None,
    }
}

/// Fill `row` from `src`, a run of columns at a time (the columns `select` selects; a run
/// reads one partition, so it is taken or skipped whole, column by column). Allocation-free.
fn fill<S: RowSource>(
    channels: &[Channel],
    workspaces: &mut [ElementWorkspace],
    scratch: &mut [f64],
    src: &mut S,
    row: &mut [f64],
    mut select: Select<'_>,
) {
    let t = src.time();
    let mut c = 0;
    let mut gap = 0;
    while c < channels.len() {
        let ch = channels[c];
        let at = |i: u32| i as usize;
        let early = |m: &[bool]| owner(ch).is_some_and(|p| m.get(p).copied().unwrap_or(false));
        let skip = match &select {
            Select::All => false,
            Select::Early(m, _) => !early(m) && !matches!(ch, Channel::GapU(_) | Channel::GapV(_)),
            Select::Rest(m, _) => early(m),
        };
        if skip {
            c += 1;
            continue;
        }
        // Columns written by this channel (a run, an element's group, or one).
        let mut width = 1;
        match ch {
            Channel::Time => row[c] = t,
            Channel::U(p, i, run) | Channel::State(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                row[c..c + run].copy_from_slice(&src.state(p)[i..i + run]);
                width = run;
            }
            Channel::V(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                let n = src.integrator().partitions()[p].state.n_dofs();
                row[c..c + run].copy_from_slice(&src.state(p)[n + i..n + i + run]);
                width = run;
            }
            Channel::AbsAcc(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                let st = &src.integrator().partitions()[p].state;
                let relative = &src.accelerations(p)[i..i + run];
                // The ground motion of a run's DOFs is read once for each motion it uses
                // (a run of one direction's DOFs uses one).
                let mut ground: Option<(usize, f64)> = None;
                for (k, (out, a)) in row[c..c + run].iter_mut().zip(relative).enumerate() {
                    let ag = match st.ground_dof[i + k] {
                        None => 0.0,
                        Some(g) => match ground {
                            Some((h, value)) if h == g => value,
                            _ => {
                                let value = st.ground_motion(g, t);
                                ground = Some((g, value));
                                value
                            }
                        },
                    };
                    *out = a + ag;
                }
                width = run;
            }
            Channel::ElementForce { part, slot, len } => {
                let (part, slot, len) = (at(part), at(slot), at(len));
                if len > 0 {
                    let st = &src.integrator().partitions()[part].state;
                    let y = src.state(part);
                    st.element_force(slot, y, &mut row[c..c + len], &mut workspaces[part]);
                    width = len;
                }
            }
            Channel::Measured(p, i) => row[c] = src.measured(at(p), at(i)),
            Channel::Deformation(p, slot) | Channel::Dissipated(p, slot) => {
                let (p, slot) = (at(p), at(slot));
                let st = &src.integrator().partitions()[p].state;
                let (d, e) =
                    st.element_deformation_and_dissipation(slot, src.state(p), &mut workspaces[p]);
                let v = if matches!(ch, Channel::Deformation(..)) {
                    d
                } else {
                    e
                };
                row[c] = v.unwrap_or(f64::NAN);
            }
            Channel::Provider { part, len } => {
                let (part, len) = (at(part), at(len));
                if len > 0 && src.provider(part, &mut scratch[..len]) {
                    row[c + 1 - len..=c].copy_from_slice(&scratch[..len]);
                }
            }
            Channel::Lambda(k) => row[c] = src.multipliers()[at(k)],
            Channel::GapU(k) | Channel::GapV(k) => {
                let iface = src.integrator().interface().expect("interface");
                let d = &iface.dofs[at(k)];
                let off = if matches!(ch, Channel::GapU(_)) { 0 } else { 1 };
                let val = |p: usize| {
                    let st = &src.integrator().partitions()[p].state;
                    let n = st.n_dofs();
                    let i = st.dofs.iter().position(|x| *x == d.dof).unwrap_or(0);
                    src.state(p)[off * n + i]
                };
                match &mut select {
                    Select::All => row[c] = val(d.plus) - val(d.minus),
                    Select::Early(m, kept) => {
                        if m.get(d.plus).copied().unwrap_or(false) {
                            kept[gap][0] = val(d.plus);
                        }
                        if m.get(d.minus).copied().unwrap_or(false) {
                            kept[gap][1] = val(d.minus);
                        }
                    }
                    Select::Rest(m, kept) => {
                        let side = |p: usize, i: usize| {
                            if m.get(p).copied().unwrap_or(false) {
                                kept[gap][i]
                            } else {
                                val(p)
                            }
                        };
                        row[c] = side(d.plus, 0) - side(d.minus, 1);
                    }
                }
                gap += 1;
            }
            Channel::Energy(p) => {
                let p = at(p);
                row[c] = src.energy(p, &mut workspaces[p]).unwrap_or(f64::NAN)
            }
            Channel::Extra { len } => {
                let len = at(len);
                if len > 0 {
                    src.extra(&mut scratch[..len]);
                    row[c + 1 - len..=c].copy_from_slice(&scratch[..len]);
                }
            }
        }
        c += width;
    }
}
