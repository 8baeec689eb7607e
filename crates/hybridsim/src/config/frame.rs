//! `type = "frame"`: a linear frame or truss described by geometry and sections, condensed when
//! the model is read (Guyan 1965, [`crate::condensation`]) into a `linear` superelement on its
//! retained DOFs.
//!
//! The table follows OpenSees's vocabulary: nodes with coordinates and fixities
//! (`[[element.node]]`), elastic beam-columns and trusses with `E`, `A`, `Iz`, `Iy`, `J`, `G`,
//! `vecxz` and a mass per length (`[[element.member]]`), consistent or lumped mass. Each node
//! says which of its DOFs are retained and which model DOF they are (`retain = { y = [6, "y"] }`);
//! the rest are condensed out. The seismic load of the superelement is the full model's
//! `Tᵀ M ι` (every node, restrained ones included, translating with the ground along
//! `ground_axis`), not `M_r ι_r`: the mass of a base-fixed pier that the condensation moves to
//! the pier top is loaded by the ground motion as it is in the full model.

use super::{parse_params, ElementContext};
use crate::condensation::{Beam2d, Beam3d, FrameElement, FrameModel, MassForm, Truss, FRAME_DOFS};
use crate::elements::{DofRef, ElementRef, LinearSuperelement};
use crate::error::Diagnostics;
use nalgebra::{DMatrix, DVector, Vector3};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most nodes of a frame: its matrices are dense (6 DOFs a node).
pub const MAX_FRAME_NODES: usize = 400;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameParams {
    #[serde(default = "default_ndm")]
    ndm: u8,
    #[serde(default)]
    mass_form: Option<String>,
    #[serde(default)]
    ground_axis: Option<String>,
    #[serde(default)]
    node: Vec<FrameNode>,
    #[serde(default)]
    member: Vec<toml::Table>,
}

fn default_ndm() -> u8 {
    3
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Fixity {
    All(String),
    Dofs(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameNode {
    id: i64,
    coords: Vec<f64>,
    #[serde(default)]
    fix: Option<Fixity>,
    #[serde(default)]
    mass: BTreeMap<String, f64>,
    #[serde(default)]
    retain: BTreeMap<String, (i64, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberParams {
    kind: String,
    nodes: [i64; 2],
    #[serde(rename = "E")]
    e: f64,
    #[serde(rename = "A")]
    area: f64,
    #[serde(default, rename = "Iz")]
    iz: Option<f64>,
    #[serde(default, rename = "Iy")]
    iy: Option<f64>,
    #[serde(default, rename = "J")]
    j: Option<f64>,
    #[serde(default, rename = "G")]
    g: Option<f64>,
    #[serde(default)]
    vecxz: Option<[f64; 3]>,
    #[serde(default)]
    mass_per_length: f64,
}

/// The DOF names a node of an `ndm`-dimensional frame has.
fn frame_dofs(ndm: u8) -> &'static [&'static str] {
    if ndm == 2 {
        &["x", "y", "rz"]
    } else {
        &FRAME_DOFS
    }
}

fn dof_index(name: &str) -> Option<usize> {
    FRAME_DOFS.iter().position(|d| *d == name)
}

/// Builds the condensed superelement of a `frame` table.
pub(super) fn build_frame(
    ctx: &ElementContext,
    t: toml::Table,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<ElementRef> {
    let p: FrameParams = parse_params(t, diag, field)?;
    let before = diag.len();
    if !matches!(p.ndm, 2 | 3) {
        diag.push(
            format!("{field}.ndm"),
            format!("must be 2 (plane frame in x–y) or 3, found {}", p.ndm),
        );
        return None;
    }
    let form = match p.mass_form.as_deref() {
        None | Some("consistent") => MassForm::Consistent,
        Some("lumped") => MassForm::Lumped,
        Some(other) => {
            diag.push(
                format!("{field}.mass_form"),
                format!("must be \"consistent\" or \"lumped\", found \"{other}\""),
            );
            return None;
        }
    };
    if p.node.len() < 2 {
        diag.push(
            format!("{field}.node"),
            format!(
                "a frame needs at least two `[[element.node]]` tables, found {}",
                p.node.len()
            ),
        );
        return None;
    }
    if p.node.len() > MAX_FRAME_NODES {
        diag.push(
            format!("{field}.node"),
            format!(
                "has {} nodes; a frame has at most {MAX_FRAME_NODES} (its matrices are dense)",
                p.node.len()
            ),
        );
        return None;
    }
    if p.member.is_empty() {
        diag.push(
            format!("{field}.member"),
            "a frame needs at least one `[[element.member]]`",
        );
        return None;
    }
    let allowed = frame_dofs(p.ndm);
    let mut model = FrameModel {
        mass_form: Some(form),
        ..FrameModel::default()
    };
    let mut index: BTreeMap<i64, usize> = BTreeMap::new();
    let mut retained: Vec<(usize, usize)> = Vec::new();
    let mut dofs: Vec<DofRef> = Vec::new();
    for (i, n) in p.node.iter().enumerate() {
        let nf = format!("{field}.node[{i}]");
        if index.insert(n.id, i).is_some() {
            diag.push(
                format!("{nf}.id"),
                format!("node {} is defined twice", n.id),
            );
        }
        let c = match n.coords.as_slice() {
            [x, y] if p.ndm == 2 => Vector3::new(*x, *y, 0.0),
            [x, y, z] if p.ndm == 3 => Vector3::new(*x, *y, *z),
            _ => {
                diag.push(
                    format!("{nf}.coords"),
                    format!(
                        "needs {} coordinates for ndm = {}, found {}",
                        p.ndm,
                        p.ndm,
                        n.coords.len()
                    ),
                );
                Vector3::zeros()
            }
        };
        if c.iter().any(|x| !x.is_finite()) {
            diag.push(format!("{nf}.coords"), "must be finite");
        }
        model.nodes.push(c);
        if p.ndm == 2 {
            for d in ["z", "rx", "ry"] {
                model.fixed.push((i, dof_index(d).expect("frame DOF")));
            }
        }
        match &n.fix {
            None => {}
            Some(Fixity::All(s)) if s == "all" => {
                for d in allowed {
                    model.fixed.push((i, dof_index(d).expect("frame DOF")));
                }
            }
            Some(Fixity::All(s)) => diag.push(
                format!("{nf}.fix"),
                format!(
                    "must be \"all\" or a list of DOFs ({}), found \"{s}\"",
                    allowed.join(", ")
                ),
            ),
            Some(Fixity::Dofs(list)) => {
                for d in list {
                    if allowed.contains(&d.as_str()) {
                        model.fixed.push((i, dof_index(d).expect("frame DOF")));
                    } else {
                        diag.push(
                            format!("{nf}.fix"),
                            format!(
                                "unknown DOF `{d}` (a node of this frame has {})",
                                allowed.join(", ")
                            ),
                        );
                    }
                }
            }
        }
        for (d, m) in &n.mass {
            if !allowed.contains(&d.as_str()) {
                diag.push(
                    format!("{nf}.mass"),
                    format!(
                        "unknown DOF `{d}` (a node of this frame has {})",
                        allowed.join(", ")
                    ),
                );
            } else if !(m.is_finite() && *m >= 0.0) {
                diag.push(
                    format!("{nf}.mass.{d}"),
                    format!("must be finite and not negative, found {m}"),
                );
            } else {
                model.masses.push((i, dof_index(d).expect("frame DOF"), *m));
            }
        }
        // Retained DOFs in the frame's DOF order, whatever the order of the table's keys.
        for d in allowed {
            let Some((mn, md)) = n.retain.get(*d) else {
                continue;
            };
            let rf = format!("{nf}.retain.{d}");
            let di = dof_index(d).expect("frame DOF");
            if model.fixed.contains(&(i, di)) {
                diag.push(
                    &rf,
                    format!(
                        "DOF {d} of frame node {} is fixed: it cannot be retained",
                        n.id
                    ),
                );
                continue;
            }
            let Some(dof) = ctx.dof(*mn, md, diag, &rf) else {
                continue;
            };
            if dofs.contains(&dof) {
                diag.push(&rf, format!("model DOF {dof} is retained twice"));
                continue;
            }
            dofs.push(dof);
            retained.push((i, di));
        }
        for d in n.retain.keys() {
            if !allowed.contains(&d.as_str()) {
                diag.push(
                    format!("{nf}.retain"),
                    format!(
                        "unknown DOF `{d}` (a node of this frame has {})",
                        allowed.join(", ")
                    ),
                );
            }
        }
    }
    if diag.len() > before {
        return None;
    }
    if retained.is_empty() {
        diag.push(
            format!("{field}.node"),
            "no DOF is retained: give `retain = {{ DOF = [model node, \"model DOF\"] }}` on the nodes that connect the frame to the model",
        );
        return None;
    }
    if retained.len() > super::MAX_DOFS {
        diag.push(
            format!("{field}.node"),
            format!(
                "retains {} DOFs; at most {} are supported",
                retained.len(),
                super::MAX_DOFS
            ),
        );
        return None;
    }
    for (i, t) in p.member.iter().enumerate() {
        let mf = format!("{field}.member[{i}]");
        let Some(mp) = parse_params::<MemberParams>(t.clone(), diag, &mf) else {
            continue;
        };
        let mut ends = [0usize; 2];
        let mut ok = true;
        for (k, id) in mp.nodes.iter().enumerate() {
            match index.get(id) {
                Some(&n) => ends[k] = n,
                None => {
                    diag.push(format!("{mf}.nodes"), format!("unknown frame node {id}"));
                    ok = false;
                }
            }
        }
        if !ok {
            continue;
        }
        if ends[0] == ends[1] {
            diag.push(
                format!("{mf}.nodes"),
                format!("both ends are node {}", mp.nodes[0]),
            );
            continue;
        }
        let need = |v: Option<f64>, key: &str, diag: &mut Diagnostics| -> Option<f64> {
            if v.is_none() {
                diag.push(
                    format!("{mf}.{key}"),
                    format!(
                        "is required for a {} elastic beam-column",
                        if p.ndm == 2 { "2D" } else { "3D" }
                    ),
                );
            }
            v
        };
        let element: Box<dyn FrameElement> = match (mp.kind.as_str(), p.ndm) {
            ("truss", _) => {
                for (v, key) in [(mp.iz, "Iz"), (mp.iy, "Iy"), (mp.j, "J"), (mp.g, "G")] {
                    if v.is_some() {
                        diag.push(
                            format!("{mf}.{key}"),
                            "a truss has only E, A and mass_per_length",
                        );
                    }
                }
                if mp.vecxz.is_some() {
                    diag.push(
                        format!("{mf}.vecxz"),
                        "a truss has no local axes: remove vecxz",
                    );
                }
                Box::new(Truss {
                    nodes: ends,
                    e: mp.e,
                    area: mp.area,
                    mass_per_length: mp.mass_per_length,
                })
            }
            ("elastic_beam_column", 2) => {
                for (v, key) in [(mp.iy, "Iy"), (mp.j, "J"), (mp.g, "G")] {
                    if v.is_some() {
                        diag.push(
                            format!("{mf}.{key}"),
                            "a 2D beam-column has only E, A, Iz and mass_per_length",
                        );
                    }
                }
                if mp.vecxz.is_some() {
                    diag.push(
                        format!("{mf}.vecxz"),
                        "a 2D beam-column bends in the x–y plane: remove vecxz",
                    );
                }
                let Some(iz) = need(mp.iz, "Iz", diag) else {
                    continue;
                };
                Box::new(Beam2d {
                    nodes: ends,
                    e: mp.e,
                    area: mp.area,
                    i: iz,
                    mass_per_length: mp.mass_per_length,
                })
            }
            ("elastic_beam_column", _) => {
                let iz = need(mp.iz, "Iz", diag);
                let iy = need(mp.iy, "Iy", diag);
                let j = need(mp.j, "J", diag);
                let g = need(mp.g, "G", diag);
                let vecxz = mp.vecxz;
                if vecxz.is_none() {
                    diag.push(
                        format!("{mf}.vecxz"),
                        "is required for a 3D elastic beam-column (a vector in the local x–z plane, as OpenSees's geomTransf)",
                    );
                }
                let (Some(iz), Some(iy), Some(j), Some(g), Some(v)) = (iz, iy, j, g, vecxz) else {
                    continue;
                };
                Box::new(Beam3d {
                    nodes: ends,
                    e: mp.e,
                    g,
                    area: mp.area,
                    iz,
                    iy,
                    j,
                    mass_per_length: mp.mass_per_length,
                    vecxz: Vector3::from(v),
                })
            }
            (other, _) => {
                diag.push(
                    format!("{mf}.kind"),
                    format!("unknown member kind `{other}` (elastic_beam_column, truss)"),
                );
                continue;
            }
        };
        // The member's own problems (zero length, vecxz along the axis, a non-positive
        // property) are reported at the member.
        if let Err(e) = element
            .stiffness(&model.nodes)
            .and_then(|_| element.mass(&model.nodes, form))
        {
            diag.push(&mf, rewrite_nodes(&e, &p.node));
            continue;
        }
        model.elements.push(element);
    }
    if diag.len() > before {
        return None;
    }
    let condensed = match model.condense(&retained) {
        Ok(s) => s,
        Err(e) => {
            diag.push(field, rewrite_nodes(&e, &p.node));
            return None;
        }
    };
    // Out-of-range coordinates or properties (a member 1e146 long) overflow the condensed
    // matrices; an SVD of a non-finite matrix does not terminate.
    let finite = |m: &DMatrix<f64>| m.iter().all(|x| x.is_finite());
    if !finite(&condensed.mass) || !finite(&condensed.stiffness) {
        diag.push(
            format!("{field}.node"),
            "the coordinates and member properties give a non-finite condensed mass or \
             stiffness (a coordinate or a property out of range?)",
        );
        return None;
    }
    let influence = influence(&p, &model, &retained, &condensed.mass, diag, field)?;
    let n = retained.len();
    Some(Arc::new(LinearSuperelement::new(
        dofs,
        condensed.mass,
        DMatrix::zeros(n, n),
        condensed.stiffness,
        influence,
    )))
}

/// The frame axis of the ground motion: `ground_axis`, or the one axis the retained
/// translations are along.
fn ground_axis(
    p: &FrameParams,
    retained: &[(usize, usize)],
    diag: &mut Diagnostics,
    field: &str,
) -> Option<Option<usize>> {
    match p.ground_axis.as_deref() {
        Some(a @ ("x" | "y")) => Some(dof_index(a)),
        Some("z") if p.ndm == 3 => Some(Some(2)),
        Some(other) => {
            diag.push(
                format!("{field}.ground_axis"),
                format!(
                    "must be {} (the frame axis the ground moves along), found \"{other}\"",
                    if p.ndm == 2 { "x or y" } else { "x, y or z" }
                ),
            );
            None
        }
        None => {
            let mut axes: Vec<usize> = retained.iter().map(|r| r.1).filter(|d| *d < 3).collect();
            axes.sort_unstable();
            axes.dedup();
            match axes.as_slice() {
                [a] => Some(Some(*a)),
                [] => Some(None),
                _ => {
                    diag.push(
                        format!("{field}.ground_axis"),
                        "is required: the retained translations are along several axes; give the frame axis a ground motion acts along",
                    );
                    None
                }
            }
        }
    }
}

/// The influence vector `ι_r` with `M_r ι_r = Tᵀ M ι` (so the superelement's seismic load
/// `M_r ι_r a_g` is the full model's).
fn influence(
    p: &FrameParams,
    model: &FrameModel,
    retained: &[(usize, usize)],
    m_r: &DMatrix<f64>,
    diag: &mut Diagnostics,
    field: &str,
) -> Option<Option<DVector<f64>>> {
    let Some(axis) = ground_axis(p, retained, diag, field)? else {
        return Some(None);
    };
    let load = match model.seismic_load(retained, axis) {
        Ok(l) => l,
        Err(e) => {
            diag.push(field, rewrite_nodes(&e, &p.node));
            return None;
        }
    };
    if load.iter().any(|x| !x.is_finite()) {
        diag.push(
            format!("{field}.node"),
            "the coordinates and masses give a non-finite seismic load (a coordinate or a mass \
             out of range?)",
        );
        return None;
    }
    if load.iter().all(|x| *x == 0.0) {
        return Some(Some(DVector::zeros(retained.len())));
    }
    let scale = m_r.amax().max(f64::MIN_POSITIVE);
    let svd = m_r.clone().svd(true, true);
    let iota = svd.solve(&load, 1e-12 * scale).ok();
    let residual = iota
        .as_ref()
        .map(|i| (m_r * i - &load).amax())
        .unwrap_or(f64::INFINITY);
    match iota {
        Some(i) if residual <= 1e-8 * load.amax() => Some(Some(i)),
        _ => {
            diag.push(
                format!("{field}.mass_form"),
                "the condensed mass is singular and cannot carry the frame's seismic load Tᵀ M ι: \
                 retain only DOFs that have mass (translations) or use consistent mass",
            );
            None
        }
    }
}

/// Replace the frame's internal node indices in a condensation message (`node 3`, `nodes 1
/// and 2`) by the node ids of the file.
fn rewrite_nodes(message: &str, nodes: &[FrameNode]) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("node") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let word_end = if tail.starts_with("nodes ") {
            6
        } else if tail.starts_with("node ") {
            5
        } else {
            4
        };
        out.push_str(&tail[..word_end]);
        let mut after = &tail[word_end..];
        loop {
            let digits = after.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 || word_end == 4 {
                break;
            }
            let i: usize = after[..digits].parse().unwrap_or(usize::MAX);
            match nodes.get(i) {
                Some(n) => out.push_str(&n.id.to_string()),
                None => out.push_str(&after[..digits]),
            }
            after = &after[digits..];
            if let Some(a) = after.strip_prefix(" and ") {
                out.push_str(" and ");
                after = a;
            } else {
                break;
            }
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The keys of `type = "frame"` and its sub-tables, for the model-file reference
/// ([`super::keys::model_keys`]).
pub(super) fn frame_keys() -> Vec<(&'static str, Vec<String>)> {
    use super::keys::struct_keys;
    vec![
        ("element.frame", struct_keys::<FrameParams>()),
        ("element.frame.node", struct_keys::<FrameNode>()),
        ("element.frame.member", struct_keys::<MemberParams>()),
    ]
}
