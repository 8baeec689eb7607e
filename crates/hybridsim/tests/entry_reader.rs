//! The model reader takes the `node` and `element` arrays apart and reads them entry by entry
//! (issue 20: start-up memory). These tests check that it gives the model of the whole-file
//! reader (`Model::read_whole`) on every example and on the forms TOML allows, and that a
//! problem deep in a large array is still reported by file, field and reason.

mod common;

use hybridsim::config::ElementRegistry;
use hybridsim::error::ModelError;
use hybridsim::model::NoFiles;
use hybridsim::Model;

/// Both readers' results on `text`, as their `Debug` text (which prints every float in its
/// round-trip form: equal text, equal bits).
fn both(
    text: &str,
    source: &str,
    files: &dyn hybridsim::model::SourceResolver,
) -> (String, String) {
    let registry = ElementRegistry::default();
    let entries = Model::from_toml_with(text, source, files, &registry);
    let whole = Model::read_whole(text, source, files, &registry);
    (format!("{entries:?}"), format!("{whole:?}"))
}

#[test]
fn every_example_reads_to_the_model_of_the_whole_file_reader() {
    let folder = common::root().join("examples");
    let files = common::Folder(folder.clone());
    let mut paths: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut read = 0;
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (entries, whole) = both(&text, &name, &files);
        assert_eq!(entries, whole, "{name}: the two readers differ");
        read += usize::from(whole.starts_with("Ok("));
    }
    assert!(
        paths.len() >= 30 && read >= 30,
        "{read} of {} examples read",
        paths.len()
    );
}

/// A shear chain of `n` storeys: nodes and elements as root arrays of inline tables
/// (`inline`) or as `[[node]]`/`[[element]]` tables; `element[2i]` is the mass of node `i + 1`,
/// `element[2i + 1]` the spring under it. `edit(i, entry)` may change the text of element `i`.
fn chain(n: usize, inline: bool, edit: impl Fn(usize, String) -> String) -> String {
    let mut nodes = Vec::new();
    let mut elements = Vec::new();
    for i in 1..=n {
        nodes.push(format!("id = {i}\ndofs = [\"x\"]"));
        let below = if i == 1 {
            String::new()
        } else {
            format!("{}, ", i - 1)
        };
        elements.push(format!("type = \"mass\"\nnode = {i}\nmass = 50.0"));
        elements.push(format!(
            "type = \"spring\"\nnodes = [{below}{i}]\ndof = \"x\"\nk = 40000.0"
        ));
    }
    let elements: Vec<String> = elements
        .into_iter()
        .enumerate()
        .map(|(i, e)| edit(i, e))
        .collect();
    let tail = "[[ground_motion]]\ndirection = \"x\"\n\
                synthetic = { seed = 7, duration = 0.05, pga = 0.1 }\n\n\
                [analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\n";
    if inline {
        let row = |e: &String| format!("{{ {} }}", e.replace('\n', ", "));
        format!(
            "title = \"chain\"\nnode = [\n{}\n]\nelement = [\n{}\n]\n\n{tail}",
            nodes.iter().map(row).collect::<Vec<_>>().join(",\n"),
            elements.iter().map(row).collect::<Vec<_>>().join(",\n"),
        )
    } else {
        let mut text = String::from("title = \"chain\"\n\n");
        for x in &nodes {
            text += &format!("[[node]]\n{x}\n\n");
        }
        for x in &elements {
            text += &format!("[[element]]\n{x}\n\n");
        }
        text + tail
    }
}

fn error(text: &str) -> ModelError {
    let Err(entries) = Model::from_toml(text, "chain.toml", &NoFiles) else {
        panic!("the malformed chain was accepted");
    };
    let Err(whole) = Model::read_whole(text, "chain.toml", &NoFiles, &ElementRegistry::default())
    else {
        panic!("the whole-file reader accepted the malformed chain");
    };
    assert_eq!(
        format!("{entries:?}"),
        format!("{whole:?}"),
        "the two readers report differently"
    );
    entries
}

/// 1-based line of the first occurrence of `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).expect("needle")]
        .matches('\n')
        .count()
        + 1
}

#[test]
fn a_large_chain_reads_to_the_same_model_in_both_forms() {
    for inline in [true, false] {
        let text = chain(7000, inline, |_, e| e);
        let (entries, whole) = both(&text, "chain.toml", &NoFiles);
        assert!(
            entries.starts_with("Ok("),
            "{}",
            &entries[..entries.len().min(300)]
        );
        assert_eq!(entries, whole, "inline {inline}");
    }
}

#[test]
fn a_bad_value_deep_in_the_element_array_names_the_element_and_the_field() {
    for inline in [true, false] {
        let text = chain(7000, inline, |i, e| {
            if i == 12345 {
                e.replace("k = 40000.0", "k = -5.0")
            } else {
                e
            }
        });
        let e = error(&text);
        assert_eq!(e.issues.len(), 1, "{e}");
        let issue = &e.issues[0];
        assert_eq!(issue.file, "chain.toml");
        assert_eq!(issue.field, "element[12345].k", "{e}");
        assert!(issue.reason.contains("-5"), "{e}");
    }
}

#[test]
fn a_syntax_error_deep_in_the_element_array_names_its_line() {
    for inline in [true, false] {
        let text = chain(7000, inline, |i, e| {
            if i == 12345 {
                e.replace("k = 40000.0", "k = 4.0.0e4")
            } else {
                e
            }
        });
        let e = error(&text);
        let line = line_of(&text, "4.0.0e4");
        assert_eq!(e.issues.len(), 1, "{e}");
        assert_eq!(e.issues[0].field, format!("line {line}"), "{e}");
        assert_eq!(e.issues[0].file, "chain.toml");
    }
}

#[test]
fn an_unknown_key_deep_in_the_node_array_names_the_node() {
    let text = chain(7000, false, |_, e| e).replacen(
        "id = 6543\ndofs = [\"x\"]",
        "id = 6543\ndofs = [\"x\"]\ncolour = \"red\"",
        1,
    );
    let e = error(&text);
    let line = line_of(&text, "colour");
    assert_eq!(e.issues[0].field, "node[6542].colour", "{e}");
    assert!(e.issues[0].reason.contains("unknown field `colour`"), "{e}");
    assert!(
        e.issues[0].reason.contains(&format!("(line {line})")),
        "{e}"
    );
    // Written inline, the key is not at the start of its line: the line is the field.
    let text = chain(7000, true, |_, e| e).replacen(
        "{ id = 6543, dofs = [\"x\"] }",
        "{ id = 6543, dofs = [\"x\"], colour = \"red\" }",
        1,
    );
    let e = error(&text);
    let line = line_of(&text, "colour");
    assert_eq!(e.issues[0].field, format!("line {line}"), "{e}");
    assert!(e.issues[0].reason.contains("unknown field `colour`"), "{e}");
}

#[test]
fn an_element_that_is_not_an_inline_table_is_read_by_the_whole_file_reader() {
    let text = chain(20, true, |_, e| e).replacen("element = [\n", "element = [\n5,\n", 1);
    let e = error(&text);
    assert_eq!(e.issues.len(), 1, "{e}");
}

/// Small files in the forms the scan must see through: comments, strings holding brackets,
/// `#` and headers, multi-line strings and arrays, CRLF line ends, tables between the
/// `[[element]]` tables, dotted keys inside an entry, and the forms it must leave to the
/// whole-file reader (sub-tables of an entry, quoted or dotted array keys, both forms).
#[test]
fn the_scan_sees_through_strings_comments_and_layout() {
    let base = r#"title = "a [[element]] in a title # not a comment" # a comment [[node]]
description = """
[[element]]
type = "mass"
"""

[[node]]   # the first node
id = 1
dofs = ["x"]
initial_displacement = { x = 0.001 }

[analysis]
integrator = "mg-alpha"
time_step = 0.001
duration = 0.01

[[node]]
id = 2
dofs = [
  "x", # the only DOF
]

[[element]]
type = 'spring'
nodes = [1]
dof = "x"
k = 1.0e4
name = "a ] } [ { \" ' # string"

[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 1.0e4

[[element]]
type = "mass"
node = 1
mass = 1.0

[[element]]
type = "mass"
node = 2
mass = 1.0
"#;
    // `description` is not a model key: both readers refuse it, at the same line.
    let (entries, whole) = both(base, "s.toml", &NoFiles);
    assert_eq!(entries, whole);
    assert!(entries.contains("description"), "{entries}");
    let text = base.replacen(
        "description = \"\"\"\n[[element]]\ntype = \"mass\"\n\"\"\"\n",
        "",
        1,
    );
    for text in [text.clone(), text.replace('\n', "\r\n")] {
        let (entries, whole) = both(&text, "s.toml", &NoFiles);
        assert!(entries.starts_with("Ok("), "{entries}");
        assert_eq!(entries, whole);
    }
    for (from, to) in [
        ("[analysis]", "[node.extra]\nx = 1\n\n[analysis]"),
        ("[[node]]   # the first node", "[[\"node\"]]"),
        ("[[node]]   # the first node", "[[ node ]]"),
        ("title = ", "node.x = 1\ntitle = "),
        ("title = ", "node = []\ntitle = "),
        ("[analysis]", "[[element.sub]]\nx = 1\n[analysis]"),
        ("k = 1.0e4\nname", "k = 1.0e4\nk = 2.0\nname"),
        ("name = \"a ] }", "name = \"a ] }\n"),
    ] {
        let text = text.replacen(from, to, 1);
        let (entries, whole) = both(&text, "s.toml", &NoFiles);
        assert_eq!(entries, whole, "{from} → {to}");
    }
}

#[test]
fn a_file_over_16_mib_in_its_arrays_is_read_and_over_16_mib_besides_them_is_refused() {
    let comment = format!("# {}\n", "=".repeat(1000));
    let text = chain(10_000, false, |_, e| format!("{e}\n{comment}"));
    assert!(text.len() > 16 << 20, "{} bytes", text.len());
    let model = Model::from_toml(&text, "big.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.elements.len(), 20_000);
    // The same bytes outside the arrays go to the whole-file reader, bounded at 16 MiB.
    let text = chain(10_000, false, |_, e| e) + &comment.repeat(20_000);
    let e = error_only(&text);
    assert_eq!(e.issues[0].field, "file", "{e}");
    assert!(
        e.issues[0]
            .reason
            .contains("besides its `node` and `element` arrays")
            && e.issues[0].reason.contains("at most 16 MiB"),
        "{e}"
    );
}

fn error_only(text: &str) -> ModelError {
    match Model::from_toml(text, "big.toml", &NoFiles) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}
