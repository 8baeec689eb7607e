//! Seeded mutation fuzzing of the model-file reader and the record readers.
//!
//! Every model file of `examples/` and two small records written below (a PEER `.AT2` and a
//! two-column file) are mutated by a seeded generator (lines deleted, duplicated, swapped or
//! truncated; numbers replaced by NaN, ±∞, ±1e308, −0, huge integers, strings, lists or tables;
//! unicode injected; tables renamed or nested; keys dropped; lines spliced in from other files;
//! injected `[[lab.fault]]` tables), then read by [`Model::from_toml`] (with the mutated records
//! served for every referenced file) and by [`parse_at2`] / [`parse_two_column`], each under
//! `catch_unwind`. A panic, an allocation beyond [`ALLOCATION_CAP`] (the process would abort)
//! or a case slower than [`CASE_LIMIT`] (a hang) fails the test, naming the seed and the case,
//! which are reproducible from the two numbers alone.
//!
//! `fuzz_models_ci` runs [`CI_CASES`] cases on every `cargo test`; the ignored
//! `fuzz_models_campaign` runs `HYBRIDSIM_FUZZ_CASES` (default 100 000) cases from
//! `HYBRIDSIM_FUZZ_SEED` (default [`SEED`]). Inputs that once crashed are kept in
//! `tests/data/fuzz-corpus/` and replayed by `fuzz_corpus_replays`.

use hybridsim::excitation::{parse_at2, parse_two_column};
use hybridsim::model::SourceResolver;
use hybridsim::Model;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Seed of the CI run and the default campaign seed.
const SEED: u64 = 0x1d_2026_0010;

/// Cases of the CI run (about 3 s in the test profile).
const CI_CASES: u64 = 5000;

/// Longest a single case may take before it counts as a hang (shared machine; the slowest of
/// 1.1 million cases took 4.7 s).
const CASE_LIMIT: Duration = Duration::from_secs(20);

/// Largest single allocation a case may make: reading a model file must never size a buffer
/// from an unchecked number (a larger request is refused, which aborts the process with the
/// case named on stderr).
const ALLOCATION_CAP: usize = 1 << 30;

/// Case being run by the fuzzing thread (`u64::MAX`: none), for the allocation guard.
static CURRENT_CASE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Refuses single allocations above [`ALLOCATION_CAP`] while a case runs.
struct CappedAllocator;

unsafe impl GlobalAlloc for CappedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_CAP && refuse(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_CAP && refuse(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOCATION_CAP && refuse(new_size) {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// Whether to refuse an oversized allocation (only inside a case); says which case on stderr
/// without allocating.
fn refuse(size: usize) -> bool {
    let case = CURRENT_CASE.load(Ordering::Relaxed);
    if case == u64::MAX {
        return false;
    }
    let mut buf = [0u8; 160];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(
        cursor,
        "\nfuzz_models: case {case} asked for {size} bytes in one allocation (cap {ALLOCATION_CAP}); aborting\n"
    );
    let n = cursor.position() as usize;
    let _ = std::io::stderr().write_all(&buf[..n]);
    true
}

#[global_allocator]
static GLOBAL: CappedAllocator = CappedAllocator;

/// A small PEER `.AT2` record (written for these tests: 10 samples of a decaying sine).
const AT2: &str = "PEER STRONG MOTION DATABASE RECORD\n\
FUZZ TEST RECORD, SYNTHETIC, COMPONENT H1\n\
ACCELERATION TIME SERIES IN UNITS OF G\n\
NPTS=   10, DT=   .0100 SEC\n\
  .0000000E+00  .1200000E-01  .2100000E-01 -.1500000E-01 -.3000000E-02\n\
  .8000000E-02 -.6000000E-02  .2000000E-02 -.1000000E-02  .0000000E+00\n";

/// A small two-column record (time, value).
const TWO_COLUMN: &str = "# time value\n0.0 0.0\n0.01 0.5\n0.02 -0.25\n0.03 0.125\n0.05 0.0\n";

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// What a number may become.
const NUMBERS: &[&str] = &[
    "nan",
    "+nan",
    "-nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "5e-324",
    "1e-308",
    "-0.0",
    "0",
    "0.0",
    "-1",
    "1",
    "2",
    "1e300",
    "-1e300",
    "1e9",
    "1e-9",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "65536",
    "1048576",
    "200000",
    "0.5",
    "\"12\"",
    "\"\"",
    "true",
    "[]",
    "[1.0, 2.0]",
    "{}",
    "{ a = 1 }",
    "1979-05-27",
];

/// What a string may become.
const STRINGS: &[&str] = &[
    "\"\"",
    "\"x\"",
    "\"nan\"",
    "\"virtual\"",
    "\"pg-alpha\"",
    "\"mg-alpha\"",
    "\"llm\"",
    "\"lsrt2\"",
    "\"real-time\"",
    "\"pseudodynamic\"",
    "\"ramp_down\"",
    "\"delay\"",
    "\"transfer_function\"",
    "\"servo_hydraulic\"",
    "\"first_order\"",
    "\"specimen\"",
    "\"numerical\"",
    "\"kN/mm\"",
    "\"g\"",
    "\"motion.AT2\"",
    "\"motion.txt\"",
    "\"/dev/zero\"",
    "\"../../../../etc/passwd\"",
    "\"\\u0000\"",
    "\"é\u{202e}\u{feff}\"",
    "0",
    "nan",
    "[\"x\"]",
];

/// Unicode and control characters to inject.
const UNICODE: &[&str] = &[
    "é",
    "\u{202e}",
    "\u{feff}",
    "\u{0}",
    "\u{7}",
    "\u{1f600}",
    "\u{fffd}",
    "\r",
    "\t",
    "\\",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "=",
    "#",
    ",",
    ".",
    "\n[",
    "\n",
    "ℵ",
    "\u{2028}",
];

/// Tables spliced into a model.
const TABLES: &[&str] = &[
    "[[lab.fault]]\nactuator = \"storey1\"\nat = 0.5\nkind = \"overload\"\nforce = 1e9\n",
    "[[lab.fault]]\nactuator = \"act1\"\nat = 0.0\nkind = \"stall\"\nseconds = 1e308\n",
    "[[lab.fault]]\nactuator = \"pier\"\nkind = \"panic\"\nat = -0.0\n",
    "[[lab.fault]]\nactuator = \"bearing\"\nat = 1.0\nkind = \"dropout\"\n",
    "[runner]\nresults_ring = 1048576\n",
    "[output]\nevery = 9223372036854775807\n",
    "[[node]]\nid = 99\ndofs = [\"x\", \"y\", \"z\"]\n",
    "[[element]]\ntype = \"linear\"\ndofs = [[1, \"x\"], [1, \"x\"]]\n",
    "[[element]]\ntype = \"mass\"\nnode = 1\nmass = nan\n",
    "[[ground_motion]]\ndirection = \"x\"\nrecord = \"motion.AT2\"\n",
    "[[ground_motion]]\ndirection = \"x\"\nrecord = \"motion.txt\"\nrecord_units = \"g\"\n",
    "[[ground_motion]]\ndirection = \"x\"\nsynthetic = { seed = 1, duration = 1e12, pga = 0.3, dt = 1e-9 }\n",
    "[[load]]\nnode = 1\ndof = \"x\"\nrecord = \"motion.txt\"\n",
    "[[imposed_motion]]\nnode = 1\ndof = \"x\"\nfile = \"motion.txt\"\n",
    "[damping]\nmodes = [1, 200000]\nratios = [0.05, 0.05]\n",
    "[updating]\n",
    "[safety.divergence]\ndisplacement = 1e-300\nforce = 1e300\n",
];

/// Offsets of numbers in `line`: `(start, end)` of each run of number characters that starts
/// with a digit, a sign or a dot after a non-word character.
fn number_spans(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let starts = c.is_ascii_digit()
            || ((c == b'-' || c == b'+' || c == b'.')
                && i + 1 < b.len()
                && b[i + 1].is_ascii_digit());
        let after_word = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if starts && !after_word {
            let mut j = i + 1;
            while j < b.len()
                && (b[j].is_ascii_digit()
                    || matches!(b[j], b'.' | b'e' | b'E' | b'-' | b'+' | b'_'))
            {
                j += 1;
            }
            spans.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    spans
}

/// Offsets of double-quoted strings in `line` (without escapes inside).
fn string_spans(line: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut open = None;
    for (i, c) in line.char_indices() {
        if c == '"' {
            match open.take() {
                None => open = Some(i),
                Some(s) => spans.push((s, i + 1)),
            }
        }
    }
    spans
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One mutation of `text`; `others` are the other seeds (for splicing).
fn mutate(text: &str, others: &[&str], rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let n = lines.len();
    match rng.below(16) {
        // Delete a line (drops a required key or a table header).
        0 => {
            lines.remove(rng.below(n));
        }
        // Duplicate a line (a key twice, a table twice).
        1 => {
            let i = rng.below(n);
            let l = lines[i].clone();
            lines.insert(rng.below(n + 1), l);
        }
        // Swap two lines (keys move between tables).
        2 => {
            let (i, j) = (rng.below(n), rng.below(n));
            lines.swap(i, j);
        }
        // Replace numbers: the most frequent mutation.
        3..=6 => {
            for _ in 0..8 {
                let i = rng.below(n);
                let spans = number_spans(&lines[i]);
                if spans.is_empty() {
                    continue;
                }
                let (s, e) = *rng.pick(&spans);
                let with = if rng.chance(4) {
                    // Scale by a power of ten, keep the sign.
                    let x: f64 = lines[i][s..e].replace('_', "").parse().unwrap_or(1.0);
                    let k = rng.below(40) as i32 - 20;
                    format!("{:e}", x * 10f64.powi(k * 8))
                } else {
                    rng.pick(NUMBERS).to_string()
                };
                lines[i].replace_range(s..e, &with);
                break;
            }
        }
        // Replace a string value.
        7 => {
            for _ in 0..8 {
                let i = rng.below(n);
                let spans = string_spans(&lines[i]);
                if spans.is_empty() {
                    continue;
                }
                let (s, e) = *rng.pick(&spans);
                let with: &str = rng.pick::<&str>(STRINGS);
                lines[i].replace_range(s..e, with);
                break;
            }
        }
        // Truncate the file anywhere.
        8 => {
            let joined = lines.join("\n");
            let at = floor_boundary(&joined, rng.below(joined.len() + 1));
            return joined[..at].to_string();
        }
        // Inject unicode or TOML punctuation anywhere.
        9 => {
            let mut joined = lines.join("\n");
            let at = floor_boundary(&joined, rng.below(joined.len() + 1));
            let what: &str = rng.pick::<&str>(UNICODE);
            joined.insert_str(at, what);
            return joined;
        }
        // Nest or rename a table header.
        10 => {
            let headers: Vec<usize> = (0..n)
                .filter(|&i| lines[i].trim_start().starts_with('['))
                .collect();
            if let Some(&i) = headers.get(rng.below(headers.len().max(1))) {
                let l = lines[i].trim().to_string();
                lines[i] = match rng.below(5) {
                    0 => l.replace("[[", "[").replace("]]", "]"),
                    1 if !l.starts_with("[[") => format!("[{l}]"),
                    2 => l.replace(']', ".inner]"),
                    3 => l.replace('[', "[lab."),
                    _ => l.replace(|c: char| c.is_ascii_lowercase(), "x"),
                };
            }
        }
        // Nest a value: `k = v` → `k = { v = v }` or `k = [v]`.
        11 => {
            let keyed: Vec<usize> = (0..n).filter(|&i| lines[i].contains(" = ")).collect();
            if let Some(&i) = keyed.get(rng.below(keyed.len().max(1))) {
                if let Some((k, v)) = lines[i].clone().split_once(" = ") {
                    lines[i] = if rng.chance(2) {
                        format!("{k} = {{ value = {v} }}")
                    } else {
                        format!("{k} = [{v}]")
                    };
                }
            }
        }
        // Splice a line from another file.
        12 => {
            let other = rng.pick(others);
            let ol: Vec<&str> = other.lines().collect();
            if !ol.is_empty() {
                let l = ol[rng.below(ol.len())].to_string();
                lines.insert(rng.below(n + 1), l);
            }
        }
        // Splice a table.
        13 => {
            lines.push(rng.pick(TABLES).to_string());
        }
        // Drop a key of an inline table.
        14 => {
            let inline: Vec<usize> = (0..n).filter(|&i| lines[i].contains("{ ")).collect();
            if let Some(&i) = inline.get(rng.below(inline.len().max(1))) {
                let l = lines[i].clone();
                if let (Some(a), Some(b)) = (l.find("{ "), l.rfind(" }")) {
                    if a + 2 <= b {
                        let parts: Vec<&str> = l[a + 2..b].split(", ").collect();
                        let drop = rng.below(parts.len());
                        let kept: Vec<&str> = parts
                            .iter()
                            .enumerate()
                            .filter(|(k, _)| *k != drop)
                            .map(|(_, p)| *p)
                            .collect();
                        lines[i] = format!("{}{{ {} }}{}", &l[..a], kept.join(", "), &l[b + 2..]);
                    }
                }
            }
        }
        // Repeat a list many times (long arrays).
        _ => {
            let listed: Vec<usize> = (0..n)
                .filter(|&i| lines[i].contains('[') && lines[i].contains(" = "))
                .collect();
            if let Some(&i) = listed.get(rng.below(listed.len().max(1))) {
                let l = lines[i].clone();
                if let (Some(a), Some(b)) = (l.find(" = ["), l.rfind(']')) {
                    if a + 4 <= b {
                        let inner = &l[a + 4..b];
                        let times = 1 + rng.below(300);
                        let many = vec![inner; times].join(", ");
                        lines[i] = format!("{} = [{many}]", &l[..a]);
                    }
                }
            }
        }
    }
    lines.join("\n")
}

/// Serves the (mutated) records for every referenced file: `.AT2` paths get the AT2 record,
/// anything else the two-column one.
struct Records {
    at2: String,
    two_column: String,
}

impl SourceResolver for Records {
    fn read_to_string(&self, path: &str) -> Result<String, String> {
        if path.to_ascii_lowercase().ends_with(".at2") {
            Ok(self.at2.clone())
        } else if path.is_empty() {
            Err("empty path".to_string())
        } else {
            Ok(self.two_column.clone())
        }
    }
}

/// The seeds: every example model file.
fn seeds() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 10, "the examples are the seeds");
    out
}

/// One generated case: a model file and the two records.
struct Case {
    seed_file: String,
    model: String,
    records: Records,
}

/// Case `index` of the campaign `seed` (deterministic in both).
fn case(seed: u64, index: u64, seeds: &[(String, String)]) -> Case {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0xa076_1d64_78bd_642f));
    let texts: Vec<&str> = seeds.iter().map(|(_, t)| t.as_str()).collect();
    let (name, base) = &seeds[rng.below(seeds.len())];
    // Favour the lab examples, where most of issue 10's fields are.
    let (name, base) = if !base.contains("[lab]") && rng.chance(2) {
        let labs: Vec<&(String, String)> =
            seeds.iter().filter(|(_, t)| t.contains("[lab]")).collect();
        let (n, t) = labs[rng.below(labs.len())];
        (n, t)
    } else {
        (name, base)
    };
    let mut model = base.clone();
    for _ in 0..1 + rng.below(4) {
        // Stop growing a case past 1 MiB (repeated lists multiply); oversized files are
        // exercised by `an_oversized_model_file_is_refused_before_it_is_parsed`.
        if model.len() > 1 << 20 {
            break;
        }
        model = mutate(&model, &texts, &mut rng);
    }
    let mut at2 = AT2.to_string();
    let mut two_column = TWO_COLUMN.to_string();
    if rng.chance(2) {
        for _ in 0..1 + rng.below(3) {
            at2 = mutate(&at2, &[TWO_COLUMN], &mut rng);
        }
    }
    if rng.chance(2) {
        for _ in 0..1 + rng.below(3) {
            two_column = mutate(&two_column, &[AT2], &mut rng);
        }
    }
    Case {
        seed_file: name.clone(),
        model,
        records: Records { at2, two_column },
    }
}

/// How a model file fared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Read and validated.
    Accepted,
    /// Refused by the TOML syntax (`line N` or `file`).
    Syntax,
    /// Refused by the validation, with the field named.
    Field,
}

/// What one case did wrong, if anything; else how the model file fared.
fn run_case(c: &Case) -> Result<Verdict, String> {
    let mut verdict = Verdict::Accepted;
    let model = catch_unwind(AssertUnwindSafe(|| {
        if let Err(e) = Model::from_toml(&c.model, "fuzz.toml", &c.records) {
            let syntax = e
                .issues
                .iter()
                .all(|i| i.field == "file" || i.field.starts_with("line "));
            verdict = if syntax {
                Verdict::Syntax
            } else {
                Verdict::Field
            };
        }
    }));
    let at2 = catch_unwind(AssertUnwindSafe(|| {
        let _ = parse_at2(&c.records.at2);
    }));
    let two = catch_unwind(AssertUnwindSafe(|| {
        let _ = parse_two_column(&c.records.two_column);
    }));
    let what = |r: &std::thread::Result<()>, who: &str| -> Option<String> {
        r.as_ref().err().map(|e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            format!("{who} panicked: {msg}")
        })
    };
    let problems: Vec<String> = [
        what(&model, "Model::from_toml"),
        what(&at2, "parse_at2"),
        what(&two, "parse_two_column"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if problems.is_empty() {
        Ok(verdict)
    } else {
        Err(problems.join("; "))
    }
}

/// Where a failing case is written (for the corpus).
fn failure_dir() -> PathBuf {
    std::env::temp_dir().join("hybridsim-fuzz-failures")
}

/// Summary of a run.
struct Outcome {
    cases: u64,
    failures: Vec<String>,
    slowest: Duration,
    wall: Duration,
    /// Model files accepted, refused at the syntax, refused at a field.
    verdicts: [u64; 3],
}

/// Run `count` cases of campaign `seed` on a worker thread, watched: a case slower than
/// [`CASE_LIMIT`] is reported as a hang (and the worker abandoned).
fn campaign(seed: u64, count: u64, start: u64) -> Outcome {
    let seeds = Arc::new(seeds());
    let progress = Arc::new(AtomicU64::new(start));
    let case_started = Arc::new(Mutex::new(Instant::now()));
    let done = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let slowest = Arc::new(Mutex::new(Duration::ZERO));
    let verdicts = Arc::new(Mutex::new([0u64; 3]));
    let t0 = Instant::now();
    // Silence the default hook: the panics are collected and reported per case.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let worker = {
        let (seeds, progress, case_started, done, failures, slowest, verdicts) = (
            seeds.clone(),
            progress.clone(),
            case_started.clone(),
            done.clone(),
            failures.clone(),
            slowest.clone(),
            verdicts.clone(),
        );
        std::thread::Builder::new()
            .name("fuzz".into())
            .stack_size(64 << 20)
            .spawn(move || {
                for i in start..start + count {
                    let c = case(seed, i, &seeds);
                    *case_started.lock().unwrap() = Instant::now();
                    progress.store(i, Ordering::SeqCst);
                    CURRENT_CASE.store(i, Ordering::SeqCst);
                    let t = Instant::now();
                    let r = run_case(&c);
                    CURRENT_CASE.store(u64::MAX, Ordering::SeqCst);
                    let took = t.elapsed();
                    {
                        let mut s = slowest.lock().unwrap();
                        if took > *s {
                            *s = took;
                        }
                    }
                    if let Ok(v) = r {
                        verdicts.lock().unwrap()[v as usize] += 1;
                    }
                    if let Err(why) = r {
                        let dir = failure_dir();
                        let _ = std::fs::create_dir_all(&dir);
                        let stem = dir.join(format!("seed{seed:x}-case{i}"));
                        let _ = std::fs::write(stem.with_extension("toml"), &c.model);
                        let _ = std::fs::write(stem.with_extension("AT2"), &c.records.at2);
                        let _ = std::fs::write(stem.with_extension("txt"), &c.records.two_column);
                        failures.lock().unwrap().push(format!(
                            "seed {seed:#x} case {i} (from {}): {why} [written to {}.*]",
                            c.seed_file,
                            stem.display()
                        ));
                    }
                }
                done.store(true, Ordering::SeqCst);
            })
            .unwrap()
    };
    let mut hang = None;
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        let started = *case_started.lock().unwrap();
        if !done.load(Ordering::SeqCst) && started.elapsed() > CASE_LIMIT {
            let i = progress.load(Ordering::SeqCst);
            let c = case(seed, i, &seeds);
            let dir = failure_dir();
            let _ = std::fs::create_dir_all(&dir);
            let stem = dir.join(format!("seed{seed:x}-case{i}-hang"));
            let _ = std::fs::write(stem.with_extension("toml"), &c.model);
            hang = Some(format!(
                "seed {seed:#x} case {i} (from {}) ran longer than {CASE_LIMIT:?} [written to {}.toml]",
                c.seed_file,
                stem.display()
            ));
            break;
        }
    }
    std::panic::set_hook(hook);
    let mut failures = std::mem::take(&mut *failures.lock().unwrap());
    if let Some(h) = hang {
        failures.push(h);
    } else {
        worker.join().unwrap();
    }
    let slowest = *slowest.lock().unwrap();
    let verdicts = *verdicts.lock().unwrap();
    Outcome {
        cases: progress.load(Ordering::SeqCst) + 1 - start,
        failures,
        slowest,
        wall: t0.elapsed(),
        verdicts,
    }
}

fn report(o: &Outcome, seed: u64) {
    println!(
        "fuzz_models: seed {seed:#x}, {} cases in {:.1} s, slowest case {:.1} ms, {} failure(s); \
         model files accepted {}, refused by the TOML syntax {}, refused at a field {}",
        o.cases,
        o.wall.as_secs_f64(),
        o.slowest.as_secs_f64() * 1e3,
        o.failures.len(),
        o.verdicts[0],
        o.verdicts[1],
        o.verdicts[2]
    );
    assert!(
        o.failures.is_empty(),
        "{} failing case(s):\n{}",
        o.failures.len(),
        o.failures.join("\n")
    );
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| {
        let v = v.trim();
        v.strip_prefix("0x")
            .map(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or_else(|| v.parse().ok())
    })
}

#[test]
fn fuzz_models_ci() {
    let o = campaign(SEED, CI_CASES, 0);
    report(&o, SEED);
    assert_eq!(o.cases, CI_CASES);
}

#[test]
#[ignore = "a campaign of 10^5 cases: HYBRIDSIM_FUZZ_CASES=… cargo test -p hybridsim --test fuzz_models -- --ignored"]
fn fuzz_models_campaign() {
    let seed = env_u64("HYBRIDSIM_FUZZ_SEED").unwrap_or(SEED);
    let count = env_u64("HYBRIDSIM_FUZZ_CASES").unwrap_or(100_000);
    let start = env_u64("HYBRIDSIM_FUZZ_START").unwrap_or(0);
    let o = campaign(seed, count, start);
    report(&o, seed);
}

#[test]
fn the_mutations_change_the_seeds_and_are_reproducible() {
    let seeds = seeds();
    let a = case(SEED, 7, &seeds);
    let b = case(SEED, 7, &seeds);
    assert_eq!(a.model, b.model);
    assert_eq!(a.records.at2, b.records.at2);
    let changed = (0..200)
        .filter(|&i| {
            let c = case(SEED, i, &seeds);
            !seeds.iter().any(|(_, t)| *t == c.model)
        })
        .count();
    assert!(
        changed > 150,
        "only {changed} of 200 cases differ from a seed"
    );
    // The unmutated seeds and records are valid (so the mutations, not the seeds, are tested).
    let records = Records {
        at2: AT2.to_string(),
        two_column: TWO_COLUMN.to_string(),
    };
    for (name, text) in &seeds {
        Model::from_toml(text, name, &records).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    parse_at2(AT2).unwrap();
    parse_two_column(TWO_COLUMN).unwrap();
}

#[test]
fn the_harness_catches_a_panic_and_names_the_case() {
    // A case whose reader panics must be reported, not lost: `run_case` on a resolver that
    // panics stands in for a reader bug.
    struct Panics;
    impl SourceResolver for Panics {
        fn read_to_string(&self, _: &str) -> Result<String, String> {
            panic!("resolver bug")
        }
    }
    let text = seeds()
        .into_iter()
        .find(|(n, _)| n == "earthquake_elcentro.toml")
        .unwrap()
        .1;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _ = Model::from_toml(&text, "x.toml", &Panics);
    }));
    std::panic::set_hook(hook);
    assert!(r.is_err(), "the resolver's panic must reach the harness");
}

#[test]
fn an_oversized_model_file_is_refused_before_it_is_parsed() {
    // Found by the campaign (seed 0x1d20260010, case 40653): a model file of repeated lists,
    // about 100 MB, made the TOML reader ask for 1.9 GB of tokens.
    let seeds = seeds();
    let base = &seeds[0].1;
    let big = format!(
        "{base}
# {}
",
        "[1.0, 2.0], ".repeat((16 << 20) / 12 + 1)
    );
    let Err(err) = Model::from_toml(&big, "big.toml", &hybridsim::model::NoFiles) else {
        panic!("a model file of {} bytes was accepted", big.len());
    };
    assert_eq!(err.issues.len(), 1, "{err}");
    assert_eq!(err.issues[0].field, "file");
    assert!(err.issues[0].reason.contains("at most 16 MiB"), "{err}");
}

#[test]
fn fuzz_corpus_replays() {
    // Inputs that once crashed a reader: each must now be read (accepted or refused) without a
    // panic. A case is `NAME.toml`, optionally with `NAME.AT2` / `NAME.txt` records.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-corpus");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let read = |ext: &str, default: &str| {
            std::fs::read_to_string(path.with_extension(ext))
                .unwrap_or_else(|_| default.to_string())
        };
        let c = Case {
            seed_file: path.display().to_string(),
            model: std::fs::read_to_string(&path).unwrap(),
            records: Records {
                at2: read("AT2", AT2),
                two_column: read("txt", TWO_COLUMN),
            },
        };
        if let Err(why) = run_case(&c) {
            panic!("{}: {why}", c.seed_file);
        }
        n += 1;
    }
    assert!(n >= 1, "the corpus is empty");
}
