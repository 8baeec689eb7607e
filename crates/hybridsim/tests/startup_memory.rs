//! Start-up memory (issue 20): the heap the recorder's column names take, counted by a
//! global allocator, per column of a shear chain.

use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::Model;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, adding the bytes this thread allocates and frees while
/// [`live_bytes_added`] or [`peak_bytes_added`] runs. The sums are the thread's own: the
/// harness's threads are not counted, and the other tests of this binary, which run at the same
/// time on threads of their own, do not reach another test's sums.
struct Bytes;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<i64> = const { Cell::new(0) };
    /// The largest `LIVE` since [`peak_bytes_added`] started.
    static PEAK: Cell<i64> = const { Cell::new(0) };
    /// Heap blocks allocated minus blocks freed.
    static BLOCKS: Cell<i64> = const { Cell::new(0) };
    /// The bytes the blocks take in glibc's heap ([`chunk`]), allocated minus freed.
    static CHUNKS: Cell<i64> = const { Cell::new(0) };
    /// The glibc heap bytes of the small blocks (below [`MMAP_THRESHOLD`]), allocated minus
    /// freed, and their largest sum since [`small_blocks_peak`] started.
    static SMALL: Cell<i64> = const { Cell::new(0) };
    static SMALL_PEAK: Cell<i64> = const { Cell::new(0) };
}

/// The block size from which the CLI has glibc map a block of its own (`mallopt`
/// `M_MMAP_THRESHOLD`, 128 KiB): such a block goes back to the kernel when freed, the smaller
/// ones stay in the heap.
const MMAP_THRESHOLD: usize = 128 << 10;

/// Add or remove (`sign`) a block of `size` bytes to this thread's small-block sum.
fn note_small(size: usize, sign: i64) {
    if size < MMAP_THRESHOLD {
        let _ = SMALL.try_with(|s| {
            s.set(s.get() + sign * chunk(size));
            let _ = SMALL_PEAK.try_with(|p| p.set(p.get().max(s.get())));
        });
    }
}

/// The bytes a block of `size` bytes takes in glibc's heap (below its mmap threshold): the
/// size plus 8 bytes of header, rounded up to 16, at least 32 (glibc's `request2size` on
/// 64-bit). A heap block per element or name counts in the resident memory by this, not by
/// the bytes requested.
fn chunk(size: usize) -> i64 {
    ((size + 8 + 15) & !15).max(32) as i64
}

/// Add `blocks` blocks taking `chunks` bytes of glibc's heap to this thread's sums.
fn note_blocks(blocks: i64, chunks: i64) {
    let _ = BLOCKS.try_with(|b| b.set(b.get() + blocks));
    let _ = CHUNKS.try_with(|c| c.set(c.get() + chunks));
}

fn counting() -> bool {
    COUNTING.try_with(|c| c.get()).unwrap_or(false)
}

/// Add `delta` bytes to this thread's live sum, and raise its peak to the sum plus `held`
/// (bytes held beside the sum for a moment, as a reallocation's old block).
fn note(delta: i64, held: i64) {
    let _ = LIVE.try_with(|live| {
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get() + held.max(delta))));
        live.set(live.get() + delta);
    });
}

unsafe impl GlobalAlloc for Bytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            note(layout.size() as i64, 0);
            note_blocks(1, chunk(layout.size()));
            note_small(layout.size(), 1);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            note(-(layout.size() as i64), 0);
            note_blocks(-1, -chunk(layout.size()));
            note_small(layout.size(), -1);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            // The old and the new block are both held while the contents are copied.
            note(new_size as i64 - layout.size() as i64, new_size as i64);
            note_blocks(0, chunk(new_size) - chunk(layout.size()));
            note_small(new_size, 1);
            note_small(layout.size(), -1);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Bytes = Bytes;

/// What `f` returns, and the bytes it leaves allocated (allocated minus freed by this thread).
fn live_bytes_added<T>(f: impl FnOnce() -> T) -> (T, i64) {
    LIVE.with(|l| l.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, LIVE.with(|l| l.get()))
}

/// What `f` leaves allocated (this thread only): bytes requested, heap blocks, and the bytes
/// those blocks take in glibc's heap ([`chunk`]).
#[derive(Debug, Clone, Copy)]
struct Kept {
    bytes: i64,
    blocks: i64,
    chunks: i64,
}

impl Kept {
    /// The three a DOF of `n`.
    fn per_dof(&self, n: usize) -> (f64, f64, f64) {
        let n = n as f64;
        (
            self.bytes as f64 / n,
            self.blocks as f64 / n,
            self.chunks as f64 / n,
        )
    }
}

/// What `f` returns, and what it leaves allocated ([`Kept`]).
fn kept_by<T>(f: impl FnOnce() -> T) -> (T, Kept) {
    BLOCKS.with(|b| b.set(0));
    CHUNKS.with(|c| c.set(0));
    let (out, bytes) = live_bytes_added(f);
    let kept = Kept {
        bytes,
        blocks: BLOCKS.with(|b| b.get()),
        chunks: CHUNKS.with(|c| c.get()),
    };
    (out, kept)
}

/// What `f` returns, and the largest number of bytes it held allocated at once (beyond what
/// was allocated when it started; this thread only).
fn peak_bytes_added<T>(f: impl FnOnce() -> T) -> (T, i64) {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, PEAK.with(|p| p.get()))
}

/// What `f` returns, and the largest glibc heap bytes its small blocks (below
/// [`MMAP_THRESHOLD`]) took at once (this thread only). In a fresh heap that is the size the
/// heap grows to: what `f` frees of it stays as holes among what it keeps, resident.
fn small_blocks_peak<T>(f: impl FnOnce() -> T) -> (T, i64) {
    SMALL.with(|s| s.set(0));
    SMALL_PEAK.with(|p| p.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, SMALL_PEAK.with(|p| p.get()))
}

/// A shear chain of `n` storeys without damping: one `x` DOF a node, a mass and a spring a
/// storey.
fn chain(n: usize) -> Model {
    let t = chain_text(n);
    Model::from_toml(&t, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// [`chain`] with Rayleigh damping (`C = α M + β K` over every DOF: one element).
fn damped_chain(n: usize) -> Model {
    let t = chain_text(n) + "[damping]\nalpha = 0.2\nbeta = 0.002\n";
    Model::from_toml(&t, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// The model file of [`chain`].
fn chain_text(n: usize) -> String {
    let mut t = String::from("title = \"chain\"\n[units]\nlength = \"m\"\nforce = \"kN\"\n");
    t.push_str("time = \"s\"\n[analysis]\nintegrator = \"mg-alpha\"\nrho_inf = 1.0\n");
    t.push_str("time_step = 0.001\nduration = 0.01\n");
    for i in 1..=n {
        t.push_str(&format!("[[node]]\nid = {i}\ndofs = [\"x\"]\n"));
    }
    for i in 1..=n {
        t.push_str(&format!(
            "[[element]]\ntype = \"mass\"\nname = \"m{i}\"\nnode = {i}\nmass = 50.0\n"
        ));
        let nodes = if i == 1 {
            "[1]".to_string()
        } else {
            format!("[{}, {i}]", i - 1)
        };
        t.push_str(&format!(
            "[[element]]\ntype = \"spring\"\nname = \"column{i}\"\nnodes = {nodes}\n\
             dof = \"x\"\nk = 40000.0\n"
        ));
    }
    t
}

/// The recorder holds no column names (they are made when asked for, from its channels and
/// the integrator's partitions), one 16-byte channel a run of columns of one kind, one a run
/// of recorded elements a stride apart (the chain's springs, between its masses), and no
/// capture of the state until a runner captures: at most 2.5 bytes a column (1.7 measured).
/// With the capture made with the recorder (the state and the relative accelerations, 24
/// bytes a DOF) and a channel a spring it took 10.0; with the names packed in one text and a
/// channel a column 54.5; with a `String` per name and unit at least 93.
#[test]
fn recorder_channels_take_less_than_2_5_bytes_a_column() {
    let n = 2000;
    let model = chain(n);
    let integ = hybridsim::integrators::build_with(&model, None).unwrap_or_else(|e| panic!("{e}"));
    // (Without damping the recorder's workspaces are a few values: the largest element has
    // two DOFs.)
    let (recorder, bytes) = live_bytes_added(|| Recorder::new(&model, integ.as_ref()));
    let ncol = recorder.n_columns();
    assert!(ncol >= 4 * n, "{ncol} columns");
    let per_column = bytes as f64 / ncol as f64;
    eprintln!("recorder: {bytes} bytes for {ncol} columns ({per_column:.1} a column)");
    assert!(
        per_column <= 2.5,
        "the recorder takes {bytes} bytes for {ncol} columns ({per_column:.1} a column)"
    );
    // The names are those of the columns, in order.
    let integ = integ.as_ref();
    let columns = recorder.columns(integ);
    assert_eq!(columns.len(), ncol);
    assert_eq!(columns[0].header(), "time[s]");
    assert_eq!(columns[1].header(), "u.structure.1.x[m]");
    assert_eq!(columns[n].header(), format!("u.structure.{n}.x[m]"));
    assert_eq!(columns[n + 1].header(), "v.structure.1.x[m/s]");
    assert_eq!(columns[2 * n + 1].header(), "a_abs.structure.1.x[m/s^2]");
    assert_eq!(columns[3 * n + 1].header(), "force.column1.1.x[kN]");
    assert_eq!(columns[3 * n + 2].header(), "force.column2.1.x[kN]");
    assert_eq!(columns[3 * n + 3].header(), "force.column2.2.x[kN]");
    assert_eq!(recorder.column(integ, 1), Some(columns[1].clone()));
    assert_eq!(recorder.column(integ, ncol), None);
    let header = recorder.header(integ);
    assert_eq!(
        header.split(',').collect::<Vec<_>>(),
        recorder.headers(integ),
        "the header line lists the headers"
    );
    assert_eq!(
        recorder.headers(integ),
        columns.iter().map(|c| c.header()).collect::<Vec<_>>()
    );
}

/// The CSV header of a wide recorder is written a name at a time: writing it holds a few
/// hundred bytes, not the line (about 25 MB for a 10⁵-DOF chain's 600 001 columns), and the
/// line is [`Recorder::header`]'s.
#[test]
fn the_header_is_written_without_holding_it() {
    let n = 2000;
    let model = chain(n);
    let integ = hybridsim::integrators::build_with(&model, None).unwrap_or_else(|e| panic!("{e}"));
    let recorder = Recorder::new(&model, integ.as_ref());
    let line = recorder.header(integ.as_ref());
    assert!(line.len() > 100_000, "{} bytes", line.len());
    struct Compare<'a>(&'a [u8]);
    impl std::io::Write for Compare<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            assert!(self.0.starts_with(b), "the header differs");
            self.0 = &self.0[b.len()..];
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut rest = Compare(line.as_bytes());
    let (written, peak) = peak_bytes_added(|| recorder.write_header(integ.as_ref(), &mut rest));
    written.unwrap();
    assert!(rest.0.is_empty(), "the header is cut short");
    assert!(peak <= 1024, "writing the header held {peak} bytes");
}

/// `check`'s summary of a model above `SUMMARY_MODES_MAX_DOFS` skips the dense eigenanalysis
/// of the linearized model (for the 10⁴-DOF chain it ran for more than 13 minutes and needs
/// dense `N × N` matrices) and says so; the rest of the summary is printed.
#[test]
fn the_summary_of_a_large_model_skips_the_dense_modes() {
    let n = hybridsim::simulation::SUMMARY_MODES_MAX_DOFS + 1;
    let sim = hybridsim::Simulation::new(chain(n)).unwrap_or_else(|e| panic!("{e}"));
    let summary = sim.summary();
    assert!(
        summary.contains(&format!("modes: not computed for {n} DOFs")),
        "{summary}"
    );
    assert!(!summary.contains("modes of the linearized coupled model"));
    assert!(summary.contains("recorded:"), "{summary}");
    let small = hybridsim::Simulation::new(chain(3)).unwrap_or_else(|e| panic!("{e}"));
    assert!(small
        .summary()
        .contains("modes of the linearized coupled model (3 DOFs)"));
}

/// DOF names are interned: a `DofRef` is 16 bytes and cloning one allocates nothing (a
/// `String` per reference was 32 bytes and a heap block each, 1.3 MB of a 10⁴-DOF chain's
/// springs alone); it prints, compares and orders by the name's text as before.
#[test]
fn dof_references_hold_an_interned_name() {
    use hybridsim::elements::{DofName, DofRef};
    assert_eq!(std::mem::size_of::<DofRef>(), 16);
    assert_eq!(std::mem::size_of::<DofName>(), 4);
    // Interned before "x", "y" still orders after it, by the text.
    let y = DofRef::new(7, "y_interned_first");
    let x = DofRef::new(7, "x_interned_second");
    assert!(x < y && x.dof < y.dof);
    assert_eq!(y.to_string(), "node 7 dof y_interned_first");
    assert_eq!(
        format!("{y:?}"),
        "DofRef { node: 7, dof: \"y_interned_first\" }"
    );
    assert_eq!(y.dof, "y_interned_first");
    assert_eq!(y, DofRef::new(7, &String::from("y_interned_first")));
    let refs: Vec<DofRef> = (0..1000).map(|i| DofRef::new(i, "rz")).collect();
    let (copies, bytes) = live_bytes_added(|| refs.iter().map(|d| d.dof).collect::<Vec<_>>());
    assert_eq!(
        bytes,
        4 * 1000,
        "one vector of 1000 names, nothing per name"
    );
    let (clones, bytes) = live_bytes_added(|| refs.clone());
    assert_eq!(
        bytes,
        16 * 1000,
        "one vector of 1000 references, nothing per reference"
    );
    assert!(copies.iter().all(|d| *d == "rz") && clones == refs);
}

/// A `linear` element written with only its `k` (a frame member) keeps its `k` and its DOFs,
/// not two dense zero `m` and `c` as well; its mass is none and its damping zero as before.
#[test]
fn a_linear_element_keeps_no_zero_mass_nor_damping() {
    use hybridsim::elements::{DofRef, Element, LinearSuperelement};
    use nalgebra::DMatrix;
    // The names' first use adds them to the process's table; not the element's memory.
    let _ = ["x", "y", "rz"].map(hybridsim::elements::DofName::new);
    let (element, bytes) = live_bytes_added(|| {
        let dofs: Vec<DofRef> = ["x", "y", "rz", "x", "y", "rz"]
            .iter()
            .enumerate()
            .map(|(i, d)| DofRef::new(1 + i as i64 / 3, d))
            .collect();
        let k = DMatrix::from_fn(6, 6, |i, j| if i == j { 2.0 } else { -0.25 });
        LinearSuperelement::new(dofs, DMatrix::zeros(6, 6), DMatrix::zeros(6, 6), k, None)
    });
    // k (36 values, 288 bytes, and the 16 bytes of counts of its shared copy) and the six
    // DOFs (96 bytes); the zero m and c were 576 more.
    assert!(bytes <= 16 + 288 + 96, "{bytes} bytes");
    assert!(element.mass().is_none());
    assert_eq!(element.linear_damping(), Some(DMatrix::zeros(6, 6)));
    assert_eq!(element.linear_stiffness().map(|k| k[(0, 1)]), Some(-0.25));
}

/// A 2D moment frame of `storeys × bays` (3 DOFs a free node, base fixed) of `linear` members
/// (the 6 × 6 stiffness of an elastic beam-column, axial and bending terms), a lumped mass
/// with rotary inertia at every free node, and Rayleigh damping: the shape of
/// `scripts/bench/frame_model.py`'s frame.
fn frame(storeys: usize, bays: usize) -> Model {
    let t = frame_text(storeys, bays);
    Model::from_toml(&t, "frame.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// The model file of [`frame`].
fn frame_text(storeys: usize, bays: usize) -> String {
    let id = |f: usize, c: usize| f * (bays + 1) + c + 1;
    let mut t = String::from("title = \"frame\"\n");
    for f in 0..=storeys {
        for c in 0..=bays {
            let fixed = if f == 0 {
                "\nfixed = [\"x\", \"y\", \"rz\"]"
            } else {
                ""
            };
            t += &format!(
                "[[node]]\nid = {}\ndofs = [\"x\", \"y\", \"rz\"]{fixed}\n",
                id(f, c)
            );
        }
    }
    // Local stiffness of a member along x (column: along y, axial and transverse swapped).
    let member = |t: &mut String, name: String, a: usize, b: usize, vertical: bool| {
        let (ea, ei, l) = (2.0e6, 8.0e4, 3.0);
        let (ax, tr) = (ea / l, 12.0 * ei / (l * l * l));
        let (sh, m4, m2) = (6.0 * ei / (l * l), 4.0 * ei / l, 2.0 * ei / l);
        let mut k = [[0.0f64; 6]; 6];
        let (u, w) = if vertical { (1, 0) } else { (0, 1) };
        for (p, q, s) in [(0, 0, 1.0), (3, 3, 1.0), (0, 3, -1.0), (3, 0, -1.0)] {
            k[p + u][q + u] = s * ax;
            k[p + w][q + w] = s * tr;
        }
        for (p, q, v) in [(2, 2, m4), (5, 5, m4), (2, 5, m2), (5, 2, m2)] {
            k[p][q] = v;
        }
        for (p, s) in [(0, 1.0), (3, -1.0)] {
            for r in [2, 5] {
                k[p + w][r] = s * sh;
                k[r][p + w] = s * sh;
            }
        }
        let rows: Vec<String> = k
            .iter()
            .map(|r| format!("[{}]", r.map(|v| format!("{v:?}")).join(", ")))
            .collect();
        *t += &format!(
            "[[element]]\ntype = \"linear\"\nname = \"{name}\"\n\
             dofs = [[{a}, \"x\"], [{a}, \"y\"], [{a}, \"rz\"], [{b}, \"x\"], [{b}, \"y\"], [{b}, \"rz\"]]\n\
             k = [{}]\n",
            rows.join(", ")
        );
    };
    for f in 1..=storeys {
        for c in 0..=bays {
            member(&mut t, format!("col{f}_{c}"), id(f - 1, c), id(f, c), true);
        }
        for c in 0..bays {
            member(
                &mut t,
                format!("beam{f}_{c}"),
                id(f, c),
                id(f, c + 1),
                false,
            );
        }
    }
    for f in 1..=storeys {
        for c in 0..=bays {
            t += &format!(
                "[[element]]\ntype = \"mass\"\nname = \"m{f}_{c}\"\nnode = {}\n\
                 mass = [12.0, 12.0, 0.5]\n",
                id(f, c)
            );
        }
    }
    t += "[damping]\nalpha = 0.2\nbeta = 0.002\n";
    t += "[analysis]\nintegrator = \"mg-alpha\"\ntime_step = 0.001\nduration = 0.01\n";
    t
}

/// Building a 990-DOF 2D frame's partition holds at most 2 250 bytes a DOF of heap at once,
/// keeps at most 850, and keeps `J0` and the mass in compressed rows of 12 bytes an entry.
/// `J0` and the mass were assembled as `(row, column, value)` triplets of 24 bytes — every
/// contribution of every element, zeros included (about 64 a DOF for the frame) — then merged
/// into a second vector reserved as long: 4 479 bytes a DOF at the peak on this model. In
/// compressed rows assembled in two passes (exact zeros skipped): 2 348 at the peak, 870 kept;
/// with 32-bit columns in the residual's merged linear runs as well: 2 149 and 832.
#[test]
fn a_frame_partition_is_built_in_less_than_2250_bytes_a_dof() {
    use hybridsim::assembly::{build_partitions, Grouping};
    let model = frame(30, 10);
    let (parts, peak) = peak_bytes_added(|| build_partitions(&model, Grouping::Monolithic));
    let parts = parts.unwrap_or_else(|e| panic!("{e}"));
    let st = &parts[0].state;
    let n = st.n_dofs();
    assert_eq!(n, 30 * 11 * 3);
    let per_dof = peak as f64 / n as f64;
    eprintln!("building the frame's state space: peak {peak} bytes, {per_dof:.0} a DOF");
    assert!(
        per_dof <= 2250.0,
        "peak {peak} bytes for {n} DOFs ({per_dof:.0} a DOF)"
    );
    for m in [st.j0_entries(), st.mass_entries()] {
        assert!(m.heap_bytes() <= 12 * m.len() + 8 * (m.n_rows() + 1));
    }
    // What the partition keeps (slots, J0 and mass, the residual's merged runs, the Rayleigh
    // element): at most LIVE_BOUND bytes a DOF.
    drop(parts);
    let (parts, live) = live_bytes_added(|| build_partitions(&model, Grouping::Monolithic));
    let live_per_dof = live as f64 / n as f64;
    eprintln!("the frame's partition keeps {live} bytes, {live_per_dof:.0} a DOF");
    assert!(
        live_per_dof <= LIVE_BOUND,
        "{live} bytes kept ({live_per_dof:.0} a DOF)"
    );
    drop(parts);
}

/// Bytes a DOF a 990-DOF frame's partition keeps once built (see
/// [`a_frame_partition_is_built_in_less_than_2250_bytes_a_dof`]): 793 before the slots were
/// 64 bytes with shared names and 32-bit DOF maps, the Rayleigh element's `C` 32-bit columns in
/// exactly sized vectors and the fused runs sized exactly; 615 after.
const LIVE_BOUND: f64 = 650.0;

/// The model of a 990-DOF frame of `linear` members keeps at most 480 bytes a DOF: a member is
/// 56 bytes besides its DOFs and `k` (176 with the matrices' and vectors' headers inline: 529
/// bytes a DOF before, 447 after).
#[test]
fn a_frame_model_keeps_less_than_480_bytes_a_dof() {
    let _ = ["x", "y", "rz"].map(hybridsim::elements::DofName::new);
    let (model, bytes) = live_bytes_added(|| frame(30, 10));
    let n = 30 * 11 * 3;
    let per_dof = bytes as f64 / n as f64;
    eprintln!("the frame's model keeps {bytes} bytes, {per_dof:.0} a DOF");
    assert!(
        per_dof <= 480.0,
        "{bytes} bytes for {n} DOFs ({per_dof:.0} a DOF)"
    );
    assert!(model.elements.len() > 2 * 30 * 11);
}

/// Factoring a 990-DOF frame's `D = M + c J0` (Abbiati et al. 2019, eq 12; the reduced
/// matrix `m + c C + c² K` as `L D Lᵀ` by blocks) holds at most 1 000 bytes a DOF
/// of heap at once, the factors it keeps included. `D` was formed as 24-byte
/// `(row, column, value)` triplets, the reduced matrix as a vector of row vectors plus triplets
/// and their merge, its lower triangle and a renumbered copy of it as triplets again, the
/// neighbour lists as a vector a row, and the blocked factor was copied from a factor by rows
/// of the same size: 2 404 bytes a DOF at the peak on this model (615 kept). With `D` and the reduced
/// matrix in compressed rows (12 bytes an entry), `D` released before the reduced matrix is
/// factored, the lower triangle read from it through the renumbering, and the blocked factor
/// written block by block from a window of the rows still read: 771 (601 kept). Issue 20,
/// session 24: the blocks' triangles packed below the diagonal (120 values, not 160) and the
/// pivots `d_r` not kept beside `1 / d_r`: 604 → 603 at the peak, 422 → 394 kept (at most
/// [`FACTOR_KEPT_BOUND`]). Session 26: the band estimate of `D` before the effective matrix is
/// formed, and the effective matrix freed once its renumbered lower triangle is copied: 522.
#[test]
fn a_frame_s_state_matrix_is_factored_in_less_than_1000_bytes_a_dof() {
    use hybridsim::assembly::{build_partitions, Grouping};
    use hybridsim::integrators::{AlphaParameters, AlphaStepper};
    let model = frame(30, 10);
    let parts = build_partitions(&model, Grouping::Monolithic).unwrap_or_else(|e| panic!("{e}"));
    let st = &parts[0].state;
    let n = st.n_dofs();
    let factor = || AlphaStepper::factor(st, AlphaParameters::new(0.8), 1.0e-3);
    let (d, peak) = peak_bytes_added(factor);
    let d = d.unwrap_or_else(|e| panic!("{e}"));
    assert!(d.is_reduced() && d.is_symmetric());
    drop(d);
    let (d, kept) = live_bytes_added(factor);
    drop(d);
    let (per_dof, kept_per_dof) = (peak as f64 / n as f64, kept as f64 / n as f64);
    eprintln!(
        "factoring the frame's D: peak {peak} bytes ({per_dof:.0} a DOF), \
         kept {kept} ({kept_per_dof:.0} a DOF)"
    );
    assert!(
        per_dof <= FACTOR_PEAK_BOUND,
        "peak {peak} bytes for {n} DOFs ({per_dof:.0} a DOF)"
    );
    assert!(
        kept_per_dof <= FACTOR_KEPT_BOUND,
        "the factors keep {kept} bytes for {n} DOFs ({kept_per_dof:.0} a DOF)"
    );
}

/// Bytes a DOF of heap at the peak of factoring a 990-DOF frame's `D` (see
/// [`a_frame_s_state_matrix_is_factored_in_less_than_1000_bytes_a_dof`]).
const FACTOR_PEAK_BOUND: f64 = 1000.0;

/// The model of a 990-DOF frame keeps a `linear` member in one heap block (its shared
/// handle's, the six DOFs inside the element, 144 bytes): at most FRAME_MODEL_BLOCKS heap
/// blocks and FRAME_MODEL_CHUNKS bytes of glibc's chunks a DOF. Measured: 1.33 blocks and 233
/// bytes; a member's DOFs were a boxed slice of their own before (a 112-byte chunk beside the
/// handle's 80-byte one, 630 members: 0.64 blocks and 20 bytes of chunks a DOF more).
#[test]
fn a_frame_model_keeps_a_member_in_one_block() {
    use hybridsim::elements::LinearSuperelement;
    assert!(std::mem::size_of::<LinearSuperelement>() <= 128);
    let _ = ["x", "y", "rz"].map(hybridsim::elements::DofName::new);
    let (model, kept) = kept_by(|| frame(30, 10));
    let n = 30 * 11 * 3;
    let (bytes, blocks, chunks) = kept.per_dof(n);
    eprintln!(
        "the frame's model keeps {bytes:.0} bytes, {blocks:.2} blocks and {chunks:.0} bytes \
         of chunks a DOF"
    );
    assert!(blocks <= FRAME_MODEL_BLOCKS, "{blocks:.2} blocks a DOF");
    assert!(
        chunks <= FRAME_MODEL_CHUNKS,
        "{chunks:.0} bytes of chunks a DOF"
    );
    let member = (model.elements.iter())
        .find(|e| e.element.kind() == "linear")
        .expect("a member");
    assert_eq!(member.element.dofs().len(), 6);
}

/// Heap blocks a DOF of [`a_frame_model_keeps_a_member_in_one_block`].
const FRAME_MODEL_BLOCKS: f64 = 1.4;
/// Bytes of glibc's chunks a DOF of [`a_frame_model_keeps_a_member_in_one_block`].
const FRAME_MODEL_CHUNKS: f64 = 240.0;

/// Bytes a DOF the factors of a 990-DOF frame's `D` keep (see
/// [`a_frame_s_state_matrix_is_factored_in_less_than_1000_bytes_a_dof`]): 422 with the
/// blocks' triangles as whole quads of rows and both `d_r` and `1 / d_r`, 394 after.
const FACTOR_KEPT_BOUND: f64 = 405.0;

/// The model a shear chain is read into keeps at most 290 bytes a DOF (a node, a mass and a
/// spring, with their names): nodes as one record (24 bytes and a block of 24 bytes a DOF, not
/// four vectors: 104 bytes and four blocks) and the element DOF lists sized exactly (a
/// vector grown by pushes starts at four 16-byte references). Measured: 550 → 390 bytes a DOF;
/// 270 with a one-DOF mass a 24-byte element (88 bytes before), bound 290.
#[test]
fn a_chain_model_keeps_less_than_290_bytes_a_dof() {
    use hybridsim::model::Node;
    assert!(std::mem::size_of::<Node>() <= 24);
    let n = 2000;
    let text = chain_text(n);
    // The names' first use adds them to the process's table; not the model's memory.
    let _ = hybridsim::elements::DofName::new("x");
    let (model, bytes) =
        live_bytes_added(|| Model::from_toml(&text, "chain.toml", &NoFiles).expect("valid"));
    let per_dof = bytes as f64 / n as f64;
    eprintln!("the chain's model keeps {bytes} bytes, {per_dof:.0} a DOF");
    assert!(
        per_dof <= 290.0,
        "{bytes} bytes for {n} DOFs ({per_dof:.0} a DOF)"
    );
    // The nodes alone: 48 bytes a one-DOF node.
    let (nodes, node_bytes) = live_bytes_added(|| model.nodes.clone());
    assert_eq!(
        node_bytes,
        48 * n as i64,
        "{node_bytes} bytes for {n} nodes"
    );
    let first = &nodes[0].dofs[0];
    assert!(first.name == "x" && !first.fixed && first.u0 == 0.0 && first.v0 == 0.0);
}

/// The model of a shear chain holds its elements' names in one table (two heap blocks for all
/// of them), not one `Arc<str>` a name: at most 3.1 heap blocks a DOF (a node's DOF record, a
/// mass, a spring) and 380 bytes a DOF in glibc's chunks. Measured: 5.00 blocks and 424 bytes
/// of chunks a DOF before (a 32-byte block for `m…` and a 48-byte one for `column…`), 3.01
/// and 366 after; 3.01 and 302 with a one-DOF mass a 24-byte [`SingleDofMass`] (a 48-byte
/// chunk with its handle's counts, not a 112-byte one), bound 320.
///
/// [`SingleDofMass`]: hybridsim::elements::SingleDofMass
#[test]
fn a_chain_model_holds_its_element_names_in_one_table() {
    let n = 2000;
    let text = chain_text(n);
    let _ = hybridsim::elements::DofName::new("x");
    let (model, kept) = kept_by(|| Model::from_toml(&text, "chain.toml", &NoFiles).expect("valid"));
    let (bytes, blocks, chunks) = kept.per_dof(n);
    eprintln!(
        "the chain's model keeps {bytes:.0} bytes, {blocks:.2} blocks and {chunks:.0} bytes \
         of chunks a DOF"
    );
    assert!(blocks <= 3.1, "{blocks:.2} blocks a DOF");
    assert!(chunks <= 320.0, "{chunks:.0} bytes of chunks a DOF");
    assert_eq!(model.elements.len(), 2 * n);
    assert_eq!(&*model.elements[0].name, "m1");
    assert_eq!(&*model.elements[2 * n - 1].name, format!("column{n}"));
    assert!(model
        .elements
        .iter()
        .enumerate()
        .all(|(i, e)| *e.name == *format!("{}{}", ["m", "column"][i % 2], i / 2 + 1)));
}

/// The stepper's workspace of a damped chain holds one vector of `N` (the fused linear run's
/// `u + β v`) and buffers of the largest element it gathers, not of the Rayleigh element over
/// every DOF, whose terms are precomputed: at most 8 bytes a DOF and 1 KB. Sized by the
/// Rayleigh element it was 48 bytes a DOF (five more vectors of `N`). The recorder's
/// workspace still gathers the Rayleigh element when its force is recorded.
#[test]
fn a_damped_chain_partition_workspace_is_not_sized_by_the_rayleigh_element() {
    use hybridsim::assembly::{build_partitions, Grouping, Partition};
    let n = 2000;
    let model = damped_chain(n);
    let parts = build_partitions(&model, Grouping::Monolithic).unwrap_or_else(|e| panic!("{e}"));
    let st = parts[0].state.clone();
    assert!(st.slots.iter().any(|s| s.name().starts_with("rayleigh@")));
    let (part, bytes) = live_bytes_added(|| Partition::new(st, None, Vec::new(), 0));
    eprintln!("the partition's workspace: {bytes} bytes for {n} DOFs");
    assert!(bytes <= 8 * n as i64 + 1024, "{bytes} bytes for {n} DOFs");
    // Every slot but the Rayleigh element's is gathered by a workspace this size, and the
    // Rayleigh element's force by one that includes it.
    let slot = (part.state.slots.iter())
        .position(|s| s.name().starts_with("rayleigh@"))
        .expect("a Rayleigh slot");
    let mut ws = part.state.workspace();
    let mut y = vec![0.0; part.state.size()];
    for (i, v) in y[n..2 * n].iter_mut().enumerate() {
        *v = (0.3 * i as f64).sin();
    }
    let mut force = vec![0.0; n];
    part.state
        .element_force_by_law(slot, &y, &mut force, &mut ws);
    let mut linear = vec![0.0; n];
    part.state.element_force(slot, &y, &mut linear, &mut ws);
    assert_eq!(force, linear);
    assert!(force.iter().any(|f| *f != 0.0));
}

/// A workspace for the force of a damped chain's Rayleigh element holds no buffers of that
/// element's size: `StateSpace::element_force` forms its `C v` from the state (the bits of
/// the element's law), so the workspace for it is the stepper's, at most 8 bytes a DOF and
/// 1 KB, and the recorder's (without the fused run's `u + β v`) at most 1 KB. Sized by the
/// Rayleigh element, the recorder's was 48 bytes a DOF (96 000 bytes here: six vectors of `N`,
/// 4.8 MB of the 10⁵-DOF chain's start-up peak); now 80 bytes.
#[test]
fn a_recorded_rayleigh_force_needs_no_workspace_of_its_size() {
    use hybridsim::assembly::{build_partitions, Grouping};
    let n = 2000;
    let model = damped_chain(n);
    let parts = build_partitions(&model, Grouping::Monolithic).unwrap_or_else(|e| panic!("{e}"));
    let st = &parts[0].state;
    let slot = (st.slots.iter())
        .position(|s| s.name().starts_with("rayleigh@"))
        .expect("a Rayleigh slot");
    let (_, bytes) = live_bytes_added(|| st.workspace_for([slot]));
    eprintln!("a workspace for the Rayleigh force: {bytes} bytes for {n} DOFs");
    assert!(bytes <= 8 * n as i64 + 1024, "{bytes} bytes for {n} DOFs");
    let (mut ws, bytes) = live_bytes_added(|| st.recording_workspace_for([slot]));
    eprintln!("the recorder's workspace: {bytes} bytes for {n} DOFs");
    assert!(bytes <= 1024, "{bytes} bytes for {n} DOFs");
    let mut y = vec![0.0; st.size()];
    for (i, x) in y.iter_mut().enumerate() {
        *x = (0.7 * i as f64).cos();
    }
    let mut force = vec![0.0; n];
    st.element_force(slot, &y, &mut force, &mut ws);
    let mut by_law = vec![0.0; n];
    st.element_force_by_law(slot, &y, &mut by_law, &mut st.workspace());
    assert_eq!(force, by_law);
    assert!(force.iter().any(|f| *f != 0.0));
}

/// What a partition keeps besides `J0` and the mass (whose storage the factorization owns):
/// the slots, the DOF maps and list, the residual's plan, the Rayleigh element, the per-DOF
/// vectors (initial state, ground motion index, seismic load) and the stepper's workspace.
/// Returns `(bytes, DOFs)`.
fn state_space_bytes(model: &Model) -> (i64, usize) {
    use hybridsim::assembly::{build_partitions, Grouping};
    let (parts, live) = live_bytes_added(|| build_partitions(model, Grouping::Monolithic));
    let parts = parts.unwrap_or_else(|e| panic!("{e}"));
    let st = &parts[0].state;
    let matrices = (st.j0_entries().heap_bytes() + st.mass_entries().heap_bytes()) as i64;
    (live - matrices, st.n_dofs())
}

/// A damped shear chain's partition keeps at most [`CHAIN_STATE_SPACE_BOUND`] bytes a DOF and
/// a 2D frame's [`FRAME_STATE_SPACE_BOUND`] besides `J0` and the mass ([`state_space_bytes`]).
/// They kept 346 and 389 (a chain of 3 000 DOFs, a frame of 990) with the ground motion's
/// index of a DOF an `Option<usize>`, a vector of `N` external loads held before any was set,
/// the fused run's rows and ends in 64 bits and the DOF list copied into the Rayleigh element
/// (with its growth's spare capacity in the state space); 292 and 341 without.
#[test]
fn a_state_space_keeps_little_besides_its_matrices() {
    for (name, model, bound) in [
        ("chain", damped_chain(3000), CHAIN_STATE_SPACE_BOUND),
        ("frame", frame(30, 10), FRAME_STATE_SPACE_BOUND),
    ] {
        let (bytes, n) = state_space_bytes(&model);
        let per_dof = bytes as f64 / n as f64;
        eprintln!("the {name}'s state space: {bytes} bytes, {per_dof:.1} a DOF");
        assert!(
            per_dof <= bound,
            "{name}: {bytes} bytes ({per_dof:.1} a DOF)"
        );
    }
}

/// See [`a_state_space_keeps_little_besides_its_matrices`].
const CHAIN_STATE_SPACE_BOUND: f64 = 310.0;
/// See [`a_state_space_keeps_little_besides_its_matrices`].
const FRAME_STATE_SPACE_BOUND: f64 = 360.0;

/// MG-α's engine — the stepper's workspaces, the factors of `D = M + c J0` (Abbiati et al.
/// 2019, eqs 11–13) and the algorithmic state —
/// keeps at most [`CHAIN_ENGINE_BOUND`] bytes a DOF for a damped shear chain and
/// [`FRAME_ENGINE_BOUND`] for a 2D frame (each DOF two rows of the state `[u; v]`). It kept
/// eight state vectors of workspaces (`Ỹ`, `Ṽ`, the load, the residual, the correction's
/// right-hand side, `M Ẏ`, the iterate, the start) and `B` of the reduced solve, which the
/// folded linear step never reads: 322 bytes a DOF for the chain, 702 for the frame. With the
/// load the only workspace of a stepper stepped once (`Ỹ`, `Ṽ` and the residual written in
/// the end state) and `B` freed while the step folds it: 152 and 461. Net of `J0`, which MG-α
/// frees once `D` is formed, and with the steps in place in one state (issue 20, session 25:
/// no second state `next`, 48 bytes a DOF): 52 → 4 and 203 → 155.
#[test]
fn the_mg_alpha_engine_keeps_only_the_vectors_its_steps_use() {
    use hybridsim::assembly::{build_partitions, Grouping};
    use hybridsim::integrators::{MgAlpha, StepSettings, TimeIntegrator};
    for (name, model, bound) in [
        ("chain", damped_chain(2000), CHAIN_ENGINE_BOUND),
        ("frame", frame(30, 10), FRAME_ENGINE_BOUND),
    ] {
        let mut parts =
            build_partitions(&model, Grouping::Monolithic).unwrap_or_else(|e| panic!("{e}"));
        let part = parts.remove(0);
        let n = part.state.n_dofs();
        let settings = StepSettings::from_analysis(&model.analysis);
        let (mg, kept) = live_bytes_added(|| MgAlpha::new(part, &settings));
        let mut mg = mg.unwrap_or_else(|e| panic!("{e}"));
        let per_dof = kept as f64 / n as f64;
        eprintln!("{name}: MG-α keeps {kept} bytes for {n} DOFs ({per_dof:.0} a DOF)");
        assert!(
            per_dof <= bound,
            "{name}: MG-α keeps {kept} bytes for {n} DOFs ({per_dof:.0} a DOF)"
        );
        assert!(
            mg.stepper().factorization().coupling_released(),
            "{name}: the folded steps keep B"
        );
        // The engine steps, and its steps (the folded path, `Ỹ` and `Ṽ` in the end state)
        // allocate nothing.
        mg.step().unwrap_or_else(|e| panic!("{e}"));
        let ((), held) = peak_bytes_added(|| {
            for _ in 0..3 {
                mg.step().unwrap_or_else(|e| panic!("{e}"));
            }
        });
        assert_eq!(held, 0, "{name}: the steps allocate");
        assert!(mg.state(0).iter().all(|x| x.is_finite()));
    }
}

/// Bytes a DOF MG-α's engine keeps for a damped 2000-DOF chain (see
/// [`the_mg_alpha_engine_keeps_only_the_vectors_its_steps_use`]).
const CHAIN_ENGINE_BOUND: f64 = 25.0;

/// Bytes a DOF MG-α's engine keeps for a 990-DOF frame (see
/// [`the_mg_alpha_engine_keeps_only_the_vectors_its_steps_use`]).
const FRAME_ENGINE_BOUND: f64 = 180.0;

/// A damped shear chain's partition (slots, DOF maps, `J0` and the mass, the residual's
/// merged runs, the Rayleigh element) keeps at most 500 bytes a DOF: a slot is 56 bytes with
/// the element's name shared with the model (64 with it an `ElementName`, whose padding the
/// slot's own fields now use) and its DOF map a range of one 32-bit table
/// (a slot was 112 bytes, a cloned name and a `Vec<Option<usize>>` map of its own), the
/// Rayleigh element's `C` has 32-bit columns in exactly sized vectors and the fused run's
/// terms are sized exactly (both grew by pushes). Measured on this chain: 663 → 461 bytes a
/// DOF; the model it is built from keeps 384 (390 before: the instance is 56 bytes, not 80,
/// but its name carries the counts of a shared text).
#[test]
fn a_damped_chain_partition_keeps_less_than_500_bytes_a_dof() {
    use hybridsim::assembly::{build_partitions, ElementSlot, Grouping};
    use hybridsim::elements::LinearSuperelement;
    use hybridsim::model::ElementInstance;
    assert!(std::mem::size_of::<ElementSlot>() <= 56);
    assert!(std::mem::size_of::<ElementInstance>() <= 56);
    // The element with up to six DOFs inside it (56 bytes and a boxed slice of them before).
    assert!(std::mem::size_of::<LinearSuperelement>() <= 128);
    let n = 2000;
    let model = damped_chain(n);
    let (parts, bytes) = live_bytes_added(|| build_partitions(&model, Grouping::Monolithic));
    let parts = parts.unwrap_or_else(|e| panic!("{e}"));
    let per_dof = bytes as f64 / n as f64;
    eprintln!("the damped chain's partition keeps {bytes} bytes, {per_dof:.0} a DOF");
    assert!(
        per_dof <= 500.0,
        "{bytes} bytes for {n} DOFs ({per_dof:.0} a DOF)"
    );
    // The slots share the model's names and map every element DOF to its row.
    let st = &parts[0].state;
    assert_eq!(st.slots.len(), model.elements.len() + 1);
    for (k, (slot, inst)) in st.slots.iter().zip(&model.elements).enumerate() {
        assert!(hybridsim::model::ElementName::same(
            &slot.shared_name(),
            &inst.name
        ));
        assert_eq!(slot.name(), &*inst.name);
        let rows: Vec<Option<usize>> = (inst.element.dofs().iter())
            .map(|d| st.dofs.iter().position(|x| x == d))
            .collect();
        assert_eq!(st.dof_map(k).to_vec(), rows, "{}", slot.name());
        assert_eq!(slot.n_dofs(), rows.len());
    }
    let rayleigh = st.slots.last().expect("the Rayleigh slot");
    assert!(rayleigh.name().starts_with("rayleigh@"));
    assert_eq!(
        st.dof_map(st.slots.len() - 1).to_vec(),
        (0..n).map(Some).collect::<Vec<_>>()
    );
}

/// The start-up's transient peak (issue 20): building the partitions of a Rayleigh-damped
/// shear chain and of a 990-DOF 2D frame, and reading the frame's model file (whose
/// validation builds its partitions once), hold at most [`CHAIN_BUILD_PEAK_BOUND`],
/// [`FRAME_BUILD_PEAK_BOUND`] and [`FRAME_READ_PEAK_BOUND`] bytes a DOF of heap at once.
/// The residual's fused run was made from a merged copy of the linear run (12 bytes a term)
/// and a vector of merged rows (16 bytes a term, a block a row) beside the slots' row groups,
/// which were held through the assembly of `J0` and the mass; the fused run is now read
/// straight from the row groups, row by row, into arrays of its final size, and the groups are
/// released before `J0` is assembled (see the bounds for the numbers).
#[test]
fn building_the_state_space_peaks_below_the_bounds() {
    use hybridsim::assembly::{build_partitions, Grouping};
    let n = 2000;
    let chain = damped_chain(n);
    let (parts, peak) = peak_bytes_added(|| build_partitions(&chain, Grouping::Monolithic));
    let parts = parts.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parts[0].state.n_dofs(), n);
    drop(parts);
    let chain_per_dof = peak as f64 / n as f64;
    eprintln!(
        "building the damped chain's partitions: peak {peak} bytes, {chain_per_dof:.0} a DOF"
    );

    let model = frame(30, 10);
    let n = 30 * 11 * 3;
    let (parts, peak) = peak_bytes_added(|| build_partitions(&model, Grouping::Monolithic));
    let parts = parts.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parts[0].state.n_dofs(), n);
    drop(parts);
    let frame_per_dof = peak as f64 / n as f64;
    eprintln!("building the frame's partitions: peak {peak} bytes, {frame_per_dof:.0} a DOF");

    let text = frame_text(30, 10);
    let (read, peak) = peak_bytes_added(|| Model::from_toml(&text, "frame.toml", &NoFiles));
    read.unwrap_or_else(|e| panic!("{e}"));
    let read_per_dof = peak as f64 / n as f64;
    eprintln!("reading the frame's model: peak {peak} bytes, {read_per_dof:.0} a DOF");

    assert!(
        chain_per_dof <= CHAIN_BUILD_PEAK_BOUND,
        "the chain's partitions: {chain_per_dof:.0} bytes a DOF"
    );
    assert!(
        frame_per_dof <= FRAME_BUILD_PEAK_BOUND,
        "the frame's partitions: {frame_per_dof:.0} bytes a DOF"
    );
    assert!(
        read_per_dof <= FRAME_READ_PEAK_BOUND,
        "reading the frame: {read_per_dof:.0} bytes a DOF"
    );
}

/// Bytes a DOF at the peak of building a 2000-DOF Rayleigh-damped chain's partitions: 1 375
/// measured with the fused run made from the merged copies, 874 read from the row groups (635
/// on main `3d21afb`); 495 with the state space reading the elements from the model's
/// instances (no list of them, 56 bytes an element grown by doubling, beside the slots) and the
/// row groups at their size (12 bytes a group, the capacity grown by doubling released) before
/// the plan is built.
const CHAIN_BUILD_PEAK_BOUND: f64 = 560.0;
/// Bytes a DOF at the peak of building a 990-DOF frame's partitions: 2 149 → 1 084; 1 053
/// after session 23's memory work, 859 with the Rayleigh element's contributions as 32-bit
/// tuples ordered through a list of their positions instead of a stable sort of the tuples;
/// 752 without the list of elements and with the row groups at their size, as above.
const FRAME_BUILD_PEAK_BOUND: f64 = 800.0;
/// Bytes a DOF at the peak of `Model::from_toml` of a 990-DOF frame's text (the text itself
/// not counted: the caller's): 2 679 → 1 614; 1 300 → 1 106 with the Rayleigh contributions
/// as above; 998 with the validation's build of the partitions as above.
const FRAME_READ_PEAK_BOUND: f64 = 1050.0;

/// MG-α frees `J0` of its partition once `D = M + c J0` is factored (Abbiati et al. 2019,
/// eqs 12–13): nothing its steps do reads it. Its engine then adds at most
/// [`CHAIN_ENGINE_NET_BOUND`] and [`FRAME_ENGINE_NET_BOUND`] bytes a DOF net of what it frees
/// (the engine's bytes less `J0`'s), where main's engine, keeping `J0` in its partition, added
/// 152 and 461 (see the bounds). Whatever asks for `J0` afterwards gets it formed again from
/// the elements, the same bits as the start-up's: a read, and a parameter change (formed
/// before the change: the tangent factored, not the new one).
#[test]
fn mg_alpha_frees_j0_and_forms_it_again_bit_for_bit() {
    use hybridsim::assembly::{build_partitions, Grouping};
    use hybridsim::integrators::{MgAlpha, StepSettings, TimeIntegrator};
    for (name, model, bound) in [
        ("chain", damped_chain(2000), CHAIN_ENGINE_NET_BOUND),
        ("frame", frame(30, 10), FRAME_ENGINE_NET_BOUND),
    ] {
        let build = || {
            build_partitions(&model, Grouping::Monolithic)
                .unwrap_or_else(|e| panic!("{e}"))
                .remove(0)
        };
        let part = build();
        let n = part.state.n_dofs();
        assert!(!part.state.j0_released());
        let start_up = part.state.j0_entries().clone();
        let settings = StepSettings::from_analysis(&model.analysis);
        let (mg, kept) = live_bytes_added(|| MgAlpha::new(part, &settings));
        let mut mg = mg.unwrap_or_else(|e| panic!("{e}"));
        let per_dof = kept as f64 / n as f64;
        eprintln!("{name}: MG-α adds {kept} bytes net for {n} DOFs ({per_dof:.0} a DOF)");
        assert!(
            mg.partitions()[0].state.j0_released(),
            "{name}: J0 kept through the run"
        );
        assert!(
            per_dof <= bound,
            "{name}: MG-α adds {kept} bytes net for {n} DOFs ({per_dof:.0} a DOF)"
        );
        // The steps neither read nor form it, and allocate nothing.
        mg.step().unwrap_or_else(|e| panic!("{e}"));
        let ((), held) = peak_bytes_added(|| {
            for _ in 0..3 {
                mg.step().unwrap_or_else(|e| panic!("{e}"));
            }
        });
        assert_eq!(held, 0, "{name}: the steps allocate");
        let st = &mg.partitions()[0].state;
        assert!(st.j0_released());
        // A read forms it again: the start-up's bits, and its dense form too.
        assert!(st.j0_entries() == &start_up, "{name}");
        assert!(!st.j0_released());
        let dense = st.j0();
        for (i, j, v) in start_up.iter() {
            assert_eq!(dense[(i, j)].to_bits(), v.to_bits());
        }
    }
    // A parameter change on the running chain keeps the tangent factored (formed before the
    // change), and reassembling it then gives the `J0` of the chain built with the new value
    // (undamped: Rayleigh damping keeps the model file's stiffness).
    let model = chain(2000);
    let settings = StepSettings::from_analysis(&model.analysis);
    let part = build_partitions(&model, Grouping::Monolithic)
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    let start_up = part.state.j0_entries().clone();
    let mut mg = MgAlpha::new(part, &settings).unwrap_or_else(|e| panic!("{e}"));
    let spring = (mg.partitions()[0].state.slots.iter())
        .position(|s| s.name() == "column7")
        .expect("column7");
    assert!(mg.partitions()[0].state.j0_released());
    mg.set_element_parameter(0, spring, "k", 5.0e4)
        .unwrap_or_else(|e| panic!("{e}"));
    let st = &mg.partitions()[0].state;
    assert!(!st.j0_released());
    assert!(st.j0_entries() == &start_up, "J0 after a change");
    let mut copy = st.clone();
    assert!(copy.reassemble_tangent(), "the new k changes J0");
    let text = chain_text(2000).replacen(
        "name = \"column7\"\nnodes = [6, 7]\ndof = \"x\"\nk = 40000.0",
        "name = \"column7\"\nnodes = [6, 7]\ndof = \"x\"\nk = 50000.0",
        1,
    );
    let changed = Model::from_toml(&text, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"));
    let expected = build_partitions(&changed, Grouping::Monolithic)
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    assert!(expected.state.j0_entries() != &start_up);
    assert!(copy.j0_entries() == expected.state.j0_entries());
    // A refactorizer taken from the running chain's state rebuilds for a further change.
    let mut refactorizer = mg
        .refactorizer(0, &[spring], &["k"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(refactorizer
        .build(1, &[6.0e4])
        .unwrap_or_else(|e| panic!("{e}"))
        .is_some());
}

/// Bytes a DOF MG-α's engine adds, net of `J0` freed, for a damped 2000-DOF chain (see
/// [`mg_alpha_frees_j0_and_forms_it_again_bit_for_bit`]).
const CHAIN_ENGINE_NET_BOUND: f64 = 100.0;

/// Bytes a DOF MG-α's engine adds, net of `J0` freed, for a 990-DOF frame.
const FRAME_ENGINE_NET_BOUND: f64 = 300.0;

/// MG-α's stepper for a 990-DOF frame peaks at most [`MG_ALPHA_PEAK_BOUND`] bytes a DOF above
/// its partition while it factors `D = M + c J0` (Abbiati et al. 2019, eq 12): `J0` is freed
/// as soon as `D` is formed ([`hybridsim::integrators::AlphaStepper::new_freeing_j0`]), before
/// the effective matrix and its factor are made, and the coupling `B` the steps fold is not
/// formed. Held through the factorization, as main's MG-α did
/// ([`hybridsim::integrators::AlphaStepper::new`]), `J0` and `B` stood beside them at the
/// peak: 634 bytes a DOF (604 with `B`'s columns in 32 bits); `J0` freed, 428; and `B` not
/// formed, 302. Issue 20, session 26: `D` formed in `J0`'s arrays, `D`'s band estimate made
/// before the effective matrix is formed, and the effective matrix's renumbered lower triangle
/// copied (half its entries) and the matrix freed before its factor is allocated: 239. The same factors: the same folded solve to the last bit.
#[test]
fn mg_alpha_is_built_without_j0_beside_the_effective_matrix() {
    use hybridsim::assembly::{build_partitions, Grouping};
    use hybridsim::integrators::TimeIntegrator;
    use hybridsim::integrators::{AlphaParameters, AlphaStepper, MgAlpha, StepSettings};
    let model = frame(30, 10);
    let settings = StepSettings::from_analysis(&model.analysis);
    let build = || {
        build_partitions(&model, Grouping::Monolithic)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0)
    };
    let part = build();
    let n = part.state.n_dofs();
    let params = AlphaParameters::new(settings.rho_inf);
    let (held, held_peak) = peak_bytes_added(|| {
        AlphaStepper::new(&part, params, settings.time_step, settings.corrections)
    });
    let held = held.unwrap_or_else(|e| panic!("{e}"));
    let mut freeing = build();
    let (freed, freed_peak) = peak_bytes_added(|| {
        AlphaStepper::new_freeing_j0(
            &mut freeing,
            params,
            settings.time_step,
            settings.corrections,
        )
    });
    let freed = freed.unwrap_or_else(|e| panic!("{e}"));
    assert!(freeing.state.j0_released());
    let per_dof = |b: i64| b as f64 / n as f64;
    eprintln!(
        "frame: factoring with J0 held peaks {:.0} bytes a DOF, freeing it {:.0}",
        per_dof(held_peak),
        per_dof(freed_peak),
    );
    assert!(
        per_dof(freed_peak) <= MG_ALPHA_PEAK_BOUND,
        "{:.0} bytes a DOF",
        per_dof(freed_peak)
    );
    // The same factors: the same solve to the last bit.
    let size = freeing.state.size();
    let mut a: Vec<f64> = (0..size).map(|i| (0.37 * i as f64).sin()).collect();
    let mut b = a.clone();
    // (the folded solve: the steps' own, without `B`, which the freeing build never forms)
    assert!(freed.factorization().coupling_released());
    held.factorization().solve_folded(&mut a);
    freed.factorization().solve_folded(&mut b);
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    // MG-α builds its stepper so.
    let mg = MgAlpha::new(build(), &settings).unwrap_or_else(|e| panic!("{e}"));
    assert!(mg.partitions()[0].state.j0_released());
}

/// `D = M + c J0` is formed in `J0`'s own arrays when MG-α frees `J0`
/// ([`hybridsim::assembly::StateSpace::d_rows_releasing_j0`]): the same matrix, to the last
/// bit, as [`hybridsim::assembly::StateSpace::d_rows`] beside `J0`, and `J0` released. On the
/// 10⁵-DOF frame `J0` and `D` took 21 MB each and stood together at the start-up's peak. The
/// heap added at the peak, counted with a reallocation holding its old and new blocks at once
/// (glibc moves a mapped block's pages instead): `D` beside `J0`, 12 bytes an entry of `D`;
/// in place, the values' new block (8 bytes an entry) and the new row starts; bound
/// [`D_IN_PLACE_PEAK_SHARE`] of the former.
#[test]
fn d_is_formed_in_j0_s_arrays() {
    use hybridsim::assembly::{build_partitions, Grouping};
    let model = frame(30, 10);
    let build = || {
        build_partitions(&model, Grouping::Monolithic)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0)
    };
    let c = 0.000_5;
    let part = build();
    let (beside, beside_peak) = peak_bytes_added(|| part.state.d_rows(c));
    let mut freeing = build();
    let _ = freeing.state.j0_entries();
    let (in_place, in_place_peak) = peak_bytes_added(|| freeing.state.d_rows_releasing_j0(c));
    assert!(freeing.state.j0_released());
    let bits = |d: &hybridsim::linalg::CompressedRows| {
        d.iter()
            .map(|(i, j, v)| (i, j, v.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&in_place), bits(&beside));
    let share = in_place_peak as f64 / beside_peak as f64;
    eprintln!(
        "frame: D beside J0 peaks {beside_peak} bytes, in J0's arrays {in_place_peak} ({share:.2})"
    );
    assert!(share <= D_IN_PLACE_PEAK_SHARE, "{share:.2}");
    // Formed again after the release: the same bits.
    assert_eq!(bits(&freeing.state.d_rows(c)), bits(&beside));
}

/// The share of `D`-beside-`J0`'s added heap at which forming `D` in `J0`'s arrays peaks (see
/// [`d_is_formed_in_j0_s_arrays`]).
const D_IN_PLACE_PEAK_SHARE: f64 = 0.8;

/// Bytes a DOF of heap, above the partition, at the peak of factoring a 990-DOF frame's `D`
/// while freeing `J0` (see [`mg_alpha_is_built_without_j0_beside_the_effective_matrix`]).
const MG_ALPHA_PEAK_BOUND: f64 = 270.0;
/// The model of a shear chain (a node, a lumped mass and a spring a storey, with their names)
/// and of a 2D frame of `linear` members (990 DOFs) keep few heap blocks a DOF: a lumped
/// mass's DOFs and values and a spring's DOFs are kept inside the element (one block an
/// element, its shared handle's) and the members of the frame with the same stiffness, to the
/// bit, share one copy of it. Bounds: [`CHAIN_MODEL`] and [`FRAME_MODEL`] (bytes requested,
/// heap blocks and the bytes those blocks take in glibc's heap, a DOF).
#[test]
fn the_models_keep_few_heap_blocks_a_dof() {
    // An instance's initial states behind a thin pointer: 48 bytes, not 56.
    assert!(std::mem::size_of::<hybridsim::model::ElementInstance>() <= 48);
    let _ = ["x", "y", "rz"].map(hybridsim::elements::DofName::new);
    let n = 2000;
    let text = chain_text(n);
    let (model, kept) = kept_by(|| Model::from_toml(&text, "chain.toml", &NoFiles).expect("valid"));
    let chain = kept.per_dof(n);
    eprintln!("the chain's model keeps {kept:?}: {chain:.1?} a DOF (bytes, blocks, glibc bytes)");
    assert_eq!(model.elements.len(), 2 * n);
    drop(model);
    let (model, kept) = kept_by(|| frame(30, 10));
    let n = 30 * 11 * 3;
    let frame = kept.per_dof(n);
    eprintln!("the frame's model keeps {kept:?}: {frame:.1?} a DOF (bytes, blocks, glibc bytes)");
    assert!(model.elements.len() > 2 * 30 * 11);
    for (name, got, bound) in [("chain", chain, CHAIN_MODEL), ("frame", frame, FRAME_MODEL)] {
        assert!(
            got.0 <= bound.0 && got.1 <= bound.1 && got.2 <= bound.2,
            "the {name}'s model keeps {got:.1?} a DOF (bytes, blocks, glibc bytes), \
             bounds {bound:?}"
        );
    }
}

/// Bytes, heap blocks and glibc heap bytes a DOF the model of a 2000-storey shear chain keeps
/// (see [`the_models_keep_few_heap_blocks_a_dof`]). Measured: 383.9, 8.0 and 503.6 with a
/// mass's DOFs and values and a spring's DOFs in vectors of their own; 383.9, 5.0 and 439.6
/// kept inside the elements (the rest: a node's DOFs, the mass, the spring and two names);
/// 367.9, 5.0 and 423.6 with an instance's initial states behind a thin pointer.
const CHAIN_MODEL: (f64, f64, f64) = (375.0, 6.0, 440.0);

/// Bytes, heap blocks and glibc heap bytes a DOF the model of a 990-DOF frame keeps (see
/// [`the_models_keep_few_heap_blocks_a_dof`]). Measured: 446.7, 4.2 and 496.2 with a
/// stiffness a member and a mass's DOFs and values in vectors of their own; 253.4, 2.9 and
/// 282.1 with one stiffness a distinct member and the masses in one block each; 245.7, 2.9
/// and 274.3 with an instance's initial states behind a thin pointer.
const FRAME_MODEL: (f64, f64, f64) = (260.0, 3.5, 300.0);

/// Reading a chain's model file (`Model::read_toml`, before the layout checks) grows the heap
/// of small blocks to at most [`CHAIN_READ_SMALL_BOUND`] bytes a DOF. What the reading frees
/// of that heap stays resident as holes: at the 10⁵-DOF chain the nodes' DOF names read as
/// strings (the nodes as written, and a map of them by id while the elements were read) took
/// three to five blocks a node and left ≈ 20 MB of holes (the heap 67 → 48 MB, the start-up
/// peak RSS 139.0 → 126.6 MB once they were one table and dropped before the elements).
#[test]
fn reading_a_chain_grows_the_heap_of_small_blocks_little() {
    let n = 2000;
    let text = chain_text(n);
    let (model, peak) = small_blocks_peak(|| {
        Model::read_toml(&text, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
    });
    drop(model);
    let per_dof = peak as f64 / n as f64;
    println!("reading the {n}-DOF chain: small blocks peak at {per_dof:.0} bytes a DOF");
    assert!(
        per_dof <= CHAIN_READ_SMALL_BOUND,
        "{per_dof:.0} bytes a DOF > {CHAIN_READ_SMALL_BOUND}"
    );
}

/// See [`reading_a_chain_grows_the_heap_of_small_blocks_little`] (735 before the nodes' DOF
/// names were one table, 570 after, 432 once the element names were one table too).
const CHAIN_READ_SMALL_BOUND: f64 = 480.0;
/// The Rayleigh element `C = α M_R + β K_R` of a damped shear chain and of a 2D frame keeps at
/// most [`CHAIN_RAYLEIGH_BOUND`] and [`FRAME_RAYLEIGH_BOUND`] bytes a DOF: its entries are
/// banded and take few distinct values, so each is a 16-bit column offset from its row and a
/// 16-bit place in a table of the values, and its rows start at 32-bit positions. With 32-bit
/// columns, 64-bit values and 64-bit row starts (12 bytes an entry) it kept 44 bytes a DOF
/// for this chain (3 entries a row) and 97 for this frame (7.4); now 16 and 34. The element built
/// here from the model's contributions is the partition's, entry for entry and bit for bit.
#[test]
fn the_rayleigh_element_keeps_4_bytes_an_entry() {
    use hybridsim::assembly::{build_partitions, rayleigh_coefficients, Grouping};
    use hybridsim::elements::{rayleigh_stiffness, DofRef, RayleighDamping};
    use std::collections::HashMap;
    for (name, model, bound) in [
        ("chain", damped_chain(2000), CHAIN_RAYLEIGH_BOUND),
        ("frame", frame(30, 10), FRAME_RAYLEIGH_BOUND),
    ] {
        let parts =
            build_partitions(&model, Grouping::Monolithic).unwrap_or_else(|e| panic!("{e}"));
        let st = &parts[0].state;
        let n = st.n_dofs();
        let slot = (st.slots.iter())
            .find(|s| s.name().starts_with("rayleigh@"))
            .expect("a Rayleigh slot");
        let built = slot.element.sparse_damping().expect("sparse");
        // The contributions `(i, j, m, k)` of the damped elements, in the model's order.
        let index: HashMap<&DofRef, u32> = (st.dofs.iter())
            .enumerate()
            .map(|(i, d)| (d, i as u32))
            .collect();
        let mut contributions = Vec::new();
        for inst in model.elements.iter().filter(|e| e.rayleigh) {
            let e = inst.element.as_ref();
            let map: Vec<Option<u32>> = e.dofs().iter().map(|d| index.get(d).copied()).collect();
            let (m, k) = (e.mass(), rayleigh_stiffness(e));
            for (a, ia) in map.iter().enumerate() {
                for (b, ib) in map.iter().enumerate() {
                    let (Some(i), Some(j)) = (ia, ib) else {
                        continue;
                    };
                    let mij = m.as_ref().map_or(0.0, |m| m[(a, b)]);
                    let kij = k.as_ref().map_or(0.0, |k| k[(a, b)]);
                    if mij != 0.0 || kij != 0.0 {
                        contributions.push((*i, *j, mij, kij));
                    }
                }
            }
        }
        let (alpha, beta) = rayleigh_coefficients(&model)
            .unwrap_or_else(|e| panic!("{e}"))
            .expect("Rayleigh damping");
        let given = (24 * contributions.capacity()) as i64;
        let dofs = st.dofs.clone();
        let (element, bytes) = live_bytes_added(|| {
            RayleighDamping::from_contributions(dofs, contributions, alpha, beta)
        });
        // The contributions were allocated before and freed inside.
        let kept = bytes + given;
        let element = element.expect("nonzero");
        let c = element.matrix();
        assert_eq!((c.n_rows(), c.nnz()), (built.n_rows(), built.nnz()));
        for i in 0..n {
            let bits = |r: &mut dyn Iterator<Item = (usize, f64)>| -> Vec<(usize, u64)> {
                r.map(|(j, v)| (j, v.to_bits())).collect()
            };
            assert_eq!(
                bits(&mut c.row(i)),
                bits(&mut built.row(i)),
                "{name}: row {i}"
            );
        }
        let per_dof = kept as f64 / n as f64;
        eprintln!(
            "the {name}'s Rayleigh element keeps {kept} bytes for {n} DOFs and {} entries ({per_dof:.1} a DOF)",
            c.nnz()
        );
        assert!(
            per_dof <= bound,
            "{name}: the Rayleigh element keeps {kept} bytes ({per_dof:.1} a DOF)"
        );
    }
}

/// See [`the_rayleigh_element_keeps_4_bytes_an_entry`].
const CHAIN_RAYLEIGH_BOUND: f64 = 20.0;
/// See [`the_rayleigh_element_keeps_4_bytes_an_entry`].
const FRAME_RAYLEIGH_BOUND: f64 = 40.0;

/// The fused residual run of a Rayleigh-damped chain and frame (the single pass
/// `K (u + β v) + E v` of every step) keeps its terms of `K` and `E`, with its rows, their ends
/// and its table of values, in at most [`CHAIN_FUSED_BOUND`] and [`FRAME_FUSED_BOUND`] bytes
/// an entry in the shared layout: a 16-bit column offset from the row and a 16-bit place in
/// a table of the distinct values a term, 32-bit rows and ends. It takes that layout by
/// itself beyond 2 MiB of plain terms (the 60 000-DOF chain: 180 000 terms of `K`) and keeps
/// the plain one below, where both fit a core's L2 cache and the plain one's passes are
/// faster (the 990-DOF frame): there 32-bit columns and 64-bit values (12 bytes a term) keep
/// 15.0 bytes an entry for the chain (3 terms of `K` and one of `E` a row) and 13.4 for the
/// frame; shared, 7.0 and 5.4.
#[test]
fn the_fused_run_keeps_at_most_7_bytes_an_entry() {
    use hybridsim::assembly::{build_partitions, Grouping};
    let state = |model: &Model| {
        build_partitions(model, Grouping::Monolithic)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0)
            .state
    };
    let chain = state(&damped_chain(60_000));
    let mut frame = state(&frame(30, 10));
    let (plain_bytes, plain_entries, shared) = frame.fused_storage();
    assert!(!shared, "the 990-DOF frame keeps the plain layout");
    assert!(
        frame.set_fused_layout(true),
        "the frame's terms fit the shared layout"
    );
    for (name, st, bound) in [
        ("chain", &chain, CHAIN_FUSED_BOUND),
        ("frame", &frame, FRAME_FUSED_BOUND),
    ] {
        let (bytes, entries, shared) = st.fused_storage();
        assert!(
            shared && entries > st.n_dofs(),
            "{name}: one shared fused run"
        );
        let per_entry = bytes as f64 / entries as f64;
        eprintln!(
            "the {name}'s fused run keeps {bytes} bytes for {entries} entries and {} DOFs ({per_entry:.2} an entry)",
            st.n_dofs()
        );
        assert!(
            per_entry <= bound,
            "{name}: the fused run keeps {bytes} bytes ({per_entry:.2} an entry)"
        );
    }
    let plain = plain_bytes as f64 / plain_entries as f64;
    eprintln!("the frame's fused run kept {plain:.2} bytes an entry plain");
    assert!(plain > 12.0);
}

/// See [`the_fused_run_keeps_at_most_7_bytes_an_entry`].
const CHAIN_FUSED_BOUND: f64 = 7.5;
/// See [`the_fused_run_keeps_at_most_7_bytes_an_entry`].
const FRAME_FUSED_BOUND: f64 = 6.0;

/// The fused run's two layouts of `K` and `E` give the same bits: the residual, the residual
/// with the coupling product folded in, the merged predictor and rate passes of a
/// generalized-α step, and the rate's gather in two halves on two threads (as the two-core
/// step runs it), of a Rayleigh-damped chain and frame with each layout forced on the same
/// state space.
#[test]
fn the_fused_run_gives_the_same_bits_in_either_layout() {
    use hybridsim::assembly::{build_partitions, FoldedPredictor, FoldedStep, Grouping};
    for (name, model) in [("chain", damped_chain(700)), ("frame", frame(12, 4))] {
        let plain = build_partitions(&model, Grouping::Monolithic)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0)
            .state;
        let mut shared = plain.clone();
        assert!(!plain.fused_storage().2, "{name}: plain by itself");
        assert!(shared.set_fused_layout(true), "{name}: shared");
        let (size, n) = (plain.size(), plain.n_dofs());
        let wave = |a: f64, b: f64| -> Vec<f64> {
            (0..size)
                .map(|i| 1e-2 * (a * i as f64).sin() + 1e-3 * (b * i as f64).cos())
                .collect()
        };
        let (y, ydot, v, load) = (
            wave(0.37, 1.3),
            wave(0.11, 0.7),
            wave(0.53, 2.1),
            wave(0.29, 0.9),
        );
        let step = FoldedStep {
            ky: 2.7e-4,
            kv: -1.3e-5,
            wy: 0.93,
            wv: -0.07,
            c: 2.5e-4,
        };
        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let passes = |st: &hybridsim::assembly::StateSpace| {
            let mut ws = st.workspace();
            let (mut r, mut folded) = (vec![0.0; size], vec![0.0; size]);
            st.residual(&y, &mut r, &mut ws);
            st.residual_folded(&y, step.c, &mut folded, &mut ws);
            let (mut yt, mut vt, mut rate) = (vec![9.0; size], vec![9.0; size], vec![9.0; size]);
            assert!(st.folded_predictor_rate(
                step,
                (&y, &ydot, &v),
                (&mut yt, &mut vt),
                &load,
                &mut rate,
                &mut ws,
            ));
            // The rate's passes in two halves, on two threads.
            let rows = st.folded_rows().expect("one fused pass");
            let split = n / 3;
            let mut halves = vec![9.0; size];
            let (mut yt2, mut vt2) = (vec![9.0; size], vec![9.0; size]);
            let w = ws.folded_weights();
            {
                let (first, second) =
                    FoldedPredictor::halves(&mut yt2, &mut vt2, &mut halves, w, split);
                let start = (&y[..], &ydot[..], &v[..]);
                rows.predictor(step, 0, start, &load, first);
                rows.predictor(step, split, start, &load, second);
            }
            let (w, yt2) = (&*w, &yt2[..]);
            let (head, tail) = halves[n..].split_at_mut(split);
            std::thread::scope(|s| {
                s.spawn(|| rows.gather(split, w, yt2, &load, tail));
                rows.gather(0, w, yt2, &load, head);
            });
            [r, folded, yt, vt, rate, halves].map(|x| bits(&x))
        };
        let (a, b) = (passes(&plain), passes(&shared));
        for (what, (a, b)) in ["R", "folded R", "Ỹ", "Ṽ", "F − R", "F − R in halves"]
            .iter()
            .zip(a.iter().zip(&b))
        {
            assert_eq!(a, b, "{name}: {what}");
        }
        assert_eq!(a[4], a[5], "{name}: the halves give the whole pass");
        // And back to the plain layout: the same again.
        assert!(shared.set_fused_layout(false));
        assert!(!shared.fused_storage().2);
        assert_eq!(passes(&shared), a, "{name}: plain again");
    }
}
/// MG-α's own vectors for a 990-DOF frame (a linear model stepped by one solve a step, in
/// place: issue 20, session 25) take at most [`MG_ALPHA_BOUND`] bytes a DOF: `Y`, `Ẏ`, `V`
/// and the load `F` of `2N` rows, 64 (and 160 bytes of the record of corrections). With a
/// second state (`next`, swapped in after each step) they took 112. A second state, when a model needs one, is counted by the allocator as the
/// report says (`3 · 2N` values).
#[test]
fn mg_alpha_keeps_at_most_65_bytes_a_dof_of_states_on_a_linear_frame() {
    use hybridsim::assembly::{build_partitions, Grouping};
    use hybridsim::integrators::{MgAlpha, StepSettings, TimeIntegrator};
    let model = frame(30, 10);
    let part = build_partitions(&model, Grouping::Monolithic)
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    let n = part.state.n_dofs();
    let settings = StepSettings::from_analysis(&model.analysis);
    let mut mg = MgAlpha::new(part, &settings).unwrap_or_else(|e| panic!("{e}"));
    assert!(mg.steps_in_place());
    let bytes = mg.memory_bytes();
    let per_dof = bytes as f64 / n as f64;
    eprintln!("MG-α's states and workspaces: {bytes} bytes, {per_dof:.0} a DOF");
    assert!(
        per_dof <= MG_ALPHA_BOUND,
        "{bytes} bytes for {n} DOFs ({per_dof:.0} a DOF)"
    );
    let ((), second) = live_bytes_added(|| mg.keep_second_state());
    assert_eq!(second, 8 * 3 * 2 * n as i64);
    assert_eq!(mg.memory_bytes(), bytes + second as usize);
    mg.step().unwrap();
}

/// Bytes a DOF of MG-α's states and stepper workspaces on a linear frame (see
/// [`mg_alpha_keeps_at_most_65_bytes_a_dof_of_states_on_a_linear_frame`]): 112 with a second
/// state, 64.2 stepped in place.
const MG_ALPHA_BOUND: f64 = 65.0;
