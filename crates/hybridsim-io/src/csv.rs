//! The one CSV writer and number format of every results file (`results.csv` of `run`,
//! `realtime` and `cyclic`, `lab.csv`).
//!
//! A row is numbers only, comma-separated, one line per row, `\n` line ends; the header is a
//! line of comma-separated `name[unit]` cells written as given. Numbers are spelled by
//! [`format_number`]: the shortest representation that parses back (Rust's `f64::from_str`, the
//! `csv` reader of `hybridsim-plot`, Python's `float`, numpy) to the same f64 bit for bit
//! (zmij, Schubfach-based), so `0.0` and `-0.0` for the zeros, `NaN`, `inf` and `-inf` for the
//! non-finite values. A row is built in a reused line buffer: no allocation per row.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Append the line of `row` to `out`: its numbers (see [`format_number`]) separated by commas,
/// then `\n`; allocation-free once `out` has grown to a row. The one spelling of a results row,
/// for [`CsvWriter`] and the results writer ([`crate::rowfile::RowFile`]).
pub fn push_row(out: &mut Vec<u8>, row: &[f64], num: &mut zmij::Buffer) {
    for (i, x) in row.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // zmij spells the non-finite values `NaN`, `inf`, `-inf` (as `std::fmt` does) and the
        // zeros `0.0`, `-0.0`: every spelling parses back with `f64::from_str`.
        out.extend_from_slice(num.format(*x).as_bytes());
    }
    out.push(b'\n');
}

/// The text of `x` in results files: the shortest decimal that parses back to the same bits
/// (`0.0`, `-0.0`, `1e-300`, `1e+300`, `0.1`, `123.0`); `NaN`, `inf`, `-inf` for the non-finite values
/// (a NaN's sign and payload are not kept).
pub fn format_number(x: f64) -> String {
    zmij::Buffer::new().format(x).to_string()
}

/// A CSV writer of numeric rows: a header line, then one line per row.
pub struct CsvWriter<W: Write> {
    out: W,
    line: Vec<u8>,
    num: zmij::Buffer,
    rows: u64,
}

impl<W: Write> CsvWriter<W> {
    /// A writer to `out`, writing `header` (comma-separated names) first.
    pub fn new(mut out: W, header: &str) -> std::io::Result<Self> {
        out.write_all(header.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(Self {
            out,
            line: Vec::with_capacity(8192),
            num: zmij::Buffer::new(),
            rows: 0,
        })
    }

    /// Append one row.
    pub fn write_row(&mut self, row: &[f64]) -> std::io::Result<()> {
        self.line.clear();
        push_row(&mut self.line, row, &mut self.num);
        self.out.write_all(&self.line)?;
        self.rows += 1;
        Ok(())
    }

    /// Rows written.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Flush and return the underlying writer.
    pub fn into_inner(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A CSV file written through a 64 KiB buffer.
pub type CsvFile = CsvWriter<BufWriter<File>>;

impl CsvWriter<BufWriter<File>> {
    /// Create `path` with `header` (comma-separated names).
    pub fn create(path: &Path, header: &str) -> std::io::Result<Self> {
        Self::new(
            BufWriter::with_capacity(1 << 16, File::create(path)?),
            header,
        )
    }

    /// Flush and sync to disk; the rows written.
    pub fn finish(self) -> std::io::Result<u64> {
        let rows = self.rows;
        self.into_inner()?
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values whose spelling matters: the zeros, extremes, subnormals, non-finite.
    const SPECIAL: [f64; 14] = [
        0.0,
        -0.0,
        1e-300,
        1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0,
        -0.1,
        123456789.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        std::f64::consts::PI,
    ];

    #[test]
    fn numbers_round_trip_bit_for_bit_with_one_spelling_of_zero() {
        for x in SPECIAL {
            let s = format_number(x);
            let back: f64 = s.parse().unwrap_or_else(|e| panic!("`{s}`: {e}"));
            assert_eq!(back.to_bits(), x.to_bits(), "`{s}` is not {x:e}");
        }
        assert_eq!(format_number(0.0), "0.0");
        assert_eq!(format_number(-0.0), "-0.0");
        assert_eq!(format_number(f64::NAN), "NaN");
        assert_eq!(format_number(f64::INFINITY), "inf");
        assert_eq!(format_number(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_number(1e-300), "1e-300");
        assert_eq!(format_number(1e300), "1e+300");
    }

    /// `results.csv` and `lab.csv` of `run` and of the real-time runner ([`crate::RowFile`])
    /// and `cyclic`'s `results.csv` ([`CsvFile`]) spell the same row the same way, and every
    /// field parses back to the same bits.
    #[test]
    fn the_two_writers_write_the_same_text() {
        let dir = std::env::temp_dir().join(format!("hybridsim_io_csv_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = (0..SPECIAL.len())
            .map(|i| format!("c{i}[m]"))
            .collect::<Vec<_>>()
            .join(",");
        let rows = [SPECIAL.to_vec(), SPECIAL.iter().rev().copied().collect()];

        let run = dir.join("run.csv");
        let mut file = crate::RowFile::create(&crate::file_factory(), &run, &header).unwrap();
        for (k, r) in rows.iter().enumerate() {
            file.write_row(r, k as u64).unwrap();
        }
        file.finish().unwrap();
        assert_eq!(file.rows_on_disk(), 2);

        let cyclic = dir.join("cyclic.csv");
        let mut file = CsvFile::create(&cyclic, &header).unwrap();
        for r in &rows {
            file.write_row(r).unwrap();
        }
        assert_eq!(file.finish().unwrap(), 2);

        let text = std::fs::read_to_string(&run).unwrap();
        assert_eq!(text, std::fs::read_to_string(&cyclic).unwrap());
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(header.as_str()));
        assert_eq!(
            lines.next().unwrap(),
            "0.0,-0.0,1e-300,1e+300,NaN,inf,-inf,1.0,-0.1,123456789.0,\
             2.2250738585072014e-308,5e-324,1.7976931348623157e+308,3.141592653589793"
        );
        let mut n = 0;
        for (line, want) in text.lines().skip(1).zip(&rows) {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), want.len());
            for (f, w) in fields.iter().zip(want) {
                let x: f64 = f.parse().unwrap_or_else(|e| panic!("`{f}`: {e}"));
                assert_eq!(x.to_bits(), w.to_bits(), "`{f}` is not {w:e}");
            }
            n += 1;
        }
        assert_eq!(n, rows.len());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn writer_rows() {
        let mut w = CsvWriter::new(Vec::new(), "a[m],b[s]").unwrap();
        w.write_row(&[0.0, -0.0]).unwrap();
        w.write_row(&[1e-300, f64::NAN]).unwrap();
        assert_eq!(w.rows(), 2);
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text, "a[m],b[s]\n0.0,-0.0\n1e-300,NaN\n");
    }
}
