//! The snapshot tap on the real-time runner's loop thread: no allocation over ten thousand
//! steps whether nobody reads the ring (it fills and drops frames) or the console's state is
//! built from it concurrently, and the results are bit-identical to a run without a tap.
use hybridsim::model::lab::Pacing;
use hybridsim::model::NoFiles;
use hybridsim::runner::{RecordTap, TapSlot};
use hybridsim::Model;
use hybridsim_console::{snapshot_ring, Meta, State};
use hybridsim_rt::{run, RunOptions, RunStatus};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

struct Counting;
static LOOP_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static IN_LOOP: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if IN_LOOP.try_with(|c| c.get()).unwrap_or(false) {
            LOOP_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if IN_LOOP.try_with(|c| c.get()).unwrap_or(false) {
            LOOP_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mark(on: bool) {
    IN_LOOP.with(|c| c.set(on));
}

/// The split-mass example with a 1 kHz lab, `duration` s, a row every step.
fn model(duration: f64) -> Model {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text =
        std::fs::read_to_string(root.join("examples/split_mass_delayed_actuator.toml")).unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    t["analysis"]
        .as_table_mut()
        .unwrap()
        .insert("duration".into(), duration.into());
    t.insert(
        "output".into(),
        toml::Value::Table("every = 1".parse::<toml::Table>().unwrap()),
    );
    Model::from_toml(&toml::to_string(&t).unwrap(), "split_mass.toml", &NoFiles)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn slot(tap: hybridsim_console::SnapshotTap) -> TapSlot {
    Arc::new(Mutex::new(Some(Box::new(tap) as Box<dyn RecordTap>)))
}

fn opts(tap: Option<TapSlot>) -> RunOptions {
    RunOptions {
        pacing: Some(Pacing::Fast),
        loop_marker: Some(mark),
        keep_rows: true,
        tap,
        ..Default::default()
    }
}

#[test]
fn tap_allocates_nothing_on_the_loop_thread_and_changes_no_bit() {
    let model = model(24.0);
    assert!(model.analysis.n_steps() >= 10_000);
    let reference = run(&model, &opts(None)).unwrap();
    assert_eq!(reference.status, RunStatus::Completed);

    // Nobody reads: a small ring fills at once and every later frame is dropped.
    let (tap, mut reader) = snapshot_ring(4096);
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(&model, &opts(Some(slot(tap)))).unwrap();
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    println!(
        "unread ring: {} steps, {n} allocations in the loop threads, {} frames kept, {} dropped",
        out.steps,
        reader.frames(),
        reader.dropped()
    );
    assert_eq!(n, 0);
    assert_eq!(out.status, RunStatus::Completed);
    assert!(reader.dropped() > 10_000, "{}", reader.dropped());
    assert!(reader.layout().is_some());
    assert_eq!(out.rows.len(), reference.rows.len());
    for (a, b) in out.rows.iter().zip(&reference.rows) {
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    // The console's state built from the ring while the run goes.
    let (tap, mut reader) = snapshot_ring(hybridsim_console::ring::DEFAULT_CAPACITY);
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let consumer = std::thread::spawn(move || {
        let mut state = State::new(Meta {
            dt_c: 1e-3,
            ..Meta::default()
        });
        let (mut rows, mut labs, mut steps) = (0u64, 0u64, 0u64);
        loop {
            if let Some(l) = reader.layout() {
                let l = l.clone();
                state.set_layout(&l);
            }
            reader.drain(usize::MAX, |f| {
                match f {
                    hybridsim_console::Frame::Row(_) => rows += 1,
                    hybridsim_console::Frame::Lab(..) => labs += 1,
                    hybridsim_console::Frame::Step { .. } => steps += 1,
                }
                state.absorb(f);
            });
            let _ = state.update(reader.dropped(), 0);
            if d.load(Ordering::SeqCst) && reader.finished() {
                return (rows, labs, steps, reader.dropped());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    LOOP_ALLOCATIONS.store(0, Ordering::SeqCst);
    let out = run(&model, &opts(Some(slot(tap)))).unwrap();
    let n = LOOP_ALLOCATIONS.load(Ordering::SeqCst);
    done.store(true, Ordering::SeqCst);
    let (rows, labs, steps, dropped) = consumer.join().unwrap();
    println!(
        "read ring: {n} allocations; the console saw {rows} rows, {labs} lab records, {steps} \
         steps ({dropped} frames dropped)"
    );
    assert_eq!(n, 0);
    assert_eq!(out.status, RunStatus::Completed);
    // Every frame is either seen or counted as dropped.
    let lab_ticks = out.lab_rows;
    assert_eq!(
        rows + labs + steps + dropped,
        out.rows.len() as u64 + lab_ticks + out.steps
    );
    for (a, b) in out.rows.iter().zip(&reference.rows) {
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
