//! `hybridsim convert RESULTS [-o OUT.csv]`: a binary results file (`[output] format =
//! "binary"`, `results.bin`) as the `results.csv` the same run would have written: the same
//! header and every value spelled as in `results.csv` (the shortest text that reads back to
//! the same f64), streamed row by row, so that a file of gigabytes needs no more memory than a
//! row.

use anyhow::{anyhow, bail, Context, Result};
use hybridsim_plot::binary;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `convert`.
#[derive(clap::Args)]
pub struct Args {
    /// A binary results file (`results.bin`) or a results folder holding one.
    pub results: PathBuf,
    /// The CSV file to write (default: `results.csv` next to the binary file).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Convert, reporting the rows written and an ignored partial last row.
pub fn execute(args: Args) -> Result<ExitCode> {
    let input = if args.results.is_dir() {
        args.results.join("results.bin")
    } else {
        args.results.clone()
    };
    let output = args
        .output
        .unwrap_or_else(|| input.with_file_name("results.csv"));
    if output == input {
        bail!(
            "{}: the output would overwrite the binary file; give another -o",
            output.display()
        );
    }
    let (rows, partial) = convert(&input, &output)?;
    if partial > 0 {
        eprintln!(
            "warning: {}: ends in a partial row ({partial} bytes) after {rows} whole rows; the partial row is ignored",
            input.display()
        );
    }
    println!("wrote {rows} rows to {}", output.display());
    Ok(ExitCode::SUCCESS)
}

/// Read exactly `buf.len()` bytes or up to the end of the file: the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Stream `input` (binary) to `output` (CSV): the whole rows written and the bytes of an
/// ignored partial last row.
pub fn convert(input: &Path, output: &Path) -> Result<(u64, usize)> {
    let file =
        std::fs::File::open(input).with_context(|| format!("{}: cannot read", input.display()))?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let read_err = |e: std::io::Error| anyhow!("{}: cannot read: {e}", input.display());
    let mut head = vec![0u8; binary::FIXED_HEADER_BYTES];
    let got = read_full(&mut r, &mut head).map_err(read_err)?;
    head.truncate(got);
    let first_row = binary::first_row_offset(&head, input).map_err(|e| anyhow!("{e}"))?;
    head.resize(first_row.max(got), 0);
    let got = got + read_full(&mut r, &mut head[got..]).map_err(read_err)?;
    head.truncate(got);
    let header = binary::parse_header(&head, input).map_err(|e| anyhow!("{e}"))?;
    let n = header.cells.len();
    let mut csv = hybridsim_io::csv::CsvFile::create(output, &header.cells.join(","))
        .with_context(|| format!("{}: cannot create", output.display()))?;
    let write_err = |e: std::io::Error| anyhow!("{}: cannot write: {e}", output.display());
    let mut bytes = vec![0u8; 8 * n];
    let mut row = vec![0.0f64; n];
    loop {
        let got = read_full(&mut r, &mut bytes).map_err(read_err)?;
        if got < bytes.len() {
            let rows = csv.finish().map_err(write_err)?;
            return Ok((rows, got));
        }
        for (x, b) in row.iter_mut().zip(bytes.chunks_exact(8)) {
            *x = f64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        csv.write_row(&row).map_err(write_err)?;
    }
}
