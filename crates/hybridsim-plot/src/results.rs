//! Reading a results folder and building the standard figures of `hybridsim plot`.
//!
//! A results folder (written by `hybridsim run` or `hybridsim cyclic`) holds `results.csv`, whose
//! header cells are `name[unit]`, and usually `run.json`. Column names follow the recorder
//! (`hybridsim::output`): `time`, `u.<substructure>.<node>.<dof>`, `lambda.<node>.<dof>`,
//! `gap_u.…`, `gap_v.…`, `energy.<substructure>`, `force.<element>.<node>.<dof>`,
//! `state.<element>.<name>`, and optionally `deformation.<element>`.
//!
//! Figures (each written as PNG and SVG by [`plot_results_folder`]):
//! - `displacements`: one chart per substructure copy;
//! - `interface`: Λ, displacement gap and velocity gap (partitioned runs);
//! - `energy`: the energy balance channels;
//! - `element_histories`: imposed deformations and element forces against time (folders of
//!   `hybridsim cyclic`, which record `deformation.<element>`);
//! - `hysteresis`: element force against element deformation, one chart per element;
//! - `element_energy`: cumulative energy absorbed by each element, `Σ_i ∫ r_i du_i` (trapezoidal),
//!   which over closed loops is the dissipated energy, plus any energy-valued element state
//!   (e.g. a dissipated-energy state, ALGORITHMS.md A13/E32).

use crate::{save_grid, Axis, Chart, PlotError, Series};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Points kept per time-history series (min/max per bucket beyond that).
const MAX_POINTS: usize = 4000;
/// Charts per hysteresis/energy figure at most (the rest are listed as skipped).
const MAX_CHARTS: usize = 12;

/// A results table: column names, units and values (column-major).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultsTable {
    /// Column names without the unit (`u.frame.2.x`).
    pub names: Vec<String>,
    /// Column units (`m`), empty when the header has none.
    pub units: Vec<String>,
    /// One vector per column, all of the same length.
    pub columns: Vec<Vec<f64>>,
}

/// Split a header cell `name[unit]` into name and unit.
pub fn split_header(cell: &str) -> (String, String) {
    let cell = cell.trim();
    if let (Some(open), true) = (cell.rfind('['), cell.ends_with(']')) {
        (
            cell[..open].to_string(),
            cell[open + 1..cell.len() - 1].to_string(),
        )
    } else {
        (cell.to_string(), String::new())
    }
}

/// The line (1-based) of the record starting at `pos` in `bytes`. The `csv` crate's own
/// `Position::line` does not count the blank lines it skips (BurntSushi/rust-csv#208), so the
/// line is counted from the record's byte offset, past any blank lines before the record.
fn line_at(bytes: &[u8], pos: &csv::Position) -> usize {
    let start = usize::try_from(pos.byte()).map_or(bytes.len(), |b| b.min(bytes.len()));
    let mut line = 1 + bytes[..start].iter().filter(|&&b| b == b'\n').count();
    for &b in &bytes[start..] {
        match b {
            b'\n' => line += 1,
            b'\r' => {}
            _ => break,
        }
    }
    line
}

/// Why the `csv` reader stopped, naming the line.
fn csv_reason(bytes: &[u8], e: &csv::Error) -> String {
    let at = |pos: Option<&csv::Position>| match pos {
        Some(p) => format!("line {}: ", line_at(bytes, p)),
        None => String::new(),
    };
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => format!(
            "{}{len} values but the header has {expected_len} columns",
            at(pos.as_ref())
        ),
        csv::ErrorKind::Utf8 { pos, err } => {
            format!(
                "{}field {} is not UTF-8 text",
                at(pos.as_ref()),
                err.field() + 1
            )
        }
        _ => e.to_string(),
    }
}

impl ResultsTable {
    /// Parse CSV text (header `name[unit]`, numeric rows; `NaN`/`inf` allowed; blank lines
    /// skipped). `source` names the file in errors.
    pub fn parse(text: &str, source: &Path) -> Result<Self, PlotError> {
        Self::parse_bytes(text.as_bytes(), source)
    }

    /// Read a results file: CSV text, or the binary layout of [`crate::binary`] (recognized by
    /// its first bytes, whatever the file's name), whose partial last row, if any, is ignored.
    pub fn read(path: &Path) -> Result<Self, PlotError> {
        Self::read_noting(path).map(|(t, _)| t)
    }

    /// [`ResultsTable::read`], with what a reader should tell its user: a binary file's
    /// ignored partial last row ([`crate::binary::BinaryTable::partial_row_note`]).
    pub fn read_noting(path: &Path) -> Result<(Self, Option<String>), PlotError> {
        let bytes = std::fs::read(path).map_err(|e| PlotError::Read {
            path: path.to_path_buf(),
            reason: format!("cannot read: {e}"),
        })?;
        if crate::binary::is_binary(&bytes) {
            let b = crate::binary::parse(&bytes, path)?;
            let note = b.partial_row_note(path);
            return Ok((b.table, note));
        }
        Self::parse_bytes(&bytes, path).map(|t| (t, None))
    }

    /// Parse CSV bytes with the `csv` crate (RFC 4180: a quoted header cell may hold commas;
    /// blank lines skipped, fields trimmed). Every row must have the header's number of
    /// fields and every field must be a number (`NaN`, `inf`, `-inf` included); otherwise the
    /// error names `source`, the line, the column and the reason.
    pub fn parse_bytes(bytes: &[u8], source: &Path) -> Result<Self, PlotError> {
        let err = |reason: String| PlotError::Read {
            path: source.to_path_buf(),
            reason,
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .trim(csv::Trim::All)
            .from_reader(bytes);
        let header = reader.headers().map_err(|e| err(csv_reason(bytes, &e)))?;
        if header.is_empty() {
            return Err(err("empty file: no header line".into()));
        }
        let (names, units): (Vec<_>, Vec<_>) = header.iter().map(split_header).unzip();
        let mut columns = vec![Vec::new(); names.len()];
        let mut record = csv::ByteRecord::new();
        loop {
            match reader.read_byte_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Err(err(csv_reason(bytes, &e))),
            }
            for (c, cell) in record.iter().enumerate() {
                let v = std::str::from_utf8(cell)
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .ok_or_else(|| {
                        let line = record.position().map_or(0, |p| line_at(bytes, p));
                        err(format!(
                            "line {line}, column `{}`: `{}` is not a number",
                            names[c],
                            String::from_utf8_lossy(cell)
                        ))
                    })?;
                columns[c].push(v);
            }
        }
        Ok(Self {
            names,
            units,
            columns,
        })
    }

    /// Index of a column by name.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Values of a column by name.
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        self.index(name).map(|i| self.columns[i].as_slice())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Vec::len)
    }
}

/// One figure: a file stem (`hysteresis`) and its charts, stacked vertically.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name without extension.
    pub stem: String,
    /// Charts, top to bottom.
    pub charts: Vec<Chart>,
}

/// `name [u1, u2]` from the distinct non-empty units.
fn label(quantity: &str, units: &[&str]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for u in units {
        if !u.is_empty() && !distinct.contains(u) {
            distinct.push(u);
        }
    }
    if distinct.is_empty() {
        quantity.to_string()
    } else {
        format!("{quantity} [{}]", distinct.join(", "))
    }
}

/// Row indices keeping at most about `max` points: the first and last row and, per bucket,
/// the rows of the minimum and maximum of `y` (so peaks survive).
fn decimate(y: &[f64], max: usize) -> Vec<usize> {
    let n = y.len();
    if n <= max {
        return (0..n).collect();
    }
    let bucket = n.div_ceil(max / 2);
    let mut out = Vec::with_capacity(max + 2);
    let mut start = 0;
    while start < n {
        let end = (start + bucket).min(n);
        let (mut imin, mut imax) = (start, start);
        for i in start..end {
            if y[i] < y[imin] || y[imin].is_nan() {
                imin = i;
            }
            if y[i] > y[imax] || y[imax].is_nan() {
                imax = i;
            }
        }
        let (a, b) = if imin <= imax {
            (imin, imax)
        } else {
            (imax, imin)
        };
        out.push(a);
        if b != a {
            out.push(b);
        }
        start = end;
    }
    if out.first() != Some(&0) {
        out.insert(0, 0);
    }
    if out.last() != Some(&(n - 1)) {
        out.push(n - 1);
    }
    out
}

/// A time-history series of column `c` against `time`, decimated for drawing.
fn history(table: &ResultsTable, time: &[f64], c: usize, name: String) -> Series {
    let y = &table.columns[c];
    let idx = decimate(y, MAX_POINTS);
    Series {
        name,
        x: idx.iter().map(|&i| time[i]).collect(),
        y: idx.iter().map(|&i| y[i]).collect(),
    }
}

/// `prefix.<rest>` → rest split from the right into (`head`, node, dof) where the name ends
/// in `.<node>.<dof>`.
fn split_dof(rest: &str) -> Option<(&str, &str, &str)> {
    let mut it = rest.rsplitn(3, '.');
    let dof = it.next()?;
    let node = it.next()?;
    let head = it.next().unwrap_or("");
    node.parse::<i64>().ok()?;
    Some((head, node, dof))
}

/// An element's force columns, from `force.<element>.<node>.<dof>` headers.
struct ElementColumns {
    name: String,
    /// (column index, node, dof)
    forces: Vec<(usize, String, String)>,
    states: Vec<usize>,
    deformation: Option<usize>,
}

fn elements(table: &ResultsTable) -> Vec<ElementColumns> {
    let mut out: Vec<ElementColumns> = Vec::new();
    for (c, name) in table.names.iter().enumerate() {
        let Some(rest) = name.strip_prefix("force.") else {
            continue;
        };
        let Some((el, node, dof)) = split_dof(rest) else {
            continue;
        };
        // `force.rayleigh@<substructure>…` are Rayleigh damping forces, not elements.
        if el.is_empty() || el.contains('@') {
            continue;
        }
        match out.iter_mut().find(|e| e.name == el) {
            Some(e) => e.forces.push((c, node.into(), dof.into())),
            None => out.push(ElementColumns {
                name: el.into(),
                forces: vec![(c, node.into(), dof.into())],
                states: Vec::new(),
                deformation: None,
            }),
        }
    }
    for e in &mut out {
        let prefix = format!("state.{}.", e.name);
        e.states = (0..table.names.len())
            .filter(|&c| table.names[c].starts_with(&prefix))
            .collect();
        e.deformation = table
            .index(&format!("deformation.{}", e.name))
            .or_else(|| table.index(&format!("state.{}.deformation", e.name)));
    }
    out
}

/// Displacement column of `node.dof` for the element whose force column is `force_col`: the
/// substructure copy whose `u.` columns precede the force column (the recorder writes each
/// substructure's element forces after its own DOFs), else any copy, else a copy-less `u.node.dof`.
fn displacement_of(table: &ResultsTable, force_col: usize, node: &str, dof: &str) -> Option<usize> {
    let suffix = format!(".{node}.{dof}");
    let owner = table.names[..force_col]
        .iter()
        .rev()
        .find_map(|n| n.strip_prefix("u.").and_then(split_dof).map(|(s, _, _)| s));
    if let Some(sub) = owner {
        if let Some(i) = table.index(&format!("u.{sub}{suffix}")) {
            return Some(i);
        }
    }
    table
        .names
        .iter()
        .position(|n| n.starts_with("u.") && n.ends_with(&suffix))
        .or_else(|| table.index(&format!("u{suffix}")))
}

/// Element deformation history and its unit: the `deformation.<element>` column when recorded,
/// else `u(first DOF)` for one DOF or `u(first) − u(second)` for two DOFs of the same name.
fn deformation(table: &ResultsTable, e: &ElementColumns) -> Option<(Vec<f64>, String)> {
    if let Some(c) = e.deformation {
        return Some((table.columns[c].clone(), table.units[c].clone()));
    }
    match e.forces.as_slice() {
        [(c, node, dof)] => {
            let i = displacement_of(table, *c, node, dof)?;
            Some((table.columns[i].clone(), table.units[i].clone()))
        }
        [(c1, n1, d1), (c2, n2, d2)] if d1 == d2 => {
            let i = displacement_of(table, *c1, n1, d1)?;
            let j = displacement_of(table, *c2, n2, d2)?;
            let d = table.columns[i]
                .iter()
                .zip(&table.columns[j])
                .map(|(a, b)| a - b)
                .collect();
            Some((d, table.units[i].clone()))
        }
        _ => None,
    }
}

/// Cumulative `Σ_i ∫ r_i du_i` by the trapezoidal rule; `None` if a DOF's displacement is not
/// recorded. Non-finite increments are skipped.
fn absorbed_energy(table: &ResultsTable, e: &ElementColumns) -> Option<Vec<f64>> {
    let n = table.rows();
    let mut w = vec![0.0; n];
    for (c, node, dof) in &e.forces {
        let d = displacement_of(table, *c, node, dof)?;
        let (r, u) = (&table.columns[*c], &table.columns[d]);
        let mut acc = 0.0;
        for k in 1..n {
            let inc = 0.5 * (r[k] + r[k - 1]) * (u[k] - u[k - 1]);
            if inc.is_finite() {
                acc += inc;
            }
            w[k] += acc;
        }
    }
    Some(w)
}

/// The standard figures for a results table. `title` (the model title) prefixes chart titles.
/// Figures whose columns are absent are left out.
pub fn results_figures(table: &ResultsTable, title: &str) -> Vec<Figure> {
    let mut figures = Vec::new();
    let n = table.rows();
    let (time, time_unit) = match table.index("time") {
        Some(i) => (table.columns[i].clone(), table.units[i].clone()),
        None => ((0..n).map(|k| k as f64).collect(), String::new()),
    };
    let time_axis = Axis {
        label: if time_unit.is_empty() {
            "row".into()
        } else {
            format!("time [{time_unit}]")
        },
        log: false,
    };
    let prefixed = |s: &str| {
        if title.is_empty() {
            s.to_string()
        } else {
            format!("{title} — {s}")
        }
    };
    let cols_with = |prefix: &str| -> Vec<usize> {
        (0..table.names.len())
            .filter(|&c| table.names[c].starts_with(prefix))
            .collect()
    };
    let chart_of = |t: String, quantity: &str, cols: &[usize], strip: &str| Chart {
        title: t,
        x: time_axis.clone(),
        y: Axis {
            label: label(
                quantity,
                &cols
                    .iter()
                    .map(|&c| table.units[c].as_str())
                    .collect::<Vec<_>>(),
            ),
            log: false,
        },
        series: cols
            .iter()
            .map(|&c| {
                let name = table.names[c]
                    .strip_prefix(strip)
                    .unwrap_or(&table.names[c]);
                history(table, &time, c, legend_name(name, &table.units[c]))
            })
            .collect(),
    };

    // Displacements per substructure copy.
    let mut by_sub: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut sub_order = Vec::new();
    for c in cols_with("u.") {
        if let Some((sub, _, _)) = split_dof(&table.names[c][2..]) {
            if !by_sub.contains_key(sub) {
                sub_order.push(sub.to_string());
            }
            by_sub.entry(sub.to_string()).or_default().push(c);
        }
    }
    if !sub_order.is_empty() {
        let charts = sub_order
            .iter()
            .map(|sub| {
                let t = if sub.is_empty() {
                    prefixed("displacements")
                } else {
                    prefixed(&format!("displacements, substructure {sub}"))
                };
                let strip = if sub.is_empty() {
                    "u.".to_string()
                } else {
                    format!("u.{sub}.")
                };
                chart_of(t, "displacement", &by_sub[sub], &strip)
            })
            .collect();
        figures.push(Figure {
            stem: "displacements".into(),
            charts,
        });
    }

    // Interface multipliers and gaps.
    let mut interface = Vec::new();
    for (prefix, t, q) in [
        ("lambda.", "interface forces Λ", "Λ"),
        ("gap_u.", "interface displacement gap u⁺ − u⁻", "gap"),
        ("gap_v.", "interface velocity gap v⁺ − v⁻", "gap"),
    ] {
        let cols = cols_with(prefix);
        if !cols.is_empty() {
            interface.push(chart_of(prefixed(t), q, &cols, prefix));
        }
    }
    if !interface.is_empty() {
        figures.push(Figure {
            stem: "interface".into(),
            charts: interface,
        });
    }

    // Energy channels.
    let energy = cols_with("energy.");
    if !energy.is_empty() {
        figures.push(Figure {
            stem: "energy".into(),
            charts: vec![chart_of(prefixed("energy"), "energy", &energy, "energy.")],
        });
    }

    // Imposed element deformations and element forces (`hybridsim cyclic` folders).
    let deformations = cols_with("deformation.");
    if !deformations.is_empty() {
        let forces: Vec<usize> = elements(table).iter().map(|e| e.forces[0].0).collect();
        let mut charts = vec![chart_of(
            prefixed("element deformation"),
            "deformation",
            &deformations,
            "deformation.",
        )];
        if !forces.is_empty() {
            charts.push(chart_of(
                prefixed("element force"),
                "force",
                &forces,
                "force.",
            ));
        }
        figures.push(Figure {
            stem: "element_histories".into(),
            charts,
        });
    }

    // Element hysteresis loops and energies.
    let els = elements(table);
    let hysteretic: Vec<&ElementColumns> = {
        let with_states: Vec<_> = els.iter().filter(|e| !e.states.is_empty()).collect();
        if with_states.is_empty() {
            els.iter().collect()
        } else {
            with_states
        }
    };
    let mut loops = Vec::new();
    let mut energy_series = Vec::new();
    let mut energy_units = Vec::new();
    for e in hysteretic.iter().take(MAX_CHARTS) {
        let (fc, _, _) = &e.forces[0];
        if let Some((d, unit)) = deformation(table, e) {
            loops.push(Chart {
                title: prefixed(&format!("hysteresis of {}", e.name)),
                x: Axis {
                    label: label("deformation", &[unit.as_str()]),
                    log: false,
                },
                y: Axis {
                    label: label("force", &[table.units[*fc].as_str()]),
                    log: false,
                },
                series: vec![Series {
                    name: table.names[*fc].clone(),
                    x: d,
                    y: table.columns[*fc].clone(),
                }],
            });
        }
        if let Some(w) = absorbed_energy(table, e) {
            let idx = decimate(&w, MAX_POINTS);
            energy_series.push(Series {
                name: format!("{}: ∫ r·du", e.name),
                x: idx.iter().map(|&i| time[i]).collect(),
                y: idx.iter().map(|&i| w[i]).collect(),
            });
            // r·u has the unit force·displacement.
            let d = displacement_of(table, *fc, &e.forces[0].1, &e.forces[0].2);
            if let Some(d) = d {
                energy_units.push(format!("{}*{}", table.units[*fc], table.units[d]));
            }
        }
        for &s in &e.states {
            let unit = &table.units[s];
            let is_energy = unit.contains('*') || unit.eq_ignore_ascii_case("J");
            let name = &table.names[s];
            let looks_energy =
                name.ends_with(".e") || name.contains("energy") || name.ends_with(".dissipated");
            if is_energy && looks_energy {
                energy_series.push(history(table, &time, s, name.clone()));
                energy_units.push(unit.clone());
            }
        }
    }
    if !loops.is_empty() {
        figures.push(Figure {
            stem: "hysteresis".into(),
            charts: loops,
        });
    }
    if !energy_series.is_empty() {
        let units: Vec<&str> = energy_units.iter().map(String::as_str).collect();
        figures.push(Figure {
            stem: "element_energy".into(),
            charts: vec![Chart {
                title: prefixed("cumulative energy absorbed by elements"),
                x: time_axis.clone(),
                y: Axis {
                    label: label("energy", &units),
                    log: false,
                },
                series: energy_series,
            }],
        });
    }
    figures
}

/// The figures of a controller-rate lab table (`lab.csv`): per actuator, the tested
/// specimen's measured force–displacement loop (the key figure of a hybrid test; beside it the
/// virtual lab's noise-free loop when the table has one) and the desired, compensated and
/// measured displacement over time. `stem_suffix` tells the tables of several physical
/// substructures apart.
pub fn lab_figures(table: &ResultsTable, title: &str, stem_suffix: &str) -> Vec<Figure> {
    let prefixed = |s: &str| {
        if title.is_empty() {
            s.to_string()
        } else {
            format!("{title} — {s}")
        }
    };
    let time = table.index("time").map(|i| table.columns[i].as_slice());
    let time_unit = table
        .index("time")
        .map(|i| table.units[i].clone())
        .unwrap_or_default();
    let actuators: Vec<String> = table
        .names
        .iter()
        .filter_map(|n| n.strip_prefix("measured."))
        .map(str::to_string)
        .collect();
    let mut loops = Vec::new();
    let mut tracking = Vec::new();
    for a in actuators.iter().take(MAX_CHARTS) {
        let (Some(d), Some(f)) = (
            table.index(&format!("measured.{a}")),
            table.index(&format!("force.{a}")),
        ) else {
            continue;
        };
        let mut series = vec![loop_series(
            "measured",
            &table.columns[d],
            &table.columns[f],
        )];
        if let (Some(dt), Some(ft)) = (
            table.index(&format!("achieved_true.{a}")),
            table.index(&format!("force_true.{a}")),
        ) {
            let truth = loop_series(
                "noise-free (virtual lab)",
                &table.columns[dt],
                &table.columns[ft],
            );
            if !truth.x.is_empty() {
                series.push(truth);
            }
        }
        if series[0].x.is_empty() {
            continue;
        }
        loops.push(Chart {
            title: prefixed(&format!("specimen loop, actuator {a}")),
            x: Axis {
                label: label("measured displacement", &[table.units[d].as_str()]),
                log: false,
            },
            y: Axis {
                label: label("measured force", &[table.units[f].as_str()]),
                log: false,
            },
            series,
        });
        if let Some(time) = time {
            let mut series = Vec::new();
            for what in ["desired", "compensated", "measured"] {
                if let Some(c) = table.index(&format!("{what}.{a}")) {
                    series.push(history(table, time, c, what.to_string()));
                }
            }
            tracking.push(Chart {
                title: prefixed(&format!("command and measurement, actuator {a}")),
                x: Axis {
                    label: format!("time [{time_unit}]"),
                    log: false,
                },
                y: Axis {
                    label: label("displacement", &[table.units[d].as_str()]),
                    log: false,
                },
                series,
            });
        }
    }
    let mut figures = Vec::new();
    if !loops.is_empty() {
        figures.push(Figure {
            stem: format!("specimen_loop{stem_suffix}"),
            charts: loops,
        });
    }
    if !tracking.is_empty() {
        figures.push(Figure {
            stem: format!("lab_tracking{stem_suffix}"),
            charts: tracking,
        });
    }
    figures
}

/// A loop `(x, y)` without its non-finite samples (the bumpless start of a lab, a hardware
/// channel the virtual lab does not fill), thinned to at most about [`MAX_POINTS`] points.
fn loop_series(name: &str, x: &[f64], y: &[f64]) -> Series {
    let keep: Vec<usize> = (0..x.len().min(y.len()))
        .filter(|&i| x[i].is_finite() && y[i].is_finite())
        .collect();
    let stride = keep.len().div_ceil(MAX_POINTS).max(1);
    let mut picked: Vec<usize> = keep.iter().copied().step_by(stride).collect();
    if let Some(&last) = keep.last() {
        if picked.last() != Some(&last) {
            picked.push(last);
        }
    }
    Series {
        name: name.to_string(),
        x: picked.iter().map(|&i| x[i]).collect(),
        y: picked.iter().map(|&i| y[i]).collect(),
    }
}

/// A legend entry a person reads: a column name without its chart's prefix, made human
/// (`2.x` → `node 2, x`; `column2.1.x` → `column2, node 1, x`; `rayleigh@frame.1.x` → `Rayleigh
/// damping of frame, node 1, x`) with its unit in brackets (`node 2, x [m]`).
pub fn legend_name(name: &str, unit: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = name;
    if let Some((head, node, dof)) = split_dof(name) {
        rest = head;
        parts.push(format!("node {node}, {dof}"));
    }
    if !rest.is_empty() {
        let head = match rest.split_once('@') {
            Some(("rayleigh", sub)) => format!("Rayleigh damping of {sub}"),
            Some((what, sub)) => format!("{what} of {sub}"),
            None => rest.to_string(),
        };
        parts.insert(0, head);
    }
    let text = parts.join(", ");
    if unit.is_empty() || unit == "-" {
        text
    } else {
        format!("{text} [{}]", unit.replace('*', "·").replace("^2", "²"))
    }
}

/// `title` cut to at most `max` characters at a word boundary, with an ellipsis when cut
/// (titles get long; captions keep them short and never end mid-word).
pub fn short_title(title: &str, max: usize) -> String {
    let title = title.trim();
    if title.chars().count() <= max {
        return title.to_string();
    }
    let mut out = String::new();
    for word in title.split_whitespace() {
        let extra = usize::from(!out.is_empty()) + word.chars().count();
        if out.chars().count() + extra + 1 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        // One word longer than the whole budget: cut it (there is no boundary to keep).
        out = title.chars().take(max.saturating_sub(1)).collect();
    }
    let out = out
        .trim_end_matches([',', ';', ':', '—', '-', ' '])
        .to_string();
    out + "…"
}

/// The lab tables of a results folder: `lab.csv` (first physical substructure, no stem
/// suffix) and `lab.NAME.csv` (suffix `_NAME`), in name order.
fn lab_tables(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| {
            if name == "lab.csv" {
                return Some((name, String::new()));
            }
            let sub = name.strip_prefix("lab.")?.strip_suffix(".csv")?.to_string();
            Some((name, format!("_{sub}")))
        })
        .collect();
    out.sort();
    out
}

/// Model title from `run.json`, if present and readable.
fn run_title(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("run.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.pointer("/model/title")
        .or_else(|| v.get("title"))
        .and_then(|t| t.as_str())
        .map(str::to_string)
}

/// The results file of folder `dir`: `results.csv`, or `results.bin` (`[output] format =
/// "binary"`) when only that one is there.
pub fn results_file(dir: &Path) -> PathBuf {
    let csv = dir.join("results.csv");
    let bin = dir.join("results.bin");
    if !csv.is_file() && bin.is_file() {
        bin
    } else {
        csv
    }
}

/// Read `dir/results.csv` or `dir/results.bin` ([`results_file`]; and `dir/run.json` for the
/// title), write every standard figure as PNG and SVG into `out` (created if missing) and
/// return the files written. A binary file's ignored partial last row is reported on stderr.
pub fn plot_results_folder(dir: &Path, out: &Path) -> Result<Vec<PathBuf>, PlotError> {
    if !dir.is_dir() {
        return Err(PlotError::Read {
            path: dir.to_path_buf(),
            reason: "no such results folder".into(),
        });
    }
    let csv = results_file(dir);
    if !csv.is_file() {
        return Err(PlotError::Read {
            path: csv,
            reason: "missing: a results folder holds results.csv or results.bin (written by `hybridsim run` or `hybridsim cyclic`)".into(),
        });
    }
    let (table, note) = ResultsTable::read_noting(&csv)?;
    if let Some(note) = note {
        eprintln!("warning: {note}");
    }
    if table.rows() == 0 {
        return Err(PlotError::Read {
            path: csv,
            reason: "no data rows".into(),
        });
    }
    let title = run_title(dir).unwrap_or_default();
    let short = short_title(&title, 60);
    let mut figures = results_figures(&table, &short);
    for (file, suffix) in lab_tables(dir) {
        let lab = ResultsTable::read(&dir.join(&file))?;
        figures.extend(lab_figures(&lab, &short, &suffix));
    }
    if figures.is_empty() {
        return Err(PlotError::Read {
            path: csv,
            reason: "no plottable columns (expected u.*, lambda.*, energy.* or force.* columns)"
                .into(),
        });
    }
    std::fs::create_dir_all(out).map_err(|e| PlotError::Write {
        path: out.to_path_buf(),
        reason: format!("cannot create the folder: {e}"),
    })?;
    let mut written = Vec::new();
    for f in &figures {
        for ext in ["png", "svg"] {
            let path = out.join(format!("{}.{ext}", f.stem));
            save_grid(&f.charts, &path)?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    #[test]
    fn legends_are_human() {
        assert_eq!(legend_name("2.x", "m"), "node 2, x [m]");
        assert_eq!(legend_name("column2.1.x", "kN"), "column2, node 1, x [kN]");
        assert_eq!(
            legend_name("rayleigh@frame.3.x", "kN"),
            "Rayleigh damping of frame, node 3, x [kN]"
        );
        assert_eq!(legend_name("frame", "kN*m"), "frame [kN·m]");
        assert_eq!(legend_name("storey1", ""), "storey1");
        assert_eq!(legend_name("a_abs.1.x", "m/s^2"), "a_abs, node 1, x [m/s²]");
    }

    use super::*;

    #[test]
    fn short_titles_end_at_a_word_boundary() {
        let t = "Three-storey frame, first storey physical on the virtual lab (PG-alpha, ss = 5)";
        let s = short_title(t, 60);
        assert!(s.chars().count() <= 60, "{s}");
        assert!(s.ends_with('…'), "{s}");
        let body = s.trim_end_matches('…');
        assert!(t.starts_with(body), "{s}");
        // The cut is at a word boundary: the next character of the title is a space.
        assert_eq!(t[body.len()..].chars().next(), Some(' '), "{s}");
        assert_eq!(short_title("short title", 60), "short title");
        assert_eq!(short_title(&"x".repeat(80), 10).chars().count(), 10);
    }

    #[test]
    fn headers_split() {
        assert_eq!(split_header("u.a.1.x[m]"), ("u.a.1.x".into(), "m".into()));
        assert_eq!(
            split_header("energy.a[kN*m]"),
            ("energy.a".into(), "kN*m".into())
        );
        assert_eq!(split_header("step"), ("step".into(), String::new()));
    }

    #[test]
    fn decimation_keeps_peaks_and_ends() {
        let y: Vec<f64> = (0..100_000).map(|k| ((k as f64) * 0.001).sin()).collect();
        let idx = decimate(&y, 1000);
        assert!(idx.len() <= 1002);
        assert_eq!(idx[0], 0);
        assert_eq!(*idx.last().unwrap(), y.len() - 1);
        let kept_max = idx.iter().map(|&i| y[i]).fold(f64::MIN, f64::max);
        assert_eq!(kept_max, y.iter().copied().fold(f64::MIN, f64::max));
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bad_csv_names_line_and_column() {
        let e = ResultsTable::parse("time[s],u.a.1.x[m]\n0,1\n0.1,abc\n", Path::new("r.csv"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r.csv") && e.contains("line 3") && e.contains("u.a.1.x"),
            "{e}"
        );
        let e = ResultsTable::parse("time[s],u[m]\n0\n", Path::new("r.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("1 values"), "{e}");
    }

    fn parse_err(text: &[u8]) -> String {
        ResultsTable::parse_bytes(text, Path::new("dir/r.csv"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_csv_inputs_are_errors_naming_file_line_and_reason() {
        for (text, want) in [
            (&b""[..], "empty file"),
            (b"\n\n", "empty file"),
            (
                b"time[s],u[m]\n0,1\n0.1,2,3\n",
                "line 3: 3 values but the header has 2",
            ),
            (
                b"time[s],u[m]\n0,1\n\n0.1\n",
                "line 4: 1 values but the header has 2",
            ),
            (
                b"\r\ntime[s],u[m]\r\n\r\n\r\n0,x\r\n",
                "line 5, column `u`: `x` is not",
            ),
            (
                b"time[s],u[m]\n0,1\n0.1,\n",
                "line 3, column `u`: `` is not a number",
            ),
            (
                b"time[s],u[m]\n0,1\n0.1,1.2.3\n",
                "line 3, column `u`: `1.2.3`",
            ),
            (
                b"time[s],u[m]\n0,\xff\n",
                "line 2, column `u`: `\u{fffd}` is not a number",
            ),
            (b"time[s],u\xff\n0,1\n", "line 1: field 2 is not UTF-8"),
        ] {
            let e = parse_err(text);
            assert!(
                e.starts_with("dir/r.csv: ") && e.contains(want),
                "{:?}: {e}",
                String::from_utf8_lossy(text)
            );
        }
        let missing = Path::new("/nonexistent/hybridsim/results.csv");
        let e = ResultsTable::read(missing).unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/hybridsim/results.csv: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn csv_quoting_blank_lines_crlf_and_special_values() {
        let text =
            "time[s],\"force.a,b.1.x[kN]\"\r\n\r\n0.0,-0.0\r\n1e-300, NaN \r\n1e+300,-inf\r\n";
        let t = ResultsTable::parse(text, Path::new("r.csv")).unwrap();
        assert_eq!(t.names, ["time", "force.a,b.1.x"]);
        assert_eq!(t.units, ["s", "kN"]);
        assert_eq!(t.rows(), 3);
        assert_eq!(t.columns[0], [0.0, 1e-300, 1e300]);
        assert_eq!(t.columns[1][0].to_bits(), (-0.0f64).to_bits());
        assert!(t.columns[1][1].is_nan());
        assert_eq!(t.columns[1][2], f64::NEG_INFINITY);
        // A header without rows is an empty table.
        let t = ResultsTable::parse("time[s],u[m]\n", Path::new("r.csv")).unwrap();
        assert_eq!((t.names.len(), t.rows()), (2, 0));
    }

    #[test]
    fn spring_loop_and_energy_from_columns() {
        // A one-DOF spring r = k u under u = sin t: loop on a line, ∫ r du = k u²/2.
        let mut text = String::from("time[s],u.s.1.x[m],force.spring.1.x[kN],state.spring.z[m]\n");
        for k in 0..=100 {
            let t = k as f64 * 0.01;
            text.push_str(&format!("{t},{},{},0\n", t.sin(), 2.0 * t.sin()));
        }
        let table = ResultsTable::parse(&text, Path::new("r.csv")).unwrap();
        let figs = results_figures(&table, "");
        let stems: Vec<_> = figs.iter().map(|f| f.stem.as_str()).collect();
        assert_eq!(stems, ["displacements", "hysteresis", "element_energy"]);
        let h = &figs[1].charts[0];
        assert_eq!(h.x.label, "deformation [m]");
        assert_eq!(h.y.label, "force [kN]");
        let w = &figs[2].charts[0].series[0];
        let u = 1.0f64.sin();
        assert!(
            (w.y.last().unwrap() - u * u).abs() < 1e-3,
            "{:?}",
            w.y.last()
        );
        assert_eq!(figs[2].charts[0].y.label, "energy [kN*m]");
    }

    #[test]
    fn lab_table_gives_the_specimen_loop_and_tracking() {
        // One actuator; the first two ticks are the bumpless start (no noise-free values).
        let mut text = String::from(
            "time[s],wall_time[s],desired.a1[m],compensated.a1[m],measured.a1[m],force.a1[kN],\
             safety.a1[-],achieved_true.a1[m],force_true.a1[kN]\n",
        );
        for k in 0..50 {
            let t = k as f64 * 0.01;
            let d = (3.0 * t).sin();
            let truth = if k < 2 {
                "NaN".to_string()
            } else {
                format!("{d}")
            };
            let ftruth = if k < 2 {
                "NaN".to_string()
            } else {
                format!("{}", 5.0 * d)
            };
            text.push_str(&format!(
                "{t},{t},{d},{d},{d},{},0,{truth},{ftruth}\n",
                5.0 * d
            ));
        }
        let table = ResultsTable::parse(&text, Path::new("lab.csv")).unwrap();
        let figs = lab_figures(&table, "", "");
        let stems: Vec<_> = figs.iter().map(|f| f.stem.as_str()).collect();
        assert_eq!(stems, ["specimen_loop", "lab_tracking"]);
        let chart = &figs[0].charts[0];
        assert_eq!(chart.x.label, "measured displacement [m]");
        assert_eq!(chart.y.label, "measured force [kN]");
        assert_eq!(chart.series.len(), 2);
        assert_eq!(chart.series[0].x.len(), 50);
        // The noise-free loop drops the two start-up rows without values.
        assert_eq!(chart.series[1].x.len(), 48);
        for (x, y) in chart.series[0].x.iter().zip(&chart.series[0].y) {
            assert!((y - 5.0 * x).abs() < 1e-12);
        }
        let names: Vec<_> = figs[1].charts[0]
            .series
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["desired", "compensated", "measured"]);
        // A second physical substructure's table gets its own stems.
        let figs = lab_figures(&table, "", "_pier");
        assert_eq!(figs[0].stem, "specimen_loop_pier");
    }
}
