//! Benchmark models shared by the step benchmarks (criterion) and the latency benchmark.
//!
//! - the split-mass benchmark of Abbiati et al. (2019), §2.2.2, Variant 1
//!   (`examples/split_mass_v1.toml`);
//! - a bridge-sized model: a Bouc-Wen pier (Abbiati et al. 2020, eq 16) as the physical
//!   substructure, and a numerical substructure with a Mostaghel isolator
//!   (Abbiati et al. 2020, eqs 17–19) under a 9-node deck chain with Rayleigh damping, under a
//!   seeded synthetic earthquake (seed 2020): 10 DOFs, 22–24 states;
//! - the element-level LLM scheme (Hovmand et al. 2022) on `examples/llm_split_mass.toml` and
//!   `examples/llm_cantilever_bouc_wen.toml`.
#![allow(dead_code)]

use hybridsim::assembly::{build_partitions, Grouping};
use hybridsim::integrators::PgAlpha;
use hybridsim::model::{NoFiles, SourceResolver};
use hybridsim::Model;
use std::path::{Path, PathBuf};

/// Reads files relative to the examples folder.
pub struct Examples;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

impl SourceResolver for Examples {
    fn read_to_string(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(examples_dir().join(path)).map_err(|e| e.to_string())
    }
}

/// One benchmark case.
pub struct Case {
    /// Label.
    pub name: String,
    /// The model.
    pub model: Model,
}

fn edit(text: &str, integrator: &str, ss: usize, dt: Option<f64>) -> String {
    let mut t: toml::Table = text.parse().expect("model TOML");
    let a = t
        .entry("analysis")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .expect("analysis table");
    a.insert("integrator".into(), integrator.into());
    a.insert("subcycles".into(), (ss as i64).into());
    a.insert("duration".into(), 1.0e6.into());
    if let Some(dt) = dt {
        a.insert("time_step".into(), dt.into());
    }
    toml::to_string(&t).expect("TOML")
}

/// The split-mass model (Variant 1) with a scheme and ss.
pub fn split_mass(integrator: &str, ss: usize) -> Model {
    let text = std::fs::read_to_string(examples_dir().join("split_mass_v1.toml")).expect("example");
    Model::from_toml(
        &edit(&text, integrator, ss, None),
        "split_mass_v1.toml",
        &NoFiles,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The bridge-sized model: `deck_nodes` deck nodes above the isolator.
pub fn bridge_text(deck_nodes: usize, hysteretic: bool) -> String {
    let mut s = String::from(
        "title = \"bridge-sized benchmark: Bouc-Wen pier (physical), Mostaghel isolator and deck chain\"\n\
         [substructure.deck]\n\
         [substructure.pier]\nphysical = true\n\
         estimate = { dofs = [[1, \"x\"]], stiffness = [[5.0e7]] }\n\
         [[node]]\nid = 1\ndofs = [\"x\"]\n",
    );
    for i in 0..deck_nodes {
        s += &format!("[[node]]\nid = {}\ndofs = [\"x\"]\n", i + 2);
    }
    s += "[[element]]\ntype = \"mass\"\nname = \"pier_top\"\nnode = 1\nmass = 4.0e4\nsplit = { deck = 0.5, pier = 0.5 }\n";
    if hysteretic {
        s += "[[element]]\ntype = \"bouc_wen\"\nname = \"pier\"\nnodes = [1]\ndof = \"x\"\nA = 5.0e7\nbeta = 3.5\ngamma = 60.0\nn = 1.0\nsubstructure = \"pier\"\n";
        s += "[[element]]\ntype = \"mostaghel\"\nname = \"isolator\"\nnodes = [1, 2]\ndof = \"x\"\nk = 1.66e8\nalpha = 0.0035\ndelta = 0.001\nsubstructure = \"deck\"\n";
    } else {
        s += "[[element]]\ntype = \"spring\"\nname = \"pier\"\nnodes = [1]\ndof = \"x\"\nk = 5.0e7\nsubstructure = \"pier\"\n";
        s += "[[element]]\ntype = \"spring\"\nname = \"isolator\"\nnodes = [1, 2]\ndof = \"x\"\nk = 5.81e5\nsubstructure = \"deck\"\n";
    }
    let m = 2.5e6 / deck_nodes as f64;
    for i in 0..deck_nodes {
        s += &format!(
            "[[element]]\ntype = \"mass\"\nname = \"deck{i}\"\nnode = {}\nmass = {m}\nsubstructure = \"deck\"\n",
            i + 2
        );
        if i + 1 < deck_nodes {
            s += &format!(
                "[[element]]\ntype = \"spring\"\nname = \"girder{i}\"\nnodes = [{}, {}]\ndof = \"x\"\nk = 5.0e8\nsubstructure = \"deck\"\n",
                i + 2,
                i + 3
            );
        }
    }
    s += "[damping]\nalpha = 0.0\nbeta = 0.002\n";
    s += "[[ground_motion]]\ndirection = \"x\"\nsynthetic = { seed = 2020, duration = 20.0, pga = 0.35 }\n";
    s += "[analysis]\nintegrator = \"pg-alpha\"\nrho_inf = 0.9\ntime_step = 0.001\nsubcycles = 1\nduration = 20.0\n";
    s
}

/// The bridge-sized model with a scheme and ss.
pub fn bridge(integrator: &str, ss: usize) -> Model {
    Model::from_toml(
        &edit(&bridge_text(9, true), integrator, ss, None),
        "bridge.toml",
        &NoFiles,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The bridge-sized model with linear pier and isolator springs (20 states).
pub fn bridge_linear(integrator: &str, ss: usize) -> Model {
    Model::from_toml(
        &edit(&bridge_text(9, false), integrator, ss, None),
        "bridge_linear.toml",
        &NoFiles,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// An example model with the LLM scheme, if the example exists and validates.
pub fn llm(example: &str) -> Option<Model> {
    let text = std::fs::read_to_string(examples_dir().join(example)).ok()?;
    match Model::from_toml(&text, example, &Examples) {
        Ok(mut m) => {
            m.analysis.duration = 1.0e6;
            Some(m)
        }
        Err(e) => {
            eprintln!("SKIPPED: {example}: {e}");
            None
        }
    }
}

/// Every case of the suite.
pub fn cases() -> Vec<Case> {
    let mut out = vec![Case {
        name: "split-mass MG-α".into(),
        model: split_mass("mg-alpha", 1),
    }];
    for ss in [1, 10, 128] {
        out.push(Case {
            name: format!("split-mass PG-α ss={ss}"),
            model: split_mass("pg-alpha", ss),
        });
    }
    out.push(Case {
        name: "bridge MG-α".into(),
        model: bridge("mg-alpha", 1),
    });
    for ss in [1, 10, 128] {
        out.push(Case {
            name: format!("bridge PG-α ss={ss}"),
            model: bridge("pg-alpha", ss),
        });
    }
    out.push(Case {
        name: "linear 20-state MG-α".into(),
        model: bridge_linear("mg-alpha", 1),
    });
    for ss in [1, 10] {
        out.push(Case {
            name: format!("linear 20-state PG-α ss={ss}"),
            model: bridge_linear("pg-alpha", ss),
        });
    }
    for ex in ["llm_split_mass.toml", "llm_cantilever_bouc_wen.toml"] {
        if let Some(m) = llm(ex) {
            out.push(Case {
                name: format!("LLM {}", ex.trim_end_matches(".toml")),
                model: m,
            });
        }
    }
    out
}

/// A PG-α integrator built directly (to time its phases).
pub fn pg_alpha(model: &Model) -> PgAlpha {
    let parts = build_partitions(model, Grouping::Partitioned).unwrap_or_else(|e| panic!("{e}"));
    let a = &model.analysis;
    PgAlpha::new(
        parts,
        &hybridsim::integrators::StepSettings::from_analysis(a),
    )
    .unwrap()
}

/// Number of states (flat `Y` sizes summed over partitions).
pub fn states(model: &Model) -> usize {
    let integ = hybridsim::integrators::build(model).unwrap();
    integ.partitions().iter().map(|p| p.state.size()).sum()
}
