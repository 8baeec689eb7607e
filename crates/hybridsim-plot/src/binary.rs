//! The binary results layout (`[output] format = "binary"`, `results.bin`): the same columns
//! and values as `results.csv`, as little-endian IEEE 754 f64, so that a wide model's every
//! step is written without spelling numbers and read back bit for bit.
//!
//! Layout (all integers little-endian):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `HSRESULT` ([`MAGIC`]) |
//! | 8 | 4 | layout version, u32 ([`VERSION`] = 1) |
//! | 12 | 4 | column count `n`, u32 |
//! | 16 | 4 | offset of the first row, u32 (a multiple of 8) |
//! | 20 | 4 | byte length of the column text, u32 |
//! | 24 | text | the header cells `name[unit]` of `results.csv`, UTF-8, one per line (`\n` after each) |
//! | … | 0–7 | zero bytes up to the offset of the first row |
//! | first row | 8 `n` per row | the rows, each the `n` values of one `results.csv` row as f64 |
//!
//! The file only ever grows by whole rows (`hybridsim_io::RowFile` cuts a partial row after a
//! failed write); a file cut short otherwise (a crash of the machine, a copy interrupted) ends
//! in a partial row, which the reader ignores and reports ([`BinaryTable::partial_row_bytes`]).
//! The first row starts at a multiple of 8 bytes, so the rows can be mapped as an `n`-column
//! f64 array (`numpy.fromfile(path, "<f8", offset=first_row)`).

use crate::results::{split_header, ResultsTable};
use crate::PlotError;
use std::path::Path;

/// The first 8 bytes of a binary results file.
pub const MAGIC: [u8; 8] = *b"HSRESULT";
/// The layout version written.
pub const VERSION: u32 = 1;
/// Bytes of the fixed part of the header (magic, version, columns, first row, text length).
pub const FIXED_HEADER_BYTES: usize = 24;

/// Whether `bytes` start like a binary results file.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// The header of a binary results file of the columns `cells` (`name[unit]` each), padded to a
/// multiple of 8 bytes: the rows follow it.
pub fn encode_header(cells: &[&str]) -> Vec<u8> {
    let mut text = Vec::new();
    for c in cells {
        text.extend_from_slice(c.as_bytes());
        text.push(b'\n');
    }
    let first_row = (FIXED_HEADER_BYTES + text.len()).div_ceil(8) * 8;
    let mut out = Vec::with_capacity(first_row);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(cells.len() as u32).to_le_bytes());
    out.extend_from_slice(&(first_row as u32).to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&text);
    out.resize(first_row, 0);
    out
}

/// A binary results file read: the table of its whole rows and what was left after them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BinaryTable {
    /// Names, units and values of the whole rows.
    pub table: ResultsTable,
    /// Bytes of a partial last row (0 for a complete file), ignored.
    pub partial_row_bytes: usize,
    /// Offset of the first row.
    pub first_row: usize,
}

impl BinaryTable {
    /// What a reader reports about a partial last row: `None` for a complete file.
    pub fn partial_row_note(&self, source: &Path) -> Option<String> {
        (self.partial_row_bytes > 0).then(|| {
            format!(
                "{}: ends in a partial row ({} of {} bytes) after {} whole rows; the partial row is ignored",
                source.display(),
                self.partial_row_bytes,
                8 * self.table.names.len(),
                self.table.rows()
            )
        })
    }
}

/// Read the u32 at `at` (the caller checked the length).
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The header of a binary results file: its cells and where the rows start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BinaryHeader {
    /// The header cells `name[unit]` (those of `results.csv`).
    pub cells: Vec<String>,
    /// Offset of the first row (a multiple of 8).
    pub first_row: usize,
}

/// The offset of the first row from the fixed part of a header (at least
/// [`FIXED_HEADER_BYTES`] bytes of `bytes`), so that a streaming reader knows how much to read
/// before [`parse_header`].
pub fn first_row_offset(bytes: &[u8], source: &Path) -> Result<usize, PlotError> {
    check_fixed(bytes, source)?;
    Ok(u32_at(bytes, 16) as usize)
}

fn check_fixed(bytes: &[u8], source: &Path) -> Result<(), PlotError> {
    let err = |reason: String| PlotError::Read {
        path: source.to_path_buf(),
        reason,
    };
    if !bytes.starts_with(&MAGIC[..bytes.len().min(8)]) || bytes.len() < 8 {
        return Err(err(
            "not a binary results file (it does not start with `HSRESULT`)".into(),
        ));
    }
    if bytes.len() < FIXED_HEADER_BYTES {
        return Err(err(format!(
            "binary header cut short: {} of its {FIXED_HEADER_BYTES} fixed bytes",
            bytes.len()
        )));
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(err(format!(
            "binary header field `version`: {version}, this reader knows version {VERSION}"
        )));
    }
    Ok(())
}

/// Parse the header at the start of `bytes` (which must hold it whole); `source` names the
/// file in errors. A damaged header (wrong magic, unknown version, a column text that does
/// not hold the column count) is an error naming the file and the field.
pub fn parse_header(bytes: &[u8], source: &Path) -> Result<BinaryHeader, PlotError> {
    let err = |reason: String| PlotError::Read {
        path: source.to_path_buf(),
        reason,
    };
    check_fixed(bytes, source)?;
    let columns = u32_at(bytes, 12) as usize;
    let first_row = u32_at(bytes, 16) as usize;
    let text_len = u32_at(bytes, 20) as usize;
    if FIXED_HEADER_BYTES + text_len > first_row || !first_row.is_multiple_of(8) {
        return Err(err(format!(
            "binary header field `first_row`: {first_row} is not a multiple of 8 after the \
             {text_len} bytes of column text"
        )));
    }
    if bytes.len() < first_row {
        return Err(err(format!(
            "binary header cut short: {} of its {first_row} bytes",
            bytes.len()
        )));
    }
    let text = std::str::from_utf8(&bytes[FIXED_HEADER_BYTES..FIXED_HEADER_BYTES + text_len])
        .map_err(|e| {
            err(format!(
                "binary header field `columns text`: not UTF-8 ({e})"
            ))
        })?;
    let cells: Vec<String> = text.split_terminator('\n').map(str::to_string).collect();
    if cells.len() != columns {
        return Err(err(format!(
            "binary header field `columns`: {columns}, but the column text names {}",
            cells.len()
        )));
    }
    if columns == 0 {
        return Err(err("binary header field `columns`: 0 columns".into()));
    }
    Ok(BinaryHeader { cells, first_row })
}

/// Parse the bytes of a binary results file; `source` names the file in errors. A partial
/// last row is ignored and counted in [`BinaryTable::partial_row_bytes`]; a damaged header is
/// an error ([`parse_header`]).
pub fn parse(bytes: &[u8], source: &Path) -> Result<BinaryTable, PlotError> {
    let BinaryHeader { cells, first_row } = parse_header(bytes, source)?;
    let columns = cells.len();
    let (names, units): (Vec<_>, Vec<_>) = cells.iter().map(|c| split_header(c)).unzip();
    let data = &bytes[first_row..];
    let width = 8 * columns;
    let rows = data.len() / width;
    let mut table = ResultsTable {
        names,
        units,
        columns: vec![Vec::with_capacity(rows); columns],
    };
    for row in data.chunks_exact(width) {
        for (c, v) in row.chunks_exact(8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(v);
            table.columns[c].push(f64::from_le_bytes(b));
        }
    }
    Ok(BinaryTable {
        table,
        partial_row_bytes: data.len() % width,
        first_row,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(cells: &[&str], rows: &[&[f64]]) -> Vec<u8> {
        let mut b = encode_header(cells);
        for r in rows {
            for x in *r {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn rows_read_back_bit_for_bit_and_a_partial_row_is_ignored_and_reported() {
        let values = [0.0, -0.0, f64::NAN, f64::NEG_INFINITY, 5e-324, 0.1];
        let mut b = file(
            &["time[s]", "u.a.1.x[m]", "plain"],
            &[&values[..3], &values[3..]],
        );
        assert_eq!(b.len() % 8, 0);
        let t = parse(&b, Path::new("r.bin")).unwrap();
        assert_eq!(t.table.names, ["time", "u.a.1.x", "plain"]);
        assert_eq!(t.table.units, ["s", "m", ""]);
        assert_eq!(t.table.rows(), 2);
        for (k, v) in values.iter().enumerate() {
            assert_eq!(t.table.columns[k % 3][k / 3].to_bits(), v.to_bits());
        }
        assert_eq!(t.partial_row_note(Path::new("r.bin")), None);
        b.extend_from_slice(&1.0f64.to_le_bytes()[..5]);
        let t = parse(&b, Path::new("r.bin")).unwrap();
        assert_eq!((t.table.rows(), t.partial_row_bytes), (2, 5));
        let note = t.partial_row_note(Path::new("r.bin")).unwrap();
        assert!(
            note.contains("r.bin") && note.contains("5 of 24 bytes"),
            "{note}"
        );
    }

    #[test]
    fn a_damaged_header_is_an_error_naming_the_file_and_field() {
        let good = file(&["time[s]"], &[&[1.0]]);
        let e = |b: &[u8]| {
            parse(b, Path::new("x/results.bin"))
                .unwrap_err()
                .to_string()
        };
        assert!(e(b"time,u\n1,2\n").contains("not a binary results file"));
        assert!(e(&good[..12]).contains("cut short"));
        let mut v = good.clone();
        v[8] = 2;
        let m = e(&v);
        assert!(
            m.contains("x/results.bin") && m.contains("`version`"),
            "{m}"
        );
        let mut c = good.clone();
        c[12] = 3;
        assert!(e(&c).contains("`columns`: 3"), "{}", e(&c));
    }
}
