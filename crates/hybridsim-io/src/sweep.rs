//! Batch studies: many variants of one model file (records, PGA levels, noise seeds,
//! parameters), each a set of overrides by dotted key (`lab.seed`,
//! `ground_motion.0.pga`, `lab.actuator.0.noise.force_rms`), run in parallel on a pool of
//! worker threads (rayon), each variant exactly as a single run of the overridden file would
//! run: one run is one thread, so the results do not depend on the number of workers or the
//! order in which the variants finish.
//!
//! A variant's model text is the base file's TOML with the overrides written in
//! ([`apply_overrides`]); it is validated like any model file (errors name the file, the field
//! and the reason) and, in a results folder, copied as `model.toml`, so `hybridsim run
//! FOLDER/model.toml` repeats it (from the base file's folder when it names record files).

use crate::{FolderResolver, LoadedModel};
use hybridsim::{Model, ModelError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One override: a dotted key into the model file and the value it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Dotted key: table names, keys and array indices (`ground_motion.0.pga`).
    pub key: String,
    /// The value.
    pub value: toml::Value,
}

impl Override {
    /// `key = value` with `value` in TOML syntax (`lab.seed=3`, `ground_motion.0.record =
    /// "a.AT2"`); a bare word that is not TOML is taken as a string.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: expected KEY=VALUE"))?;
        Ok(Self {
            key: key.trim().to_string(),
            value: parse_value(value.trim())?,
        })
    }
}

/// A TOML value from its text; a bare word that is not TOML is a string.
pub fn parse_value(text: &str) -> Result<toml::Value, String> {
    let doc = format!("v = {text}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => Ok(t.remove("v").expect("parsed key")),
        Err(_) if !text.is_empty() && !text.contains(['"', '\'', '[', '{', '=', '\n']) => {
            Ok(toml::Value::String(text.to_string()))
        }
        Err(e) => Err(format!("`{text}` is not a TOML value: {}", e.message())),
    }
}

/// The values of one swept key: `[a, b, c]` (a TOML array: one variant per element),
/// `A..B` or `A..=B` (integers, end excluded or included), or a single value.
pub fn parse_values(text: &str) -> Result<Vec<toml::Value>, String> {
    let t = text.trim();
    let range = t
        .split_once("..=")
        .map(|(a, b)| (a, b, true))
        .or_else(|| t.split_once("..").map(|(a, b)| (a, b, false)));
    if let Some((a, b, inclusive)) = range {
        let (a, b) = (a.trim(), b.trim());
        if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
            let end = if inclusive { b.saturating_add(1) } else { b };
            if end <= a {
                return Err(format!("`{t}`: an empty range"));
            }
            if end - a > 1_000_000 {
                return Err(format!("`{t}`: more than a million values"));
            }
            return Ok((a..end).map(toml::Value::Integer).collect());
        }
    }
    match parse_value(t)? {
        toml::Value::Array(values) if !values.is_empty() => Ok(values),
        toml::Value::Array(_) => Err(format!("`{t}`: an empty list")),
        v => Ok(vec![v]),
    }
}

/// Every combination of the swept keys' values (the first key varies slowest).
pub fn grid(keys: &[(String, Vec<toml::Value>)]) -> Vec<Vec<Override>> {
    let mut out: Vec<Vec<Override>> = vec![Vec::new()];
    for (key, values) in keys {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut o = prefix.clone();
                    o.push(Override {
                        key: key.clone(),
                        value: v.clone(),
                    });
                    o
                })
            })
            .collect();
    }
    out
}

/// The model text `text` (file `source`) with `overrides` written in. Missing tables on the
/// way are created; an index selects an element of an array (`ground_motion.0`, counting from
/// 0) and must exist. Without overrides the text is returned unchanged.
pub fn apply_overrides(
    text: &str,
    source: &str,
    overrides: &[Override],
) -> Result<String, ModelError> {
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    let mut doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ModelError::single(source, "file", e.message()))?;
    for o in overrides {
        set_dotted(&mut doc, &o.key, o.value.clone())
            .map_err(|reason| ModelError::single(source, &o.key, reason))?;
    }
    toml::to_string(&doc).map_err(|e| ModelError::single(source, "file", e.to_string()))
}

fn set_dotted(doc: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err("an override needs a dotted key such as `lab.seed`".into());
    }
    let (last, init) = parts.split_last().expect("split yields one part");
    let Some((first, middle)) = init.split_first() else {
        doc.insert(last.to_string(), value);
        return Ok(());
    };
    let mut path = first.to_string();
    let mut here = doc
        .entry(first.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    for part in middle.iter().chain(std::iter::once(last)) {
        let parent = path.clone();
        path.push('.');
        path.push_str(part);
        here = step(here, part, &parent, &path)?;
    }
    *here = value;
    Ok(())
}

/// The entry `part` of the table or array `v` (at `parent`); a missing table entry is created.
fn step<'a>(
    v: &'a mut toml::Value,
    part: &str,
    parent: &str,
    path: &str,
) -> Result<&'a mut toml::Value, String> {
    match v {
        toml::Value::Table(t) => Ok(t
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))),
        toml::Value::Array(a) => {
            let n = a.len();
            let idx: usize = part
                .parse()
                .map_err(|_| format!("`{path}`: `{parent}` is an array, `{part}` not an index"))?;
            a.get_mut(idx)
                .ok_or_else(|| format!("`{path}`: index {idx} beyond the array's {n} element(s)"))
        }
        _ => Err(format!("`{parent}` is a value, not a table or an array")),
    }
}

/// A model from its TOML text: `source` names it in messages and `base` is the folder that
/// the files it names are read from. `path` goes into run.json.
pub fn load_text(
    text: &str,
    source: &str,
    base: &Path,
    path: PathBuf,
) -> Result<LoadedModel, ModelError> {
    let model = Model::from_toml(
        text,
        source,
        &FolderResolver {
            base: base.to_path_buf(),
        },
    )?;
    let sha256 = crate::hex(&Sha256::digest(text.as_bytes()));
    let record_sha256 = crate::inputs::record_hashes(&model, base);
    Ok(LoadedModel {
        model,
        path,
        text: text.to_string(),
        sha256,
        record_sha256,
        text_released: false,
    })
}

/// The folder that the files named in `loaded` are read from.
pub fn base_folder(loaded: &LoadedModel) -> PathBuf {
    loaded
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `base` with `overrides` written in, validated (messages name `base`'s file and the
/// overridden field).
pub fn variant(base: &LoadedModel, overrides: &[Override]) -> Result<LoadedModel, ModelError> {
    if overrides.is_empty() {
        return Ok(base.clone());
    }
    let source = base.path.display().to_string();
    let text = apply_overrides(&base.text, &source, overrides)?;
    if let Some(model) = typed_variant(base, overrides) {
        // The same model the text below would give, without parsing, validating and
        // generating its records again (a noise study's variants differ by a seed).
        return Ok(LoadedModel {
            model,
            path: base.path.clone(),
            sha256: crate::hex(&Sha256::digest(text.as_bytes())),
            text,
            record_sha256: base.record_sha256.clone(),
            text_released: false,
        });
    }
    load_text(&text, &source, &base_folder(base), base.path.clone())
}

/// `base`'s validated model with `overrides` set on the typed model, for the overrides whose
/// effect on the model is one field that no validation rule or derived value reads:
/// `lab.seed` (a non-negative integer, with a `[lab]` in `base`), the seed of the lab's
/// noise. `None` for any other override: the variant is then parsed and validated from its
/// text. Both paths give the same model bit for bit (`typed_variants_equal_parsed_ones`).
fn typed_variant(base: &LoadedModel, overrides: &[Override]) -> Option<Model> {
    let mut model = None;
    for o in overrides {
        match (o.key.as_str(), &o.value) {
            ("lab.seed", toml::Value::Integer(seed)) if *seed >= 0 => {
                let m = model.get_or_insert_with(|| base.model.clone());
                m.lab.as_mut()?.lab.seed = *seed as u64;
            }
            _ => return None,
        }
    }
    model
}

/// Every variant of `base` (`variants[i]` its overrides), built and validated on `jobs`
/// worker threads (all cores when `None`: each is a TOML parse, a validation and, for a
/// synthetic ground motion, its generation, which a serial loop would leave the other cores
/// idle for), in variant order; the first failing variant's error, `variant i (overrides):
/// file: field: reason`.
pub fn variants_parallel(
    base: &LoadedModel,
    variants: &[Vec<Override>],
    jobs: Option<usize>,
) -> Result<Vec<LoadedModel>, String> {
    parallel_map(variants.len(), jobs, |i| {
        variant(base, &variants[i])
            .map_err(|e| format!("variant {i} ({}): {e}", describe(&variants[i])))
    })?
    .into_iter()
    .collect()
}

/// Run `f(0..n)` on `jobs` worker threads (all cores when `None`), results in index order.
pub fn parallel_map<T: Send>(
    n: usize,
    jobs: Option<usize>,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Result<Vec<T>, String> {
    use rayon::prelude::*;
    let mut builder =
        rayon::ThreadPoolBuilder::new().thread_name(|i| format!("hybridsim-batch-{i}"));
    if let Some(j) = jobs {
        builder = builder.num_threads(j.max(1));
    }
    let pool = builder
        .build()
        .map_err(|e| format!("cannot start the worker threads: {e}"))?;
    Ok(pool.install(|| (0..n).into_par_iter().map(&f).collect()))
}

/// The folder name of variant `index` of a sweep.
pub fn variant_folder(index: usize) -> String {
    format!("variant-{index:04}")
}

/// Largest absolute value of every column (NaN when a column holds one).
pub fn peaks(ncol: usize, data: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0f64; ncol];
    if ncol == 0 {
        return out;
    }
    for row in data.chunks_exact(ncol) {
        for (p, x) in out.iter_mut().zip(row) {
            if x.is_nan() || p.is_nan() {
                *p = f64::NAN;
            } else {
                *p = p.max(x.abs());
            }
        }
    }
    out
}

/// Peaks of the columns of a `results.csv` (header, then rows of numbers): the headers and
/// [`peaks`].
pub fn csv_peaks(path: &Path) -> std::io::Result<(Vec<String>, Vec<f64>)> {
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_string)
        .collect();
    let mut data = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        for x in line.split(',') {
            data.push(
                x.parse::<f64>().map_err(|e| {
                    std::io::Error::other(format!("{}: `{x}`: {e}", path.display()))
                })?,
            );
        }
    }
    let p = peaks(header.len(), &data);
    Ok((header, p))
}

/// One variant's line of a sweep's summary table.
#[derive(Debug, Clone)]
pub struct SweepRow {
    /// Index of the variant.
    pub index: usize,
    /// Its results folder.
    pub folder: PathBuf,
    /// Its overrides.
    pub overrides: Vec<Override>,
    /// `completed`, `stopped`, `aborted` or `failed` (run.json's status).
    pub status: String,
    /// Completed coarse steps.
    pub steps: u64,
    /// Rows in `results.csv`.
    pub rows: u64,
    /// Wall time of the run, s.
    pub wall_seconds: f64,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// The results' column headers (`name[unit]`) and the largest magnitude of each.
    pub peaks: Vec<(String, f64)>,
}

/// Run every variant of `base` (`variants[i]` its overrides) into `folder/variant-NNNN` on
/// `jobs` worker threads (all cores when `None`) through [`crate::run_to_folder_with`], the
/// code path of `hybridsim run`, and write `folder/summary.csv`. Every variant is validated
/// before any runs. Returns the summary's rows, in variant order.
pub fn run_sweep(
    base: &LoadedModel,
    variants: &[Vec<Override>],
    folder: &Path,
    jobs: Option<usize>,
    opts: &crate::RunOptions,
) -> Result<Vec<SweepRow>, String> {
    let loaded = variants_parallel(base, variants, jobs)?;
    std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let abort = std::sync::atomic::AtomicBool::new(false);
    let rows = parallel_map(loaded.len(), jobs, |i| {
        let dir = folder.join(variant_folder(i));
        let progress = std::sync::atomic::AtomicU64::new(0);
        let mut row = SweepRow {
            index: i,
            folder: dir.clone(),
            overrides: variants[i].clone(),
            status: "failed".into(),
            steps: 0,
            rows: 0,
            wall_seconds: 0.0,
            error: None,
            peaks: Vec::new(),
        };
        match crate::run_to_folder_with(&loaded[i], &dir, &progress, &abort, opts) {
            Ok(report) => {
                row.status = match (&report.status, &report.error) {
                    (crate::RunStatus::Completed, Some(_)) => "failed".into(),
                    (s, _) => s.status().into(),
                };
                row.steps = report.steps;
                row.rows = report.rows;
                row.wall_seconds = report.wall_time.as_secs_f64();
                row.error = match (report.error, report.status.fault()) {
                    (Some(e), _) => Some(e),
                    (None, Some(f)) => Some(f.to_string()),
                    (None, None) => None,
                };
                match csv_peaks(&dir.join("results.csv")) {
                    Ok((h, p)) => row.peaks = h.into_iter().zip(p).collect(),
                    Err(e) => row.error = Some(e.to_string()),
                }
            }
            Err(e) => row.error = Some(e.to_string()),
        }
        row
    })?;
    write_summary(&folder.join("summary.csv"), &rows)
        .map_err(|e| format!("{}: {e}", folder.join("summary.csv").display()))?;
    Ok(rows)
}

/// `key = value, …` of a variant's overrides.
pub fn describe(overrides: &[Override]) -> String {
    if overrides.is_empty() {
        return "no overrides".into();
    }
    overrides
        .iter()
        .map(|o| format!("{} = {}", o.key, o.value))
        .collect::<Vec<_>>()
        .join(", ")
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(x) => crate::csv::format_number(*x),
        other => other.to_string(),
    }
}

/// Write the summary table: `variant`, `folder`, one column per overridden key, `status`,
/// `steps`, `rows`, `wall_seconds`, `error`, then `peak_abs.<column>` for every results
/// column of the first variant that has results (the largest magnitude over the run).
pub fn write_summary(path: &Path, rows: &[SweepRow]) -> std::io::Result<()> {
    use std::io::Write;
    let mut keys: Vec<String> = Vec::new();
    for r in rows {
        for o in &r.overrides {
            if !keys.contains(&o.key) {
                keys.push(o.key.clone());
            }
        }
    }
    let headers: Vec<String> = rows
        .iter()
        .find(|r| !r.peaks.is_empty())
        .map(|r| r.peaks.iter().map(|(h, _)| h.clone()).collect())
        .unwrap_or_default();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut head = vec!["variant".to_string(), "folder".into()];
    head.extend(keys.iter().cloned());
    head.extend(["status", "steps", "rows", "wall_seconds", "error"].map(String::from));
    head.extend(headers.iter().map(|h| format!("peak_abs.{h}")));
    writeln!(
        out,
        "{}",
        head.iter()
            .map(|h| csv_field(h))
            .collect::<Vec<_>>()
            .join(",")
    )?;
    for r in rows {
        let mut f = vec![
            r.index.to_string(),
            r.folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ];
        for k in &keys {
            f.push(
                r.overrides
                    .iter()
                    .rev()
                    .find(|o| &o.key == k)
                    .map(|o| value_text(&o.value))
                    .unwrap_or_default(),
            );
        }
        f.push(r.status.clone());
        f.push(r.steps.to_string());
        f.push(r.rows.to_string());
        f.push(crate::csv::format_number(r.wall_seconds));
        f.push(r.error.clone().unwrap_or_default());
        for h in &headers {
            f.push(
                r.peaks
                    .iter()
                    .find(|(name, _)| name == h)
                    .map(|(_, p)| crate::csv::format_number(*p))
                    .unwrap_or_default(),
            );
        }
        writeln!(
            out,
            "{}",
            f.iter().map(|x| csv_field(x)).collect::<Vec<_>>().join(",")
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_variants_equal_parsed_ones() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart.toml");
        let base = crate::load_model(&path).unwrap();
        let source = base.path.display().to_string();
        for seed in [0_i64, 1, 7, 2027, i64::MAX] {
            let o = [Override {
                key: "lab.seed".into(),
                value: toml::Value::Integer(seed),
            }];
            assert!(typed_variant(&base, &o).is_some());
            let fast = variant(&base, &o).unwrap();
            let text = apply_overrides(&base.text, &source, &o).unwrap();
            let parsed = load_text(&text, &source, &base_folder(&base), base.path.clone()).unwrap();
            assert_eq!(fast.model.lab.as_ref().unwrap().lab.seed, seed as u64);
            // Debug prints every float in its shortest round-trip form: equal text, equal bits.
            assert_eq!(format!("{:?}", fast.model), format!("{:?}", parsed.model));
            assert_eq!(fast.text, parsed.text);
            assert_eq!(fast.sha256, parsed.sha256);
            assert_eq!(fast.record_sha256, parsed.record_sha256);
        }
        // Anything else (and a negative seed, refused by the parser) takes the parsed path.
        for (key, value) in [
            ("lab.seed", toml::Value::Integer(-1)),
            ("lab.seed", toml::Value::String("1".into())),
            ("output.every", toml::Value::Integer(3)),
        ] {
            let o = [Override {
                key: key.into(),
                value,
            }];
            assert!(typed_variant(&base, &o).is_none(), "{key}");
        }
        assert!(variant(
            &base,
            &[Override {
                key: "lab.seed".into(),
                value: toml::Value::Integer(-1),
            }]
        )
        .is_err());
    }

    #[test]
    fn overrides_reach_tables_arrays_and_new_keys() {
        let text =
            "title = \"t\"\n[[ground_motion]]\ndirection = \"x\"\npga = 0.1\n[lab]\nseed = 1\n";
        let o = |k: &str, v: &str| Override::parse(&format!("{k}={v}")).unwrap();
        let out = apply_overrides(
            text,
            "m.toml",
            &[
                o("ground_motion.0.pga", "0.35"),
                o("lab.seed", "7"),
                o("output.every", "3"),
            ],
        )
        .unwrap();
        let doc: toml::Table = out.parse().unwrap();
        assert_eq!(doc["ground_motion"][0]["pga"].as_float(), Some(0.35));
        assert_eq!(doc["lab"]["seed"].as_integer(), Some(7));
        assert_eq!(doc["output"]["every"].as_integer(), Some(3));
        assert_eq!(doc["ground_motion"][0]["direction"].as_str(), Some("x"));
        let e = apply_overrides(text, "m.toml", &[o("ground_motion.2.pga", "1.0")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.toml") && e.contains("ground_motion.2.pga") && e.contains("index 2"),
            "{e}"
        );
        let e = apply_overrides(text, "m.toml", &[o("title.x", "1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`title` is a value"), "{e}");
    }

    #[test]
    fn value_lists_ranges_and_grids() {
        assert_eq!(parse_values("1..4").unwrap().len(), 3);
        assert_eq!(parse_values("1..=4").unwrap().len(), 4);
        assert_eq!(
            parse_values("[0.1, 0.2]").unwrap(),
            vec![toml::Value::Float(0.1), toml::Value::Float(0.2)]
        );
        assert_eq!(
            parse_values("\"a.AT2\"").unwrap(),
            vec![toml::Value::String("a.AT2".into())]
        );
        assert_eq!(
            parse_values("a.AT2").unwrap(),
            vec![toml::Value::String("a.AT2".into())]
        );
        assert!(parse_values("3..1").is_err());
        let g = grid(&[
            ("a".into(), parse_values("[1, 2]").unwrap()),
            ("b".into(), parse_values("0..3").unwrap()),
        ]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[4][0].value, toml::Value::Integer(2));
        assert_eq!(g[4][1].value, toml::Value::Integer(1));
    }

    #[test]
    fn peaks_are_largest_magnitudes() {
        assert_eq!(peaks(2, &[1.0, -3.0, -2.0, 0.5]), vec![2.0, 3.0]);
        assert!(peaks(1, &[1.0, f64::NAN, 0.0])[0].is_nan());
    }
}
