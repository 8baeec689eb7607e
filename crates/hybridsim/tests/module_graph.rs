//! The core's top-level modules import each other without a circle: reading every source file
//! under `src/`, the `crate::<module>` paths outside comments give a graph over the top-level
//! modules, and that graph must have a topological order (printed, bottom first).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `crate::name` occurrences in a line of code (comments removed).
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let tail = &rest[i + "crate::".len()..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
        rest = tail;
    }
    out
}

/// The top-level module a source file belongs to (`lib` for lib.rs).
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn the_core_modules_form_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // Top-level modules: src/<m>.rs and src/<m>/.
    let mut modules = BTreeSet::new();
    for f in &files {
        let name = top_module(&src, f);
        if name != "lib" {
            modules.insert(name);
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for f in &files {
        let from = top_module(&src, f);
        if from == "lib" {
            continue;
        }
        for line in std::fs::read_to_string(f).unwrap().lines() {
            for to in crate_paths(line) {
                if to != from && modules.contains(&to) {
                    graph.get_mut(&from).unwrap().insert(to);
                }
            }
        }
    }
    // Kahn's algorithm: repeatedly take the modules whose imports are all placed.
    let mut placed: Vec<String> = Vec::new();
    let mut left: BTreeSet<String> = modules.clone();
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|m| graph[*m].iter().all(|d| placed.contains(d)))
            .cloned()
            .collect();
        if ready.is_empty() {
            let circle: Vec<String> = left
                .iter()
                .map(|m| {
                    format!(
                        "{m} -> {:?}",
                        graph[m].intersection(&left).collect::<Vec<_>>()
                    )
                })
                .collect();
            panic!(
                "import circle among the core's modules:\n{}",
                circle.join("\n")
            );
        }
        for m in ready {
            left.remove(&m);
            placed.push(m);
        }
    }
    for m in &placed {
        println!("{m} -> {:?}", graph[m]);
    }
}

/// Only the configuration layer reads TOML: no other module of the core names the `toml`
/// crate outside comments.
#[test]
fn only_the_configuration_layer_reads_toml() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut offenders = Vec::new();
    for f in &files {
        if top_module(&src, f) == "config" {
            continue;
        }
        for (i, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("toml::") || code.trim_start().starts_with("use toml") {
                offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "TOML outside config:\n{}",
        offenders.join("\n")
    );
}
