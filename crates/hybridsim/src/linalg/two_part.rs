//! `A⁻¹` of a banded symmetric positive definite matrix as two independent parts and a
//! separator, the second part solved by a worker thread (issue 20: the 9999-DOF frame's
//! factor, 3.2 MB, does not fit one core's 2 MiB of L2; each half does).

use super::{lower_first, symmetric_value, CompressedRows, SymmetricFactors};
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest separator [`TwoPartFactors`] takes (its unknowns' work vectors live on the
/// stack and in the worker's shared block).
pub const MAX_SEPARATOR: usize = 256;

/// How long the worker spins on the next command before it parks (then a command wakes it
/// through the operating system, `futex`): about the gap between two solves of the
/// 9999-DOF frame's step, so that the worker is awake at the next step's solve of a
/// compute-only run without holding a core for long when the step waits on something else
/// (the results writer of a recorded run).
const SPIN_BEFORE_PARKING: Duration = Duration::from_micros(300);

/// One part of a [`TwoPartFactors`]: its `L D Lᵀ` factor (over its own unknowns, in the
/// order its renumbering gives them) and its block `L_SP` of the separator's rows.
#[derive(Debug)]
struct Part {
    factors: SymmetricFactors,
    /// The part's first unknown (in its renumbered order) that the separator's rows of `L`
    /// reach: the columns of `L_SP` are `tail .. n_P`.
    tail: usize,
    /// `L_SP` by the separator's rows: row `k` is `coupling[k w .. (k + 1) w]`, `w = n_P − tail`.
    coupling: Vec<f64>,
    /// The separator's unknowns (rows of `L_SP`).
    separator: usize,
}

impl Part {
    fn width(&self) -> usize {
        self.factors.n - self.tail
    }

    /// `L_P y = b` in place, `t = L_SP y` (`t[k]` for each separator row), then `z = D_P⁻¹ y`.
    #[inline]
    fn forward(&self, x: &mut [f64], t: &mut [f64]) {
        self.factors.forward(x);
        let w = self.width();
        let y = &x[self.tail..];
        for (k, tk) in t[..self.separator].iter_mut().enumerate() {
            let mut acc = 0.0;
            for (l, yj) in self.coupling[k * w..(k + 1) * w].iter().zip(y) {
                acc = l.mul_add(*yj, acc);
            }
            *tk = acc;
        }
        self.factors.scale_by_pivots(x);
    }

    /// `z −= L_SPᵀ x_S`, then `L_Pᵀ x = z` in place.
    #[inline]
    fn backward(&self, x: &mut [f64], xs: &[f64]) {
        let w = self.width();
        let z = &mut x[self.tail..];
        for (k, xk) in xs[..self.separator].iter().enumerate() {
            for (zj, l) in z.iter_mut().zip(&self.coupling[k * w..(k + 1) * w]) {
                *zj = (-l).mul_add(*xk, *zj);
            }
        }
        self.factors.backward(x);
    }
}

/// `A⁻¹` of a symmetric positive definite matrix whose unknowns, in their given order, fall
/// into two parts that only a narrow separator couples — the one-level nested dissection of
/// George (1973) on a band: the unknowns `0 .. s₀` (part A), `s₁ .. n` (part B) and the
/// separator `s₀ .. s₁` between them, chosen so that no entry couples A and B (every row of B
/// starts at or right of `s₀`). In the order A, B, S the factor is
///
/// `L = [[L_A, 0, 0], [0, L_B, 0], [L_SA, L_SB, L_S]]`, `D = diag(D_A, D_B, D_S)`,
///
/// with `L_A D_A L_Aᵀ` and `L_B D_B L_Bᵀ` the blocked factors of the two parts
/// ([`SymmetricFactors`]; part B renumbered last row first, so that the unknowns the
/// separator touches come last in both parts and `L_SA`, `L_SB` stay as narrow as the band),
/// `L_SP = E_SP L_P⁻ᵀ D_P⁻¹` and `L_S D_S L_Sᵀ` the dense factor of the Schur complement
/// `E_SS − L_SA D_A L_SAᵀ − L_SB D_B L_SBᵀ` (George & Liu 1981, ch. 6). A solve is the
/// forward sweeps of A and B (independent), the separator's dense solve, then the backward
/// sweeps of A and B (independent): with a worker thread ([`TwoPartFactors::from_rows`]
/// with `worker`) part B's sweeps run on a second core, each part's factor (half of the
/// whole) in that core's own cache. The same operations run with or without the worker: the
/// same bits either way. Against the one-part [`SymmetricFactors`] of the same matrix the
/// results agree to round-off (another order of elimination), not to the bit.
///
/// Solves allocate nothing and take no lock: the worker is handed its part through atomics
/// (a command counter and a done counter) and spins a bounded time, then parks, between
/// solves. A panic of the worker makes that solve and every later one fail
/// ([`TwoPartFactors::solve`] returns `false` with `x` set to NaN) rather than wait forever.
#[derive(Debug)]
pub struct TwoPartFactors {
    /// `s₀`, `s₁`: part A is `0 .. s₀`, the separator `s₀ .. s₁`, part B `s₁ .. n`.
    s0: usize,
    s1: usize,
    a: Part,
    b: Arc<Part>,
    /// `L_S` below the diagonal by rows (`m × m`, row-major) and `1 / d` of the separator.
    l_s: Vec<f64>,
    inverse_d_s: Vec<f64>,
    worker: Option<Worker>,
}

impl Clone for TwoPartFactors {
    /// A copy without a worker: its solves run both parts on the calling thread (the same
    /// bits).
    fn clone(&self) -> Self {
        Self {
            s0: self.s0,
            s1: self.s1,
            a: Part {
                factors: self.a.factors.clone(),
                tail: self.a.tail,
                coupling: self.a.coupling.clone(),
                separator: self.a.separator,
            },
            b: Arc::clone(&self.b),
            l_s: self.l_s.clone(),
            inverse_d_s: self.inverse_d_s.clone(),
            worker: None,
        }
    }
}

impl TwoPartFactors {
    /// Factorize the symmetric positive definite `e` in two parts split at the middle of its
    /// envelope (in its given order), part B's sweeps on a worker thread when `worker` (named
    /// `hybridsim-solve`, joined when the factors are dropped). `None` when `e` is not
    /// symmetric positive definite, its separator is empty of parts or wider than
    /// [`MAX_SEPARATOR`], or either part is too narrow to be stored by blocks (a chain: its
    /// one-part sweeps are short already).
    pub fn from_rows(e: &CompressedRows, worker: bool) -> Option<Self> {
        let n = e.n_rows();
        if n < 64 || !SymmetricFactors::is_symmetric(e) {
            return None;
        }
        let first = lower_first(e, None);
        // s₀ where the envelope's running sum reaches half of it; s₁ past the last row
        // that starts left of s₀.
        let total: usize = first.iter().enumerate().map(|(r, f)| r - f).sum();
        let mut sum = 0;
        let mut s0 = n / 2;
        for (r, f) in first.iter().enumerate() {
            sum += r - f;
            if 2 * sum >= total {
                s0 = r + 1;
                break;
            }
        }
        let s1 = (s0..n).filter(|&r| first[r] < s0).map(|r| r + 1).max()?;
        let m = s1 - s0;
        if m > MAX_SEPARATOR || s0 < 16 || n - s1 < 16 {
            return None;
        }
        let nb = n - s1;
        // The parts' matrices in their own numbering (B from s₁).
        let e_a = CompressedRows::from_rows(s0, |r, push| {
            let (cols, vals) = e.row(r);
            for (&c, &v) in cols.iter().zip(vals) {
                if (c as usize) < s0 {
                    push(c as usize, v);
                }
            }
        });
        let e_b = CompressedRows::from_rows(nb, |r, push| {
            let (cols, vals) = e.row(s1 + r);
            for (&c, &v) in cols.iter().zip(vals) {
                if c as usize >= s1 {
                    push(c as usize - s1, v);
                }
            }
        });
        // The parts keep their pivots: the separator's coupling divides by them.
        let a = SymmetricFactors::with_order(&e_a, None, lower_first(&e_a, None), true, true)?;
        drop(e_a);
        let reversed: Vec<usize> = (0..nb).rev().collect();
        let first_b = lower_first(&e_b, Some(&reversed));
        let b = SymmetricFactors::with_order(
            &e_b,
            Some((reversed.clone(), reversed)),
            first_b,
            true,
            true,
        )?;
        drop(e_b);
        if !a.is_blocked() || !b.is_blocked() {
            return None;
        }
        // The separator's columns of each part: E_PS column k as the part's vector (in the
        // caller's order), its first and last entries.
        let column = |k: usize, lo: usize, hi: usize, out: &mut [f64]| {
            out.fill(0.0);
            let r = s0 + k;
            let (cols, vals) = e.row(r);
            for (&c, &v) in cols.iter().zip(vals) {
                let c = c as usize;
                if c >= lo && c < hi && v != 0.0 {
                    out[c - lo] = symmetric_value(v, e.get(c, r));
                }
            }
        };
        let mut lowest_a = s0;
        let mut highest_b = s1;
        for k in 0..m {
            let (cols, vals) = e.row(s0 + k);
            for (&c, &v) in cols.iter().zip(vals) {
                let c = c as usize;
                if v != 0.0 && c < s0 {
                    lowest_a = lowest_a.min(c);
                }
                if v != 0.0 && c >= s1 {
                    highest_b = highest_b.max(c + 1);
                }
            }
        }
        // Part A in its order: the tail from the lowest column; part B reversed: local
        // position nb − 1 − (c − s₁), the tail from the highest column's position.
        let tail_a = lowest_a.min(s0);
        let tail_b = nb - (highest_b - s1);
        // W_P = L_P⁻¹ E_PS (forward sweeps of unit columns), L_SP = (D_P⁻¹ W_P)ᵀ.
        let coupling = |f: &SymmetricFactors, lo: usize, hi: usize, tail: usize| {
            let np = hi - lo;
            let w = np - tail;
            let mut wv = vec![0.0; m * w];
            let mut l = vec![0.0; m * w];
            let mut x = vec![0.0; np];
            for k in 0..m {
                column(k, lo, hi, &mut x);
                f.forward(&mut x);
                debug_assert!(x[..tail].iter().all(|&v| v == 0.0));
                wv[k * w..(k + 1) * w].copy_from_slice(&x[tail..]);
                for (j, lj) in l[k * w..(k + 1) * w].iter_mut().enumerate() {
                    *lj = x[tail + j] / f.diag[tail + j];
                }
            }
            (wv, l)
        };
        let (w_a, l_a) = coupling(&a, 0, s0, tail_a);
        let (w_b, l_b) = coupling(&b, s1, n, tail_b);
        // The Schur complement on S, then its dense L D Lᵀ.
        let mut schur = vec![0.0; m * m];
        for k in 0..m {
            let r = s0 + k;
            for l in 0..=k {
                let c = s0 + l;
                let mut v = symmetric_value(e.get(r, c), e.get(c, r));
                let (wa, la) = (n_row(&w_a, s0 - tail_a, k), n_row(&l_a, s0 - tail_a, l));
                let (wb, lb) = (n_row(&w_b, nb - tail_b, k), n_row(&l_b, nb - tail_b, l));
                v -= wa.iter().zip(la).map(|(x, y)| x * y).sum::<f64>();
                v -= wb.iter().zip(lb).map(|(x, y)| x * y).sum::<f64>();
                schur[k * m + l] = v;
            }
        }
        drop((w_a, w_b));
        let mut l_s = vec![0.0; m * m];
        let mut d_s = vec![0.0; m];
        for r in 0..m {
            for j in 0..r {
                let mut v = schur[r * m + j];
                for k in 0..j {
                    v -= l_s[r * m + k] * d_s[k] * l_s[j * m + k];
                }
                l_s[r * m + j] = v / d_s[j];
            }
            let mut dr = schur[r * m + r];
            for k in 0..r {
                dr -= l_s[r * m + k] * l_s[r * m + k] * d_s[k];
            }
            if !(dr > 0.0 && dr.is_finite()) {
                return None;
            }
            d_s[r] = dr;
        }
        let b = Arc::new(Part {
            factors: b,
            tail: tail_b,
            coupling: l_b,
            separator: m,
        });
        let worker = if worker { Some(Worker::start()?) } else { None };
        Some(Self {
            s0,
            s1,
            a: Part {
                factors: a,
                tail: tail_a,
                coupling: l_a,
                separator: m,
            },
            b,
            l_s,
            inverse_d_s: d_s.iter().map(|d| 1.0 / d).collect(),
            worker,
        })
    }

    /// The sizes of part A, part B and the separator.
    pub fn sizes(&self) -> (usize, usize, usize) {
        let n = self.s1 + self.b.factors.n;
        (self.s0, n - self.s1, self.s1 - self.s0)
    }

    /// Whether part B's sweeps run on a worker thread.
    pub fn has_worker(&self) -> bool {
        self.worker.is_some()
    }

    /// Stored entries of the factor below the diagonal: both parts, their separator blocks
    /// and the separator's dense triangle.
    pub fn stored(&self) -> usize {
        let m = self.s1 - self.s0;
        self.a.factors.stored()
            + self.b.factors.stored()
            + self.a.coupling.len()
            + self.b.coupling.len()
            + m * (m - 1) / 2
    }

    /// Whether the worker has failed (a panic in its part of a solve): every solve since
    /// returned `false`.
    pub fn has_failed(&self) -> bool {
        self.worker
            .as_ref()
            .is_some_and(|w| w.shared.failed.load(Ordering::Acquire))
    }

    /// Make the worker panic in its next command (tests of the failure path).
    #[doc(hidden)]
    pub fn inject_worker_panic(&self) {
        if let Some(w) = &self.worker {
            w.shared.inject_panic.store(true, Ordering::Release);
        }
    }

    /// The separator's dense solve `L_S D_S L_Sᵀ x = b − t_A − t_B` in place on `xs`.
    #[inline]
    fn solve_separator(&self, xs: &mut [f64], ta: &[f64], tb: &[f64]) {
        let m = xs.len();
        for k in 0..m {
            xs[k] -= ta[k] + tb[k];
        }
        for r in 0..m {
            let row = &self.l_s[r * m..r * m + r];
            let mut acc = 0.0;
            for (l, y) in row.iter().zip(&xs[..r]) {
                acc = l.mul_add(*y, acc);
            }
            xs[r] -= acc;
        }
        for (x, d) in xs.iter_mut().zip(&self.inverse_d_s) {
            *x *= d;
        }
        for r in (0..m).rev() {
            let xr = xs[r];
            let row = &self.l_s[r * m..r * m + r];
            for (y, l) in xs[..r].iter_mut().zip(row) {
                *y = (-l).mul_add(xr, *y);
            }
        }
    }

    /// The unknowns `s₀` and `s₁` that bound the parts: part A is `0 .. s₀`, the separator
    /// `s₀ .. s₁`, part B `s₁ .. n`.
    pub fn bounds(&self) -> (usize, usize) {
        (self.s0, self.s1)
    }

    /// The forward half of part A's solve on its unknowns `xa` (`0 .. s₀` of `b`): `L_A y = b_A`
    /// in place, `t_A = L_SA y` into `ta` (one value a separator unknown), then `z = D_A⁻¹ y`.
    /// Allocation-free.
    #[inline]
    pub fn forward_a(&self, xa: &mut [f64], ta: &mut [f64]) {
        self.a.forward(xa, ta);
    }

    /// [`TwoPartFactors::forward_a`] of part B (`xb` the unknowns `s₁ .. n`, in the caller's
    /// order).
    #[inline]
    pub fn forward_b(&self, xb: &mut [f64], tb: &mut [f64]) {
        self.b.forward(xb, tb);
    }

    /// The separator's dense solve `L_S D_S L_Sᵀ x_S = b_S − t_A − t_B` in place on `xs`, after
    /// both forward halves. Allocation-free.
    #[inline]
    pub fn separator(&self, xs: &mut [f64], ta: &[f64], tb: &[f64]) {
        self.solve_separator(xs, ta, tb);
    }

    /// The backward half of part A's solve, after the separator's: `z −= L_SAᵀ x_S`, then
    /// `L_Aᵀ x = z` in place on `xa`. Allocation-free.
    #[inline]
    pub fn backward_a(&self, xa: &mut [f64], xs: &[f64]) {
        self.a.backward(xa, xs);
    }

    /// [`TwoPartFactors::backward_a`] of part B.
    #[inline]
    pub fn backward_b(&self, xb: &mut [f64], xs: &[f64]) {
        self.b.backward(xb, xs);
    }

    /// Run `mine` on the calling thread and `theirs` on the worker at the same time, and
    /// return when both are done: the fork and join of one step's halves (issue 20: the
    /// halves of the generalized-α step's passes over the rows, each next to its part of the
    /// solve). `theirs` runs on the calling thread instead, after `mine`, when the worker has
    /// not taken it up by then (parked, or waiting for a core) — so the results never depend
    /// on who ran it, and the caller never waits for a thread that is not running — and
    /// always without a worker. `false`, with neither run (or `theirs` cut short by a panic),
    /// when the worker has failed. No allocation, no lock: `theirs` stays on the caller's
    /// stack, handed over through the command counter (Release / Acquire).
    pub fn join<M, T>(&self, mine: M, theirs: T) -> bool
    where
        M: FnOnce(),
        T: FnOnce() + Send,
    {
        let Some(worker) = &self.worker else {
            mine();
            theirs();
            return true;
        };
        let shared = &*worker.shared;
        if shared.failed.load(Ordering::Acquire) {
            return false;
        }
        let mut slot = Some(theirs);
        let mut job = || {
            if let Some(f) = slot.take() {
                f()
            }
        };
        let job: &mut (dyn FnMut() + Send) = &mut job;
        // SAFETY: only the lifetime is erased. The job is read by the worker only between
        // this command's post and its `done` (or not at all when the caller claims it), and
        // `Pending` waits for that before this frame (which owns the job) is left, even by
        // a panic of `mine`.
        let job: *mut (dyn FnMut() + Send + 'static) = unsafe { std::mem::transmute(job) };
        // SAFETY: the worker reads `job` only after the command posted below (Release), and
        // the previous command is done (every join waits for its own).
        unsafe { *shared.job.get() = Some(job) };
        let pending = Pending {
            worker,
            command: worker.post(JOB),
            job,
            finished: false,
        };
        mine();
        pending.finish()
    }

    /// Solve `A x = b` in place (`x` holds `b` on entry); `false`, with `x` set to NaN, when
    /// the worker has failed. Part B's forward and backward sweeps on the worker
    /// ([`TwoPartFactors::join`]), the separator's solve between them on the calling thread.
    /// Allocation-free and lock-free.
    pub fn solve(&self, x: &mut [f64]) -> bool {
        let (s0, s1) = (self.s0, self.s1);
        let m = s1 - s0;
        assert_eq!(
            x.len(),
            s1 + self.b.factors.n,
            "TwoPartFactors::solve: dimension mismatch"
        );
        let (xa, rest) = x.split_at_mut(s0);
        let (xs, xb) = rest.split_at_mut(m);
        let mut ta = [0.0f64; MAX_SEPARATOR];
        let mut tb = [0.0f64; MAX_SEPARATOR];
        let (ta, tb) = (&mut ta[..m], &mut tb[..m]);
        let ok = self.join(|| self.a.forward(xa, ta), || self.b.forward(xb, tb)) && {
            self.solve_separator(xs, ta, tb);
            let xs = &*xs;
            self.join(|| self.a.backward(xa, xs), || self.b.backward(xb, xs))
        };
        if !ok {
            x.fill(f64::NAN);
        }
        ok
    }
}

/// A command posted by [`TwoPartFactors::join`], not yet known to be done: finished by its
/// caller ([`Pending::finish`]) or, when `mine` panics, by its drop (which claims the job or
/// waits for the worker, so that the job's frame outlives the worker's use of it).
struct Pending<'w> {
    worker: &'w Worker,
    command: u32,
    job: *mut (dyn FnMut() + Send + 'static),
    finished: bool,
}

impl Pending<'_> {
    /// Claim the job and run it here, or wait for the worker: whether it was done.
    #[inline]
    fn finish(mut self) -> bool {
        self.finished = true;
        if self.worker.claim(self.command) {
            // SAFETY: claimed here, so the worker never calls it; the job's frame is live.
            unsafe { (*self.job)() };
            true
        } else {
            self.worker.wait(self.command)
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.finished && !self.worker.claim(self.command) {
            self.worker.wait(self.command);
        }
    }
}

/// Row `k` of a `rows × w` row-major block.
#[inline]
fn n_row(v: &[f64], w: usize, k: usize) -> &[f64] {
    &v[k * w..(k + 1) * w]
}

/// Commands of the worker: run the posted job ([`TwoPartFactors::join`]), or end.
const JOB: u8 = 1;
const STOP: u8 = 2;

/// What the solving thread and the worker share: the command (a counter and its kind), the
/// job to run, and the worker's state.
struct Shared {
    /// Incremented (Release) by each command; the worker acts on each new value.
    command: AtomicU32,
    kind: AtomicU8,
    /// The last command the worker finished (Release).
    done: AtomicU32,
    /// The last command taken up, by the worker or by the solving thread (each command by
    /// the first of them to move this from its number − 1 to its number).
    claim: AtomicU32,
    /// The job of the last [`JOB`] command: a closure on the posting thread's stack, valid
    /// from the command until its `done` ([`TwoPartFactors::join`]).
    job: UnsafeCell<Option<*mut (dyn FnMut() + Send + 'static)>>,
    /// The worker is parked or about to (the poster then unparks it).
    parked: AtomicBool,
    /// A command panicked: the worker has ended.
    failed: AtomicBool,
    inject_panic: AtomicBool,
}

// SAFETY: `job` is written by the posting thread before a command (Release) and read by the
// worker after it (Acquire), and the posting thread writes it again only after that command
// is done (`TwoPartFactors::join`); the job it points to is `Send`; everything else is atomic.
unsafe impl Sync for Shared {}
// SAFETY: as above; the pointer is only dereferenced under that hand-over.
unsafe impl Send for Shared {}

/// The worker thread of a [`TwoPartFactors`] (joined on drop).
struct Worker {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    /// The solving thread's count of commands posted.
    posted: AtomicU32,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("failed", &self.shared.failed.load(Ordering::Relaxed))
            .finish()
    }
}

impl Worker {
    /// Start the worker; `None` when the thread cannot be spawned.
    fn start() -> Option<Self> {
        let shared = Arc::new(Shared {
            command: AtomicU32::new(0),
            kind: AtomicU8::new(0),
            done: AtomicU32::new(0),
            claim: AtomicU32::new(0),
            job: UnsafeCell::new(None),
            parked: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            inject_panic: AtomicBool::new(false),
        });
        let theirs = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("hybridsim-solve".into())
            .spawn(move || work(&theirs))
            .ok()?;
        Some(Self {
            shared,
            handle: Some(handle),
            posted: AtomicU32::new(0),
        })
    }

    /// Post a command of `kind`; its number.
    #[inline]
    fn post(&self, kind: u8) -> u32 {
        let c = self.posted.load(Ordering::Relaxed).wrapping_add(1);
        self.posted.store(c, Ordering::Relaxed);
        self.shared.kind.store(kind, Ordering::Relaxed);
        self.shared.command.store(c, Ordering::SeqCst);
        if self.shared.parked.load(Ordering::SeqCst) {
            if let Some(h) = &self.handle {
                h.thread().unpark();
            }
        }
        c
    }

    /// Take up command `c` on the solving thread: `true` when the worker had not taken it
    /// up (it then leaves it alone).
    #[inline]
    fn claim(&self, c: u32) -> bool {
        self.shared
            .claim
            .compare_exchange(c.wrapping_sub(1), c, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Wait for command `c`, taken up by the worker: `false` when it failed instead.
    #[inline]
    fn wait(&self, c: u32) -> bool {
        let mut spins = 0u32;
        loop {
            if self.shared.done.load(Ordering::Acquire) == c {
                return !self.shared.failed.load(Ordering::Acquire);
            }
            if self.shared.failed.load(Ordering::Acquire) {
                return false;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) {
                if self.handle.as_ref().is_none_or(|h| h.is_finished())
                    && self.shared.done.load(Ordering::Acquire) != c
                {
                    self.shared.failed.store(true, Ordering::Release);
                    return false;
                }
                // The worker may be waiting for this core (more threads than cores).
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.post(STOP);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The worker's loop: wait for a command (spinning, then parked), run it, report it done.
fn work(shared: &Shared) {
    let mut seen = 0u32;
    loop {
        let mut since: Option<Instant> = None;
        let mut spins = 0u32;
        let c = loop {
            let c = shared.command.load(Ordering::Acquire);
            if c != seen {
                break c;
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(256) {
                std::hint::spin_loop();
                continue;
            }
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() < SPIN_BEFORE_PARKING {
                std::hint::spin_loop();
                continue;
            }
            shared.parked.store(true, Ordering::SeqCst);
            if shared.command.load(Ordering::SeqCst) == seen {
                std::thread::park();
            }
            shared.parked.store(false, Ordering::SeqCst);
        };
        seen = c;
        let kind = shared.kind.load(Ordering::Relaxed);
        if kind == STOP {
            return;
        }
        if shared
            .claim
            .compare_exchange(c.wrapping_sub(1), c, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // The solving thread took this command up itself.
            continue;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if shared.inject_panic.swap(false, Ordering::AcqRel) {
                panic!("hybridsim-solve: injected panic");
            }
            // SAFETY: the posting thread stored the job before this command (Release,
            // observed above with Acquire), claimed here, and keeps its frame until `done`.
            if let Some(job) = unsafe { *shared.job.get() } {
                unsafe { (*job)() };
            }
        }));
        if outcome.is_err() {
            shared.failed.store(true, Ordering::Release);
            shared.done.store(c, Ordering::Release);
            return;
        }
        shared.done.store(c, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64) / ((1u64 << 53) as f64) - 0.5
    }

    /// A random symmetric positive definite matrix of band `bw` (diagonally dominant).
    fn banded(n: usize, bw: usize, seed: u64) -> CompressedRows {
        let mut s = seed;
        let mut entries = Vec::new();
        let mut diag = vec![0.0; n];
        for i in 0..n {
            for j in i.saturating_sub(bw)..i {
                let v = lcg(&mut s);
                if v.abs() < 0.05 {
                    continue;
                }
                entries.push((i, j, v));
                entries.push((j, i, v));
                diag[i] += v.abs();
                diag[j] += v.abs();
            }
        }
        for (i, d) in diag.iter().enumerate() {
            entries.push((i, i, d + 0.5 + lcg(&mut s).abs()));
        }
        CompressedRows::from_entries(n, &entries)
    }

    /// A plane frame's stiffness-like matrix: `floors` floors of `per` DOFs, each DOF coupled
    /// to its floor's neighbours and to the same and adjacent DOFs of the next floor.
    fn floors(floors: usize, per: usize) -> CompressedRows {
        let n = floors * per;
        let mut entries = Vec::new();
        let mut s = 7u64;
        let mut diag = vec![1.0; n];
        let mut couple = |a: usize, b: usize, v: f64, e: &mut Vec<(usize, usize, f64)>| {
            e.push((a, b, v));
            e.push((b, a, v));
            diag[a] += 1.01 * v.abs();
            diag[b] += 1.01 * v.abs();
        };
        for f in 0..floors {
            for k in 0..per {
                let i = f * per + k;
                if k + 1 < per {
                    couple(i, i + 1, -1.0 + 0.3 * lcg(&mut s), &mut entries);
                }
                if f + 1 < floors {
                    for d in [0usize, 1, 2] {
                        if k + d < per {
                            couple(i, i + per + d, -0.5 + 0.2 * lcg(&mut s), &mut entries);
                        }
                    }
                }
            }
        }
        for (i, d) in diag.iter().enumerate() {
            entries.push((i, i, *d));
        }
        CompressedRows::from_entries(n, &entries)
    }

    fn multiply(e: &CompressedRows, x: &[f64]) -> Vec<f64> {
        (0..e.n_rows())
            .map(|i| {
                let (c, v) = e.row(i);
                c.iter().zip(v).map(|(&j, a)| a * x[j as usize]).sum()
            })
            .collect()
    }

    fn check(e: &CompressedRows, seed: u64) {
        let n = e.n_rows();
        let mut s = seed;
        let exact: Vec<f64> = (0..n).map(|_| lcg(&mut s)).collect();
        let b = multiply(e, &exact);
        let one = SymmetricFactors::from_rows(e).expect("one-part factor");
        let two = TwoPartFactors::from_rows(e, false).expect("two-part factor");
        let threaded = TwoPartFactors::from_rows(e, true).expect("two-part factor, worker");
        assert!(threaded.has_worker() && !two.has_worker());
        let (na, nb, m) = two.sizes();
        assert_eq!(na + nb + m, n);
        assert!(m < n / 4 && na > n / 4 && nb > n / 4, "{na} {nb} {m}");
        let mut x1 = b.clone();
        one.solve(&mut x1);
        let scale = exact.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for round in 0..3 {
            let mut x2 = b.clone();
            assert!(two.solve(&mut x2));
            let mut x3 = b.clone();
            assert!(threaded.solve(&mut x3));
            // The worker runs the same operations: the same bits.
            assert!(
                x2.iter().zip(&x3).all(|(a, b)| a.to_bits() == b.to_bits()),
                "round {round}"
            );
            let worst = x1
                .iter()
                .zip(&x2)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                worst <= 1e-12 * scale,
                "two-part against one-part: {worst:e}"
            );
            let err = exact
                .iter()
                .zip(&x2)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                err <= 1e-10 * scale,
                "two-part against the exact solution: {err:e}"
            );
        }
    }

    #[test]
    fn two_part_solves_equal_the_one_part_solve_to_round_off() {
        for (n, bw, seed) in [(200, 9, 1), (777, 17, 2), (1500, 33, 3), (3001, 40, 4)] {
            check(&banded(n, bw, seed), seed);
        }
        check(&floors(60, 33), 5);
        check(&floors(151, 33), 6);
    }

    #[test]
    fn narrow_or_indefinite_matrices_are_refused() {
        // A chain (band 1): its parts are not stored by blocks.
        assert!(TwoPartFactors::from_rows(&banded(500, 1, 9), false).is_none());
        // Too small.
        assert!(TwoPartFactors::from_rows(&banded(40, 9, 9), false).is_none());
        // Not positive definite.
        let mut e = banded(400, 12, 10);
        e.add(300, 300, -1e6);
        assert!(TwoPartFactors::from_rows(&e, false).is_none());
    }

    #[test]
    fn a_panic_of_the_worker_fails_the_solve_instead_of_hanging() {
        let e = floors(40, 33);
        let t = TwoPartFactors::from_rows(&e, true).unwrap();
        let b = vec![1.0; e.n_rows()];
        let mut x = b.clone();
        assert!(t.solve(&mut x) && !t.has_failed());
        t.inject_worker_panic();
        // The panic fires in the first command the worker takes up (the solving thread takes
        // up those the worker has not reached yet).
        let mut x = b.clone();
        let mut solves = 0;
        while t.solve(&mut x) {
            solves += 1;
            assert!(solves < 100_000, "the worker never took a command up");
            x.copy_from_slice(&b);
        }
        assert!(t.has_failed() && x.iter().all(|v| v.is_nan()));
        // Every later solve fails too (the worker has ended).
        let mut x = b.clone();
        assert!(!t.solve(&mut x));
        // A copy has no worker and solves.
        let mut x = b;
        assert!(t.clone().solve(&mut x) && x.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn the_worker_is_woken_from_parking() {
        let e = floors(40, 33);
        let t = TwoPartFactors::from_rows(&e, true).unwrap();
        let b = vec![1.0; e.n_rows()];
        let mut first = b.clone();
        assert!(t.solve(&mut first));
        std::thread::sleep(SPIN_BEFORE_PARKING * 10);
        let mut again = b;
        assert!(t.solve(&mut again));
        assert!(first
            .iter()
            .zip(&again)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
