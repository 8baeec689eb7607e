//! `type = "frame"` elements: a frame described by geometry and sections, condensed when the
//! model file is read. Closed forms of an Euler–Bernoulli cantilever check the stiffness, the
//! mass and the seismic load `Tᵀ M ι`; malformed frames must be refused with the file, the
//! field and the reason.

use hybridsim::model::NoFiles;
use hybridsim::Model;

const SOURCE: &str = "frame.toml";

/// A model with one node `1` (DOF `x`) and the given frame element (`[[element]]` table
/// text, `[[element.node]]`/`[[element.member]]` included).
fn with_frame(frame: &str) -> String {
    format!(
        r#"
[[node]]
id = 1
dofs = ["x"]

{frame}

[[ground_motion]]
direction = "x"
synthetic = {{ seed = 1, duration = 1.0, pga = 0.1 }}

[analysis]
integrator = "mg-alpha"
time_step = 0.01
duration = 1.0
"#
    )
}

/// A vertical 2D cantilever pier of height `h` in `segments` beam-columns, base fixed, its
/// top's `x` retained as the model's `(1, "x")`.
fn cantilever_2d(h: f64, segments: usize, e: f64, iz: f64, mbar: f64) -> String {
    let mut s = String::from("[[element]]\ntype = \"frame\"\nname = \"pier\"\nndm = 2\n");
    for i in 0..=segments {
        let y = h * i as f64 / segments as f64;
        s += &format!("\n[[element.node]]\nid = {}\ncoords = [0.0, {y}]\n", 10 + i);
        if i == 0 {
            s += "fix = \"all\"\n";
        }
        if i == segments {
            s += "retain = { x = [1, \"x\"] }\n";
        }
    }
    for i in 0..segments {
        s += &format!(
            "\n[[element.member]]\nkind = \"elastic_beam_column\"\nnodes = [{}, {}]\nE = {e}\nA = 2.4\nIz = {iz}\nmass_per_length = {mbar}\n",
            10 + i,
            11 + i
        );
    }
    s
}

fn read(text: &str) -> Result<Model, String> {
    Model::from_toml(text, SOURCE, &NoFiles).map_err(|e| e.to_string())
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    ((a - b) / b).abs() < tol
}

#[test]
fn cantilever_stiffness_mass_and_seismic_load_have_their_closed_forms() {
    let (h, e, iz, mbar) = (7.5, 3.0e10, 0.82, 6000.0);
    for segments in [1, 4] {
        let model = read(&with_frame(&cantilever_2d(h, segments, e, iz, mbar))).unwrap();
        let el = &model.elements[0].element;
        assert_eq!(el.kind(), "linear");
        let k = el.linear_stiffness().unwrap();
        let m = el.mass().unwrap();
        assert_eq!((k.nrows(), k.ncols()), (1, 1));
        // Tip stiffness 3EI/h³, exact for any mesh.
        assert!(
            close(k[(0, 0)], 3.0 * e * iz / h.powi(3), 1e-10),
            "{}",
            k[(0, 0)]
        );
        // The static tip-load shape ψ = (3ξ² − ξ³)/2 is cubic, as the elements' shape
        // functions: M_r = m̄h ∫ψ² = 33/140 m̄h and Tᵀ M ι = m̄h ∫ψ = 3/8 m̄h exactly.
        assert!(
            close(m[(0, 0)], 33.0 / 140.0 * mbar * h, 1e-10),
            "{}",
            m[(0, 0)]
        );
        let iota = el
            .seismic_influence()
            .expect("a frame carries its influence");
        let load = m[(0, 0)] * iota[0];
        assert!(close(load, 3.0 / 8.0 * mbar * h, 1e-10), "{load}");
        // Not M_r ι_r with ι_r = 1: the pier's own mass is loaded as in the full model.
        assert!((iota[0] - 1.0).abs() > 0.5);
    }
}

#[test]
fn space_cantilever_bends_about_the_axes_vecxz_defines() {
    // Along global z, vecxz = X: local y = −Y, local z = X; Iz bends towards Y, Iy towards X
    // (OpenSees's Linear transformation).
    let (h, e, g, iz, iy, j) = (6.0_f64, 3.0e10, 1.25e10, 0.82, 2.40, 1.5);
    let frame = format!(
        r#"[[element]]
type = "frame"
name = "pier"
ground_axis = "x"
mass_form = "lumped"

[[element.node]]
id = 1
coords = [0.0, 0.0, 0.0]
fix = "all"

[[element.node]]
id = 2
coords = [0.0, 0.0, {h}]
retain = {{ x = [1, "x"], y = [1, "y"] }}
mass = {{ x = 1000.0, y = 1000.0 }}

[[element.member]]
kind = "elastic_beam_column"
nodes = [1, 2]
E = {e}
G = {g}
A = 2.4
Iz = {iz}
Iy = {iy}
J = {j}
vecxz = [1.0, 0.0, 0.0]
mass_per_length = 100.0
"#
    );
    let model =
        read(&with_frame(&frame).replace("dofs = [\"x\"]", "dofs = [\"x\", \"y\"]")).unwrap();
    let el = &model.elements[0].element;
    let k = el.linear_stiffness().unwrap();
    assert!(close(k[(0, 0)], 3.0 * e * iy / h.powi(3), 1e-10));
    assert!(close(k[(1, 1)], 3.0 * e * iz / h.powi(3), 1e-10));
    assert!(k[(0, 1)].abs() < 1e-9 * k[(0, 0)]);
    // Lumped: half the member's mass at the top plus the nodal mass; the base half goes to
    // the support. Along x the load is the top's mass, none along y.
    let m = el.mass().unwrap();
    assert!(close(m[(0, 0)], 1000.0 + 300.0, 1e-12));
    let iota = el.seismic_influence().unwrap();
    assert!(
        close(iota[0], 1.0, 1e-12) && iota[1].abs() < 1e-12,
        "{iota}"
    );
}

#[test]
fn existing_linear_element_reading_is_unchanged_by_the_frame_kind() {
    // The same pier as a hand-condensed `linear` element gives the same model matrices.
    let (h, e, iz, mbar) = (7.5, 3.0e10, 0.82, 6000.0);
    let frame = read(&with_frame(&cantilever_2d(h, 3, e, iz, mbar))).unwrap();
    let k = 3.0 * e * iz / h.powi(3);
    let m = 33.0 / 140.0 * mbar * h;
    let linear = read(&with_frame(&format!(
        "[[element]]\ntype = \"linear\"\nname = \"pier\"\ndofs = [[1, \"x\"]]\nk = [[{k:e}]]\nm = [[{m:e}]]\n"
    )))
    .unwrap();
    let (a, b) = (&frame.elements[0].element, &linear.elements[0].element);
    assert!(close(
        a.linear_stiffness().unwrap()[(0, 0)],
        b.linear_stiffness().unwrap()[(0, 0)],
        1e-12
    ));
    assert!(close(
        a.mass().unwrap()[(0, 0)],
        b.mass().unwrap()[(0, 0)],
        1e-12
    ));
}

/// The error of a model that must be refused: it names the file, `field` and `reason`.
fn refused(frame: &str, field: &str, reason: &str) {
    let text = with_frame(frame);
    let err = match std::panic::catch_unwind(|| read(&text)) {
        Ok(Err(e)) => e,
        Ok(Ok(_)) => panic!("accepted:\n{frame}"),
        Err(_) => panic!("panicked:\n{frame}"),
    };
    assert!(err.contains(SOURCE), "{err}");
    assert!(err.contains(field), "expected field `{field}` in: {err}");
    assert!(err.contains(reason), "expected `{reason}` in: {err}");
}

#[test]
fn malformed_frames_are_refused_with_file_field_and_reason() {
    let good = cantilever_2d(7.5, 2, 3.0e10, 0.82, 6000.0);
    // A 3D truss: its nodes' rotations have no stiffness, a mechanism.
    refused(
        r#"[[element]]
type = "frame"
ground_axis = "x"
[[element.node]]
id = 1
coords = [0.0, 0.0, 0.0]
fix = "all"
[[element.node]]
id = 2
coords = [1.0, 0.0, 0.0]
retain = { x = [1, "x"] }
[[element.member]]
kind = "truss"
nodes = [1, 2]
E = 2.0e11
A = 0.01
"#,
        "element[0]",
        "mechanism",
    );
    // Zero length.
    refused(
        &good.replace("coords = [0.0, 3.75]", "coords = [0.0, 0.0]"),
        "element[0].member[0]",
        "zero length",
    );
    // A retained DOF the model does not have.
    refused(
        &good.replace("retain = { x = [1, \"x\"] }", "retain = { x = [1, \"z\"] }"),
        "element[0].node[2].retain.x",
        "no DOF `z`",
    );
    refused(
        &good.replace("retain = { x = [1, \"x\"] }", "retain = { x = [7, \"x\"] }"),
        "element[0].node[2].retain.x",
        "unknown node 7",
    );
    // A fixed DOF retained.
    refused(
        &good.replacen(
            "fix = \"all\"",
            "fix = \"all\"\nretain = { y = [1, \"y\"] }",
            1,
        ),
        "element[0].node[0].retain.y",
        "is fixed",
    );
    // A 2D frame has no DOF z.
    refused(
        &good.replace("retain = { x = [1, \"x\"] }", "retain = { z = [1, \"x\"] }"),
        "element[0].node[2].retain",
        "unknown DOF `z`",
    );
    // A coordinate out of range overflows the condensed matrices (the SVD of the seismic load's
    // solve would not terminate on them).
    refused(
        &good.replace("coords = [0.0, 3.75]", "coords = [0.0, 3.75e146]"),
        "element[0].node",
        "non-finite",
    );
    // An unknown member node, kind, missing Iz, unknown key, bad ndm and mass form.
    refused(
        &good.replacen("nodes = [10, 11]", "nodes = [10, 99]", 1),
        "element[0].member[0].nodes",
        "unknown frame node 99",
    );
    refused(
        &good.replacen("kind = \"elastic_beam_column\"", "kind = \"beam\"", 1),
        "element[0].member[0].kind",
        "unknown member kind",
    );
    refused(
        &good.replacen("Iz = 0.82\n", "", 1),
        "element[0].member[0].Iz",
        "is required",
    );
    refused(
        &good.replacen("Iz = 0.82\n", "Iz = -0.82\n", 1),
        "element[0].member[0]",
        "Iz must be",
    );
    refused(
        &good.replacen("A = 2.4\n", "A = 2.4\nIzz = 1.0\n", 1),
        "element[0].member[0].Izz",
        "unknown field",
    );
    refused(
        &good.replace("ndm = 2", "ndm = 4"),
        "element[0].ndm",
        "must be 2",
    );
    refused(
        &good.replace("ndm = 2", "ndm = 2\nmass_form = \"diagonal\""),
        "element[0].mass_form",
        "lumped",
    );
    // Nothing retained.
    refused(
        &good.replace("retain = { x = [1, \"x\"] }", ""),
        "element[0].node",
        "no DOF is retained",
    );
    // A 3D beam without vecxz, and vecxz along the axis.
    let beam3d = |vec: &str| {
        format!(
            r#"[[element]]
type = "frame"
[[element.node]]
id = 1
coords = [0.0, 0.0, 0.0]
fix = "all"
[[element.node]]
id = 2
coords = [0.0, 0.0, 5.0]
retain = {{ x = [1, "x"] }}
[[element.member]]
kind = "elastic_beam_column"
nodes = [1, 2]
E = 3.0e10
G = 1.2e10
A = 2.4
Iz = 0.82
Iy = 2.4
J = 1.5
{vec}
"#
        )
    };
    refused(&beam3d(""), "element[0].member[0].vecxz", "is required");
    refused(
        &beam3d("vecxz = [0.0, 0.0, 1.0]"),
        "element[0].member[0]",
        "parallel",
    );
}
