//! Memory of the output path (issue 20), counted by a global allocator: a results file holds a
//! block of a wide row's text, not the row's, and writes its header without holding it; a run
//! of a wide chain holds its recorder, writer queue and text buffers in a bounded number of
//! bytes a column.
//!
//! The sums are the process's (the results writer allocates on a thread of its own), so the
//! tests of this binary take turns through [`TURN`].

use hybridsim_io::{HeaderCells, RowFile, RowFormat, Storage, WriterFactory};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The system allocator, adding the bytes every thread allocates and frees while
/// [`peak_bytes_added`] runs.
struct Bytes;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
static TURN: Mutex<()> = Mutex::new(());

/// Add `delta` bytes to the live sum and raise the peak to the sum plus `held` (the old block
/// of a reallocation, held while its contents are copied).
fn note(delta: i64, held: i64) {
    let live = LIVE.fetch_add(delta, Ordering::Relaxed);
    PEAK.fetch_max(live + held.max(delta), Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Bytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            note(layout.size() as i64, 0);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            note(-(layout.size() as i64), 0);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            note(new_size as i64 - layout.size() as i64, new_size as i64);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Bytes = Bytes;

/// What `f` returns, the largest number of bytes held at once beyond those held when it
/// started (every thread), and the bytes it leaves held.
fn peak_bytes_added<T>(f: impl FnOnce() -> T) -> (T, i64, i64) {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let out = f();
    COUNTING.store(false, Ordering::Relaxed);
    (
        out,
        PEAK.load(Ordering::Relaxed),
        LIVE.load(Ordering::Relaxed),
    )
}

/// Storage that compares the bytes written with `expected`, holding none of them.
struct Compare {
    expected: Arc<Vec<u8>>,
    at: Arc<AtomicU64>,
}

impl Write for Compare {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let at = self.at.load(Ordering::Relaxed) as usize;
        assert!(
            self.expected[at..].starts_with(b),
            "the file differs at byte {at}"
        );
        self.at.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Storage for Compare {
    fn truncate(&mut self, _len: u64) -> io::Result<()> {
        unreachable!("no write fails")
    }
}

/// The header cells `u.1.x[m]`, `u.2.x[m]`, … made one at a time.
struct Cells(usize);

impl HeaderCells for Cells {
    fn count(&self) -> usize {
        self.0
    }
    fn write_cells(&self, out: &mut dyn Write, separator: u8, after_last: bool) -> io::Result<()> {
        for i in 0..self.0 {
            write!(out, "u.{}.x[m]", i + 1)?;
            if after_last || i + 1 < self.0 {
                out.write_all(&[separator])?;
            }
        }
        Ok(())
    }
}

/// A results file of a 10⁵-DOF chain's 600 001 columns: the header written a cell at a time
/// and two rows (one whole, one with its first columns spelled) hold at most 512 KB, the same
/// bytes as the header line and the rows spelled whole. When the header was a string and a
/// row was spelled whole into the buffer, they held 44.2 MB (the 9.0 MB header line, then
/// the 15.0 MB reserved for a row's text, grown to 30.0 MB by the second row).
#[test]
fn a_wide_results_file_holds_a_block_of_a_row() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let ncol = 600_001;
    let row: Vec<f64> = (0..ncol).map(|i| (i as f64).sin() * 1e-3).collect();
    let header: Vec<String> = (0..ncol).map(|i| format!("u.{}.x[m]", i + 1)).collect();
    let mut expected = header.join(",").into_bytes();
    drop(header);
    expected.push(b'\n');
    let mut num = zmij::Buffer::new();
    hybridsim_io::csv::push_row(&mut expected, &row, &mut num);
    hybridsim_io::csv::push_row(&mut expected, &row, &mut num);
    let (spelled_part, rest) = row.split_at(1000);
    let mut spelled = Vec::new();
    hybridsim_io::csv::push_fields(&mut spelled, spelled_part, false, &mut num);
    let expected = Arc::new(expected);
    let at = Arc::new(AtomicU64::new(0));
    let (e, a) = (expected.clone(), at.clone());
    let factory: WriterFactory = Arc::new(move |_: &Path| {
        Ok(Box::new(Compare {
            expected: e.clone(),
            at: a.clone(),
        }) as Box<dyn Storage>)
    });
    let (file, peak, _) = peak_bytes_added(|| {
        let mut f = RowFile::create_with(
            &factory,
            Path::new("results.csv"),
            &Cells(ncol),
            RowFormat::Csv,
        )
        .unwrap();
        f.write_row(&row, 1).unwrap();
        f.write_spelled_row(&spelled, rest, 2).unwrap();
        f.finish().unwrap();
        f
    });
    assert_eq!(at.load(Ordering::Relaxed) as usize, expected.len());
    assert_eq!((file.rows_on_disk(), file.last_tag_on_disk()), (2, Some(2)));
    eprintln!("a results file of {ncol} columns: {peak} bytes at most");
    assert!(peak <= 512 << 10, "the results file held {peak} bytes");
}

/// The binary header written a cell at a time is the one of
/// `hybridsim_plot::binary::encode_header`.
#[test]
fn a_binary_header_written_a_cell_at_a_time_is_the_encoded_one() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    for n in [0, 1, 2, 3, 1000] {
        let cells: Vec<String> = (0..n).map(|i| format!("u.{}.x[m]", i + 1)).collect();
        let refs: Vec<&str> = cells.iter().map(String::as_str).collect();
        let expected = Arc::new(hybridsim_plot::binary::encode_header(&refs));
        let at = Arc::new(AtomicU64::new(0));
        let (e, a) = (expected.clone(), at.clone());
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Compare {
                expected: e.clone(),
                at: a.clone(),
            }) as Box<dyn Storage>)
        });
        RowFile::create_with(&factory, Path::new("x.bin"), &Cells(n), RowFormat::Binary).unwrap();
        assert_eq!(
            at.load(Ordering::Relaxed) as usize,
            expected.len(),
            "{n} cells"
        );
    }
}

/// The model file of a shear chain of `n` storeys, every column recorded (as the start-up
/// benchmark's chain, without damping and ground motion).
fn chain_text(n: usize) -> String {
    // (Root arrays of inline tables, as the benchmark writes them: before the first table.)
    let mut t = String::from("title = \"chain\"\nnode = [\n");
    for i in 1..=n {
        t.push_str(&format!("{{ id = {i}, dofs = [\"x\"] }},\n"));
    }
    t.push_str("]\nelement = [\n");
    for i in 1..=n {
        t.push_str(&format!(
            "{{ type = \"mass\", name = \"m{i}\", node = {i}, mass = 50.0 }},\n"
        ));
        let nodes = if i == 1 {
            "[1]".to_string()
        } else {
            format!("[{}, {i}]", i - 1)
        };
        t.push_str(&format!(
            "{{ type = \"spring\", name = \"column{i}\", nodes = {nodes}, dof = \"x\", \
             k = 40000.0 }},\n"
        ));
    }
    t.push_str("]\n[units]\nlength = \"m\"\nforce = \"kN\"\ntime = \"s\"\n");
    t.push_str("[analysis]\nintegrator = \"mg-alpha\"\nrho_inf = 1.0\n");
    t.push_str("time_step = 0.001\nduration = 0.004\n[output]\nevery = 1\n");
    t
}

/// `hybridsim run` of a 20 000-storey chain recording all of its 100 001 columns: what the run
/// holds beyond its integrator (the recorder, the writer queue's values and text buffers, the
/// results file, run.json) is at most 150 bytes a column (139.3 measured: 10 value buffers of
/// a row, 80 a column, the recorder's row, 8, and 4 text buffers of 1 MB, 40 a column, are
/// most of it). It was 163.2 with a value buffer more, run.json's DOF list held as JSON
/// strings by the heartbeat (about 16 a column) and the recorder's capture of the state
/// made with it (about 5); before that, about 250: the names (about 27) and a 16-byte
/// channel a column, 12 value buffers (96) and 4 text buffers of 2 MB (80), a row's text
/// reserved whole (25).
#[test]
fn a_wide_run_holds_a_bounded_number_of_bytes_a_column() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 20_000;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-io-output-memory");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("chain.toml");
    std::fs::write(&path, chain_text(n)).unwrap();
    let mut loaded = hybridsim_io::load_model(&path).unwrap_or_else(|e| panic!("{e}"));
    loaded.release_text();
    // What the integrator alone holds.
    let (integ, _, integrator) =
        peak_bytes_added(|| hybridsim::integrators::build_with(&loaded.model, None).unwrap());
    drop(integ);
    let folder = dir.join("out");
    let (report, peak, _) = peak_bytes_added(|| {
        hybridsim_io::run_to_folder(
            &loaded,
            &folder,
            &AtomicU64::new(0),
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    });
    assert!(report.error.is_none(), "{:?}", report.error);
    let text = std::fs::read_to_string(folder.join("results.csv")).unwrap();
    let header = text.lines().next().unwrap();
    let ncol = header.split(',').count();
    assert!(ncol >= 5 * n, "{ncol} columns");
    assert_eq!(text.lines().count(), 1 + report.rows as usize);
    assert!(report.rows >= 4, "{} rows", report.rows);
    drop(text);
    let output = peak - integrator;
    let per_column = output as f64 / ncol as f64;
    eprintln!(
        "run of {ncol} columns: peak {peak} bytes, integrator {integrator}, output path \
         {output} ({per_column:.1} a column)"
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        per_column <= 150.0,
        "the output path held {output} bytes for {ncol} columns ({per_column:.1} a column)"
    );
}
