//! Start-up memory (issue 20): the heap the recorder's column names take, counted by a
//! global allocator, per column of a shear chain.

use hybridsim::model::NoFiles;
use hybridsim::output::Recorder;
use hybridsim::Model;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

/// The system allocator, adding the bytes this thread allocates and frees while
/// [`live_bytes_added`] runs (the harness's threads are not counted).
struct Bytes;

static LIVE: AtomicI64 = AtomicI64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(|c| c.get()).unwrap_or(false)
}

unsafe impl GlobalAlloc for Bytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Bytes = Bytes;

/// What `f` returns, and the bytes it leaves allocated (allocated minus freed by this thread).
fn live_bytes_added<T>(f: impl FnOnce() -> T) -> (T, i64) {
    LIVE.store(0, Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, LIVE.load(Ordering::SeqCst))
}

/// A shear chain of `n` storeys without damping: one `x` DOF a node, a mass and a spring a
/// storey.
fn chain(n: usize) -> Model {
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
    Model::from_toml(&t, "chain.toml", &NoFiles).unwrap_or_else(|e| panic!("{e}"))
}

/// The recorder keeps its column names packed (one text, the distinct units once), not a
/// `String` per name and per unit, and its channels are 16 bytes: at most 60 bytes a column,
/// its channel included (54.5 measured). One `String` per name and unit made it at least 93
/// (48 bytes of `Column`, the name, the unit, a 32-byte channel), more with the slack of
/// growing vectors; the packed names with 32-byte channels were 68.9.
#[test]
fn recorder_names_and_channels_take_less_than_60_bytes_a_column() {
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
        per_column <= 60.0,
        "the recorder takes {bytes} bytes for {ncol} columns ({per_column:.1} a column)"
    );
    // The names are those of the columns, in order.
    assert_eq!(recorder.column_name(0), "time");
    assert_eq!(recorder.column(1).header(), "u.structure.1.x[m]");
    let header = recorder.header();
    assert_eq!(
        header.split(',').collect::<Vec<_>>(),
        recorder.headers(),
        "the header line lists the headers"
    );
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
    // k (36 values, 288 bytes) and the six DOFs (96 bytes); the zero m and c were 576 more.
    assert!(bytes <= 288 + 96, "{bytes} bytes");
    assert!(element.mass().is_none());
    assert_eq!(element.linear_damping(), Some(DMatrix::zeros(6, 6)));
    assert_eq!(element.linear_stiffness().map(|k| k[(0, 1)]), Some(-0.25));
}
