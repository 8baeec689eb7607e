//! Benchmark (not a test): the real-time runner's per-tick compute percentiles with the live
//! console attached (a snapshot tap on the loop thread, the server running, one browser-like
//! client reading the event stream) against without, on Abbiati et al. (2020)'s time scale
//! (`examples/abbiati2020_lab_1024hz.toml`, 1024 Hz controller, ss = λ = 8). Runs are
//! interleaved (without, with, without, with, …) so that a change of the machine's load hits
//! both alike; prints per task the execution p50/p99/p99.9 of each run and the ratio of the
//! medians over the runs. The tap runs on the run loop's thread between the phases those
//! statistics time, so its own cost is timed first, per coarse step (one results row, ss lab
//! records, one step mark), with the ring drained by the console and with nobody reading it.
//! Run: `cargo bench -p hybridsim-console --bench overhead -- [SECONDS
//! [PAIRS [fast]]]` (default 20 s of realtime pacing, 3 pairs).
use hybridsim::model::lab::Pacing;
use hybridsim::runner::RecordTap;
use hybridsim_console::{live, meta_from_model, snapshot_ring, ConsoleOptions};
use hybridsim_rt::{run, RunOptions};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let seconds: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(20.0);
    let pairs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let pacing = if args.iter().any(|a| a == "fast") {
        Pacing::Fast
    } else {
        Pacing::Realtime
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join("examples/abbiati2020_lab_1024hz.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let model = hybridsim::Model::from_toml(
        &text,
        "abbiati2020_lab_1024hz.toml",
        &hybridsim::model::NoFiles,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let ts = model.lab.as_ref().unwrap().lab.time_scale;
    let steps = ((seconds / ts.dt_s).ceil() as u64).min(model.analysis.n_steps());
    println!(
        "console overhead: {} Hz controller, ss = {}, {steps} coarse steps ({:.1} s wall at \
         realtime pacing), pacing {pacing:?}, {pairs} pairs",
        ts.controller_rate(),
        ts.ss,
        steps as f64 * ts.dt_s
    );
    for drained in [true, false] {
        let (ns, dropped) = tap_cost(40, 9, ts.ss, 200_000, drained);
        println!(
            "tap cost per coarse step (40-column row, {} lab records of 9 columns, a step \
             mark), ring {}: {ns:.0} ns ({dropped} frames dropped)",
            ts.ss,
            if drained { "drained" } else { "never read" }
        );
    }
    let mut rows: Vec<(bool, Value)> = Vec::new();
    for pair in 0..pairs {
        for console in [false, true] {
            let mut opts = RunOptions {
                pacing: Some(pacing),
                max_steps: Some(steps),
                allow_soft_realtime: true,
                ..Default::default()
            };
            let mut server = None;
            let mut reader = None;
            if console {
                let meta = meta_from_model(&model, "abbiati2020_lab_1024hz.toml", "bench", true);
                let (c, slot) = live(meta, ConsoleOptions::default()).unwrap();
                // A client that reads the event stream as a browser does.
                let mut s = std::net::TcpStream::connect(c.addr()).unwrap();
                write!(s, "GET /events HTTP/1.1\r\n\r\n").unwrap();
                reader = Some(std::thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    let mut total = 0usize;
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        total += n;
                    }
                    total
                }));
                opts.tap = Some(slot);
                server = Some(c);
            }
            let out = run(&model, &opts).unwrap_or_else(|e| panic!("{e}"));
            drop(opts);
            if let Some(c) = server {
                c.finish(None, std::time::Duration::ZERO);
            }
            let bytes = reader.map(|r| r.join().unwrap()).unwrap_or(0);
            let tasks = out.run_json["tasks"].clone();
            print!(
                "pair {pair} console {console:<5}: {:?}, {} steps",
                out.status, out.steps
            );
            if console {
                print!(", {bytes} bytes streamed");
            }
            println!();
            for t in tasks.as_array().into_iter().flatten() {
                let e = &t["execution"];
                if e.is_null() {
                    continue;
                }
                println!(
                    "    {:<12} p50 {:>8.2} µs  p99 {:>8.2} µs  p99.9 {:>8.2} µs  misses {}",
                    t["task"].as_str().unwrap_or("?"),
                    e["p50_us"].as_f64().unwrap_or(f64::NAN),
                    e["p99_us"].as_f64().unwrap_or(f64::NAN),
                    e["p999_us"].as_f64().unwrap_or(f64::NAN),
                    t["deadline_misses"]
                );
            }
            rows.push((console, tasks));
        }
    }
    // Median over the runs of each percentile, with and without; their ratio.
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let names: Vec<String> = rows[0]
        .1
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| !t["execution"].is_null())
        .map(|t| t["task"].as_str().unwrap_or("?").to_string())
        .collect();
    println!("median over {pairs} runs each (with / without):");
    for name in names {
        let pick = |console: bool, q: &str| {
            median(
                rows.iter()
                    .filter(|(c, _)| *c == console)
                    .filter_map(|(_, t)| {
                        t.as_array()?.iter().find(|x| x["task"] == name.as_str())?["execution"][q]
                            .as_f64()
                    })
                    .collect(),
            )
        };
        let line: Vec<String> = ["p50_us", "p99_us", "p999_us"]
            .iter()
            .map(|q| {
                let (a, b) = (pick(true, q), pick(false, q));
                format!(
                    "{} {a:.2}/{b:.2} µs ({:+.1} %)",
                    &q[..q.len() - 3],
                    (a / b - 1.0) * 100.0
                )
            })
            .collect();
        println!("    {name:<12} {}", line.join("  "));
    }
}

/// Wall time per coarse step of the tap's calls (ns), and the frames it dropped.
fn tap_cost(ncol: usize, width: usize, ss: usize, steps: u64, drained: bool) -> (f64, u64) {
    let (mut tap, mut reader) = snapshot_ring(hybridsim_console::ring::DEFAULT_CAPACITY);
    let columns: Vec<String> = (0..ncol).map(|i| format!("c{i}[m]")).collect();
    let lab: Vec<String> = (0..width).map(|i| format!("l{i}[m]")).collect();
    tap.start(&columns, &[(0, "lab".into(), lab)]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let consumer = std::thread::spawn(move || {
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            if drained {
                reader.drain(usize::MAX, |_| {});
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        reader.dropped()
    });
    let row = vec![0.5; ncol];
    let record = vec![0.25; width];
    let t0 = std::time::Instant::now();
    for k in 0..steps {
        tap.step(k);
        for _ in 0..ss {
            tap.lab_record(0, &record);
        }
        tap.row(&row);
    }
    let ns = t0.elapsed().as_nanos() as f64 / steps as f64;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    (ns, consumer.join().unwrap())
}
