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

/// Bytes of the longest spelling of one number (`-2.2250738585072014e-308`, 24) and its comma.
pub const MAX_FIELD_BYTES: usize = 25;

/// Append the line of `row` to `out`: its numbers (see [`format_number`]) separated by commas,
/// then `\n`; allocation-free once `out` has grown to a row. The one spelling of a results row,
/// for [`CsvWriter`] and the results writer ([`crate::rowfile::RowFile`]).
pub fn push_row(out: &mut Vec<u8>, row: &[f64], num: &mut zmij::Buffer) {
    push_fields(out, row, false, num);
    out.push(b'\n');
}

/// Append the numbers of `row` (see [`format_number`]) to `out`, separated by commas, with a
/// comma first if `comma_first` and `row` is not empty; no line end. A line spelled in pieces
/// (`push_fields(a, false)`, `push_fields(b, true)`, `\n`) is the line of [`push_row`] of `a`
/// then `b`, byte for byte: the results writer of `run` spells a row's first columns on the
/// stepping thread and the rest on the writer thread.
///
/// Each number is spelled by zmij into its small buffer and copied into `out`'s spare
/// capacity, reserved once for the whole row ([`MAX_FIELD_BYTES`] a number): no capacity test
/// and no call to `memmove` per number (the copy of every spelled number into the row was
/// 15 % of a text-recorded run's samples, issue 20).
pub fn push_fields(out: &mut Vec<u8>, row: &[f64], comma_first: bool, num: &mut zmij::Buffer) {
    if row.is_empty() {
        return;
    }
    out.reserve(row.len() * MAX_FIELD_BYTES);
    let start = out.len();
    // Two spelling buffers, used in turn: a number's text is copied into the row after the
    // next number is spelled, so that its loads do not wait on the stores that just wrote it
    // (a load spanning several recent smaller stores cannot take its bytes from them).
    let mut other = zmij::Buffer::new();
    let (first, second) = (num, &mut other);
    // SAFETY: `reserve` made room for `row.len() * MAX_FIELD_BYTES` bytes after `start`; each
    // number writes at most 24 bytes and a comma, so `at` stays within the capacity, and
    // every byte up to `at` is written before `set_len`.
    unsafe {
        let base = out.as_mut_ptr().add(start);
        let mut at = 0usize;
        let mut put = |text: &[u8], comma: bool| {
            debug_assert!(text.len() < MAX_FIELD_BYTES);
            if comma {
                *base.add(at) = b',';
                at += 1;
            }
            copy_short(text, base.add(at));
            at += text.len();
        };
        // zmij spells the non-finite values `NaN`, `inf`, `-inf` (as `std::fmt` does) and
        // the zeros `0.0`, `-0.0`: every spelling parses back with `f64::from_str`.
        let mut pending = first.format(row[0]).as_bytes();
        let mut pending_comma = comma_first;
        let mut i = 1;
        while i + 1 < row.len() {
            let next = second.format(row[i]).as_bytes();
            put(pending, pending_comma);
            let after = first.format(row[i + 1]).as_bytes();
            put(next, true);
            pending = after;
            pending_comma = true;
            i += 2;
        }
        if i < row.len() {
            let next = second.format(row[i]).as_bytes();
            put(pending, pending_comma);
            put(next, true);
        } else {
            put(pending, pending_comma);
        }
        out.set_len(start + at);
    }
}

/// Copy `text` (at most 24 bytes) to `dst` by at most two overlapping fixed-size loads and
/// stores of each width: no call, one branch per width.
///
/// # Safety
/// `dst` must be valid for `text.len()` bytes of writes and not overlap `text`.
#[inline(always)]
unsafe fn copy_short(text: &[u8], dst: *mut u8) {
    let n = text.len();
    let src = text.as_ptr();
    // SAFETY: every load reads inside `text` (offsets 0 and n - w for n >= w) and every store
    // writes inside `dst[..n]`.
    unsafe {
        if n >= 16 {
            let a = std::ptr::read_unaligned(src as *const [u8; 16]);
            let b = std::ptr::read_unaligned(src.add(n - 16) as *const [u8; 16]);
            std::ptr::write_unaligned(dst as *mut [u8; 16], a);
            std::ptr::write_unaligned(dst.add(n - 16) as *mut [u8; 16], b);
        } else if n >= 8 {
            let a = std::ptr::read_unaligned(src as *const u64);
            let b = std::ptr::read_unaligned(src.add(n - 8) as *const u64);
            std::ptr::write_unaligned(dst as *mut u64, a);
            std::ptr::write_unaligned(dst.add(n - 8) as *mut u64, b);
        } else if n >= 4 {
            let a = std::ptr::read_unaligned(src as *const u32);
            let b = std::ptr::read_unaligned(src.add(n - 4) as *const u32);
            std::ptr::write_unaligned(dst as *mut u32, a);
            std::ptr::write_unaligned(dst.add(n - 4) as *mut u32, b);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
    }
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

    /// The spelling before numbers were copied into the row's spare capacity: each number's
    /// text appended with `extend_from_slice`.
    fn reference_row(row: &[f64]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut num = zmij::Buffer::new();
        for (i, x) in row.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(num.format(*x).as_bytes());
        }
        out.push(b'\n');
        out
    }

    /// Random values of every kind: any bit pattern (NaN payloads, subnormals, every
    /// exponent), values of a results file (`±m · 10^e`), whole numbers, and the special ones.
    fn varied_values(n: usize) -> Vec<f64> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..n)
            .map(|i| {
                let r = next();
                match i % 5 {
                    0 => f64::from_bits(r),
                    1 => {
                        let m = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                        m * 10f64.powi((r % 41) as i32 - 20)
                    }
                    2 => ((r % 2_000_001) as f64) - 1e6,
                    3 => SPECIAL[(r % SPECIAL.len() as u64) as usize],
                    _ => f32::from_bits(r as u32) as f64,
                }
            })
            .collect()
    }

    /// The row spelled into the spare capacity is the old spelling byte for byte, for random
    /// and special values and rows of every length (each copy width: 1–3, 4–7, 8–15, 16–24
    /// bytes), also appended after text already in the buffer.
    #[test]
    fn rows_are_spelled_as_before_byte_for_byte() {
        let values = varied_values(50_000);
        let mut num = zmij::Buffer::new();
        let mut out = Vec::new();
        let mut widths = [0usize; 25];
        for x in &values {
            widths[format_number(*x).len()] += 1;
        }
        for w in [3, 4, 7, 8, 15, 16, 17, 22, 23, 24] {
            assert!(
                widths[w] > 0,
                "no number of {w} bytes in the sample: {widths:?}"
            );
        }
        let mut at = 0;
        let mut len = 0;
        while at < values.len() {
            let row = &values[at..(at + len).min(values.len())];
            out.clear();
            out.extend_from_slice(b"head,");
            push_row(&mut out, row, &mut num);
            assert_eq!(&out[..5], b"head,");
            assert_eq!(
                out[5..],
                reference_row(row)[..],
                "row at {at} of {len} values"
            );
            at += len;
            len = (len + 1) % 97;
        }
        let row: Vec<f64> = values.iter().copied().take(3000).collect();
        out.clear();
        push_row(&mut out, &row, &mut num);
        assert_eq!(out, reference_row(&row));
    }

    /// A line spelled in two pieces (the first `k` numbers, then the rest after a comma) is
    /// the line of the whole row, for every `k` from none to all.
    #[test]
    fn a_row_spelled_in_two_pieces_is_the_whole_row() {
        let row = varied_values(40);
        let mut num = zmij::Buffer::new();
        let whole = reference_row(&row);
        for k in 0..=row.len() {
            let mut first = Vec::new();
            push_fields(&mut first, &row[..k], false, &mut num);
            let mut line = first.clone();
            push_fields(&mut line, &row[k..], !first.is_empty(), &mut num);
            line.push(b'\n');
            assert_eq!(line, whole, "split at {k}");
        }
        let mut line = Vec::new();
        push_fields(&mut line, &[], true, &mut num);
        assert!(line.is_empty(), "no comma before no number");
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
