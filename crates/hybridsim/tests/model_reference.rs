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
