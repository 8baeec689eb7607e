//! The model-file reference (`docs/model-reference.md`) lists every key the parser accepts, and
//! no key the parser rejects: each table of [`hybridsim::config::keys::model_keys`] is a
//! `### \`[table]\`` heading of the document whose key table has exactly those keys. A key
//! added to a schema struct (or an element's parameters) without a line in the document fails
//! this test, naming the table and the key.
//!
//! `HYBRIDSIM_PRINT_KEYS=1 cargo test -p hybridsim --test model_reference -- --nocapture`
//! prints the tables, keys and element parameters, tab-separated (input of the document's skeleton).

use hybridsim::config::keys::{element_parameters, model_keys, struct_keys};
use hybridsim::config::schema::{ModelFile, SineSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `(table → keys)` documented: under each heading `### `[table]`` (or `### `[[table]]``), the
/// first cell of each row of the key table, in backticks.
fn documented(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            current = h
                .split('`')
                .nth(1)
                .map(|t| t.trim_matches(['[', ']']).to_string());
            if let Some(t) = &current {
                out.entry(t.clone()).or_default();
            }
            continue;
        }
        if line.starts_with("## ") {
            current = None;
            continue;
        }
        let Some(table) = &current else { continue };
        let Some(row) = line.strip_prefix("| `") else {
            continue;
        };
        if let Some(key) = row.split('`').next() {
            out.get_mut(table).unwrap().insert(key.to_string());
        }
    }
    out
}

#[test]
fn reference_lists_every_key_the_parser_accepts() {
    let tables = model_keys();
    if std::env::var_os("HYBRIDSIM_PRINT_KEYS").is_some() {
        for (t, keys) in &tables {
            println!("TABLE\t{t}\t{}", keys.join(","));
        }
        for (kind, rows) in element_parameters() {
            for (n, u, d) in rows {
                println!("PARAM\t{kind}\t{n}\t{u}\t{d:?}");
            }
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/model-reference.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = documented(&doc);
    let mut problems = Vec::new();
    for (table, keys) in &tables {
        let name = if table.is_empty() { "top level" } else { table };
        let Some(listed) = doc.get(table.as_str()) else {
            problems.push(format!("table `{name}` has no `### ` section"));
            continue;
        };
        for k in keys {
            if !listed.contains(k) {
                problems.push(format!(
                    "`{name}`: key `{k}` is accepted but not documented"
                ));
            }
        }
        for k in listed {
            if !keys.contains(k) {
                problems.push(format!(
                    "`{name}`: key `{k}` is documented but not accepted"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/model-reference.md is out of date:\n  {}",
        problems.join("\n  ")
    );
}

/// The doc's reader finds keys under their table (and the check can fail).
#[test]
fn the_reader_sees_tables_and_keys() {
    let doc = "## A\n### `[lab]`\n| key | type |\n|---|---|\n| `transfer` | string |\n### `[[node]]`\n| `id` | integer |\n";
    let d = documented(doc);
    assert!(d["lab"].contains("transfer"));
    assert!(d["node"].contains("id"));
    let accepted = model_keys();
    let lab = &accepted.iter().find(|(t, _)| t == "lab").unwrap().1;
    assert!(
        lab.len() > 1 && lab.iter().any(|k| k == "transfer"),
        "{lab:?}"
    );
}

/// `struct_keys` reads a struct's fields from serde's unknown-field error.
#[test]
fn struct_keys_reads_the_fields() {
    assert_eq!(struct_keys::<SineSpec>()[..2], ["amplitude", "frequency"]);
    let top = struct_keys::<ModelFile>();
    for k in [
        "title", "units", "node", "element", "analysis", "lab", "updating",
    ] {
        assert!(top.iter().any(|x| x == k), "{k} not in {top:?}");
    }
    for (table, keys) in model_keys() {
        assert!(!keys.is_empty(), "table `{table}` lists no keys");
    }
}

/// Every element kind a model file may name has its table in the key list (and so in the
/// document): a new kind registered without its keys fails here.
#[test]
fn every_element_kind_has_its_keys() {
    let tables: BTreeSet<String> = model_keys().into_iter().map(|(t, _)| t).collect();
    for kind in hybridsim::config::ElementRegistry::default().kinds() {
        assert!(
            tables.contains(&format!("element.{kind}")),
            "element kind `{kind}` has no `element.{kind}` key table"
        );
    }
}

/// A two-DOF split-mass model with one actuator whose `dynamics` is `DYNAMICS` and whose extra
/// keys are `EXTRA`.
const LAB_MODEL: &str = r#"title = "hand-read lab tables"
[[node]]
id = 1
dofs = ["x"]
[substructure.numerical]
[substructure.specimen]
physical = true
estimate = { dofs = [[1, "x"]], stiffness = [[4.0e5]] }
[[element]]
type = "mass"
node = 1
mass = 8.0e3
split = { numerical = 0.5, specimen = 0.5 }
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 4.0e5
substructure = "specimen"
[analysis]
integrator = "pg-alpha"
time_step = 0.01
duration = 0.1
[lab]
time_scale = 1.0
[[lab.actuator]]
name = "act1"
dofs = [[1, "x"]]
capacity = { stroke = 0.075, velocity = 0.6, force = 2.5e4 }
DYNAMICS
EXTRA
[safety.actuator.act1]
displacement = 0.05
velocity = 0.5
force = 2.0e4
increment = 2.0e-3
[safety.divergence]
displacement = 0.04
force = 1.0e5
"#;

/// A valid value of each key of the hand-read tables, so that a table with every listed key
/// plus one unknown key has exactly one problem: the unknown key.
fn sample(key: &str) -> &'static str {
    match key {
        "a" => "[[-100.0]]",
        "b" | "c" => "[100.0]",
        "num" => "[1.0]",
        "den" => "[0.004, 1.0]",
        "discretization" => "\"tustin\"",
        "min" => "-1.0",
        "max" => "1.0",
        "range" => "1.0",
        "resolution" => "0.001",
        "phase" => "30.0",
        "substeps" => "20",
        _ => "0.001",
    }
}

/// Reads `LAB_MODEL` with `dynamics` and `extra`; the issues' `(field, reason)`.
fn lab_issues(dynamics: &str, extra: &str) -> Vec<(String, String)> {
    let text = LAB_MODEL
        .replace("DYNAMICS", dynamics)
        .replace("EXTRA", extra);
    match hybridsim::Model::from_toml(&text, "lab.toml", &hybridsim::model::NoFiles) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .issues
            .iter()
            .map(|i| {
                assert_eq!(i.file, "lab.toml", "{i}");
                (i.field.clone(), i.reason.clone())
            })
            .collect(),
    }
}

/// The hand-read sub-tables of `[[lab.actuator]]` (`controller`, `signals`, each stand-alone
/// `dynamics` kind, each block kind) reject an unknown key with an error naming the file and
/// the field, and accept every key the reference lists for them (the lists the parser checks
/// against are the ones `model_keys` reports, so the document covers them too).
#[test]
fn hand_read_lab_tables_reject_unknown_keys() {
    let tables = model_keys();
    let mut checked = 0;
    for (table, keys) in &tables {
        if let Some(kind) = table.strip_prefix("lab.actuator.dynamics.") {
            let mut body: Vec<String> = keys
                .iter()
                .filter(|k| *k != "kind")
                .map(|k| format!("{k} = {}", sample(k)))
                .collect();
            body.insert(0, format!("kind = \"{kind}\""));
            let ok = format!("dynamics = {{ {} }}", body.join(", "));
            let issues = lab_issues(&ok, "");
            assert!(
                issues.iter().all(|(_, r)| !r.contains("unknown key")),
                "{table}: a listed key is rejected: {issues:?}"
            );
            let bad = ok.replace(" }", ", bogus_key = 1.0 }");
            let issues = lab_issues(&bad, "");
            assert!(
                issues
                    .iter()
                    .any(|(f, r)| f == "lab.actuator[0].dynamics.bogus_key"
                        && r.contains("unknown key")),
                "{table}: {issues:?}"
            );
            checked += 1;
        } else if let Some(kind) = table.strip_prefix("lab.actuator.block.") {
            let body: Vec<String> = keys
                .iter()
                .map(|k| match k.as_str() {
                    "kind" => format!("kind = \"{kind}\""),
                    // `zero`/`pole` and `frequency`/`phase` are alternatives; `prewarp` needs
                    // Tustin; derivative filters exclude each other.
                    "zero" | "pole" | "derivative_time_constant" => String::new(),
                    k => format!("{k} = {}", sample(k)),
                })
                .filter(|s| !s.is_empty())
                .collect();
            let chain = format!(
                "dynamics = [{{ kind = \"first_order\", tau = 0.001 }}, {{ {} }}]",
                body.join(", ")
            );
            let issues = lab_issues(&chain, "");
            assert!(
                issues.iter().all(|(_, r)| !r.contains("unknown key")),
                "{table}: a listed key is rejected: {issues:?}"
            );
            let bad = chain.replace(" }]", ", bogus_key = 1.0 }]");
            let issues = lab_issues(&bad, "");
            assert!(
                issues
                    .iter()
                    .any(|(f, r)| f == "lab.actuator[0].dynamics[1].bogus_key"
                        && r.contains("unknown key")),
                "{table}: {issues:?}"
            );
            assert!(
                issues.iter().all(|(f, _)| !f.ends_with("bogus_key")
                    || f == "lab.actuator[0].dynamics[1].bogus_key"),
                "{table}: {issues:?}"
            );
            checked += 1;
        } else if let Some(name) = table.strip_prefix("lab.actuator.") {
            if name != "controller" && name != "signals" {
                continue;
            }
            let extra = if name == "controller" {
                "controller = { feedback = [{ kind = \"pid\", kp = 1.0 }], bogus_key = 1.0 }"
            } else {
                "controller = { feedback = [{ kind = \"pid\", kp = 1.0 }] }\n\
                 signals = { command = [{ kind = \"rate_limit\", rate = 1.0 }], bogus_key = 1.0 }"
            };
            let issues = lab_issues("", extra);
            assert!(
                issues
                    .iter()
                    .any(|(f, r)| f == &format!("lab.actuator[0].{name}.bogus_key")
                        && r.contains("unknown key")),
                "{table}: {issues:?}"
            );
            checked += 1;
        }
    }
    // controller, signals, 5 stand-alone dynamics kinds, 10 block kinds.
    assert_eq!(checked, 17, "hand-read tables in model_keys()");
}

/// Every value of `analysis.nonlinear_solver` the parser accepts (issue 17: `converged`,
/// `newton`, `corrections`) is named in the reference's row of that key, and parses.
#[test]
fn reference_names_every_nonlinear_solver() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/model-reference.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `nonlinear_solver` |"))
        .expect("a row for analysis.nonlinear_solver");
    for value in ["converged", "newton", "corrections"] {
        assert!(
            row.contains(&format!("`{value}`:")),
            "`{value}` is not described"
        );
        let text = format!(
            "[[node]]\nid = 1\ndofs = [\"x\"]\n[[element]]\ntype = \"mass\"\nname = \"m\"\n\
             node = 1\nmass = 1.0\n[[element]]\ntype = \"spring\"\nname = \"k\"\nnodes = [1]\n\
             dof = \"x\"\nk = 1.0\n[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.01\n\
             duration = 0.1\nnonlinear_solver = \"{value}\"\n"
        );
        hybridsim::Model::from_toml(&text, "solver.toml", &hybridsim::model::NoFiles)
            .unwrap_or_else(|e| panic!("{value}: {e}"));
    }
}
