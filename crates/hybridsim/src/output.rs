//! Recorded channels: names with units, filled from an integrator without allocating.

use crate::assembly::{ElementWorkspace, LentStiffness};
use crate::elements::{ConstantMatrices, DofMap, Quantity};
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

/// Where the values of a run of recorded columns come from: one entry per run of columns
/// of the same kind (issue 20: one 16-byte channel per column and the names of all columns
/// held for the whole run were 31 MB of a 10⁵-DOF chain's 600 001 columns; the entries are
/// now a few per partition and element, and the names are made when asked for,
/// [`Recorder::for_each_column`]).
///
/// The nodal, state and port channels hold, third, the length of the run of columns of the
/// same kind and partition with consecutive indices that starts at them (at least 1), so that
/// a row copies each run as a slice instead of matching every column (issue 20: the match per
/// column was a quarter of the recorder's time on a 10³-DOF frame).
#[derive(Debug, Clone, Copy)]
enum Channel {
    Time,
    U(u32, u32, u32),
    V(u32, u32, u32),
    AbsAcc(u32, u32, u32),
    State(u32, u32, u32),
    Lambda(u32),
    GapU(u32),
    GapV(u32),
    /// The forces of `slots` elements, `slot`, `slot + stride`, …, one column an element DOF,
    /// element after element (a stride: a chain's springs are every other slot, between its
    /// masses, and one channel a spring was 2.0 MB of a 10⁵-DOF chain's recorder, issue 20).
    ElementForce {
        part: u32,
        slot: u32,
        slots: u16,
        stride: u16,
    },
    Measured(u32, u32, u32),
    Deformation(u32, u32),
    Dissipated(u32, u32),
    /// The physical substructure's `len` channels.
    Provider {
        part: u32,
        len: u32,
    },
    Energy(u32),
    /// The integrator's own `len` channels ([`TimeIntegrator::extra_channels`]).
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

/// Columns of element `slot`'s forces (one an element DOF).
fn force_width(st: &crate::assembly::StateSpace, slot: usize) -> usize {
    st.slots[slot].element.dofs().len()
}

/// The channels of a recorder, laid out column after column: a channel that continues the
/// run of the last one (same kind and partition, the next index) lengthens it.
#[derive(Default)]
struct Layout {
    channels: Vec<Channel>,
    /// The first column of each channel.
    starts: Vec<u32>,
    columns: usize,
}

impl Layout {
    /// Append `ch` (a run of one, or a group of `width` columns).
    fn push(&mut self, ch: Channel, width: usize) {
        let start = self.columns;
        self.columns += width;
        let follows = |p: u32, i: u32, run: u32, q: u32, j: u32| {
            p == q && i.checked_add(run) == Some(j) && run < u32::MAX
        };
        if let Some(last) = self.channels.last_mut() {
            let merged = match (*last, ch) {
                (Channel::U(p, i, r), Channel::U(q, j, 1)) if follows(p, i, r, q, j) => {
                    Some(Channel::U(p, i, r + 1))
                }
                (Channel::V(p, i, r), Channel::V(q, j, 1)) if follows(p, i, r, q, j) => {
                    Some(Channel::V(p, i, r + 1))
                }
                (Channel::AbsAcc(p, i, r), Channel::AbsAcc(q, j, 1)) if follows(p, i, r, q, j) => {
                    Some(Channel::AbsAcc(p, i, r + 1))
                }
                (Channel::State(p, i, r), Channel::State(q, j, 1)) if follows(p, i, r, q, j) => {
                    Some(Channel::State(p, i, r + 1))
                }
                (Channel::Measured(p, i, r), Channel::Measured(q, j, 1))
                    if follows(p, i, r, q, j) =>
                {
                    Some(Channel::Measured(p, i, r + 1))
                }
                (
                    Channel::ElementForce {
                        part,
                        slot,
                        slots,
                        stride,
                    },
                    Channel::ElementForce {
                        part: q,
                        slot: j,
                        slots: 1,
                        ..
                    },
                ) if part == q && slots < u16::MAX => {
                    // The next element of the run: one stride on (the second sets the stride).
                    let next = u64::from(slot) + u64::from(slots) * u64::from(stride);
                    let gap = u64::from(j).checked_sub(u64::from(slot));
                    match gap.and_then(|g| u16::try_from(g).ok()) {
                        Some(g) if slots == 1 && g > 0 => Some(Channel::ElementForce {
                            part,
                            slot,
                            slots: 2,
                            stride: g,
                        }),
                        _ if slots > 1 && u64::from(j) == next => Some(Channel::ElementForce {
                            part,
                            slot,
                            slots: slots + 1,
                            stride,
                        }),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(m) = merged {
                *last = m;
                return;
            }
        }
        self.channels.push(ch);
        self.starts.push(ix(start));
    }
}

/// Fills rows of recorded values; column layout fixed at construction. The columns' names
/// are not held: they are made from the channels, the integrator's partitions (DOFs,
/// elements, interface) and the model's units when asked for ([`Recorder::for_each_column`],
/// [`Recorder::header`], [`Recorder::columns`]).
pub struct Recorder {
    units: Units,
    channels: Vec<Channel>,
    /// The first column of each channel (a channel of partitions away from the calling thread
    /// is skipped without reading them, [`Recorder::split_at_handoff`]).
    starts: Vec<u32>,
    n_columns: usize,
    workspaces: Vec<ElementWorkspace>,
    scratch: Vec<f64>,
    /// The recorded linear elements' forces through one kernel ([`LinearForces`]).
    linear_forces: LinearForces,
    /// The buffers of [`Recorder::capture`], sized when first needed
    /// ([`Recorder::prepare_capture`]): a run without a laboratory or a pipelined runner never
    /// captures, and the copies of the state and accelerations were 2.4 MB of a 10⁵-DOF
    /// chain's run (issue 20). Sized with the recorder when a partition has a physical port.
    snapshot: Option<RecorderSnapshot>,
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

/// The recorded forces of linear elements through one kernel (issue 20, session 26): the
/// elements of the force channels, in the order [`fill`] visits them, in runs of elements
/// with the same constant matrices, copied once into a table of the distinct ones (a frame's
/// members have a few sections: the 99 990-DOF frame's 63 630 members have two). A row then
/// reads each element's DOF map and the matrices from the table, without the three virtual
/// calls, the element's heap object and its matrices' that [`StateSpace::element_force`]
/// reads per element (the per-element calls were most of the stepping thread's share of a
/// recorded row at 10⁵ DOFs). The same bits: the same kernel
/// ([`ConstantMatrices::force_at`]) over the same values, and the same fall-back. The
/// energy column of a partition takes its linear elements' stored energy from the same table,
/// or from their forces in the row where it holds them ([`EnergyRun`]), summed over the slots
/// in the order of [`Partition::energy_at`].
///
/// [`Partition::energy_at`]: crate::assembly::Partition::energy_at
/// [`StateSpace::element_force`]: crate::assembly::StateSpace::element_force
#[derive(Debug, Default)]
struct LinearForces {
    /// Runs `(elements, matrices)`: `elements` consecutive recorded elements whose forces
    /// come from `matrices[matrices]`, or through [`crate::assembly::StateSpace::element_force`]
    /// ([`LinearForces::BY_ELEMENT`]).
    runs: Vec<(u32, u32)>,
    /// The distinct matrices: the element DOFs `n`, where `K` (`n²` values, by columns) starts
    /// in `values`, and where `C` does ([`LinearForces::BY_ELEMENT`]: no damping).
    matrices: Vec<StoredMatrices>,
    values: Vec<f64>,
    /// Per partition whose energy is recorded: runs over all of its slots, for the stored
    /// energy `½ uᵀ K u` of its linear elements ([`Partition::energy_at_with`]; empty for the
    /// others).
    ///
    /// [`Partition::energy_at_with`]: crate::assembly::Partition::energy_at_with
    energy: Vec<Vec<EnergyRun>>,
    /// Per partition: the residual's plan version and the number of slots when the table
    /// was made; the table serves the partition only while both are unchanged (an element
    /// moved to its law by a parameter change goes through its law from then on).
    made_for: Vec<(u64, usize)>,
}

/// `count` consecutive slots of a partition whose stored energy is taken from matrices
/// `matrices` of a [`LinearForces`] table ([`LinearForces::BY_ELEMENT`]: asked of the slot),
/// and, when `column` is not [`LinearForces::BY_ELEMENT`], from their forces `K u` in the row
/// (elements without damping whose forces the table evaluates: `column` is the first
/// slot's first force column, the next slot's `n` columns on; session 21's plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EnergyRun {
    count: u32,
    matrices: u32,
    column: u32,
}

/// The place of a slot in a partition's [`EnergyRun`]s while its energy is summed.
struct EnergyCursor<'a> {
    runs: std::slice::Iter<'a, EnergyRun>,
    /// The current run and the slots left in it.
    run: EnergyRun,
    left: u32,
}

impl EnergyCursor<'_> {
    /// The next slot's matrices and the first of its force columns in the row, if any.
    #[inline]
    fn next(&mut self, n_of: impl Fn(u32) -> usize) -> Option<(u32, Option<usize>)> {
        while self.left == 0 {
            self.run = *self.runs.next()?;
            self.left = self.run.count;
        }
        let k = self.run.count - self.left;
        self.left -= 1;
        let m = self.run.matrices;
        if m == LinearForces::BY_ELEMENT {
            return None;
        }
        let column = (self.run.column != LinearForces::BY_ELEMENT)
            .then(|| self.run.column as usize + k as usize * n_of(m));
        Some((m, column))
    }
}

/// The matrices already in a [`LinearForces`] table, by their bits (made with the table).
#[derive(Default)]
struct Known {
    indices: std::collections::HashMap<Vec<u64>, u32>,
    key: Vec<u64>,
}

/// One entry of [`LinearForces::matrices`].
#[derive(Debug, Clone, Copy)]
struct StoredMatrices {
    n: u32,
    k: u32,
    c: u32,
}

/// The slots of partition `p` (state space `st`) whose forces `channels` (of first columns
/// `starts`) record, in increasing order (the recorder lays a partition's elements out in
/// slot order), each with its first force column.
fn recorded_slots<'a>(
    channels: &'a [Channel],
    starts: &'a [u32],
    st: &'a crate::assembly::StateSpace,
    p: usize,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    channels
        .iter()
        .zip(starts)
        .filter_map(move |(ch, &start)| match *ch {
            Channel::ElementForce {
                part,
                slot,
                slots,
                stride,
            } if part as usize == p => Some((slot as usize, slots, stride as usize, start)),
            _ => None,
        })
        .flat_map(move |(slot, slots, stride, start)| {
            (0..slots as usize).scan(start as usize, move |column, k| {
                let s = slot + k * stride;
                let first = *column;
                *column += st.slots[s].n_dofs();
                Some((s, first))
            })
        })
}

/// The place of an element in [`LinearForces::runs`] while a row is filled.
struct RunCursor<'a> {
    runs: std::slice::Iter<'a, (u32, u32)>,
    /// Elements left in the current run, and its matrices.
    left: u32,
    matrices: u32,
}

impl RunCursor<'_> {
    /// The matrices of the next element (`None`: through its law or its own matrices).
    #[inline]
    fn next(&mut self) -> Option<u32> {
        while self.left == 0 {
            match self.runs.next() {
                Some(&(count, matrices)) => (self.left, self.matrices) = (count, matrices),
                None => return None,
            }
        }
        self.left -= 1;
        (self.matrices != LinearForces::BY_ELEMENT).then_some(self.matrices)
    }

    /// Pass `count` elements.
    fn skip(&mut self, mut count: usize) {
        while count > 0 {
            if self.left == 0 {
                match self.runs.next() {
                    Some(&(n, matrices)) => (self.left, self.matrices) = (n, matrices),
                    None => return,
                }
                continue;
            }
            let step = count.min(self.left as usize);
            self.left -= step as u32;
            count -= step;
        }
    }
}

impl LinearForces {
    /// No table entry: the element's forces through
    /// [`crate::assembly::StateSpace::element_force`].
    const BY_ELEMENT: u32 = u32::MAX;
    /// The most values the table holds (1 MiB): the elements whose matrices come after are
    /// evaluated one by one, as before, so that a model of many distinct members does not
    /// hold a second copy of its matrices.
    const MAX_VALUES: usize = 1 << 17;

    /// The table for the force channels among `channels` (of first columns `starts`) of
    /// `integ`'s partitions.
    fn new(integ: &dyn TimeIntegrator, channels: &[Channel], starts: &[u32]) -> Self {
        let parts = integ.partitions();
        let mut table = LinearForces {
            made_for: parts
                .iter()
                .map(|p| (p.state.plan_version(), p.state.slots.len()))
                .collect(),
            ..Default::default()
        };
        let mut known = Known::default();
        let wants_energy = |p: usize| {
            channels
                .iter()
                .any(|c| matches!(c, Channel::Energy(q) if *q as usize == p))
        };
        for ch in channels {
            let Channel::ElementForce {
                part,
                slot,
                slots,
                stride,
            } = *ch
            else {
                continue;
            };
            let st = &parts[part as usize].state;
            for s in (0..slots as usize).map(|k| slot as usize + k * stride as usize) {
                let element = &st.slots[s];
                let index = if element.forces_from_constant_matrices() {
                    table.index(element, &mut known)
                } else {
                    Self::BY_ELEMENT
                };
                Self::extend(&mut table.runs, index);
            }
        }
        for (p, part) in parts.iter().enumerate() {
            if !wants_energy(p) {
                table.energy.push(Vec::new());
                continue;
            }
            let mut runs: Vec<EnergyRun> = Vec::new();
            // The recorded slots (in increasing order) and their first force columns.
            let mut recorded = recorded_slots(channels, starts, &part.state, p).peekable();
            for (s, element) in part.state.slots.iter().enumerate() {
                let n = element.n_dofs();
                let mut first_column = None;
                while let Some(&(r, c)) = recorded.peek() {
                    if r > s {
                        break;
                    }
                    if r == s {
                        first_column = Some(c);
                    }
                    recorded.next();
                }
                // Only the sizes `ConstantMatrices::stored_energy_at` serves.
                let matrices = if element.stores_energy()
                    && element.energy_from_constant_matrices()
                    && matches!(n, 1 | 2 | 3 | 4 | 6 | 8 | 12)
                {
                    table.index(element, &mut known)
                } else {
                    Self::BY_ELEMENT
                };
                // From the row where the table evaluated the forces `K u` (no damping).
                let column = match first_column {
                    Some(c)
                        if matrices != Self::BY_ELEMENT
                            && element.forces_from_constant_matrices()
                            && table.matrices[matrices as usize].c == Self::BY_ELEMENT =>
                    {
                        ix(c)
                    }
                    _ => Self::BY_ELEMENT,
                };
                // A run goes on with the same matrices and, from the row, the next columns.
                let continues = |last: &EnergyRun| {
                    last.matrices == matrices
                        && last.count < u32::MAX
                        && match (last.column, column) {
                            (Self::BY_ELEMENT, Self::BY_ELEMENT) => true,
                            (Self::BY_ELEMENT, _) | (_, Self::BY_ELEMENT) => false,
                            (a, b) => {
                                u64::from(a) + u64::from(last.count) * n as u64 == u64::from(b)
                            }
                        }
                };
                match runs.last_mut() {
                    Some(last) if continues(last) => last.count += 1,
                    _ => runs.push(EnergyRun {
                        count: 1,
                        matrices,
                        column,
                    }),
                }
            }
            runs.shrink_to_fit();
            table.energy.push(runs);
        }
        table.runs.shrink_to_fit();
        table.matrices.shrink_to_fit();
        table.values.shrink_to_fit();
        table
    }

    /// One more element of matrices `index` at the end of `runs`.
    fn extend(runs: &mut Vec<(u32, u32)>, index: u32) {
        match runs.last_mut() {
            Some((count, last)) if *last == index && *count < u32::MAX => *count += 1,
            _ => runs.push((1, index)),
        }
    }

    /// The table's index of the matrices `element` lends (stored if new and the table has
    /// room), or [`LinearForces::BY_ELEMENT`].
    fn index(&mut self, element: &crate::assembly::ElementSlot, known: &mut Known) -> u32 {
        let n = element.n_dofs();
        let Some(m) = element
            .element
            .constant_matrices()
            .filter(|m| m.k.len() == n * n && m.c.is_none_or(|c| c.len() == n * n))
        else {
            return Self::BY_ELEMENT;
        };
        known.key.clear();
        known.key.push(n as u64);
        known.key.extend(m.k.iter().map(|v| v.to_bits()));
        if let Some(c) = m.c {
            known.key.push(1);
            known.key.extend(c.iter().map(|v| v.to_bits()));
        }
        if let Some(&i) = known.indices.get(&known.key) {
            return i;
        }
        let index = self.store(&m, n);
        if index != Self::BY_ELEMENT {
            known.indices.insert(known.key.clone(), index);
        }
        index
    }

    /// Store matrices `m` of an element of `n` DOFs if the table has room.
    fn store(&mut self, m: &ConstantMatrices<'_>, n: usize) -> u32 {
        let needed = m.k.len() + m.c.map_or(0, <[f64]>::len);
        if self.values.len() + needed > Self::MAX_VALUES {
            return Self::BY_ELEMENT;
        }
        let k = ix(self.values.len());
        self.values.extend_from_slice(m.k);
        let c = match m.c {
            Some(c) => {
                let at = ix(self.values.len());
                self.values.extend_from_slice(c);
                at
            }
            None => Self::BY_ELEMENT,
        };
        let index = ix(self.matrices.len());
        self.matrices.push(StoredMatrices { n: ix(n), k, c });
        index
    }

    /// A cursor at the first recorded element.
    fn cursor(&self) -> RunCursor<'_> {
        RunCursor {
            runs: self.runs.iter(),
            left: 0,
            matrices: Self::BY_ELEMENT,
        }
    }

    /// Partition `part`'s energy at state `y` with `held` ([`Partition::energy_at`]), the
    /// stored energy of its linear elements from the table when it serves the partition,
    /// and from their forces in `row` (filled at the same state) where it has them.
    ///
    /// [`Partition::energy_at`]: crate::assembly::Partition::energy_at
    fn energy_at(
        &self,
        part: usize,
        partition: &crate::assembly::Partition,
        y: &[f64],
        held: Option<f64>,
        ws: &mut ElementWorkspace,
        row: &[f64],
    ) -> Option<f64> {
        let runs = self.energy.get(part).map_or(&[][..], Vec::as_slice);
        if runs.is_empty() || !self.serves(part, &partition.state) {
            return partition.energy_at(y, held, ws);
        }
        let mut cursor = EnergyCursor {
            runs: runs.iter(),
            run: EnergyRun {
                count: 0,
                matrices: Self::BY_ELEMENT,
                column: Self::BY_ELEMENT,
            },
            left: 0,
        };
        let n_of = |m: u32| self.matrices[m as usize].n as usize;
        partition.energy_at_with(y, held, ws, || {
            let (m, column) = cursor.next(n_of)?;
            Some(match column {
                Some(c) => LentStiffness::Forces(&row[c..c + n_of(m)]),
                None => {
                    let (matrices, n) = self.matrices(m);
                    LentStiffness::Matrices(matrices, n)
                }
            })
        })
    }

    /// Whether the table serves partition `part`, whose state space is `st` (unchanged since
    /// the table was made).
    #[inline]
    fn serves(&self, part: usize, st: &crate::assembly::StateSpace) -> bool {
        self.made_for.get(part) == Some(&(st.plan_version(), st.slots.len()))
    }

    /// Matrices `index` of the table and their element DOFs.
    #[inline]
    fn matrices(&self, index: u32) -> (ConstantMatrices<'_>, usize) {
        let m = self.matrices[index as usize];
        let n = m.n as usize;
        let k = &self.values[m.k as usize..][..n * n];
        let c = (m.c != Self::BY_ELEMENT).then(|| &self.values[m.c as usize..][..n * n]);
        (ConstantMatrices { k, c }, n)
    }
}

/// Whether the element of `slot` is a lumped mass (recorded without force columns).
fn is_mass(slot: &crate::assembly::ElementSlot) -> bool {
    let e = &slot.element;
    e.mass().is_some()
        && e.linear_stiffness().is_some_and(|k| k.amax() == 0.0)
        && e.kind() == "mass"
}

impl Recorder {
    /// Lay out the columns for `model` integrated by `integrator`.
    pub fn new(model: &Model, integrator: &dyn TimeIntegrator) -> Self {
        let mut layout = Layout::default();
        layout.push(Channel::Time, 1);
        let parts = integrator.partitions();
        let lookup = model.output.selection.as_ref().map(SelectionLookup::new);
        let selection = lookup.as_ref();
        let mut max_scratch = 0;
        for (p, part) in parts.iter().enumerate() {
            let st = &part.state;
            let kept = kept_dofs(selection, part, integrator);
            let dofs = || (0..st.dofs.len()).filter(|i| kept[*i]);
            for i in dofs() {
                layout.push(Channel::U(ix(p), ix(i), 1), 1);
            }
            for i in dofs() {
                layout.push(Channel::V(ix(p), ix(i), 1), 1);
            }
            for i in dofs() {
                layout.push(Channel::AbsAcc(ix(p), ix(i), 1), 1);
            }
            drop(kept);
            if model.output.elements {
                for (si, slot) in st.slots.iter().enumerate() {
                    let e = &slot.element;
                    if is_mass(slot) || !selection.is_none_or(|s| s.has_element_slot(slot.name())) {
                        continue;
                    }
                    let n = e.dofs().len();
                    if n > 0 {
                        let ch = Channel::ElementForce {
                            part: ix(p),
                            slot: ix(si),
                            slots: 1,
                            stride: 1,
                        };
                        layout.push(ch, n);
                    }
                    if e.n_states() > 0 {
                        let zeros = vec![0.0; n];
                        if e.deformation(&zeros).is_some() {
                            layout.push(Channel::Deformation(ix(p), ix(si)), 1);
                        }
                        let zs = vec![0.0; e.n_states()];
                        if e.dissipated_energy(&zeros, &zs).is_some() {
                            layout.push(Channel::Dissipated(ix(p), ix(si)), 1);
                        }
                    }
                    for j in 0..e.state_names().len() {
                        let i = 2 * st.n_dofs() + slot.state_offset() + j;
                        layout.push(Channel::State(ix(p), ix(i), 1), 1);
                    }
                }
            }
            if let Some(pr) = part.physical.as_ref().map(|p| p.substructure()) {
                for i in 0..st.dofs.len() {
                    layout.push(Channel::Measured(ix(p), ix(i), 1), 1);
                }
                if model.output.elements {
                    let n = pr.channel_names().len();
                    if n > 0 {
                        let ch = Channel::Provider {
                            part: ix(p),
                            len: ix(n),
                        };
                        layout.push(ch, n);
                    }
                    max_scratch = max_scratch.max(n);
                }
            }
        }
        if let Some(iface) = integrator.interface() {
            for k in 0..iface.dofs.len() {
                layout.push(Channel::Lambda(ix(k)), 1);
            }
            for k in 0..iface.dofs.len() {
                layout.push(Channel::GapU(ix(k)), 1);
            }
            for k in 0..iface.dofs.len() {
                layout.push(Channel::GapV(ix(k)), 1);
            }
        }
        let n_extra = integrator.extra_channels().len();
        if n_extra > 0 {
            layout.push(Channel::Extra { len: ix(n_extra) }, n_extra);
        }
        max_scratch = max_scratch.max(n_extra);
        if model.output.energy {
            for p in 0..parts.len() {
                layout.push(Channel::Energy(ix(p)), 1);
            }
        }
        let Layout {
            mut channels,
            mut starts,
            columns: n_columns,
        } = layout;
        channels.shrink_to_fit();
        starts.shrink_to_fit();
        // Each partition's workspace gathers the slots the passes over it gather and the
        // elements whose forces, deformations or dissipations are recorded.
        let recorded = |part: usize| {
            channels.iter().flat_map(move |c| {
                let (first, count, stride) = match *c {
                    Channel::ElementForce {
                        part: p,
                        slot,
                        slots,
                        stride,
                    } if p as usize == part => (slot as usize, slots as usize, stride as usize),
                    Channel::Deformation(p, slot) | Channel::Dissipated(p, slot)
                        if p as usize == part =>
                    {
                        (slot as usize, 1, 1)
                    }
                    _ => (0, 0, 1),
                };
                (0..count).map(move |k| first + k * stride)
            })
        };
        let workspaces = parts
            .iter()
            .enumerate()
            .map(|(k, p)| p.state.recording_workspace_for(recorded(k)))
            .collect();
        let snapshot = parts
            .iter()
            .any(|p| p.physical.is_some())
            .then(|| RecorderSnapshot::new(integrator, &channels));
        let linear_forces = LinearForces::new(integrator, &channels, &starts);
        Self {
            units: model.units.clone(),
            channels,
            starts,
            n_columns,
            workspaces,
            scratch: vec![0.0; max_scratch.max(1)],
            linear_forces,
            snapshot,
            handoff: None,
        }
    }

    /// Call `f` with the name and the unit of every column, in order (e.g. `u.ns.2.x`, `m`),
    /// made from the channels, `integrator`'s partitions (the one the recorder was made for)
    /// and the model's units; one name at a time, in a reused buffer.
    pub fn for_each_column(&self, integrator: &dyn TimeIntegrator, mut f: impl FnMut(&str, &str)) {
        use std::fmt::Write;
        let u = &self.units;
        let parts = integrator.partitions();
        let mut name = String::new();
        let put = |name: &mut String, unit: &str, f: &mut dyn FnMut(&str, &str)| {
            f(name, unit);
            name.clear();
        };
        // The slot holding extra state `k` of a partition (searched forward from the last one
        // found: the states are recorded in slot order, so the search is linear in all).
        let mut hint = 0usize;
        for &ch in &self.channels {
            match ch {
                Channel::Time => {
                    name.push_str("time");
                    put(&mut name, &u.time, &mut f)
                }
                Channel::U(p, i, run)
                | Channel::V(p, i, run)
                | Channel::AbsAcc(p, i, run)
                | Channel::Measured(p, i, run) => {
                    let st = &parts[p as usize].state;
                    let x = &st.name;
                    let (kind, unit): (&str, fn(&Units, &str) -> String) = match ch {
                        Channel::U(..) => ("u", Units::displacement_unit),
                        Channel::V(..) => ("v", Units::velocity_unit),
                        Channel::AbsAcc(..) => ("a_abs", Units::acceleration_unit),
                        _ => ("measured", Units::force_unit),
                    };
                    for d in &st.dofs[i as usize..(i + run) as usize] {
                        let _ = write!(name, "{kind}.{x}.{}.{}", d.node, d.dof);
                        put(&mut name, &unit(u, &d.dof), &mut f);
                    }
                }
                Channel::ElementForce {
                    part,
                    slot,
                    slots,
                    stride,
                } => {
                    let st = &parts[part as usize].state;
                    let run = (0..slots as usize).map(|k| slot as usize + k * stride as usize);
                    for s in run.map(|k| &st.slots[k]) {
                        for d in s.element.dofs() {
                            let _ = write!(name, "force.{}.{}.{}", s.name(), d.node, d.dof);
                            put(&mut name, &u.force_unit(&d.dof), &mut f);
                        }
                    }
                }
                Channel::Deformation(p, slot) | Channel::Dissipated(p, slot) => {
                    let s = &parts[p as usize].state.slots[slot as usize];
                    let dof = s
                        .element
                        .dofs()
                        .first()
                        .map(|d| d.dof.as_str())
                        .unwrap_or("");
                    if matches!(ch, Channel::Deformation(..)) {
                        let _ = write!(name, "deformation.{}", s.name());
                        put(&mut name, &u.displacement_unit(dof), &mut f);
                    } else {
                        let _ = write!(name, "dissipated.{}", s.name());
                        put(&mut name, &u.energy_unit(), &mut f);
                    }
                }
                Channel::State(p, i, run) => {
                    let st = &parts[p as usize].state;
                    let base = 2 * st.n_dofs();
                    for k in i as usize..(i + run) as usize {
                        let k = k - base;
                        let holds = |s: &crate::assembly::ElementSlot| {
                            s.state_offset() <= k && k < s.state_offset() + s.n_states()
                        };
                        if !st.slots.get(hint).is_some_and(holds) {
                            // Forward from the last slot found, then from the start.
                            let n = st.slots.len();
                            hint = (hint..n)
                                .chain(0..hint.min(n))
                                .find(|&q| holds(&st.slots[q]))
                                .expect("a recorded state");
                        }
                        let s = &st.slots[hint];
                        let j = k - s.state_offset();
                        let e = &s.element;
                        let dof = e.dofs().first().map(|d| d.dof.as_str()).unwrap_or("");
                        let state = e.state_names();
                        let _ = write!(name, "state.{}.{}", s.name(), state[j]);
                        put(&mut name, &unit_of(u, e.state_quantity(j), dof), &mut f);
                    }
                }
                Channel::Provider { part, .. } => {
                    let port = parts[part as usize].physical.as_ref().expect("a port");
                    for (n, q, dof) in port.substructure().channel_names() {
                        name.push_str(&n);
                        put(&mut name, &unit_of(u, q, &dof), &mut f);
                    }
                }
                Channel::Lambda(k) | Channel::GapU(k) | Channel::GapV(k) => {
                    let iface = integrator.interface().expect("an interface");
                    let d = &iface.dofs[k as usize].dof;
                    let (kind, unit) = match ch {
                        Channel::Lambda(_) => ("lambda", u.force_unit(&d.dof)),
                        Channel::GapU(_) => ("gap_u", u.displacement_unit(&d.dof)),
                        _ => ("gap_v", u.velocity_unit(&d.dof)),
                    };
                    let _ = write!(name, "{kind}.{}.{}", d.node, d.dof);
                    put(&mut name, &unit, &mut f);
                }
                Channel::Extra { .. } => {
                    for (n, q, dof) in integrator.extra_channels() {
                        name.push_str(&n);
                        put(&mut name, &unit_of(u, q, &dof), &mut f);
                    }
                }
                Channel::Energy(p) => {
                    let _ = write!(name, "energy.{}", parts[p as usize].state.name);
                    put(&mut name, &u.energy_unit(), &mut f);
                }
            }
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
        let empty = Vec::new();
        let parts = self.snapshot.as_ref().map_or(&empty, |s| &s.parts);
        let pending = parts
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
            early: (0..parts.len())
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
                &self.starts,
                &mut self.workspaces,
                &mut self.scratch,
                &self.linear_forces,
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
            &self.starts,
            &mut self.workspaces,
            &mut self.scratch,
            &self.linear_forces,
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
        let snapshot = self
            .snapshot
            .get_or_insert_with(|| RecorderSnapshot::new(&*integ, &self.channels));
        match self.handoff.as_ref() {
            Some(h) => snapshot.capture_where(integ, &h.early, false),
            None => snapshot.capture(integ),
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
            &self.starts,
            &mut self.workspaces,
            &mut self.scratch,
            &self.linear_forces,
            &mut Captured {
                snapshot: self
                    .snapshot
                    .get_or_insert_with(|| RecorderSnapshot::new(integ, &self.channels)),
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
        let snapshot = self
            .snapshot
            .get_or_insert_with(|| RecorderSnapshot::new(&*integ, &self.channels));
        match self.handoff.as_mut() {
            Some(h) => {
                snapshot.capture_where(integ, &h.early, false);
                for (p, pending) in h.pending.iter_mut().enumerate() {
                    if h.early[p] {
                        std::mem::swap(&mut snapshot.parts[p], pending);
                    }
                }
            }
            None => snapshot.capture(integ),
        }
    }

    /// Size the buffers of [`Recorder::capture`] (and of the runner's other captures) for
    /// `integ` if they are not yet: the first capture would otherwise allocate them, so a
    /// runner that captures in its loop calls this before. Allocates (once).
    pub fn prepare_capture(&mut self, integ: &dyn TimeIntegrator) {
        self.snapshot_for(integ);
    }

    /// The capture's buffers, sized for `integ` ([`Recorder::prepare_capture`]).
    fn snapshot_for(&mut self, integ: &dyn TimeIntegrator) -> &mut RecorderSnapshot {
        self.snapshot
            .get_or_insert_with(|| RecorderSnapshot::new(integ, &self.channels))
    }

    /// The columns (allocates every name: for the number of columns use
    /// [`Recorder::n_columns`], for a CSV header [`Recorder::write_header`]).
    pub fn columns(&self, integrator: &dyn TimeIntegrator) -> Vec<Column> {
        let mut out = Vec::with_capacity(self.n_columns);
        self.for_each_column(integrator, |name, unit| {
            out.push(Column {
                name: name.to_string(),
                unit: unit.to_string(),
            })
        });
        out
    }

    /// Number of columns (the length of a row).
    pub fn n_columns(&self) -> usize {
        self.n_columns
    }

    /// Column `i` (made by walking the columns up to it).
    pub fn column(&self, integrator: &dyn TimeIntegrator, i: usize) -> Option<Column> {
        let mut k = 0;
        let mut found = None;
        self.for_each_column(integrator, |name, unit| {
            if k == i {
                found = Some(Column {
                    name: name.to_string(),
                    unit: unit.to_string(),
                });
            }
            k += 1;
        });
        found
    }

    /// The `name[unit]` header of every column ([`Column::header`]).
    pub fn headers(&self, integrator: &dyn TimeIntegrator) -> Vec<String> {
        let mut out = Vec::with_capacity(self.n_columns);
        self.for_each_column(integrator, |name, unit| out.push(format!("{name}[{unit}]")));
        out
    }

    /// The CSV header line: the `name[unit]` of every column, separated by commas, written
    /// into one string (no per-column strings; for a wide model, [`Recorder::write_header`]
    /// does not hold the line).
    pub fn header(&self, integrator: &dyn TimeIntegrator) -> String {
        let mut line = Vec::new();
        self.write_header(integrator, &mut line)
            .expect("writing into memory");
        String::from_utf8(line).expect("names are text")
    }

    /// Write the CSV header line (the [`Recorder::header`], without a line end) to `out`, a
    /// name at a time: the line of a 10⁵-DOF chain's 600 001 columns is about 25 MB, never
    /// held whole (issue 20). Returns the first error of `out`.
    pub fn write_header(
        &self,
        integrator: &dyn TimeIntegrator,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let mut result = Ok(());
        let mut first = true;
        self.for_each_column(integrator, |name, unit| {
            if result.is_ok() {
                let comma: &[u8] = if first { b"" } else { b"," };
                first = false;
                result = [comma, name.as_bytes(), b"[", unit.as_bytes(), b"]"]
                    .iter()
                    .try_for_each(|piece| out.write_all(piece));
            }
        });
        result
    }

    /// Fill `row` (length of [`Recorder::columns`]) from the integrator's current state.
    /// Allocation-free.
    pub fn record(&mut self, integ: &mut dyn TimeIntegrator, row: &mut [f64]) {
        fill(
            &self.channels,
            &self.starts,
            &mut self.workspaces,
            &mut self.scratch,
            &self.linear_forces,
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
        self.snapshot_for(&*integ).capture(integ);
    }

    /// Fill `row` from the last [`Recorder::capture`] (the integrator gives only the structure:
    /// partitions, elements, ground motion, interface). Allocation-free.
    pub fn record_captured(&mut self, integ: &dyn TimeIntegrator, row: &mut [f64]) {
        fill(
            &self.channels,
            &self.starts,
            &mut self.workspaces,
            &mut self.scratch,
            &self.linear_forces,
            &mut Captured {
                snapshot: self
                    .snapshot
                    .get_or_insert_with(|| RecorderSnapshot::new(integ, &self.channels)),
                integ,
            },
            row,
            Select::All,
        );
    }
}

/// [`crate::model::OutputSelection`]'s questions, each in constant time: the selected node ids
/// and element names in hash sets, made once for the recorder's layout. The selection's own
/// `has_dof` and `has_element_slot` scan its lists, so a selection of every node and member of
/// a large model cost O(N²) at start-up (the 99 990-DOF frame with OpenSees's columns, 33 330
/// nodes and 63 630 members selected: 17 s in the layout, issue 20 session 25).
struct SelectionLookup<'a> {
    selection: &'a crate::model::OutputSelection,
    nodes: Option<std::collections::HashSet<i64>>,
    elements: Option<std::collections::HashSet<&'a str>>,
}

impl<'a> SelectionLookup<'a> {
    fn new(selection: &'a crate::model::OutputSelection) -> Self {
        SelectionLookup {
            selection,
            nodes: selection
                .nodes
                .as_ref()
                .map(|n| n.iter().copied().collect()),
            elements: selection
                .elements
                .as_ref()
                .map(|e| e.iter().map(String::as_str).collect()),
        }
    }

    /// [`crate::model::OutputSelection::has_dof`] (the DOF names are a few: scanned).
    fn has_dof(&self, node: i64, dof: &str) -> bool {
        self.nodes.as_ref().is_none_or(|n| n.contains(&node))
            && self
                .selection
                .dofs
                .as_ref()
                .is_none_or(|d| d.iter().any(|x| x == dof))
    }

    /// [`crate::model::OutputSelection::has_element_slot`]: a name selects the slot it
    /// names, the slots `name@…` (what comes before any `@` of the slot's name) and the
    /// Rayleigh term `rayleigh@name`.
    fn has_element_slot(&self, slot: &str) -> bool {
        let Some(names) = &self.elements else {
            return true;
        };
        names.contains(slot)
            || slot
                .match_indices('@')
                .any(|(i, _)| names.contains(&slot[..i]))
            || slot
                .strip_prefix("rayleigh@")
                .is_some_and(|n| names.contains(n))
    }
}

/// Which of `part`'s DOFs get nodal columns (`u`, `v`, `a_abs`): those `selection` selects,
/// and always every DOF a physical specimen or the interface uses (a partition behind a port
/// without a known specimen map keeps all of its DOFs).
fn kept_dofs(
    selection: Option<&SelectionLookup<'_>>,
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
    fn energy_state(&self, p: usize) -> Option<(&[f64], Option<f64>)> {
        let snap = &self.snapshot.parts[p];
        (snap.energy_source == EnergySource::PartitionState).then_some((&snap.state, snap.energy))
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
    /// The state `y` and the held energy with which partition `p`'s energy is
    /// [`crate::assembly::Partition::energy_at`] (its energy source is
    /// [`EnergySource::PartitionState`]), `None` for another source.
    fn energy_state(&self, p: usize) -> Option<(&[f64], Option<f64>)>;
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
    fn energy_state(&self, p: usize) -> Option<(&[f64], Option<f64>)> {
        // `TimeIntegrator::energy` of this source is `Partition::energy` at the state, the
        // bits of `Partition::energy_at` with the held energy read now.
        (self.0.energy_source(p) == EnergySource::PartitionState)
            .then(|| (self.0.state(p), self.0.partitions()[p].held_energy()))
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
        | Channel::Measured(p, ..)
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
#[allow(clippy::too_many_arguments)]
fn fill<S: RowSource>(
    channels: &[Channel],
    starts: &[u32],
    workspaces: &mut [ElementWorkspace],
    scratch: &mut [f64],
    linear_forces: &LinearForces,
    src: &mut S,
    row: &mut [f64],
    mut select: Select<'_>,
) {
    let t = src.time();
    let mut gap = 0;
    // Where the force channels' elements are in `linear_forces`' runs.
    let mut runs = linear_forces.cursor();
    for (&ch, &start) in channels.iter().zip(starts) {
        // The first column of the channel.
        let c = start as usize;
        let at = |i: u32| i as usize;
        let early = |m: &[bool]| owner(ch).is_some_and(|p| m.get(p).copied().unwrap_or(false));
        let skip = match &select {
            Select::All => false,
            Select::Early(m, _) => !early(m) && !matches!(ch, Channel::GapU(_) | Channel::GapV(_)),
            Select::Rest(m, _) => early(m),
        };
        if skip {
            if let Channel::ElementForce { slots, .. } = ch {
                runs.skip(usize::from(slots));
            }
            continue;
        }
        match ch {
            Channel::Time => row[c] = t,
            Channel::U(p, i, run) | Channel::State(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                row[c..c + run].copy_from_slice(&src.state(p)[i..i + run]);
            }
            Channel::V(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                let n = src.integrator().partitions()[p].state.n_dofs();
                row[c..c + run].copy_from_slice(&src.state(p)[n + i..n + i + run]);
            }
            Channel::AbsAcc(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                let st = &src.integrator().partitions()[p].state;
                let relative = &src.accelerations(p)[i..i + run];
                // The ground motion of a run's DOFs is read once for each motion it uses
                // (a run of one direction's DOFs uses one).
                let mut ground: Option<(usize, f64)> = None;
                for (k, (out, a)) in row[c..c + run].iter_mut().zip(relative).enumerate() {
                    let ag = match st.ground_dof(i + k) {
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
            }
            Channel::ElementForce {
                part,
                slot,
                slots,
                stride,
            } => {
                let (part, slot) = (at(part), at(slot));
                let st = &src.integrator().partitions()[part].state;
                let y = src.state(part);
                let current = linear_forces.serves(part, st);
                let mut at_column = c;
                for s in (0..slots as usize).map(|k| slot + k * stride as usize) {
                    let matrices = runs.next().filter(|_| current);
                    match matrices.map(|m| linear_forces.matrices(m)) {
                        Some((matrices, n)) => {
                            let map = DofMap::new(&st.dof_maps()[st.slots[s].map_start()..][..n]);
                            let out = &mut row[at_column..at_column + n];
                            // The bits of `StateSpace::element_force`: its linear path
                            // with the same matrices, and the same fall-back where the
                            // kernel does not serve the size or the force is not finite.
                            if !matrices.force_at(map, y, st.n_dofs(), out)
                                || !out.iter().all(|f| f.is_finite())
                            {
                                st.element_force(s, y, out, &mut workspaces[part]);
                            }
                            at_column += n;
                        }
                        None => {
                            let n = force_width(st, s);
                            let out = &mut row[at_column..at_column + n];
                            st.element_force(s, y, out, &mut workspaces[part]);
                            at_column += n;
                        }
                    }
                }
            }
            Channel::Measured(p, i, run) => {
                let (p, i, run) = (at(p), at(i), at(run));
                for (k, out) in row[c..c + run].iter_mut().enumerate() {
                    *out = src.measured(p, i + k);
                }
            }
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
                if src.provider(part, &mut scratch[..len]) {
                    row[c..c + len].copy_from_slice(&scratch[..len]);
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
                let ws = &mut workspaces[p];
                let energy = match src.energy_state(p) {
                    Some((y, held)) => {
                        let partition = &src.integrator().partitions()[p];
                        linear_forces.energy_at(p, partition, y, held, ws, row)
                    }
                    None => src.energy(p, ws),
                };
                row[c] = energy.unwrap_or(f64::NAN)
            }
            Channel::Extra { len } => {
                let len = at(len);
                src.extra(&mut scratch[..len]);
                row[c..c + len].copy_from_slice(&scratch[..len]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SelectionLookup;
    use crate::model::OutputSelection;

    /// The hashed lookup answers as the selection's own scans, for node ids, DOF names, plain
    /// element names, shares of split elements (`name@receiver`, names holding `@`), Rayleigh
    /// terms (`rayleigh@name`) and names that are only prefixes of a slot's name.
    #[test]
    fn the_lookup_answers_as_the_selection() {
        let names = ["a", "b@c", "beam1", "rayleigh", "x@y@z"];
        let slots = [
            "a",
            "a@s2",
            "a2",
            "ab@s",
            "b",
            "b@c",
            "b@c@d",
            "b@cd",
            "beam1",
            "beam10",
            "beam1@p",
            "rayleigh@a",
            "rayleigh@beam1",
            "rayleigh@beam2",
            "rayleigh",
            "rayleigh@",
            "x",
            "x@y",
            "x@y@z",
            "x@y@z@w",
            "@a",
            "",
            "c",
        ];
        let selections = [
            OutputSelection::default(),
            OutputSelection {
                nodes: Some(vec![3, 7, -1]),
                dofs: Some(vec!["x".into(), "rz".into()]),
                elements: Some(names.iter().map(|n| n.to_string()).collect()),
            },
            OutputSelection {
                nodes: None,
                dofs: Some(vec!["y".into()]),
                elements: Some(vec!["x".into(), String::new()]),
            },
            OutputSelection {
                nodes: Some(vec![]),
                dofs: None,
                elements: Some(vec![]),
            },
        ];
        for selection in &selections {
            let lookup = SelectionLookup::new(selection);
            for slot in slots {
                assert_eq!(
                    lookup.has_element_slot(slot),
                    selection.has_element_slot(slot),
                    "{slot:?} in {selection:?}"
                );
            }
            for node in [-1, 0, 3, 4, 7] {
                for dof in ["x", "y", "rz", ""] {
                    assert_eq!(
                        lookup.has_dof(node, dof),
                        selection.has_dof(node, dof),
                        "{node} {dof} in {selection:?}"
                    );
                }
            }
        }
    }
}
