//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod counting;

use hybridsim::integrators::TimeIntegrator;
use hybridsim::model::{NoFiles, SourceResolver};
use hybridsim::{Model, Simulation};
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Reads files relative to a folder.
pub struct Folder(pub PathBuf);

impl SourceResolver for Folder {
    fn read_to_string(&self, path: &str) -> Result<String, String> {
        let p = self.0.join(path);
        std::fs::read_to_string(&p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))
    }
}

/// Load `examples/NAME` after editing its TOML table with `edit`.
pub fn example_with(name: &str, edit: impl FnOnce(&mut toml::Table)) -> Model {
    let path = root().join("examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut table: toml::Table = text.parse().unwrap();
    edit(&mut table);
    let text = toml::to_string(&table).unwrap();
    Model::from_toml(&text, name, &Folder(root().join("examples")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Parse a model from text.
pub fn model(text: &str) -> Model {
    Model::from_toml(text, "test.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// Set `[analysis].key = value`.
pub fn set(table: &mut toml::Table, section: &str, key: &str, value: impl Into<toml::Value>) {
    table
        .entry(section)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .unwrap()
        .insert(key.to_string(), value.into());
}

/// Run a simulation to its end; returns it.
pub fn run(model: Model) -> Simulation {
    let mut sim = Simulation::new(model).unwrap_or_else(|e| panic!("{e}"));
    let n = sim.n_steps();
    for _ in 0..n {
        sim.step().unwrap();
    }
    sim
}

/// Displacement of (node, dof) in every partition that holds a copy.
pub fn displacement_copies(integ: &dyn TimeIntegrator, node: i64, dof: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for (p, part) in integ.partitions().iter().enumerate() {
        if let Some(i) = part
            .state
            .dofs
            .iter()
            .position(|d| d.node == node && d.dof == dof)
        {
            out.push(integ.state(p)[i]);
        }
    }
    out
}

/// Slopes log2(e_i/e_{i+1}) of a halving sequence.
pub fn slopes(errors: &[f64]) -> Vec<f64> {
    errors.windows(2).map(|w| (w[0] / w[1]).log2()).collect()
}

/// The nodes, masses (50 each) and springs of a shear chain, one node a spring: spring `i`
/// (`[[element]]` text `springs[i]`, then `spring_extra`) joins node `i + 1` to node `i`, the
/// first to the ground; `x` DOFs, kN and m. The caller adds the motion and `[analysis]`.
pub fn spring_chain_text(title: &str, springs: &[&str], spring_extra: &str) -> String {
    let mut text =
        format!("title = \"{title}\"\n[units]\nlength = \"m\"\nforce = \"kN\"\ntime = \"s\"\n");
    for i in 1..=springs.len() {
        text += &format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n");
        text +=
            &format!("[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n");
    }
    for (i, s) in springs.iter().enumerate() {
        let nodes = if i == 0 {
            "[1]".to_string()
        } else {
            format!("[{}, {}]", i + 1, i)
        };
        text += &format!(
            "[[element]]\n{s}\nname = \"s{}\"\nnodes = {nodes}\ndof = \"x\"\n{spring_extra}\n",
            i + 1
        );
    }
    text
}

/// Two uncoupled oscillators (masses 10 kg) under the same 1.5 Hz sine force of 100 N: `col_a`
/// (k = 10 kN/m, the "tested" column whose force identifies its stiffness) and `col_b` (the
/// numerical column, stiffness `k_b`, the receiver of the estimates), integrated by
/// `integrator` at `time_step` for `duration` (TOML numbers as written). `tail` follows the
/// `[analysis]` table (an `[updating]` table, or nothing). The model of the online-updating tests.
pub fn two_columns_text(
    integrator: &str,
    time_step: &str,
    duration: &str,
    k_b: f64,
    tail: &str,
) -> String {
    format!(
        r#"
title = "two columns"
[units]
length = "m"
force = "N"
time = "s"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
[substructure.s]
[[element]]
type = "spring"
name = "col_a"
nodes = [1]
dof = "x"
k = 1.0e4
substructure = "s"
[[element]]
type = "spring"
name = "col_b"
nodes = [2]
dof = "x"
k = {k_b:e}
substructure = "s"
[[element]]
type = "mass"
name = "m1"
node = 1
mass = 10.0
substructure = "s"
[[element]]
type = "mass"
name = "m2"
node = 2
mass = 10.0
substructure = "s"
[[load]]
node = 1
dof = "x"
sine = {{ amplitude = 100.0, frequency = 1.5 }}
[[load]]
node = 2
dof = "x"
sine = {{ amplitude = 100.0, frequency = 1.5 }}
[analysis]
integrator = "{integrator}"
time_step = {time_step}
duration = {duration}
{tail}
"#
    )
}

/// The `[updating]` table of the two-columns model: `col_a`'s stiffness identified by the UKF
/// from a prior 40 % too stiff, sent to `col_b`.
pub const TWO_COLUMNS_UPDATING: &str = "[updating]\nidentify = \"col_a\"\nparameters = [\"k\"]\n\
    prior_mean = [1.4e4]\nprior_sd = [5e3]\nparameter_noise_sd = [20.0]\nstate_noise_sd = 1.0\n\
    measurement_sd = 1.0\nreceivers = [\"col_b\"]\n";

/// The global stiffness `Tᵀ k T` of an elastic 2D beam-column (Euler–Bernoulli, axial
/// `EA/L`, bending `12EI/L³, 6EI/L², 4EI/L, 2EI/L`) from `(x1, y1)` to `(x2, y2)`, DOFs
/// `[x1, y1, rz1, x2, y2, rz2]`.
pub fn beam_column(x1: f64, y1: f64, x2: f64, y2: f64, ea: f64, ei: f64) -> [[f64; 6]; 6] {
    let l = ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt();
    let (c, s) = ((x2 - x1) / l, (y2 - y1) / l);
    let (a, b1, b2, b3, b4) = (
        ea / l,
        12.0 * ei / l.powi(3),
        6.0 * ei / l.powi(2),
        4.0 * ei / l,
        2.0 * ei / l,
    );
    let local = [
        [a, 0.0, 0.0, -a, 0.0, 0.0],
        [0.0, b1, b2, 0.0, -b1, b2],
        [0.0, b2, b3, 0.0, -b2, b4],
        [-a, 0.0, 0.0, a, 0.0, 0.0],
        [0.0, -b1, -b2, 0.0, b1, -b2],
        [0.0, b2, b4, 0.0, -b2, b3],
    ];
    let mut t = [[0.0; 6]; 6];
    for k in [0, 3] {
        t[k][k] = c;
        t[k][k + 1] = s;
        t[k + 1][k] = -s;
        t[k + 1][k + 1] = c;
        t[k + 2][k + 2] = 1.0;
    }
    let mut out = [[0.0; 6]; 6];
    for i in 0..6 {
        for j in 0..6 {
            let mut sum = 0.0;
            for p in 0..6 {
                for q in 0..6 {
                    sum += t[p][i] * local[p][q] * t[q][j];
                }
            }
            out[i][j] = sum;
        }
    }
    out
}

/// A moment frame of `storeys × bays` (3 DOFs a free node, base fixed) of `linear` members,
/// lumped masses with rotary inertia, Rayleigh damping.
pub fn frame(storeys: usize, bays: usize) -> String {
    let id = |f: usize, c: usize| f * (bays + 1) + c + 1;
    let (h, w) = (3.2, 6.0);
    let mut t = String::from("title = \"frame\"\n");
    for f in 0..=storeys {
        for c in 0..=bays {
            let fixed = if f == 0 {
                "\nfixed = [\"x\", \"y\", \"rz\"]"
            } else {
                ""
            };
            t += &format!(
                "[[node]]\nid = {}\ndofs = [\"x\", \"y\", \"rz\"]{fixed}\n",
                id(f, c)
            );
        }
    }
    let mut member = |name: String, a: usize, b: usize, k: [[f64; 6]; 6]| {
        let rows: Vec<String> = k
            .iter()
            .map(|r| {
                format!(
                    "[{}]",
                    r.iter()
                        .map(|v| format!("{v:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect();
        t += &format!(
            "[[element]]\ntype = \"linear\"\nname = \"{name}\"\n\
             dofs = [[{a}, \"x\"], [{a}, \"y\"], [{a}, \"rz\"], [{b}, \"x\"], [{b}, \"y\"], [{b}, \"rz\"]]\n\
             k = [{}]\n",
            rows.join(", ")
        );
    };
    for f in 1..=storeys {
        for c in 0..=bays {
            let x = c as f64 * w;
            let k = beam_column(x, (f - 1) as f64 * h, x, f as f64 * h, 8.0e6, 2.0e5);
            member(format!("col{f}_{c}"), id(f - 1, c), id(f, c), k);
        }
        for c in 0..bays {
            let y = f as f64 * h;
            let k = beam_column(c as f64 * w, y, (c + 1) as f64 * w, y, 6.0e6, 3.0e5);
            member(format!("beam{f}_{c}"), id(f, c), id(f, c + 1), k);
        }
    }
    for f in 1..=storeys {
        for c in 0..=bays {
            t += &format!(
                "[[element]]\ntype = \"mass\"\nname = \"m{f}_{c}\"\nnode = {}\n\
                 mass = [12.0, 12.0, 0.5]\n",
                id(f, c)
            );
        }
    }
    t += "[damping]\nalpha = 0.2\nbeta = 0.002\n";
    t += "[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\n";
    t
}
