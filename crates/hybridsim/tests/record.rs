//! The recorder's element columns (issue 20): a linear element's forces and stored energy are
//! evaluated from its borrowed matrices instead of its law, and a row is filled a run of
//! columns at a time. These tests hold both to the law and to the column definitions.
mod common;
use common::*;

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;
use common::counting::count;

use hybridsim::integrators::TimeIntegrator;
use hybridsim::model::SourceResolver;
use hybridsim::{Model, Simulation};

/// The examples that `Simulation::new` builds alone (the multi-process ones need their peer).
fn examples() -> Vec<(String, Simulation)> {
    let dir = root().join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    let folder = Folder(dir.clone());
    names
        .into_iter()
        .filter_map(|name| {
            let text = folder.read_to_string(&name).ok()?;
            let model = Model::from_toml(&text, &name, &folder).ok()?;
            let sim = Simulation::new(model).ok()?;
            Some((name, sim))
        })
        .collect()
}

/// Element `slot` of partition `p`'s forces by the law and by [`element_force`], and the
/// stored energy by the state space and by each element's own `potential_energy`.
struct Comparison {
    forces: usize,
    largest_force_difference: f64,
    largest_energy_difference: f64,
}

fn compare(integ: &dyn TimeIntegrator, kinds: &mut Vec<(&'static str, bool)>) -> Comparison {
    let mut out = Comparison {
        forces: 0,
        largest_force_difference: 0.0,
        largest_energy_difference: 0.0,
    };
    for (p, part) in integ.partitions().iter().enumerate() {
        let st = &part.state;
        let y = integ.state(p);
        let mut ws = st.workspace();
        let n = st.n_dofs();
        for (k, slot) in st.slots.iter().enumerate() {
            let ne = slot.n_dofs();
            let (mut fast, mut law) = (vec![0.0; ne], vec![0.0; ne]);
            st.element_force(k, y, &mut fast, &mut ws);
            st.element_force_by_law(k, y, &mut law, &mut ws);
            for (a, b) in fast.iter().zip(&law) {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{} `{}`: {a} by the matrices, {b} by the law",
                    slot.element.kind(),
                    slot.name()
                );
                out.largest_force_difference = out.largest_force_difference.max((a - b).abs());
            }
            out.forces += ne;
            let entry = (
                slot.element.kind(),
                slot.element.constant_matrices().is_some(),
            );
            if !kinds.contains(&entry) {
                kinds.push(entry);
            }
        }
        // The stored energy, element by element through the law, summed in slot order.
        let mut by_law = Some(0.0);
        let mut size = 0.0;
        for slot in &st.slots {
            if !slot.stores_energy() {
                continue;
            }
            let u: Vec<f64> = (st.map_of(slot).iter())
                .map(|m| m.map_or(0.0, |k| y[k]))
                .collect();
            let s0 = 2 * n + slot.state_offset();
            let s = &y[s0..s0 + slot.n_states()];
            let held = slot
                .element
                .potential_energy(&u, s)
                .or_else(|| slot.absorbed_energy_state().map(|i| s[i]));
            by_law = by_law.zip(held).map(|(a, b)| a + b);
            // The size of the entry-by-entry terms of `½ uᵀ K u`: the round-off scale.
            if let Some(m) = slot.element.constant_matrices() {
                for i in 0..u.len() {
                    for j in 0..u.len() {
                        size += (0.5 * u[i] * m.k[i + j * u.len()] * u[j]).abs();
                    }
                }
            }
        }
        let fast = st.potential_energy(y, &mut ws);
        match (fast, by_law) {
            (Some(a), Some(b)) => {
                let d = (a - b).abs();
                assert!(
                    d <= 1e-13 * size.max(b.abs()) + f64::MIN_POSITIVE,
                    "partition {p}: stored energy {a} from the matrices, {b} by the law \
                     (terms of size {size})"
                );
                let relative = if d == 0.0 { 0.0 } else { d / b.abs() };
                out.largest_energy_difference = out.largest_energy_difference.max(relative);
            }
            (a, b) => assert_eq!(a.is_some(), b.is_some(), "partition {p}: {a:?} and {b:?}"),
        }
    }
    out
}

/// Every element kind of the examples, after 200 steps (or the run's end): a linear element's
/// forces from its matrices are its law's to the last bit, and the stored energy is the law's
/// to round-off (relative to the size of its terms).
#[test]
fn linear_elements_by_their_matrices_match_their_law_on_every_example() {
    let mut kinds = Vec::new();
    let (mut forces, mut force_difference, mut energy_difference) = (0, 0.0f64, 0.0f64);
    let mut models = 0;
    for (name, mut sim) in examples() {
        for _ in 0..sim.n_steps().min(200) {
            if sim.step().is_err() {
                break;
            }
        }
        let c = compare(sim.integrator.as_ref(), &mut kinds);
        println!(
            "{name}: {} forces, largest difference {:e}, stored energy within {:e} (relative)",
            c.forces, c.largest_force_difference, c.largest_energy_difference
        );
        forces += c.forces;
        force_difference = force_difference.max(c.largest_force_difference);
        energy_difference = energy_difference.max(c.largest_energy_difference);
        models += 1;
    }
    println!("element kinds (kind, lends its matrices): {kinds:?}");
    println!(
        "{models} examples, {forces} element forces: largest difference {force_difference:e}; \
         stored energies within {energy_difference:e} relative"
    );
    assert!(models >= 25, "only {models} examples were built");
    assert!(
        kinds.contains(&("linear", true)),
        "no `linear` element lent its matrices: {kinds:?}"
    );
}

/// A two-storey frame of `linear` members (one with damping, one with mass, one with a zero
/// row and column), springs and Rayleigh damping, under ground motions along x and along y,
/// the nodes' DOFs interleaved (x, y, rz), recording the nodes `nodes`.
fn frame_text(nodes: &str) -> String {
    format!(
        r#"
[units]
length = "m"
force = "kN"
time = "s"

[[node]]
id = 1
dofs = ["x", "y", "rz"]
[[node]]
id = 2
dofs = ["x", "y", "rz"]
[[node]]
id = 3
dofs = ["x", "y", "rz"]
[[node]]
id = 4
dofs = ["x", "y"]

[[element]]
type = "linear"
name = "column1"
dofs = [[1, "x"], [1, "y"], [1, "rz"]]
k = [[4.0e4, 0.0, -6.0e4], [0.0, 1.2e6, 0.0], [-6.0e4, 0.0, 1.2e5]]

[[element]]
type = "linear"
name = "column2"
dofs = [[1, "x"], [1, "y"], [1, "rz"], [2, "x"], [2, "y"], [2, "rz"]]
k = [[4.0e4, 0.0, 6.0e4, -4.0e4, 0.0, 6.0e4],
     [0.0, 1.2e6, 0.0, 0.0, -1.2e6, 0.0],
     [6.0e4, 0.0, 1.2e5, -6.0e4, 0.0, 6.0e4],
     [-4.0e4, 0.0, -6.0e4, 4.0e4, 0.0, -6.0e4],
     [0.0, -1.2e6, 0.0, 0.0, 1.2e6, 0.0],
     [6.0e4, 0.0, 6.0e4, -6.0e4, 0.0, 1.2e5]]
c = [[40.0, 0.0, 0.0, -40.0, 0.0, 0.0],
     [0.0, 10.0, 0.0, 0.0, -10.0, 0.0],
     [0.0, 0.0, 1.0, 0.0, 0.0, -1.0],
     [-40.0, 0.0, 0.0, 40.0, 0.0, 0.0],
     [0.0, -10.0, 0.0, 0.0, 10.0, 0.0],
     [0.0, 0.0, -1.0, 0.0, 0.0, 1.0]]
rayleigh = false

[[element]]
type = "linear"
name = "beam"
dofs = [[2, "x"], [2, "rz"], [3, "x"], [3, "rz"]]
m = [[2.0, 0.0, 0.0, 0.0], [0.0, 0.1, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.1]]
k = [[2.0e5, 0.0, -2.0e5, 0.0], [0.0, 3.0e4, 0.0, 1.5e4], [-2.0e5, 0.0, 2.0e5, 0.0], [0.0, 1.5e4, 0.0, 3.0e4]]

[[element]]
type = "linear"
name = "tie"
dofs = [[3, "y"], [4, "y"]]
k = [[5.0e5, 0.0], [0.0, 0.0]]

[[element]]
type = "spring"
name = "brace"
nodes = [3, 4]
dof = "x"
k = 3.0e4

[[element]]
type = "spring"
name = "ground"
nodes = [4]
dof = "y"
k = 8.0e4

[[element]]
type = "spring"
name = "column3"
nodes = [3]
dof = "y"
k = 9.0e5

[[element]]
type = "spring"
name = "column4"
nodes = [3]
dof = "rz"
k = 1.0e5

[[element]]
type = "spring"
name = "column5"
nodes = [2]
dof = "rz"
k = 1.0e5

[[element]]
type = "mass"
node = 1
mass = [10.0, 10.0, 0.3]
[[element]]
type = "mass"
node = 2
mass = [10.0, 10.0, 0.3]
[[element]]
type = "mass"
node = 3
mass = [8.0, 8.0, 0.2]
[[element]]
type = "mass"
node = 4
mass = [2.0, 2.0]

[damping]
alpha = 0.1
beta = 1.0e-3

[[ground_motion]]
direction = "x"
synthetic = {{ seed = 3, duration = 1.0, pga = 1.0 }}

[[ground_motion]]
direction = "y"
synthetic = {{ seed = 4, duration = 1.0, pga = 0.5 }}

[analysis]
integrator = "mg-alpha"
rho_inf = 0.9
time_step = 0.005
duration = 0.5

[output]
{nodes}
"#
    )
}

/// The partition and DOF index of a nodal column `q.x.node.dof`, and the quantity `q`.
fn nodal<'a>(integ: &dyn TimeIntegrator, name: &'a str) -> Option<(&'a str, usize, usize)> {
    let mut it = name.split('.');
    let q = it.next()?;
    if !matches!(q, "u" | "v" | "a_abs") {
        return None;
    }
    let (x, node, dof) = (it.next()?, it.next()?, it.next()?);
    let p = integ
        .partitions()
        .iter()
        .position(|part| part.state.name == x)?;
    let st = &integ.partitions()[p].state;
    let i = st
        .dofs
        .iter()
        .position(|d| d.node.to_string() == node && d.dof.as_str() == dof)?;
    Some((q, p, i))
}

/// Every nodal column of a row is its definition (`u`, `v` from the state, `a_abs` the relative
/// acceleration plus the ground motion of its direction), every element force column the law's,
/// whether the recorded DOFs make one run or runs with gaps, live and from a capture.
#[test]
fn rows_filled_by_runs_hold_every_column_definition() {
    for selection in [
        "",
        "nodes = [1, 3, 4]\ndofs = [\"x\", \"rz\"]",
        "nodes = [2]",
    ] {
        let mut sim = Simulation::new(model(&frame_text(selection))).unwrap();
        let names: Vec<String> = sim.columns().iter().map(|c| c.name.clone()).collect();
        let mut row = vec![0.0; names.len()];
        let (mut nodal_columns, mut force_columns) = (0, 0);
        for step in 0..60 {
            sim.step().unwrap();
            sim.record(&mut row);
            let integ = sim.integrator.as_ref();
            let t = integ.time();
            for (c, name) in names.iter().enumerate() {
                if let Some((q, p, i)) = nodal(integ, name) {
                    let st = &integ.partitions()[p].state;
                    let n = st.n_dofs();
                    let y = integ.state(p);
                    let expected = match q {
                        "u" => y[i],
                        "v" => y[n + i],
                        _ => integ.rate(p)[n + i] + st.ground_acceleration(i, t),
                    };
                    assert_eq!(
                        row[c].to_bits(),
                        expected.to_bits(),
                        "`{selection}` step {step}: {name} = {} instead of {expected}",
                        row[c]
                    );
                    nodal_columns += 1;
                } else if let Some(rest) = name.strip_prefix("force.") {
                    let slot_name = rest.split('.').next().unwrap();
                    let (p, k) = integ
                        .partitions()
                        .iter()
                        .enumerate()
                        .find_map(|(p, part)| {
                            let k = part
                                .state
                                .slots
                                .iter()
                                .position(|s| s.name() == slot_name)?;
                            Some((p, k))
                        })
                        .unwrap();
                    let st = &integ.partitions()[p].state;
                    let mut law = vec![0.0; st.slots[k].n_dofs()];
                    let mut ws = st.workspace();
                    st.element_force_by_law(k, integ.state(p), &mut law, &mut ws);
                    let group = names
                        .iter()
                        .position(|m| m.starts_with(&format!("force.{slot_name}.")))
                        .unwrap();
                    assert_eq!(row[c].to_bits(), law[c - group].to_bits(), "{name}");
                    force_columns += 1;
                }
            }
        }
        assert!(nodal_columns > 0 && force_columns > 0, "`{selection}`");
        // Both ground motions are read (the DOFs along x and y alternate within a run).
        let st = &sim.integrator.partitions()[0].state;
        let t = sim.integrator.time();
        assert!(st.ground_motion(0, t) != 0.0 && st.ground_motion(1, t) != 0.0);
        assert_ne!(st.ground_dof(0), st.ground_dof(1));
    }
}

/// A linear element whose stiffness has a zero column, at a state with an infinite
/// displacement on that DOF: the law skips the zero entries and gives finite forces, the
/// matrix product gives `0 · ∞ = NaN`; the recorder's force is the law's.
#[test]
fn a_non_finite_state_is_evaluated_through_the_law() {
    let sim = Simulation::new(model(&frame_text(""))).unwrap();
    let integ = sim.integrator.as_ref();
    let st = &integ.partitions()[0].state;
    let k = st.slots.iter().position(|s| s.name() == "tie").unwrap();
    let slot = &st.slots[k];
    assert!(slot.element.constant_matrices().is_some());
    let mut y = integ.state(0).to_vec();
    y[st.dof_map(k).get(0).unwrap()] = 1.0e-3;
    y[st.dof_map(k).get(1).unwrap()] = f64::INFINITY;
    let (mut fast, mut law) = (vec![0.0; 2], vec![0.0; 2]);
    let mut ws = st.workspace();
    st.element_force(k, &y, &mut fast, &mut ws);
    st.element_force_by_law(k, &y, &mut law, &mut ws);
    assert_eq!(law, vec![5.0e2, 0.0]);
    assert_eq!(fast, law);
}

/// Rows of the frame with its `linear` members' forces and the energy, live and from a
/// capture, with every column and with a selection (runs with gaps): no allocation.
#[test]
fn rows_of_linear_members_do_not_allocate() {
    for selection in ["", "nodes = [1, 3, 4]\ndofs = [\"x\", \"rz\"]"] {
        let mut sim = Simulation::new(model(&frame_text(selection))).unwrap();
        let mut row = vec![0.0; sim.columns().len()];
        sim.step().unwrap();
        sim.record(&mut row);
        let live = count(|| {
            for _ in 0..20 {
                sim.step().unwrap();
                sim.record(&mut row);
            }
        });
        assert_eq!(live, 0, "`{selection}`: recording allocates");
        let m = model(&frame_text(selection));
        let mut integ = hybridsim::integrators::build(&m).unwrap();
        let mut recorder = hybridsim::output::Recorder::new(&m, integ.as_ref());
        integ.step().unwrap();
        recorder.capture(integ.as_mut());
        recorder.record_captured(integ.as_ref(), &mut row);
        let captured = count(|| {
            for _ in 0..20 {
                integ.step().unwrap();
                recorder.capture(integ.as_mut());
                recorder.record_captured(integ.as_ref(), &mut row);
            }
        });
        assert_eq!(captured, 0, "`{selection}`: a captured row allocates");
    }
}

/// [`ConstantMatrices::force`] for every size its fixed-size kernels serve and a few others,
/// with and without damping and with zero entries: the law's row-by-row sums (zero entries
/// skipped), bit for bit; the stored energy is the entry-by-entry double sum to round-off.
#[test]
fn matrix_forces_are_the_row_by_row_sums_for_every_size() {
    use hybridsim::elements::{ConstantMatrices, DofMap};
    for n in 1..=14 {
        let entry = |i: usize, j: usize, seed: f64| {
            let x = ((i * 31 + j * 17) as f64 * 0.7368 + seed).sin() * 1.0e5;
            if (i + 2 * j) % 5 == 3 {
                0.0
            } else {
                x
            }
        };
        // Column by column.
        let k: Vec<f64> = (0..n * n).map(|t| entry(t % n, t / n, 0.3)).collect();
        let c: Vec<f64> = (0..n * n)
            .map(|t| entry(t % n, t / n, 1.9) * 1e-3)
            .collect();
        let u: Vec<f64> = (0..n)
            .map(|i| (i as f64 * 1.3 + 0.2).cos() * 1e-2)
            .collect();
        let v: Vec<f64> = (0..n)
            .map(|i| (i as f64 * 0.9 - 0.4).sin() * 1e-1)
            .collect();
        for damping in [None, Some(c.as_slice())] {
            let m = ConstantMatrices { k: &k, c: damping };
            let mut r = vec![0.0; n];
            m.force(&u, &v, &mut r);
            for i in 0..n {
                let mut acc = 0.0;
                for j in 0..n {
                    if k[i + j * n] != 0.0 {
                        acc += u[j] * k[i + j * n];
                    }
                    if let Some(c) = damping {
                        if c[i + j * n] != 0.0 {
                            acc += v[j] * c[i + j * n];
                        }
                    }
                }
                assert_eq!(r[i].to_bits(), acc.to_bits(), "n = {n}, row {i}");
            }
        }
        // At a state vector: DOF 1 fixed to the ground, the others in reverse order, the
        // velocities `2n` further on.
        let map: Vec<Option<usize>> = (0..n).map(|j| (j != 1).then_some(n - 1 - j)).collect();
        let entries: Vec<u32> = map.iter().map(|m| DofMap::entry(*m)).collect();
        let mut y = vec![f64::NAN; 3 * n + 1];
        let (mut uy, mut vy) = (u.clone(), v.clone());
        for (j, m) in map.iter().enumerate() {
            match m {
                Some(k) => (y[*k], y[2 * n + k]) = (u[j], v[j]),
                None => (uy[j], vy[j]) = (0.0, 0.0),
            }
        }
        for damping in [None, Some(c.as_slice())] {
            let m = ConstantMatrices { k: &k, c: damping };
            let (mut at, mut gathered) = (vec![0.0; n], vec![0.0; n]);
            m.force(&uy, &vy, &mut gathered);
            if m.force_at(DofMap::new(&entries), &y, 2 * n, &mut at) {
                assert_eq!(at, gathered, "n = {n}");
            } else {
                assert!(![1, 2, 3, 4, 6, 8, 12].contains(&n), "n = {n}");
            }
            let mut scratch = vec![0.0; n];
            let energy = m.stored_energy(&uy, &mut scratch);
            if let Some(e) = m.stored_energy_at(DofMap::new(&entries), &y) {
                assert_eq!(e.to_bits(), energy.to_bits(), "n = {n}");
            }
        }
        let m = ConstantMatrices { k: &k, c: None };
        let mut scratch = vec![0.0; n];
        let fast = m.stored_energy(&u, &mut scratch);
        let (mut sum, mut size) = (0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                let term = 0.5 * u[i] * k[i + j * n] * u[j];
                sum += term;
                size += term.abs();
            }
        }
        assert!(
            (fast - sum).abs() <= 1e-14 * size,
            "n = {n}: {fast} and {sum}"
        );
    }
}

/// [`frame_text`] with repeated members: two more `linear` members with `column1`'s and
/// `column2`'s matrices (the recorder's table holds each distinct matrices once, and a run of
/// elements sharing them), one with the same stiffness as `beam` and no mass.
fn repeated_frame_text(selection: &str) -> String {
    let extra = r#"
[[element]]
type = "linear"
name = "column1b"
dofs = [[2, "x"], [2, "y"], [2, "rz"]]
k = [[4.0e4, 0.0, -6.0e4], [0.0, 1.2e6, 0.0], [-6.0e4, 0.0, 1.2e5]]

[[element]]
type = "linear"
name = "column1c"
dofs = [[3, "x"], [3, "y"], [3, "rz"]]
k = [[4.0e4, 0.0, -6.0e4], [0.0, 1.2e6, 0.0], [-6.0e4, 0.0, 1.2e5]]

[[element]]
type = "linear"
name = "beam2"
dofs = [[1, "x"], [1, "rz"], [2, "x"], [2, "rz"]]
k = [[2.0e5, 0.0, -2.0e5, 0.0], [0.0, 3.0e4, 0.0, 1.5e4], [-2.0e5, 0.0, 2.0e5, 0.0], [0.0, 1.5e4, 0.0, 3.0e4]]
"#;
    frame_text(selection).replacen(
        "\n[[element]]\ntype = \"spring\"\nname = \"brace\"",
        &format!("{extra}\n[[element]]\ntype = \"spring\"\nname = \"brace\""),
        1,
    )
}

/// Every element force column and the energy column of `row` against
/// [`StateSpace::element_force`] of each element and [`Partition::energy_at`] at the state,
/// bit for bit; the number of force columns checked.
fn check_row_against_elements(integ: &dyn TimeIntegrator, names: &[String], row: &[f64]) -> usize {
    let mut checked = 0;
    for (c, name) in names.iter().enumerate() {
        if let Some(rest) = name.strip_prefix("force.") {
            let slot_name = rest.split('.').next().unwrap();
            let (p, k) = (integ.partitions().iter().enumerate())
                .find_map(|(p, part)| {
                    let k = (part.state.slots.iter()).position(|s| s.name() == slot_name)?;
                    Some((p, k))
                })
                .unwrap();
            let st = &integ.partitions()[p].state;
            let mut expected = vec![0.0; st.slots[k].n_dofs()];
            st.element_force(k, integ.state(p), &mut expected, &mut st.workspace());
            let group = (names.iter())
                .position(|m| m.starts_with(&format!("force.{slot_name}.")))
                .unwrap();
            assert_eq!(row[c].to_bits(), expected[c - group].to_bits(), "{name}");
            checked += 1;
        } else if name.starts_with("energy") {
            let part = &integ.partitions()[0];
            let y = integ.state(0);
            let expected = part
                .energy_at(y, part.held_energy(), &mut part.state.workspace())
                .unwrap();
            assert_eq!(row[c].to_bits(), expected.to_bits(), "{name}");
        }
    }
    checked
}

/// The recorder's linear members' forces (one kernel over a table of their distinct matrices)
/// and its energy column (the members' stored energy from that table) are, bit for bit,
/// [`StateSpace::element_force`] of each element and [`Partition::energy_at`]: a frame of
/// repeated members, members with damping and mass, springs and Rayleigh damping, with every
/// column and with selections, live and from a capture, and after a parameter change has
/// moved members to their law (the table no longer serves their partition).
#[test]
fn batched_member_forces_and_energy_are_each_elements() {
    for selection in ["", "elements = [\"column1c\", \"beam\", \"brace\"]"] {
        let m = model(&repeated_frame_text(selection));
        let mut integ = hybridsim::integrators::build(&m).unwrap();
        let mut recorder = hybridsim::output::Recorder::new(&m, integ.as_ref());
        let names: Vec<String> = (recorder.columns(integ.as_ref()).into_iter())
            .map(|c| c.name)
            .collect();
        assert!(names.iter().any(|n| n == "energy.structure"), "{names:?}");
        let (mut live, mut captured) = (vec![0.0; names.len()], vec![0.0; names.len()]);
        let mut checked = 0;
        for step in 0..40 {
            if step == 20 {
                // Moves the member to its law, whether or not the parameter is known.
                for name in ["column1b", "beam"] {
                    let st = &integ.partitions()[0].state;
                    let k = st.slots.iter().position(|s| s.name() == name).unwrap();
                    let _ = integ.set_element_parameter(0, k, "k", 1.0);
                }
                let st = &integ.partitions()[0].state;
                let k = st.slots.iter().position(|s| s.name() == "beam").unwrap();
                assert!(!st.slots[k].forces_from_constant_matrices());
            }
            integ.step().unwrap();
            recorder.record(integ.as_mut(), &mut live);
            recorder.capture(integ.as_mut());
            recorder.record_captured(integ.as_ref(), &mut captured);
            checked += check_row_against_elements(integ.as_ref(), &names, &live);
            let same = live
                .iter()
                .zip(&captured)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "`{selection}` step {step}: the captured row differs");
        }
        assert!(checked >= 40 * 3, "`{selection}`: {checked} force columns");
    }
}

/// The stepping thread's cost of a row's values, with the recorder's batched linear forces
/// and energy and without them (the per-element calls, which serve once a parameter change
/// has moved a member to its law): the least time of a row over 5 batches, printed. Run on
/// a model named by `HYBRIDSIM_RECORD_COST_MODEL` (e.g. the frame of
/// `scripts/bench/frame_model.py` with `[output] every = 1`):
/// `cargo test --release -p hybridsim --test record -- --ignored --nocapture row_values_cost`.
#[test]
#[ignore = "a measurement: needs HYBRIDSIM_RECORD_COST_MODEL"]
fn row_values_cost() {
    let Ok(path) = std::env::var("HYBRIDSIM_RECORD_COST_MODEL") else {
        return;
    };
    let path = std::path::PathBuf::from(path);
    let folder = Folder(path.parent().unwrap().to_path_buf());
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = folder.read_to_string(&name).unwrap();
    let m = Model::from_toml(&text, &name, &folder).unwrap_or_else(|e| panic!("{e}"));
    let mut integ = hybridsim::integrators::build(&m).unwrap();
    let mut recorder = hybridsim::output::Recorder::new(&m, integ.as_ref());
    let mut row = vec![0.0; recorder.n_columns()];
    integ.step().unwrap();
    let rows = 20;
    let least = |recorder: &mut hybridsim::output::Recorder,
                 integ: &mut Box<dyn TimeIntegrator>,
                 row: &mut [f64]| {
        (0..5)
            .map(|_| {
                let t0 = std::time::Instant::now();
                for _ in 0..rows {
                    recorder.record(integ.as_mut(), row);
                }
                t0.elapsed().as_secs_f64() / rows as f64
            })
            .fold(f64::INFINITY, f64::min)
    };
    let batched = least(&mut recorder, &mut integ, &mut row);
    let first = row.clone();
    let st = &integ.partitions()[0].state;
    let k = (st.slots.iter())
        .position(|s| s.forces_from_constant_matrices())
        .expect("a linear member");
    let _ = integ.set_element_parameter(0, k, "k", 1.0);
    let by_element = least(&mut recorder, &mut integ, &mut row);
    let same = first
        .iter()
        .zip(&row)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    eprintln!(
        "{name}: {} columns, a row's values {:.1} µs batched, {:.1} µs by element; same bits: {same}",
        row.len(),
        batched * 1e6,
        by_element * 1e6
    );
    assert!(same);
}
