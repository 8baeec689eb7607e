//! Linear algebra the integrators share: `D⁻¹` through skyline LU factors of a matrix
//! renumbered by reverse Cuthill–McKee, factorized once and solved many times without
//! allocating; the sparse matrices they are built from in compressed rows ([`CompressedRows`]).

use nalgebra::DMatrix;

mod compressed;
mod two_part;
pub use compressed::CompressedRows;
pub use two_part::{TwoPartFactors, MAX_SEPARATOR};

/// The distinct values of a list of `f64` in a table, each with its 16-bit place there, found
/// by its bits (the value read back from the table is the one stored, bit for bit): the value
/// table of the 4-bytes-an-entry layouts of the Rayleigh element's `C` and of the fused
/// residual run's terms (issue 20).
#[derive(Debug, Default)]
pub(crate) struct DistinctValues {
    places: std::collections::HashMap<u64, u16>,
    table: Vec<f64>,
}

impl DistinctValues {
    /// The place of `v` in the table, added when new; `None` when it is new and the table
    /// already holds 2¹⁶ values.
    pub(crate) fn place(&mut self, v: f64) -> Option<u16> {
        if let Some(&p) = self.places.get(&v.to_bits()) {
            return Some(p);
        }
        let p = u16::try_from(self.table.len()).ok()?;
        self.places.insert(v.to_bits(), p);
        self.table.push(v);
        Some(p)
    }

    /// The table, each distinct value at its place, at its exact size.
    pub(crate) fn into_table(self) -> Vec<f64> {
        let mut table = self.table;
        table.shrink_to_fit();
        table
    }
}

/// `D⁻¹` applied through an LU factorization with partial pivoting, stored in skyline form
/// (per column, the contiguous run of rows from the diagonal to the farthest nonzero entry),
/// allocation-free.
///
/// `D = M + c J0` (Abbiati et al. 2019, eq 12) of a structural model is sparse, but in the
/// `[u; v; s]` order partial pivoting fills the factors in completely (the `c K` rows outweigh the
/// identity rows of `u̇ = v`). The unknowns are therefore first renumbered symmetrically by reverse
/// Cuthill–McKee on the pattern of `D + Dᵀ` (a chain then becomes banded, and pivoting keeps the
/// factors within a band of about twice its width); the renumbering is kept only when its
/// skyline is smaller than that of the natural order.
///
/// [`FactoredMatrix::solve`] performs exactly the floating-point operations of nalgebra's
/// `LU::solve_mut` on the factors of the (renumbered) matrix — row swaps, the unit-lower
/// column sweep `x[i+1..] −= x[i] L[i+1.., i]`, then `x[i] /= U[i,i]`,
/// `x[..i] −= x[i] U[..i, i]` — in the same order, minus the terms outside the skyline, whose
/// factor entries are exact zeros. Without renumbering its results equal nalgebra's to the last
/// bit; with it, to round-off. The runs are contiguous, so the sweeps vectorize.
#[derive(Debug, Clone)]
pub struct FactoredMatrix {
    /// Swaps applied in order to `b` before the sweeps: the renumbering, then `P`.
    pre_swaps: Vec<[u32; 2]>,
    /// Swaps applied in order to the solution after the sweeps (the inverse renumbering).
    post_swaps: Vec<[u32; 2]>,
    /// Column `i` of `L` below the diagonal: rows `i + 1 .. i + 1 + (l_ptr[i+1] − l_ptr[i])` in
    /// `l_val[l_ptr[i]..l_ptr[i+1]]` (8 bytes an entry; the skyline makes each run contiguous).
    l_ptr: Vec<usize>,
    l_val: Vec<f64>,
    /// Column `i` of `U` above the diagonal: rows `u_first[i] .. i` in
    /// `u_val[u_ptr[i]..u_ptr[i+1]]`.
    u_ptr: Vec<usize>,
    u_first: Vec<usize>,
    u_val: Vec<f64>,
    /// Diagonal of `U`.
    diag: Vec<f64>,
}

/// A bound on the work of a band LU of the matrix `d` with its unknowns renumbered by
/// `position` (unknown `i` to `position[i]`; the given order when `None`): the lower bandwidth
/// times the total width of the rows' windows.
fn profile_cost(d: &CompressedRows, position: Option<&[usize]>) -> f64 {
    let n = d.n_rows();
    let at = |i: usize| position.map_or(i, |p| p[i]);
    let mut span: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
    let mut lower = 0usize;
    for (i, j, _) in d.iter() {
        let (i, j) = (at(i), at(j));
        span[i] = (span[i].0.min(j), span[i].1.max(j));
        lower = lower.max(i.saturating_sub(j));
    }
    let width: usize = span.iter().map(|(a, b)| b - a + 1).sum();
    (lower + 1) as f64 * width as f64
}

/// The position of each unknown in `order` (`position[order[p]] = p`).
fn positions(order: &[usize]) -> Vec<usize> {
    let mut position = vec![0; order.len()];
    for (p, &o) in order.iter().enumerate() {
        position[o] = p;
    }
    position
}

/// Swaps that, applied in order to a vector `b`, leave `b[gather[0]], b[gather[1]], …`: two
/// 32-bit positions a swap (issue 20: memory a DOF; a factored matrix's rows are 32-bit
/// columns of [`CompressedRows`]).
fn gather_swaps(gather: &[usize]) -> Vec<[u32; 2]> {
    let n = gather.len();
    // 32-bit positions, as the swaps' (issue 20: the transients count at the peak too).
    let mut at: Vec<u32> = (0..n as u32).collect(); // at[p]: original entry now at position p
    let mut pos: Vec<u32> = (0..n as u32).collect(); // pos[r]: position of original entry r
    let mut swaps = Vec::new();
    for (i, &g) in gather.iter().enumerate() {
        let j = pos[g] as usize;
        if j != i {
            swaps.push([i, j].map(|k| k as u32));
            let (ri, rj) = (at[i] as usize, at[j] as usize);
            at.swap(i, j);
            pos[ri] = j as u32;
            pos[rj] = i as u32;
        }
    }
    // Kept for the whole run: without the slack of the pushes (up to as much again).
    drop((at, pos));
    swaps.shrink_to_fit();
    swaps
}

/// Reverse Cuthill–McKee order (Cuthill & McKee 1969; reversed as in George 1971) of the
/// symmetric pattern of `d + dᵀ`, given as the off-diagonal neighbour lists of the `n`
/// unknowns (every connected component from a vertex of minimum degree, neighbours by
/// increasing degree). `O(nnz log nnz)`.
fn reverse_cuthill_mckee(adj: &Pattern) -> Vec<usize> {
    let n = adj.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    // Unvisited vertices by increasing degree (then index), for the start of each component.
    let mut by_degree: Vec<usize> = (0..n).collect();
    by_degree.sort_by_key(|&i| (adj.degree(i), i));
    let mut cursor = 0;
    let mut next: Vec<usize> = Vec::new();
    while order.len() < n {
        while seen[by_degree[cursor]] {
            cursor += 1;
        }
        let start = by_degree[cursor];
        seen[start] = true;
        let mut head = order.len();
        order.push(start);
        while head < order.len() {
            let v = order[head];
            head += 1;
            next.clear();
            next.extend(adj[v].iter().map(|&w| w as usize).filter(|&w| !seen[w]));
            next.sort_by_key(|&w| (adj.degree(w), w));
            for &w in &next {
                seen[w] = true;
                order.push(w);
            }
        }
    }
    order.reverse();
    order
}

/// The off-diagonal neighbour lists of the symmetric pattern of `d + dᵀ`, each ascending, all
/// in one array of 32-bit indices: unknown `i`'s neighbours are
/// `adjacent[start[i]..start[i + 1]]` (no vector a row).
struct Pattern {
    start: Vec<usize>,
    adjacent: Vec<u32>,
}

impl Pattern {
    /// The pattern of `d + dᵀ` (zeros ignored), filled in two passes over `d`.
    fn of(d: &CompressedRows) -> Self {
        let n = d.n_rows();
        let mut start = vec![0usize; n + 1];
        for (i, j, v) in d.iter() {
            if i != j && v != 0.0 {
                start[i + 1] += 1;
                start[j + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut adjacent = vec![0u32; start[n]];
        let mut next = start.clone();
        for (i, j, v) in d.iter() {
            if i != j && v != 0.0 {
                adjacent[next[i]] = j as u32;
                next[i] += 1;
                adjacent[next[j]] = i as u32;
                next[j] += 1;
            }
        }
        drop(next);
        // Each list ascending, repeats removed, compacted to the left.
        let mut write = 0;
        for i in 0..n {
            let (lo, hi) = (start[i], start[i + 1]);
            start[i] = write;
            adjacent[lo..hi].sort_unstable();
            let mut last = None;
            for k in lo..hi {
                let w = adjacent[k];
                if last != Some(w) {
                    adjacent[write] = w;
                    write += 1;
                    last = Some(w);
                }
            }
        }
        start[n] = write;
        // Each pair was written twice: without the repeats' room (up to as much again).
        adjacent.truncate(write);
        adjacent.shrink_to_fit();
        Self { start, adjacent }
    }

    /// Number of unknowns.
    fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// Number of neighbours of unknown `i`.
    fn degree(&self, i: usize) -> usize {
        self.start[i + 1] - self.start[i]
    }
}

impl std::ops::Index<usize> for Pattern {
    type Output = [u32];
    /// The neighbours of unknown `i`, ascending.
    fn index(&self, i: usize) -> &[u32] {
        &self.adjacent[self.start[i]..self.start[i + 1]]
    }
}

/// A row of the band LU under way: its entries in columns `start .. start + values.len()`.
#[derive(Debug, Clone, Default)]
struct BandRow {
    start: usize,
    values: Vec<f64>,
}

impl BandRow {
    #[inline]
    fn get(&self, col: usize) -> f64 {
        if col < self.start {
            return 0.0;
        }
        self.values.get(col - self.start).copied().unwrap_or(0.0)
    }

    /// Make the row cover columns up to `end` (exclusive), padding with zeros.
    fn cover(&mut self, end: usize) {
        if self.start + self.values.len() < end {
            self.values.resize(end - self.start, 0.0);
        }
    }
}

/// Unknowns below which [`FactoredMatrix`] compares the skylines of both orders by factoring
/// both (the choice of every existing model); above, by the profile of the pattern alone.
const FACTOR_BOTH_BELOW: usize = 512;

impl FactoredMatrix {
    /// The factors of a 0×0 matrix (a placeholder). Allocation-free.
    pub fn empty() -> Self {
        Self {
            pre_swaps: Vec::new(),
            post_swaps: Vec::new(),
            l_ptr: Vec::new(),
            l_val: Vec::new(),
            u_ptr: Vec::new(),
            u_first: Vec::new(),
            u_val: Vec::new(),
            diag: Vec::new(),
        }
    }
}

impl FactoredMatrix {
    /// Factorize `d`; `None` when it is singular.
    pub fn new(d: &DMatrix<f64>) -> Option<Self> {
        assert_eq!(d.nrows(), d.ncols(), "FactoredMatrix: a square matrix");
        let n = d.nrows();
        let mut entries = Vec::new();
        for i in 0..n {
            for j in 0..n {
                if d[(i, j)] != 0.0 {
                    entries.push((i, j, d[(i, j)]));
                }
            }
        }
        Self::from_entries(n, &entries)
    }

    /// Factorize the `n × n` matrix with nonzero entries `(row, column, value)` (each entry
    /// given once; zeros ignored); `None` when it is singular: [`FactoredMatrix::from_rows`]
    /// of the entries in compressed rows.
    pub fn from_entries(n: usize, entries: &[(usize, usize, f64)]) -> Option<Self> {
        Self::from_rows(&CompressedRows::from_entries(n, entries))
    }

    /// Factorize the square matrix `d` (its nonzero entries; zeros ignored); `None` when it is
    /// singular. Nothing dense is formed: the factorization is a band LU with partial pivoting
    /// in the reverse Cuthill–McKee order (or the natural one when its skyline is smaller),
    /// `O(n b²)` for a bandwidth `b`. The renumbered matrix is read through the permutation,
    /// not copied.
    ///
    /// The factors are those nalgebra's dense `LU` computes for the same (renumbered) matrix,
    /// to the last bit: the same pivots (first largest magnitude in the column), the same
    /// multipliers `a · (1/pivot)` and the same updates `a − u l`, skipping only the updates
    /// whose multiplier or pivot-row entry is an exact zero.
    pub fn from_rows(d: &CompressedRows) -> Option<Self> {
        let n = d.n_rows();
        let order = reverse_cuthill_mckee(&Pattern::of(d));
        let identity = order.iter().enumerate().all(|(i, &o)| i == o);
        if identity {
            return Self::with_order(d, None);
        }
        if n < FACTOR_BOTH_BELOW {
            let natural = Self::with_order(d, None)?;
            return match Self::with_order(d, Some(&order)) {
                Some(r) if r.stored() < natural.stored() => Some(r),
                _ => Some(natural),
            };
        }
        let position = positions(&order);
        if profile_cost(d, Some(&position)) <= profile_cost(d, None) {
            drop(position);
            Self::with_order(d, Some(&order))
        } else {
            Self::with_order(d, None)
        }
    }

    /// Stored factor entries (the cost of a solve).
    pub fn stored(&self) -> usize {
        self.l_val.len() + self.u_val.len()
    }

    /// The bound on the band LU's work that [`FactoredMatrix::from_rows`] compares between
    /// orders (lower bandwidth × total row width), for the order it would take; without
    /// factoring. The pattern is freed once the order is found, and the order once its positions are
    /// (issue 20: the start-up's transients).
    fn estimated_cost(d: &CompressedRows) -> f64 {
        let order = reverse_cuthill_mckee(&Pattern::of(d));
        let position = positions(&order);
        drop(order);
        profile_cost(d, Some(&position)).min(profile_cost(d, None))
    }

    /// Factorize `d` renumbered by `order` (unknown `order[p]` at position `p`), if any.
    fn with_order(d: &CompressedRows, order: Option<&[usize]>) -> Option<Self> {
        let n = d.n_rows();
        let position = order.map(positions);
        let at = |i: usize| position.as_ref().map_or(i, |p| p[i]);
        // Rows as contiguous windows from their first to their last nonzero column.
        let mut rows: Vec<BandRow> = vec![BandRow::default(); n];
        let mut span: Vec<(usize, usize)> = vec![(usize::MAX, 0); n];
        for (i, j, v) in d.iter() {
            if v != 0.0 {
                let (i, j) = (at(i), at(j));
                span[i] = (span[i].0.min(j), span[i].1.max(j + 1));
            }
        }
        for (row, &(lo, hi)) in rows.iter_mut().zip(&span) {
            if lo < hi {
                row.start = lo;
                row.values = vec![0.0; hi - lo];
            }
        }
        for (i, j, v) in d.iter() {
            if v != 0.0 {
                let (i, j) = (at(i), at(j));
                let r = &mut rows[i];
                r.values[j - r.start] += v;
            }
        }
        drop(position);
        // The last row that can hold a nonzero in column i: the last original row whose
        // window starts at or left of i (rows move only among the candidates of earlier
        // columns, and fill only extends windows to the right).
        let mut reach = vec![0usize; n];
        for (q, &(lo, _)) in span.iter().enumerate() {
            if lo < n {
                reach[lo] = reach[lo].max(q);
            }
        }
        let mut swaps: Vec<(usize, usize)> = Vec::new();
        let mut last = 0usize;
        for i in 0..n {
            last = last.max(reach[i]).max(i);
            // Pivot: the first entry of largest magnitude in column i, rows i..=last.
            let mut piv = i;
            let mut best = rows[i].get(i).abs();
            for (r, row) in rows.iter().enumerate().take(last + 1).skip(i + 1) {
                let val = row.get(i).abs();
                if val > best {
                    best = val;
                    piv = r;
                }
            }
            let diag = rows[piv].get(i);
            if diag == 0.0 {
                return None;
            }
            if piv != i {
                swaps.push((i, piv));
                rows.swap(i, piv);
            }
            let inv_diag = 1.0 / diag;
            let (top, below) = rows.split_at_mut(i + 1);
            let pivot_row = &top[i];
            let pivot_end = pivot_row.start + pivot_row.values.len();
            for row in below.iter_mut().take(last - i) {
                let a = row.get(i);
                if a == 0.0 {
                    continue;
                }
                let l = a * inv_diag;
                row.values[i - row.start] = l;
                row.cover(pivot_end);
                let offset = row.start;
                for k in i + 1..pivot_end {
                    let u = pivot_row.values[k - pivot_row.start];
                    if u != 0.0 {
                        let y = &mut row.values[k - offset];
                        *y += -u * l;
                    }
                }
            }
        }
        // The gather order of P (P b = b[perm]), realized by swaps.
        let mut perm: Vec<usize> = (0..n).collect();
        for &(i, j) in &swaps {
            perm.swap(i, j);
        }
        let (mut pre_swaps, mut post_swaps): (Vec<[u32; 2]>, Vec<[u32; 2]>) = match order {
            Some(o) => {
                let q = gather_swaps(o);
                let post = q.iter().rev().copied().collect();
                (q, post)
            }
            None => (Vec::new(), Vec::new()),
        };
        pre_swaps.extend(gather_swaps(&perm));
        post_swaps.shrink_to_fit();
        // Skylines: per column, the farthest nonzero of L below and of U above the diagonal.
        let mut l_end: Vec<usize> = (0..n).map(|i| i + 1).collect();
        let mut u_first: Vec<usize> = (0..n).collect();
        for (r, row) in rows.iter().enumerate() {
            for (t, &v) in row.values.iter().enumerate() {
                let c = row.start + t;
                if v == 0.0 {
                    continue;
                }
                if c < r {
                    l_end[c] = l_end[c].max(r + 1);
                } else if c > r {
                    u_first[c] = u_first[c].min(r);
                }
            }
        }
        let mut f = Self {
            pre_swaps,
            post_swaps,
            l_ptr: Vec::with_capacity(n + 1),
            l_val: Vec::with_capacity((0..n).map(|i| l_end[i] - i - 1).sum()),
            u_ptr: Vec::with_capacity(n + 1),
            u_first: Vec::with_capacity(n),
            u_val: Vec::new(),
            diag: (0..n).map(|i| rows[i].get(i)).collect(),
        };
        f.u_val.reserve_exact((0..n).map(|i| i - u_first[i]).sum());
        f.u_ptr.push(0);
        f.l_ptr.push(0);
        for i in 0..n {
            f.l_val.extend((i + 1..l_end[i]).map(|r| rows[r].get(i)));
            f.l_ptr.push(f.l_val.len());
            f.u_first.push(u_first[i]);
            f.u_val.extend((u_first[i]..i).map(|r| rows[r].get(i)));
            f.u_ptr.push(f.u_val.len());
        }
        Some(f)
    }

    /// Solve `D x = b` in place (`x` holds `b` on entry). Allocation-free.
    #[inline]
    pub fn solve(&self, x: &mut [f64]) {
        let n = self.diag.len();
        assert_eq!(x.len(), n, "FactoredMatrix::solve: dimension mismatch");
        for &[i, j] in &self.pre_swaps {
            x.swap(i as usize, j as usize);
        }
        // Lower sweep, column by column: the entries of column `i` only change rows > i, so
        // `x[i]` is final when they are applied.
        for i in 0..n {
            let col = &self.l_val[self.l_ptr[i]..self.l_ptr[i + 1]];
            let xi = x[i];
            for (xr, l) in x[i + 1..i + 1 + col.len()].iter_mut().zip(col) {
                *xr -= xi * l;
            }
        }
        for i in (0..n).rev() {
            let c = x[i] / self.diag[i];
            x[i] = c;
            let col = &self.u_val[self.u_ptr[i]..self.u_ptr[i + 1]];
            let first = self.u_first[i];
            for (xr, u) in x[first..i].iter_mut().zip(col) {
                *xr -= c * u;
            }
        }
        for &[i, j] in &self.post_swaps {
            x.swap(i as usize, j as usize);
        }
    }
}

/// `A⁻¹` of a symmetric positive definite matrix through its `L D Lᵀ` factorization without
/// pivoting (`L` unit lower triangular, `D` diagonal), stored by rows over the envelope of the
/// lower triangle — each row from its first nonzero column to the diagonal, the fill of the
/// factorization staying inside it (Jennings 1966; George & Liu 1981, ch. 4) — in reverse
/// Cuthill–McKee order (or the natural one when its envelope is smaller). Allocation-free
/// solves.
///
/// Against [`FactoredMatrix`]'s band LU with partial pivoting of the same matrix it stores one
/// triangle instead of two, needs no row exchanges (which widen `U` beyond the band), and its
/// factorization does half the work. It is only built for a matrix that is symmetric (each
/// pair `a_ij`, `a_ji` equal to within 8 ε of the larger; the two are averaged) and whose
/// pivots `d_i` all come out positive (then the matrix is positive definite and the
/// factorization backward stable without pivoting, Higham 2002, §10.1):
/// [`SymmetricFactors::from_entries`] returns `None` otherwise, and the caller keeps the LU.
#[derive(Debug, Clone)]
pub struct SymmetricFactors {
    /// Swaps applied in order to `b` before the sweeps (the renumbering), and in reverse
    /// order to the solution after them (the inverse renumbering): one list, not two.
    swaps: Vec<[u32; 2]>,
    /// Row `r` of `L` left of the diagonal: columns `first[r] .. r` in
    /// `l_val[l_ptr[r]..l_ptr[r + 1]]` (empty when `blocks` holds `L`).
    first: Vec<usize>,
    l_ptr: Vec<usize>,
    l_val: Vec<f64>,
    /// Unknowns.
    n: usize,
    /// The pivots `d_r` (empty for the blocked sweeps unless asked for: they read only
    /// `inverse_diag`).
    diag: Vec<f64>,
    /// `1 / d_r` for the blocked sweeps (empty for the row-by-row ones, which divide).
    inverse_diag: Vec<f64>,
    /// Entries of `L` below the diagonal inside the envelope.
    stored: usize,
    /// `L` by blocks of [`BLOCK_ROWS`] rows, for envelopes of [`BLOCKED_FROM_MEAN_WIDTH`] or
    /// more entries a row on average.
    blocks: Option<BlockedFactor>,
}

/// Rows of `L` a block of [`BlockedFactor`] holds.
const BLOCK_ROWS: usize = 16;

/// The mean envelope width (entries of `L` a row) from which `L` is stored by blocks: below it
/// (a chain's 1–2) each row's sweep step is as short as a block's would be.
const BLOCKED_FROM_MEAN_WIDTH: usize = 8;

/// Values of a block's triangle strictly below the diagonal, column by column (column `j`
/// holds rows `j + 1 .. 16`, `15 − j` values): the lower triangle packed, without the zeros
/// above the diagonal of the four diagonal 4 × 4 tiles (issue 20: 120 values a block, not the
/// 160 of whole quads of rows, 2 MB less at 10⁵ DOFs). The sweeps load a diagonal tile's
/// column with a lane mask, which reads `+0` above the diagonal as the stored zeros did: the
/// same operations on the same numbers, the same bits.
const TRIANGLE: usize = BLOCK_ROWS * (BLOCK_ROWS - 1) / 2;

/// Where column `j` of a block's triangle starts in its [`TRIANGLE`] values (its row
/// `j + 1`).
#[inline(always)]
const fn triangle_column(j: usize) -> usize {
    j * (2 * BLOCK_ROWS - 1 - j) / 2
}

/// `L[s + i, s + j]` of a block's triangle `tri` (zero on and above the diagonal).
#[inline(always)]
fn triangle_entry(tri: &[f64], i: usize, j: usize) -> f64 {
    if i > j {
        tri[triangle_column(j) + i - j - 1]
    } else {
        0.0
    }
}

/// Lane masks of `_mm256_maskload_pd` for column `4 q + l` of a diagonal 4 × 4 tile: the
/// lanes below the diagonal, `l + 1 ..= 3`.
#[cfg(target_arch = "x86_64")]
const BELOW_DIAGONAL: [[i64; 4]; 4] = [[0, -1, -1, -1], [0, 0, -1, -1], [0, 0, 0, -1], [0; 4]];

/// `L` of [`SymmetricFactors`] in blocks of [`BLOCK_ROWS`] consecutive rows (the last one
/// shorter), so that the sweeps apply most of `L` as dense matrix–vector products of
/// independent rows instead of row after row, each waiting on the previous row's unknown — the
/// blocked (supernodal) triangular solves of dense linear algebra (Golub & Van Loan 2013,
/// §3.1; Dongarra et al. 1990). Block `b` holds rows `s = 16 b .. e`, `h = e − s` of them:
/// - its panel, the columns `panel_first[b] .. s` of those rows, by columns, the width
///   `w = s − panel_first[b]` a multiple of four. Row `s + i` of the envelope starts at its
///   own first column, so a column holds nonzeros in a leading run of the block's rows that
///   only grows from one column to the next (a staircase): each group of four columns is
///   stored down to the last quad of rows any of its four columns reaches, `k + 1` quads
///   (`4 (k + 1)` values a column) for the columns `steps[b][k] .. steps[b][k + 1]` (relative
///   to `panel_first[b]`, `steps[b][0] = 0`, `steps[b][4] = w`). The entries left out are the
///   zeros outside the envelope: the sweeps skip only multiply-adds by zero;
/// - its diagonal triangle `L[s.., s..]` as 16 × 16 with zeros above the diagonal and beyond
///   row `h`, once, by columns below the diagonal ([`TRIANGLE`] values) in the order the
///   forward sweep reads it; the backward sweep, by rows, transposes its 4 × 4 tiles in
///   registers.
///   The block's sixteen unknowns stay in four registers and each row of either sweep waits
///   on one lane broadcast and one fused multiply-add of the previous one.
///
/// Block `b`'s values start at `offset[b]`: the panel's `4 Σ_k (k + 1) (steps[b][k + 1] −
/// steps[b][k])`, then the triangle.
#[derive(Debug, Clone)]
struct BlockedFactor {
    panel_first: Vec<usize>,
    steps: Vec<[u32; 5]>,
    offset: Vec<usize>,
    values: Vec<f64>,
}

impl BlockedFactor {
    /// Rows `s .. e` of block `b` of an `n`-row factor.
    #[inline(always)]
    fn rows(b: usize, n: usize) -> (usize, usize) {
        let s = b * BLOCK_ROWS;
        (s, (s + BLOCK_ROWS).min(n))
    }

    /// Values of a panel whose columns change quad counts at `steps`.
    fn panel_size(steps: &[u32; 5]) -> usize {
        (0..4)
            .map(|k| 4 * (k + 1) * (steps[k + 1] - steps[k]) as usize)
            .sum()
    }

    /// The blocks of a factor whose row `r` starts at column `first[r]`, allocated at their
    /// size and zero (see [`SymmetricFactors`]); [`BlockedFactor::fill`] writes each.
    fn with_layout(first: &[usize]) -> Self {
        let n = first.len();
        let blocks = n.div_ceil(BLOCK_ROWS);
        let mut panel_first = Vec::with_capacity(blocks);
        let mut steps = Vec::with_capacity(blocks);
        let mut offset = Vec::with_capacity(blocks + 1);
        let mut size = 0;
        for b in 0..blocks {
            let (s, e) = Self::rows(b, n);
            let lowest = first[s..e].iter().copied().min().unwrap_or(s).min(s);
            // s is a multiple of 4 and s − lowest ≤ s, so the rounded width stays ≥ 0.
            let w = (s - lowest).div_ceil(4) * 4;
            let p = s - w;
            // Quads a group of four columns from p + g reaches: the last row whose envelope
            // starts at or left of the group's last column.
            let quads = |g: usize| {
                let last = (s..e).rev().find(|&r| first[r] <= p + g + 3);
                last.map_or(1, |r| (r - s) / 4 + 1)
            };
            let mut step = [0u32, 0, 0, 0, w as u32];
            for k in 1..4 {
                let mut g = step[k - 1] as usize;
                while g < w && quads(g) <= k {
                    g += 4;
                }
                step[k] = g as u32;
            }
            panel_first.push(p);
            steps.push(step);
            offset.push(size);
            size += Self::panel_size(&step) + TRIANGLE;
        }
        offset.push(size);
        Self {
            panel_first,
            steps,
            offset,
            values: vec![0.0; size],
        }
    }

    /// Write block `b` from its rows of `L`: `row(r)` is row `r`'s columns
    /// `first[r] .. r`.
    fn fill<'a>(&mut self, b: usize, first: &[usize], row: impl Fn(usize) -> &'a [f64]) {
        let n = first.len();
        let values = &mut self.values;
        let (s, e) = Self::rows(b, n);
        let p = self.panel_first[b];
        // L[s + i, s + j] inside the block's triangle (zero above the diagonal and beyond e).
        let entry = |i: usize, j: usize| {
            let r = s + i;
            if j >= i || r >= e || s + j < first[r] {
                0.0
            } else {
                row(r)[s + j - first[r]]
            }
        };
        let step = self.steps[b];
        let mut at = self.offset[b];
        for k in 0..4 {
            let height = 4 * (k + 1);
            for c in p + step[k] as usize..p + step[k + 1] as usize {
                for r in s..e {
                    if c >= first[r] {
                        debug_assert!(r - s < height);
                        values[at + (r - s)] = row(r)[c - first[r]];
                    }
                }
                at += height;
            }
        }
        for j in 0..BLOCK_ROWS {
            for i in j + 1..BLOCK_ROWS {
                values[at] = entry(i, j);
                at += 1;
            }
        }
        debug_assert_eq!(at, self.offset[b + 1]);
    }
}

/// Store a block's unknowns `x[s..s + h]` from the four AVX2 registers `y` (`xp`: `x`'s
/// pointer), through the 16-value buffer `bp` when the last block is shorter than 16 rows:
/// one text for both blocked sweeps. Expands to unsafe pointer writes: the caller's block
/// must lie inside `x` (`s + h ≤ n`).
#[cfg(target_arch = "x86_64")]
macro_rules! store_block {
    ($y:expr, $xp:expr, $bp:expr, $s:expr, $h:expr) => {
        if $h == BLOCK_ROWS {
            for (q, yq) in $y.iter().enumerate() {
                _mm256_storeu_pd($xp.add($s + 4 * q), *yq);
            }
        } else {
            for (q, yq) in $y.iter().enumerate() {
                _mm256_storeu_pd($bp.add(4 * q), *yq);
            }
            std::ptr::copy_nonoverlapping($bp as *const f64, $xp.add($s), $h);
        }
    };
}

/// `Σ a_k b_k` over two slices of equal length, in eight interleaved partial sums (so the
/// products of a band row pipeline, two registers of four, instead of waiting on one running
/// sum).
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            s[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in ra.iter().zip(rb).enumerate() {
        s[k] += x * y;
    }
    ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))
}

/// The forward sweep of a block's triangle (`tri`: [`TRIANGLE`] values) on its
/// unknowns `y`, column by column: `y_i −= L_ij y_j` for the rows of the quads from the one
/// holding row `j` down, once `y_j` is final (the entries of rows `≤ j` are zeros).
#[inline(always)]
fn forward_triangle(tri: &[f64], y: &mut [f64; BLOCK_ROWS]) {
    for j in 0..BLOCK_ROWS {
        let yj = y[j];
        for (i, yi) in y.iter_mut().enumerate().skip(4 * (j / 4)) {
            *yi = (-triangle_entry(tri, i, j)).mul_add(yj, *yi);
        }
    }
}

/// The backward sweep (`Lᵀ`) of a block's triangle (`tri`: [`TRIANGLE`] values, by columns) on
/// its unknowns `y`, row by row from the last: `y_j −= L_ij y_i` for the columns of the quads
/// up to the one holding column `i`, once `y_i` is final (the entries of columns `≥ i` are
/// zeros).
#[inline(always)]
fn backward_triangle(tri: &[f64], y: &mut [f64; BLOCK_ROWS]) {
    for i in (1..BLOCK_ROWS).rev() {
        let yi = y[i];
        for (j, yj) in y[..4 * (i / 4 + 1)].iter_mut().enumerate() {
            *yj = (-triangle_entry(tri, i, j)).mul_add(yi, *yj);
        }
    }
}

/// Apply the `swaps` to `x` in order, or in reverse order when `back` (undoing them), without
/// bounds checks.
///
/// # Safety
/// Every position in `swaps` must be below `x.len()`.
#[inline(always)]
unsafe fn swap_unchecked(x: &mut [f64], swaps: &[[u32; 2]], back: bool) {
    let p = x.as_mut_ptr();
    let swap = |[i, j]: [u32; 2]| {
        let (i, j) = (i as usize, j as usize);
        let a = *p.add(i);
        *p.add(i) = *p.add(j);
        *p.add(j) = a;
    };
    if back {
        swaps.iter().rev().copied().for_each(swap);
    } else {
        swaps.iter().copied().for_each(swap);
    }
}

/// Apply the `swaps` to `x` in order, or in reverse order when `back` (undoing them).
#[inline(always)]
fn apply_swaps(x: &mut [f64], swaps: &[[u32; 2]], back: bool) {
    let swap = |[i, j]: [u32; 2]| x.swap(i as usize, j as usize);
    if back {
        swaps.iter().rev().copied().for_each(swap);
    } else {
        swaps.iter().copied().for_each(swap);
    }
}

/// The first column of each row of the lower triangle `(row ≥ column)` of the symmetric
/// pattern of `d` renumbered by `position` (unknown `i` to `position[i]`; the given order when
/// `None`), zeros ignored: row `r` of the envelope spans columns `first[r] ..= r`.
fn lower_first(d: &CompressedRows, position: Option<&[usize]>) -> Vec<usize> {
    let at = |i: usize| position.map_or(i, |p| p[i]);
    let mut first: Vec<usize> = (0..d.n_rows()).collect();
    for (i, j, v) in d.iter() {
        if v != 0.0 {
            let (i, j) = (at(i), at(j));
            let (r, c) = if i >= j { (i, j) } else { (j, i) };
            first[r] = first[r].min(c);
        }
    }
    first
}

/// The sum of the row envelopes `Σ_r r − first_r` of [`lower_first`].
fn envelope(first: &[usize]) -> usize {
    first.iter().enumerate().map(|(r, f)| r - f).sum()
}

/// The value [`SymmetricFactors`] factors for the pair `a_ij`, `a_ji`: their mean when they
/// differ (`a_ij` when equal).
#[inline]
fn symmetric_value(a: f64, b: f64) -> f64 {
    if a != b {
        0.5 * (a + b)
    } else {
        a
    }
}

/// Where [`SymmetricFactors::factor`] reads the rows of the renumbered lower triangle.
enum Lower<'a> {
    /// The matrix itself, through the renumbering (`(order, position)` in 32 bits; the given
    /// order when `None`).
    Matrix {
        d: &'a CompressedRows,
        order: Option<(Vec<u32>, Vec<u32>)>,
    },
    /// The rows copied beforehand.
    Rows(&'a RenumberedLower),
}

/// `v` in 32 bits (the unknowns of a [`CompressedRows`] fit 32 bits, as its columns).
fn narrow(v: Vec<usize>) -> Vec<u32> {
    v.iter().map(|&i| i as u32).collect()
}

/// Row `r` of `d`'s lower triangle renumbered by `order` (`(order, position)`; the given order
/// when `None`), for [`Lower::row`]: the entries of its original row whose columns come at or
/// before it, zeros skipped, each pair below the diagonal as its mean.
#[inline]
fn renumbered_lower_row(
    d: &CompressedRows,
    order: Option<&(Vec<u32>, Vec<u32>)>,
    r: usize,
    mut entry: impl FnMut(usize, f64),
) {
    let o = order.map_or(r, |(o, _)| o[r] as usize);
    let at = |i: usize| order.map_or(i, |(_, q)| q[i] as usize);
    let (cols, vals) = d.row(o);
    for (&j, &v) in cols.iter().zip(vals) {
        let c = at(j as usize);
        if v == 0.0 || c > r {
            continue;
        }
        if c == r {
            entry(c, v);
        } else {
            entry(c, symmetric_value(v, d.get(j as usize, o)));
        }
    }
}

impl Lower<'_> {
    /// Row `r` of the renumbered lower triangle: `entry(c, v)` for each column `c ≤ r` of it
    /// (each once; the pair `a_ij`, `a_ji` as its mean [`symmetric_value`] below the
    /// diagonal), in the order of the original row's columns.
    #[inline]
    fn row(&self, r: usize, mut entry: impl FnMut(usize, f64)) {
        match self {
            Self::Matrix { d, order } => renumbered_lower_row(d, order.as_ref(), r, entry),
            Self::Rows(rows) => {
                let (lo, hi) = (rows.start[r], rows.start[r + 1]);
                for (&c, &v) in rows.columns[lo..hi].iter().zip(&rows.values[lo..hi]) {
                    entry(c as usize, v);
                }
            }
        }
    }
}

/// The lower triangle (diagonal included) of an exactly symmetric matrix renumbered for
/// [`SymmetricFactors`]: row `r` holds the columns `c ≤ r` and values
/// `columns[k]`, `values[k]` for `k` in `start[r]..start[r + 1]`, in the order of the original
/// row's columns; about half the entries of the matrix (issue 20: what the factorization
/// reads, freed of the other half before the factor is allocated).
struct RenumberedLower {
    start: Vec<usize>,
    columns: Vec<u32>,
    values: Vec<f64>,
}

impl RenumberedLower {
    /// Whether every stored entry of `d` is finite and nonzero and equals its transpose to
    /// the bit (then the lower triangle gives `d` back exactly, [`RenumberedLower::matrix`]).
    fn exactly_symmetric(d: &CompressedRows) -> bool {
        d.iter().all(|(i, j, v)| {
            v != 0.0 && v.is_finite() && (i == j || d.get(j, i).to_bits() == v.to_bits())
        })
    }

    /// The renumbered lower triangle of `d` (`(order, position)` as in
    /// [`SymmetricFactors::with_order`]): what [`Lower::Matrix`] reads, row by row, in two
    /// passes (to count, then to place).
    fn of(d: &CompressedRows, order: Option<&(Vec<u32>, Vec<u32>)>) -> Self {
        let n = d.n_rows();
        let renumbered = |r: usize, entry: &mut dyn FnMut(usize, f64)| {
            renumbered_lower_row(d, order, r, &mut *entry)
        };
        let mut start = Vec::with_capacity(n + 1);
        start.push(0);
        let mut total = 0;
        for r in 0..n {
            renumbered(r, &mut |_, _| total += 1);
            start.push(total);
        }
        let mut columns = Vec::with_capacity(total);
        let mut values = Vec::with_capacity(total);
        for r in 0..n {
            renumbered(r, &mut |c, v| {
                columns.push(c as u32);
                values.push(v);
            });
        }
        Self {
            start,
            columns,
            values,
        }
    }

    /// The matrix this is the renumbered lower triangle of (`order[p]`: the unknown at
    /// position `p`; the given order when `None`), to the last bit: each value put at its
    /// place and its transpose's, summed from 0 (`0 + v = v` for the nonzero values kept).
    fn matrix(&self, order: Option<&[u32]>) -> CompressedRows {
        let n = self.start.len() - 1;
        let original = |p: usize| order.map_or(p, |o| o[p] as usize);
        CompressedRows::assemble(n, |add| {
            for r in 0..n {
                let o = original(r);
                for k in self.start[r]..self.start[r + 1] {
                    let (c, v) = (self.columns[k] as usize, self.values[k]);
                    if c == r {
                        add(o, o, v);
                    } else {
                        let j = original(c);
                        add(o, j, v);
                        add(j, o, v);
                    }
                }
            }
        })
    }
}

impl SymmetricFactors {
    /// Whether `d` is symmetric to within rounding: every nonzero off-diagonal entry matched
    /// by a nonzero transpose within `8 ε` of the larger magnitude.
    fn is_symmetric(d: &CompressedRows) -> bool {
        let (mut lower, mut upper) = (0usize, 0usize);
        for i in 0..d.n_rows() {
            let (cols, vals) = d.row(i);
            for (&j, &l) in cols.iter().zip(vals) {
                let j = j as usize;
                if l == 0.0 || j == i {
                    continue;
                }
                if j > i {
                    upper += 1;
                    continue;
                }
                lower += 1;
                let u = d.get(j, i);
                if u == 0.0 {
                    return false;
                }
                if l != u && (l - u).abs() > 8.0 * f64::EPSILON * l.abs().max(u.abs()) {
                    return false;
                }
            }
        }
        lower == upper
    }

    /// Factorize the `n × n` matrix of nonzero `entries` `(row, column, value)` (each position
    /// once) as `L D Lᵀ`; `None` when it is not symmetric or a pivot is not positive (not
    /// positive definite, or singular to working precision): [`SymmetricFactors::from_rows`]
    /// of the entries in compressed rows.
    pub fn from_entries(n: usize, entries: &[(usize, usize, f64)]) -> Option<Self> {
        Self::from_rows(&CompressedRows::from_entries(n, entries))
    }

    /// Factorize the square matrix `d` as `L D Lᵀ`; `None` when it is not symmetric (each
    /// pair `a_ij`, `a_ji` equal to within `8 ε` of the larger; the pair is then factored as
    /// its mean) or a pivot is not positive (not positive definite, or singular to working
    /// precision). The lower triangle is read from `d` through the renumbering, row by row as
    /// the factorization reaches it: no copy of the matrix is made, and only the factor is
    /// allocated at its size (exactly: the envelope's length is known before the first row).
    pub fn from_rows(d: &CompressedRows) -> Option<Self> {
        Self::with_layout(d, true)
    }

    /// [`SymmetricFactors::from_rows`], `L` kept by rows whatever its envelope when `blocks`
    /// is false.
    fn with_layout(d: &CompressedRows, blocks: bool) -> Option<Self> {
        let (order, first) = Self::layout(d)?;
        Self::with_order(d, order, first, blocks, false)
    }

    /// The renumbering [`SymmetricFactors::from_rows`] factors `d` in (`(order, position)`,
    /// `None` for the given order: the reverse Cuthill–McKee order where its envelope is the
    /// smaller) and the first column of each renumbered row; `None` when `d` is not symmetric.
    #[allow(clippy::type_complexity)]
    fn layout(d: &CompressedRows) -> Option<(Option<(Vec<usize>, Vec<usize>)>, Vec<usize>)> {
        if !Self::is_symmetric(d) {
            return None;
        }
        let order = reverse_cuthill_mckee(&Pattern::of(d));
        let identity = order.iter().enumerate().all(|(i, &o)| i == o);
        let natural = lower_first(d, None);
        if identity {
            return Some((None, natural));
        }
        let position = positions(&order);
        let renumbered = lower_first(d, Some(&position));
        if envelope(&renumbered) >= envelope(&natural) {
            drop((renumbered, position, order));
            Some((None, natural))
        } else {
            drop(natural);
            Some((Some((order, position)), renumbered))
        }
    }

    /// [`SymmetricFactors::from_rows`] of `d` taken by value, the same factors to the last
    /// bit; when `d` is not factored so (not symmetric, or a pivot not positive) it is given
    /// back, the same matrix. When every pair `a_ij`, `a_ji` is equal to the bit (finite,
    /// nonzero: a symmetric assembly's), the renumbered lower triangle is copied row by row
    /// (`RenumberedLower`, half the entries) and `d` freed before the factor is allocated
    /// (issue 20: on the 10⁵-DOF frame the effective matrix beside its whole factor made the
    /// start-up's peak); `d` is formed again from the copy if the factorization fails.
    pub fn from_owned_rows(d: CompressedRows) -> Result<Self, CompressedRows> {
        let Some((order, first)) = Self::layout(&d) else {
            return Err(d);
        };
        if !RenumberedLower::exactly_symmetric(&d) {
            return Self::with_order(&d, order, first, true, false).ok_or(d);
        }
        let swaps = order
            .as_ref()
            .map_or_else(Vec::new, |(o, _)| gather_swaps(o));
        let order = order.map(|(o, q)| (narrow(o), narrow(q)));
        let lower = RenumberedLower::of(&d, order.as_ref());
        drop(d);
        // Only the order is needed again (to form `d` again).
        let order = order.map(|(o, _)| o);
        let factors = Self::factor(first, swaps, true, false, Lower::Rows(&lower));
        factors.ok_or_else(|| lower.matrix(order.as_deref()))
    }

    /// Factorize the lower triangle of the symmetric `d`, renumbered by `order`
    /// (`(order, position)`: unknown `order[p]` at position `p`, `position[order[p]] = p`) if
    /// any, whose row `r` starts at column `first[r]`; `L` by blocks when `blocks` and its
    /// envelope is wide enough. A blocked factor is written block by block as its rows are
    /// factored, and only the rows the next ones read are kept by rows meanwhile (from the
    /// first column of any later row on). A blocked factor keeps the pivots `d_r` themselves
    /// only when `pivots` (its sweeps read `1 / d_r` alone).
    ///
    /// Issue 20 (memory a DOF): the factor's values are the largest item of a large model's
    /// start-up and are all written by the last row, so whatever else stands then counts at
    /// the peak. The renumbering's swaps are therefore made first (their transients freed
    /// before the factor is written), the product row `g` spans one row's envelope, the first
    /// row still read is kept a block, and the renumbering, the row extents and the rows
    /// under way are released before `1 / d_r` is formed in place of `d_r`.
    pub(crate) fn with_order(
        d: &CompressedRows,
        order: Option<(Vec<usize>, Vec<usize>)>,
        first: Vec<usize>,
        blocks: bool,
        pivots: bool,
    ) -> Option<Self> {
        let swaps = order
            .as_ref()
            .map_or_else(Vec::new, |(o, _)| gather_swaps(o));
        // The renumbering in 32 bits while the factor is written (issue 20: the two vectors
        // of n stand at the start-up's peak beside the whole factor); the unknowns fit 32
        // bits, as the columns of `d`.
        let order = order.map(|(o, q)| (narrow(o), narrow(q)));
        Self::factor(first, swaps, blocks, pivots, Lower::Matrix { d, order })
    }

    /// [`SymmetricFactors::with_order`] of the renumbered lower triangle `lower` (freed once
    /// the last row is read), whose row `r` starts at column `first[r]`, with the
    /// renumbering's `swaps`.
    fn factor(
        first: Vec<usize>,
        swaps: Vec<[u32; 2]>,
        blocks: bool,
        pivots: bool,
        lower: Lower<'_>,
    ) -> Option<Self> {
        let n = first.len();
        let mut l_ptr = Vec::with_capacity(n + 1);
        l_ptr.push(0);
        let mut widest = 0;
        for (r, &f) in first.iter().enumerate() {
            l_ptr.push(l_ptr[r] + (r - f));
            widest = widest.max(r - f);
        }
        let stored = l_ptr[n];
        let mut blocked = (blocks && stored >= BLOCKED_FROM_MEAN_WIDTH * n)
            .then(|| BlockedFactor::with_layout(&first));
        // The smallest first column of the rows from block b's first row on: rows before it
        // are read no more.
        let keep_from: Vec<usize> = match blocked {
            Some(_) => {
                let mut k = vec![0; n.div_ceil(BLOCK_ROWS)];
                let mut lowest = usize::MAX;
                for r in (0..n).rev() {
                    lowest = lowest.min(first[r]);
                    if r % BLOCK_ROWS == 0 {
                        k[r / BLOCK_ROWS] = lowest;
                    }
                }
                k
            }
            None => Vec::new(),
        };
        // The rows of L under way, from row `base_row` on (row r at l_ptr[r] − base): all of
        // them for a factor kept by rows, the rows still read for a blocked one.
        let mut l_val = if blocked.is_some() {
            Vec::new()
        } else {
            vec![0.0; stored]
        };
        let mut base = 0;
        let mut diag = vec![0.0; n];
        // Row by row: with g_j = L[r, j] d_j, g_j = a_rj − Σ_k g_k L[j, k] over the columns k
        // both rows hold, then L[r, j] = g_j / d_j and d_r = a_rr − Σ_j g_j L[r, j]; g_j is
        // kept at g[j − first[r]].
        let mut g = vec![0.0; widest];
        for r in 0..n {
            if blocked.is_some() {
                if r % BLOCK_ROWS == 0 {
                    let dead = l_ptr[keep_from[r / BLOCK_ROWS]] - base;
                    if dead > 0 && 2 * dead >= l_val.len() {
                        l_val.drain(..dead);
                        base += dead;
                    }
                }
                l_val.resize(l_ptr[r + 1] - base, 0.0);
            }
            let f = first[r];
            let row_r = l_ptr[r] - base;
            lower.row(r, |c, v| {
                if c == r {
                    diag[r] += v;
                } else {
                    l_val[row_r + (c - f)] += v;
                }
            });
            let mut dr = diag[r];
            for j in f..r {
                let lo = f.max(first[j]);
                let row_j = &l_val[l_ptr[j] - base + (lo - first[j])..l_ptr[j + 1] - base];
                let gj = l_val[row_r + (j - f)] - dot(&g[lo - f..j - f], row_j);
                g[j - f] = gj;
            }
            for j in f..r {
                let l = g[j - f] / diag[j];
                l_val[row_r + (j - f)] = l;
                dr -= g[j - f] * l;
            }
            if !(dr > 0.0 && dr.is_finite()) {
                return None;
            }
            diag[r] = dr;
            if let Some(b) = blocked.as_mut() {
                if (r + 1) % BLOCK_ROWS == 0 || r + 1 == n {
                    b.fill(r / BLOCK_ROWS, &first, |q| {
                        &l_val[l_ptr[q] - base..l_ptr[q + 1] - base]
                    });
                }
            }
        }
        drop((g, lower));
        if let Some(blocks) = blocked {
            drop((l_val, keep_from, l_ptr, first));
            let (diag, inverse_diag) = if pivots {
                let inverse = diag.iter().map(|d| 1.0 / d).collect();
                (diag, inverse)
            } else {
                // 1 / d_r in place of d_r: no second vector of n beside the factor.
                for d in diag.iter_mut() {
                    *d = 1.0 / *d;
                }
                (Vec::new(), diag)
            };
            return Some(Self {
                n,
                inverse_diag,
                swaps,
                first: Vec::new(),
                l_ptr: Vec::new(),
                l_val: Vec::new(),
                diag,
                stored,
                blocks: Some(blocks),
            });
        }
        Some(Self {
            n,
            swaps,
            first,
            l_ptr,
            l_val,
            diag,
            inverse_diag: Vec::new(),
            stored,
            blocks: None,
        })
    }

    /// Stored entries of `L` below the diagonal (inside the envelope).
    pub fn stored(&self) -> usize {
        self.stored
    }

    /// Solve `A x = b` in place (`x` holds `b` on entry): `L y = b` by rows, `z = D⁻¹ y`,
    /// `Lᵀ x = z` by the rows of `L` taken as columns of `Lᵀ`. Allocation-free.
    ///
    /// On x86-64 processors with AVX2 the same sweeps are compiled for 4-wide registers
    /// (chosen at run time): the same additions and multiplications in the same order (no
    /// fused multiply-add), so the same bits on every processor.
    ///
    /// With `L` by blocks (a mean envelope width of 8 entries a row or more) the
    /// sweeps go block by block: forward, the block's panel times the finished unknowns left
    /// of it (column by column, fused multiply-adds into two sums, even and odd columns), then
    /// the block's triangle column by column; `z = D⁻¹ y` by the stored `1 / d_r`; backward,
    /// the triangle row by row, then the panel's transpose times the block's unknowns (each
    /// column in four partial sums, added pairwise). The same operations on every processor
    /// (AVX2 and FMA registers where available, `f64::mul_add` otherwise), so the same bits;
    /// they differ from the row-by-row sweeps' at round-off.
    #[inline]
    pub fn solve(&self, x: &mut [f64]) {
        if let Some(blocks) = &self.blocks {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                // SAFETY: the processor supports AVX2 and FMA, checked just above.
                unsafe { self.block_sweeps_avx2(blocks, x) };
                return;
            }
            self.block_sweeps(blocks, x);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2, checked just above.
            unsafe { self.solve_avx2(x) };
            return;
        }
        self.sweeps(x);
    }

    /// Whether `L` is stored by blocks (then [`SymmetricFactors::forward`],
    /// [`SymmetricFactors::scale_by_pivots`] and [`SymmetricFactors::backward`] apply).
    fn is_blocked(&self) -> bool {
        self.blocks.is_some()
    }

    /// Whether the AVX2 and FMA sweeps run on this processor.
    #[inline]
    fn fused_registers() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// The first third of the blocked [`SymmetricFactors::solve`]: the renumbering and
    /// `L y = b` in place. Panics on a factor kept by rows.
    #[inline]
    fn forward(&self, x: &mut [f64]) {
        let f = self
            .blocks
            .as_ref()
            .expect("SymmetricFactors::forward: L by blocks");
        #[cfg(target_arch = "x86_64")]
        if Self::fused_registers() {
            // SAFETY: the processor supports AVX2 and FMA, checked just above.
            unsafe { self.block_forward_avx2(f, x) };
            return;
        }
        self.block_forward(f, x);
    }

    /// The second third of the blocked [`SymmetricFactors::solve`]: `z = D⁻¹ y` in place.
    #[inline]
    fn scale_by_pivots(&self, x: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if Self::fused_registers() {
            // SAFETY: the processor supports AVX2 and FMA, checked just above.
            unsafe { self.scale_avx2(x) };
            return;
        }
        self.scale(x);
    }

    /// The last third of the blocked [`SymmetricFactors::solve`]: `Lᵀ x = z` in place and the
    /// inverse renumbering. Panics on a factor kept by rows.
    #[inline]
    fn backward(&self, x: &mut [f64]) {
        let f = self
            .blocks
            .as_ref()
            .expect("SymmetricFactors::backward: L by blocks");
        #[cfg(target_arch = "x86_64")]
        if Self::fused_registers() {
            // SAFETY: the processor supports AVX2 and FMA, checked just above.
            unsafe { self.block_backward_avx2(f, x) };
            return;
        }
        self.block_backward(f, x);
    }

    /// The blocked sweeps of [`SymmetricFactors::solve`], portable: the operations of
    /// [`SymmetricFactors::block_sweeps_avx2`] lane by lane, in the same order.
    fn block_sweeps(&self, f: &BlockedFactor, x: &mut [f64]) {
        self.block_forward(f, x);
        self.scale(x);
        self.block_backward(f, x);
    }

    /// The renumbering and the forward sweep `L y = b` of [`SymmetricFactors::block_sweeps`].
    fn block_forward(&self, f: &BlockedFactor, x: &mut [f64]) {
        let n = self.n;
        assert_eq!(x.len(), n, "SymmetricFactors::solve: dimension mismatch");
        apply_swaps(x, &self.swaps, false);
        let blocks = f.panel_first.len();
        let mut y = [0.0f64; BLOCK_ROWS];
        for b in 0..blocks {
            let (s, e) = BlockedFactor::rows(b, n);
            let (h, p, step) = (e - s, f.panel_first[b], f.steps[b]);
            let values = &f.values[f.offset[b]..f.offset[b + 1]];
            let (mut panel, tri) = values.split_at(BlockedFactor::panel_size(&step));
            y.fill(0.0);
            y[..h].copy_from_slice(&x[s..e]);
            let (mut even, mut odd) = ([0.0f64; BLOCK_ROWS], [0.0f64; BLOCK_ROWS]);
            for k in 0..4 {
                let height = 4 * (k + 1);
                let columns = p + step[k] as usize..p + step[k + 1] as usize;
                let (segment, rest) = panel.split_at(height * columns.len());
                panel = rest;
                for (pair, xc) in segment
                    .chunks_exact(2 * height)
                    .zip(x[columns].chunks_exact(2))
                {
                    for i in 0..height {
                        even[i] = pair[i].mul_add(xc[0], even[i]);
                        odd[i] = pair[height + i].mul_add(xc[1], odd[i]);
                    }
                }
            }
            for i in 0..BLOCK_ROWS {
                y[i] -= even[i] + odd[i];
            }
            forward_triangle(tri, &mut y);
            x[s..e].copy_from_slice(&y[..h]);
        }
    }

    /// `z = D⁻¹ y` of the blocked sweeps, by the stored `1 / d_r`.
    fn scale(&self, x: &mut [f64]) {
        for (xr, d) in x.iter_mut().zip(&self.inverse_diag) {
            *xr *= d;
        }
    }

    /// The backward sweep `Lᵀ x = z` of [`SymmetricFactors::block_sweeps`] and the inverse
    /// renumbering.
    fn block_backward(&self, f: &BlockedFactor, x: &mut [f64]) {
        let n = self.n;
        assert_eq!(x.len(), n, "SymmetricFactors::solve: dimension mismatch");
        let blocks = f.panel_first.len();
        let mut y = [0.0f64; BLOCK_ROWS];
        for b in (0..blocks).rev() {
            let (s, e) = BlockedFactor::rows(b, n);
            let (h, p, step) = (e - s, f.panel_first[b], f.steps[b]);
            let values = &f.values[f.offset[b]..f.offset[b + 1]];
            let (mut panel, tri) = values.split_at(BlockedFactor::panel_size(&step));
            y.fill(0.0);
            y[..h].copy_from_slice(&x[s..e]);
            backward_triangle(tri, &mut y);
            x[s..e].copy_from_slice(&y[..h]);
            for k in 0..4 {
                let height = 4 * (k + 1);
                let columns = p + step[k] as usize..p + step[k + 1] as usize;
                let (segment, rest) = panel.split_at(height * columns.len());
                panel = rest;
                for (column, xc) in segment.chunks_exact(height).zip(&mut x[columns]) {
                    let mut acc = [0.0f64; 4];
                    for q in 0..=k {
                        for l in 0..4 {
                            acc[l] = column[4 * q + l].mul_add(y[4 * q + l], acc[l]);
                        }
                    }
                    *xc -= (acc[0] + acc[1]) + (acc[2] + acc[3]);
                }
            }
        }
        apply_swaps(x, &self.swaps, true);
    }

    /// [`SymmetricFactors::block_sweeps`] in AVX2 registers with fused multiply-adds, without
    /// bounds checks on the blocks (their extents are checked once, by construction, in debug
    /// builds). A block's sixteen unknowns stay in four registers through its triangle.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn block_sweeps_avx2(&self, f: &BlockedFactor, x: &mut [f64]) {
        self.block_forward_avx2(f, x);
        self.scale_avx2(x);
        self.block_backward_avx2(f, x);
    }

    /// The layout the AVX2 sweeps rely on: `x` and `inverse_diag` of the factor's order
    /// (asserted), and, in debug builds, the blocked factor's panels and triangles where
    /// `BlockedFactor::with_layout` and `fill` put them and the renumbering's swaps within
    /// `n`. Returns `n` and the number of blocks.
    #[inline]
    fn check_block_layout(&self, f: &BlockedFactor, x_len: usize) -> (usize, usize) {
        let n = self.n;
        assert_eq!(x_len, n, "SymmetricFactors::solve: dimension mismatch");
        assert_eq!(self.inverse_diag.len(), n);
        let blocks = f.panel_first.len();
        debug_assert!(blocks == n.div_ceil(BLOCK_ROWS) && f.offset.len() == blocks + 1);
        debug_assert!(f.offset[blocks] == f.values.len());
        debug_assert!(f.steps.len() == blocks);
        debug_assert!((0..blocks).all(|b| {
            let (s, _) = BlockedFactor::rows(b, n);
            let (p, step) = (f.panel_first[b], f.steps[b]);
            p <= s
                && step[0] == 0
                && step[4] as usize == s - p
                && step
                    .windows(2)
                    .all(|k| k[0] <= k[1] && (k[1] - k[0]) % 4 == 0)
                && f.offset[b + 1] - f.offset[b] == BlockedFactor::panel_size(&step) + TRIANGLE
        }));
        debug_assert!(self
            .swaps
            .iter()
            .all(|&[i, j]| (i as usize) < n && (j as usize) < n));
        (n, blocks)
    }

    /// The renumbering and the forward sweep of [`SymmetricFactors::block_sweeps_avx2`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn block_forward_avx2(&self, f: &BlockedFactor, x: &mut [f64]) {
        use std::arch::x86_64::*;
        let (n, blocks) = self.check_block_layout(f, x.len());
        // SAFETY: the renumbering's swaps are of positions `< n` (by construction, checked in
        // debug builds).
        unsafe { swap_unchecked(x, &self.swaps, false) };
        let mut buffer = [0.0f64; BLOCK_ROWS];
        let xp = x.as_mut_ptr();
        let vp = f.values.as_ptr();
        let bp = buffer.as_mut_ptr();
        // SAFETY: by construction (`BlockedFactor::with_layout` and `fill`, checked by
        // `check_block_layout` in debug builds) block `b`'s panel is `panel_size(steps[b])`
        // values from `offset[b]` (the columns `steps[b][k] .. steps[b][k + 1]` of `4 (k + 1)`
        // rows each, every segment a multiple of 4 columns), its triangle the `TRIANGLE` values
        // after them, with `steps[b][4] = s − panel_first[b]` and `panel_first[b] ≤ s`: the
        // panel's columns address `x[panel_first[b]..s]`, `x[s..e]` lies below `n`, a block of
        // 16 rows is read and written whole in `x` and a shorter one through `buffer`; a
        // diagonal tile's masked load reads only its lanes below the diagonal, inside the
        // triangle (its address, formed by `wrapping_sub`, may lie before it);
        // `inverse_diag` has `n` values (asserted).
        unsafe {
            for b in 0..blocks {
                let (s, e) = BlockedFactor::rows(b, n);
                let h = e - s;
                let p = *f.panel_first.get_unchecked(b);
                let step = *f.steps.get_unchecked(b);
                let mut panel = vp.add(*f.offset.get_unchecked(b));
                let xs = xp.add(p) as *const f64;
                if h < BLOCK_ROWS {
                    for i in 0..BLOCK_ROWS {
                        *bp.add(i) = if i < h { *xp.add(s + i) } else { 0.0 };
                    }
                }
                let base = if h < BLOCK_ROWS {
                    bp as *const f64
                } else {
                    xp.add(s) as *const f64
                };
                // y −= panel x[p..s], column by column (even and odd columns in two sums), each
                // segment of the staircase on its own quads of rows.
                let mut even = [_mm256_setzero_pd(); 4];
                let mut odd = [_mm256_setzero_pd(); 4];
                macro_rules! forward_segment {
                    ($k:literal) => {
                        let mut c = step[$k] as usize;
                        let end = step[$k + 1] as usize;
                        while c < end {
                            let x0 = _mm256_broadcast_sd(&*xs.add(c));
                            let x1 = _mm256_broadcast_sd(&*xs.add(c + 1));
                            let c1 = panel.add(4 * ($k + 1));
                            for q in 0..=$k {
                                even[q] =
                                    _mm256_fmadd_pd(_mm256_loadu_pd(panel.add(4 * q)), x0, even[q]);
                                odd[q] =
                                    _mm256_fmadd_pd(_mm256_loadu_pd(c1.add(4 * q)), x1, odd[q]);
                            }
                            panel = panel.add(8 * ($k + 1));
                            c += 2;
                        }
                    };
                }
                forward_segment!(0);
                forward_segment!(1);
                forward_segment!(2);
                forward_segment!(3);
                let mut y = [_mm256_setzero_pd(); 4];
                for q in 0..4 {
                    y[q] = _mm256_sub_pd(
                        _mm256_loadu_pd(base.add(4 * q)),
                        _mm256_add_pd(even[q], odd[q]),
                    );
                }
                let mut tri = panel;
                // Column j = 4 q + l: the quads q.. of rows (unrolled: register lanes and
                // indices are constants), the diagonal tile's rows l + 1 ..= 3 through a lane
                // mask (its lanes 0 ..= l read +0; the address of lane 0 may lie before `tri`,
                // masked lanes are not read).
                macro_rules! column {
                    ($q:literal, $imm:literal, $l:literal) => {
                        let yj = _mm256_permute4x64_pd::<$imm>(y[$q]);
                        let m = _mm256_loadu_si256(BELOW_DIAGONAL[$l].as_ptr() as *const __m256i);
                        let tile = _mm256_maskload_pd(tri.wrapping_sub($l + 1), m);
                        y[$q] = _mm256_fnmadd_pd(tile, yj, y[$q]);
                        tri = tri.add(3 - $l);
                        for yq in y[$q + 1..].iter_mut() {
                            *yq = _mm256_fnmadd_pd(_mm256_loadu_pd(tri), yj, *yq);
                            tri = tri.add(4);
                        }
                    };
                }
                column!(0, 0x00, 0);
                column!(0, 0x55, 1);
                column!(0, 0xAA, 2);
                column!(0, 0xFF, 3);
                column!(1, 0x00, 0);
                column!(1, 0x55, 1);
                column!(1, 0xAA, 2);
                column!(1, 0xFF, 3);
                column!(2, 0x00, 0);
                column!(2, 0x55, 1);
                column!(2, 0xAA, 2);
                column!(2, 0xFF, 3);
                column!(3, 0x00, 0);
                column!(3, 0x55, 1);
                column!(3, 0xAA, 2);
                column!(3, 0xFF, 3);
                store_block!(y, xp, bp, s, h);
            }
        }
    }

    /// `z = D⁻¹ y` of [`SymmetricFactors::block_sweeps_avx2`], four rows at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn scale_avx2(&self, x: &mut [f64]) {
        use std::arch::x86_64::*;
        let n = self.n;
        assert!(x.len() == n && self.inverse_diag.len() == n);
        let xp = x.as_mut_ptr();
        // SAFETY: `x` and `inverse_diag` have `n` values (asserted).
        unsafe {
            let dp = self.inverse_diag.as_ptr();
            let mut r = 0;
            while r + 4 <= n {
                _mm256_storeu_pd(
                    xp.add(r),
                    _mm256_mul_pd(_mm256_loadu_pd(xp.add(r)), _mm256_loadu_pd(dp.add(r))),
                );
                r += 4;
            }
            while r < n {
                *xp.add(r) *= *dp.add(r);
                r += 1;
            }
        }
    }

    /// The backward sweep and the inverse renumbering of
    /// [`SymmetricFactors::block_sweeps_avx2`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn block_backward_avx2(&self, f: &BlockedFactor, x: &mut [f64]) {
        use std::arch::x86_64::*;
        let (n, blocks) = self.check_block_layout(f, x.len());
        let mut buffer = [0.0f64; BLOCK_ROWS];
        let xp = x.as_mut_ptr();
        let vp = f.values.as_ptr();
        let bp = buffer.as_mut_ptr();
        // SAFETY: the layout of `block_forward_avx2`'s note (the same blocks, read in reverse
        // order; the triangle's tiles loaded as there).
        unsafe {
            for b in (0..blocks).rev() {
                let (s, e) = BlockedFactor::rows(b, n);
                let h = e - s;
                let p = *f.panel_first.get_unchecked(b);
                let step = *f.steps.get_unchecked(b);
                let panel = vp.add(*f.offset.get_unchecked(b));
                let mut y = [_mm256_setzero_pd(); 4];
                if h == BLOCK_ROWS {
                    for (q, yq) in y.iter_mut().enumerate() {
                        *yq = _mm256_loadu_pd(xp.add(s + 4 * q));
                    }
                } else {
                    for i in 0..BLOCK_ROWS {
                        *bp.add(i) = if i < h { *xp.add(s + i) } else { 0.0 };
                    }
                    for (q, yq) in y.iter_mut().enumerate() {
                        *yq = _mm256_loadu_pd(bp.add(4 * q));
                    }
                }
                let tri = panel.add(BlockedFactor::panel_size(&step));
                // Row i = 4 Q + l: the quads q ..= Q of columns, row l of the tile (Q, q), which
                // the triangle holds as the quads Q of the columns 4 q .. 4 q + 4: the tiles of
                // a quad of rows transposed in registers, then its rows (unrolled).
                let mut rows = [[_mm256_setzero_pd(); 4]; 4];
                // Column j = 4 q + l's rows 4 Q ..= 4 Q + 3: at `triangle_column(j) + 4 Q − j − 1`,
                // the diagonal tile (Q = q) through the lane mask of its column.
                let quad = |qq: usize, q: usize, l: usize| {
                    let j = 4 * q + l;
                    let at = tri.wrapping_add(triangle_column(j)).wrapping_sub(j + 1);
                    if qq == q {
                        let m = _mm256_loadu_si256(BELOW_DIAGONAL[l].as_ptr() as *const __m256i);
                        _mm256_maskload_pd(at.wrapping_add(4 * q), m)
                    } else {
                        _mm256_loadu_pd(at.add(4 * qq))
                    }
                };
                macro_rules! tiles {
                    ($qq:literal) => {
                        for (q, tile) in rows[..=$qq].iter_mut().enumerate() {
                            let c0 = quad($qq, q, 0);
                            let c1 = quad($qq, q, 1);
                            let c2 = quad($qq, q, 2);
                            let c3 = quad($qq, q, 3);
                            let t0 = _mm256_unpacklo_pd(c0, c1);
                            let t1 = _mm256_unpackhi_pd(c0, c1);
                            let t2 = _mm256_unpacklo_pd(c2, c3);
                            let t3 = _mm256_unpackhi_pd(c2, c3);
                            tile[0] = _mm256_permute2f128_pd::<0x20>(t0, t2);
                            tile[1] = _mm256_permute2f128_pd::<0x20>(t1, t3);
                            tile[2] = _mm256_permute2f128_pd::<0x31>(t0, t2);
                            tile[3] = _mm256_permute2f128_pd::<0x31>(t1, t3);
                        }
                    };
                }
                macro_rules! row {
                    ($qq:literal, $l:literal, $imm:literal) => {
                        let yi = _mm256_permute4x64_pd::<$imm>(y[$qq]);
                        for (yq, tile) in y[..=$qq].iter_mut().zip(&rows) {
                            *yq = _mm256_fnmadd_pd(tile[$l], yi, *yq);
                        }
                    };
                }
                tiles!(3);
                row!(3, 3, 0xFF);
                row!(3, 2, 0xAA);
                row!(3, 1, 0x55);
                row!(3, 0, 0x00);
                tiles!(2);
                row!(2, 3, 0xFF);
                row!(2, 2, 0xAA);
                row!(2, 1, 0x55);
                row!(2, 0, 0x00);
                tiles!(1);
                row!(1, 3, 0xFF);
                row!(1, 2, 0xAA);
                row!(1, 1, 0x55);
                row!(1, 0, 0x00);
                tiles!(0);
                row!(0, 3, 0xFF);
                row!(0, 2, 0xAA);
                row!(0, 1, 0x55);
                store_block!(y, xp, bp, s, h);
                // x[p..s] −= panelᵀ y, four columns at a time: each column's four partial
                // sums over the block's quads, then ((a0 + a1) + (a2 + a3)).
                let xs = xp.add(p);
                let mut col = panel;
                macro_rules! backward_segment {
                    ($k:literal) => {
                        let mut c = step[$k] as usize;
                        let end = step[$k + 1] as usize;
                        while c < end {
                            let mut a = [_mm256_setzero_pd(); 4];
                            for (l, al) in a.iter_mut().enumerate() {
                                for (q, yq) in y[..=$k].iter().enumerate() {
                                    *al = _mm256_fmadd_pd(
                                        _mm256_loadu_pd(col.add(l * 4 * ($k + 1) + 4 * q)),
                                        *yq,
                                        *al,
                                    );
                                }
                            }
                            let u = _mm256_hadd_pd(a[0], a[1]);
                            let v = _mm256_hadd_pd(a[2], a[3]);
                            let t = _mm256_add_pd(
                                _mm256_permute2f128_pd::<0x20>(u, v),
                                _mm256_permute2f128_pd::<0x31>(u, v),
                            );
                            _mm256_storeu_pd(
                                xs.add(c),
                                _mm256_sub_pd(_mm256_loadu_pd(xs.add(c)), t),
                            );
                            col = col.add(16 * ($k + 1));
                            c += 4;
                        }
                    };
                }
                backward_segment!(0);
                backward_segment!(1);
                backward_segment!(2);
                backward_segment!(3);
            }
            swap_unchecked(x, &self.swaps, true);
        }
    }

    /// [`SymmetricFactors::solve`]'s sweeps in AVX2 registers: the operations of
    /// [`SymmetricFactors::sweeps`] in the same order — the eight partial sums of [`dot`] as two
    /// registers of four (products rounded, then added; the remainder's terms added to the
    /// same partial sums, the lanes beyond it adding `+0`, which leaves a sum that starts at
    /// `+0` unchanged), the same final pairing, and `x_j − x_r l_j` four at a time — so the
    /// same bits, without the bounds checks of the portable loops (the row extents are checked
    /// once, by construction, in debug builds).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn solve_avx2(&self, x: &mut [f64]) {
        use std::arch::x86_64::*;
        let n = self.n;
        assert_eq!(x.len(), n, "SymmetricFactors::solve: dimension mismatch");
        debug_assert!(self.l_ptr.len() == n + 1 && self.first.len() == n);
        debug_assert!(self.l_ptr[n] == self.l_val.len());
        debug_assert!((0..n)
            .all(|r| self.first[r] <= r && self.l_ptr[r + 1] - self.l_ptr[r] == r - self.first[r]));
        debug_assert!(self
            .swaps
            .iter()
            .all(|&[i, j]| (i as usize) < n && (j as usize) < n));
        // SAFETY: the renumbering's swaps are of positions `< n` (by construction, checked in
        // debug builds).
        unsafe { swap_unchecked(x, &self.swaps, false) };
        // Lane masks of `maskload` for 0..=3 leading lanes.
        const MASKS: [[i64; 4]; 4] = [[0, 0, 0, 0], [-1, 0, 0, 0], [-1, -1, 0, 0], [-1, -1, -1, 0]];
        let xp = x.as_mut_ptr();
        let lp = self.l_val.as_ptr();
        // SAFETY: by construction (`with_order`) row `r` of `L` is `l_val[l_ptr[r]..l_ptr[r+1]]`
        // with `l_ptr[r + 1] − l_ptr[r] = r − first[r]`, `first[r] ≤ r < n = x.len()` and
        // `l_ptr[n] = l_val.len()` (checked above in debug builds): every pointer below stays
        // inside `l_val` and `x[first[r]..r]`; `x[r]` is not among the latter.
        unsafe {
            for r in 0..n {
                let f = *self.first.get_unchecked(r);
                let len = r - f;
                let row = lp.add(*self.l_ptr.get_unchecked(r));
                let xs = xp.add(f) as *const f64;
                let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
                let mut k = 0;
                while k + 8 <= len {
                    lo = _mm256_add_pd(
                        lo,
                        _mm256_mul_pd(_mm256_loadu_pd(row.add(k)), _mm256_loadu_pd(xs.add(k))),
                    );
                    hi = _mm256_add_pd(
                        hi,
                        _mm256_mul_pd(
                            _mm256_loadu_pd(row.add(k + 4)),
                            _mm256_loadu_pd(xs.add(k + 4)),
                        ),
                    );
                    k += 8;
                }
                let rest = len - k;
                if rest >= 4 {
                    lo = _mm256_add_pd(
                        lo,
                        _mm256_mul_pd(_mm256_loadu_pd(row.add(k)), _mm256_loadu_pd(xs.add(k))),
                    );
                    let m = _mm256_loadu_si256(MASKS[rest - 4].as_ptr() as *const __m256i);
                    hi = _mm256_add_pd(
                        hi,
                        _mm256_mul_pd(
                            _mm256_maskload_pd(row.add(k + 4), m),
                            _mm256_maskload_pd(xs.add(k + 4), m),
                        ),
                    );
                } else if rest > 0 {
                    let m = _mm256_loadu_si256(MASKS[rest].as_ptr() as *const __m256i);
                    lo = _mm256_add_pd(
                        lo,
                        _mm256_mul_pd(
                            _mm256_maskload_pd(row.add(k), m),
                            _mm256_maskload_pd(xs.add(k), m),
                        ),
                    );
                }
                // (s0 + s4, s1 + s5, s2 + s6, s3 + s7), then the pairs as in `dot`.
                let t = _mm256_add_pd(lo, hi);
                let (a, b) = (_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
                let d = _mm_cvtsd_f64(_mm_add_sd(a, _mm_unpackhi_pd(a, a)))
                    + _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
                *xp.add(r) -= d;
            }
            for (xr, d) in x.iter_mut().zip(&self.diag) {
                *xr /= d;
            }
            let xp = x.as_mut_ptr();
            for r in (0..n).rev() {
                let f = *self.first.get_unchecked(r);
                let len = r - f;
                let row = lp.add(*self.l_ptr.get_unchecked(r));
                let xs = xp.add(f);
                let xr = *xp.add(r);
                let b = _mm256_set1_pd(xr);
                let mut k = 0;
                while k + 8 <= len {
                    let v0 = _mm256_sub_pd(
                        _mm256_loadu_pd(xs.add(k)),
                        _mm256_mul_pd(b, _mm256_loadu_pd(row.add(k))),
                    );
                    let v1 = _mm256_sub_pd(
                        _mm256_loadu_pd(xs.add(k + 4)),
                        _mm256_mul_pd(b, _mm256_loadu_pd(row.add(k + 4))),
                    );
                    _mm256_storeu_pd(xs.add(k), v0);
                    _mm256_storeu_pd(xs.add(k + 4), v1);
                    k += 8;
                }
                if k + 4 <= len {
                    let v = _mm256_sub_pd(
                        _mm256_loadu_pd(xs.add(k)),
                        _mm256_mul_pd(b, _mm256_loadu_pd(row.add(k))),
                    );
                    _mm256_storeu_pd(xs.add(k), v);
                    k += 4;
                }
                let rest = len - k;
                if rest > 0 {
                    let m = _mm256_loadu_si256(MASKS[rest].as_ptr() as *const __m256i);
                    let v = _mm256_sub_pd(
                        _mm256_maskload_pd(xs.add(k), m),
                        _mm256_mul_pd(b, _mm256_maskload_pd(row.add(k), m)),
                    );
                    _mm256_maskstore_pd(xs.add(k), m, v);
                }
            }
            swap_unchecked(x, &self.swaps, true);
        }
    }

    /// The portable sweeps of [`SymmetricFactors::solve`] (row by row or by blocks), whose
    /// bits the processor-specific ones reproduce.
    #[cfg(test)]
    fn portable_solve(&self, x: &mut [f64]) {
        match &self.blocks {
            Some(blocks) => self.block_sweeps(blocks, x),
            None => self.sweeps(x),
        }
    }

    #[inline(always)]
    fn sweeps(&self, x: &mut [f64]) {
        let n = self.n;
        assert_eq!(x.len(), n, "SymmetricFactors::solve: dimension mismatch");
        apply_swaps(x, &self.swaps, false);
        for r in 0..n {
            let row = &self.l_val[self.l_ptr[r]..self.l_ptr[r + 1]];
            let f = self.first[r];
            x[r] -= dot(row, &x[f..r]);
        }
        for (xr, d) in x.iter_mut().zip(&self.diag) {
            *xr /= d;
        }
        for r in (0..n).rev() {
            let row = &self.l_val[self.l_ptr[r]..self.l_ptr[r + 1]];
            let f = self.first[r];
            let xr = x[r];
            for (xj, l) in x[f..r].iter_mut().zip(row) {
                *xj -= xr * l;
            }
        }
        apply_swaps(x, &self.swaps, true);
    }
}

/// `D⁻¹` of a state-space matrix `D = M + c J0` over `Y = [u; v; s]` (Abbiati et al. 2019,
/// eq 12), through the Schur complement of its displacement block when that block is the
/// identity and couples only to `v` by a diagonal (`u̇ − c v̇ = b_u`, the rows of every
/// second-order structural model), otherwise through [`FactoredMatrix`] of the whole `D`.
///
/// With `D = [[I, A], [B, E]]`, `A` diagonal (`−c` for `u̇ = v`) and `B = c ∂r/∂u` (`c K`), the
/// solve of `D x = b` is `(E − B A) x₂ = b₂ − B b₁`, `x₁ = b₁ − A x₂`: for a second-order model
/// `E − B A = m + c C + c² K` over the `N` velocities (plus the extra states), the effective
/// matrix of Newmark-type schemes (Newmark 1959; Chung & Hulbert 1993), with the stiffness
/// band of the structure instead of the band of the `2N` unknowns `[u; v]` that partial
/// pivoting widens further. The reduced matrix is factored as `L D Lᵀ` by
/// [`SymmetricFactors`] when it is symmetric positive definite (mass, damping and stiffness
/// symmetric: how it is detected is described there), otherwise by [`FactoredMatrix`] (reverse
/// Cuthill–McKee, band LU with partial pivoting). The result equals the full solve to round-off,
/// not to the bit. Allocation-free solves.
#[derive(Debug, Clone)]
pub struct StateMatrixFactors {
    kind: StateFactorKind,
}

#[derive(Debug, Clone)]
enum StateFactorKind {
    /// `D` factored as a whole.
    Full(FactoredMatrix),
    /// Through the Schur complement of the identity displacement block.
    Reduced {
        /// Displacement unknowns `n`.
        n: usize,
        /// The diagonal `A` (`D[i, n + i]`; 0 where absent).
        a: Vec<f64>,
        /// `B` (rows `n..`, columns `< n`) in compressed rows: row `r` of `B` holds terms
        /// `b_start[r] .. b_start[r + 1]`, their columns in 32 bits (those of `D`'s rows).
        b_start: Vec<usize>,
        b_cols: Vec<u32>,
        b_vals: Vec<f64>,
        /// `E − B A`, factored.
        reduced: EffectiveFactors,
    },
}

/// The factors of the effective matrix `E − B A`: `L D Lᵀ` where it is symmetric positive
/// definite (every second-order model with symmetric mass, damping and stiffness), the band
/// LU otherwise (extra states, unsymmetric tangents).
#[derive(Debug, Clone)]
enum EffectiveFactors {
    Symmetric(SymmetricFactors),
    General(FactoredMatrix),
    /// `L D Lᵀ` in two parts and a separator (`[analysis] threads = 2`).
    TwoPart(Box<TwoPartFactors>),
}

impl EffectiveFactors {
    /// `L D Lᵀ` of the matrix `e` when it is symmetric positive definite, else its band LU;
    /// `None` when it is singular.
    fn from_rows(e: &CompressedRows) -> Option<Self> {
        match SymmetricFactors::from_rows(e) {
            Some(s) => Some(Self::Symmetric(s)),
            None => FactoredMatrix::from_rows(e).map(Self::General),
        }
    }

    /// [`EffectiveFactors::from_rows`] of `e` taken by value: the same factors, `e` freed
    /// before the factor of `L D Lᵀ` is allocated where it is exactly symmetric
    /// ([`SymmetricFactors::from_owned_rows`]).
    fn from_owned_rows(e: CompressedRows) -> Option<Self> {
        match SymmetricFactors::from_owned_rows(e) {
            Ok(s) => Some(Self::Symmetric(s)),
            Err(e) => FactoredMatrix::from_rows(&e).map(Self::General),
        }
    }

    /// Factor entries a solve reads (`L` twice for `L D Lᵀ`, `L` and `U` for the LU), the cost
    /// compared with the whole `D`'s.
    fn solve_terms(&self) -> usize {
        match self {
            Self::Symmetric(s) => 2 * s.stored(),
            Self::General(f) => f.stored(),
            Self::TwoPart(t) => 2 * t.stored(),
        }
    }

    /// Stored factor entries.
    fn stored(&self) -> usize {
        match self {
            Self::Symmetric(s) => s.stored(),
            Self::General(f) => f.stored(),
            Self::TwoPart(t) => t.stored(),
        }
    }

    /// Solve in place; with two parts, a failed worker leaves `x` NaN (see
    /// [`StateMatrixFactors::has_failed`]).
    #[inline]
    fn solve(&self, x: &mut [f64]) {
        match self {
            Self::Symmetric(s) => s.solve(x),
            Self::General(f) => f.solve(x),
            Self::TwoPart(t) => {
                t.solve(x);
            }
        }
    }
}

impl StateMatrixFactors {
    /// The factors of a 0×0 matrix (a placeholder). Allocation-free.
    pub fn empty() -> Self {
        Self {
            kind: StateFactorKind::Full(FactoredMatrix::empty()),
        }
    }

    /// Factorize the `size × size` matrix `D` of nonzero `entries` (each `(row, column)` once)
    /// whose first `n` unknowns are displacements; `None` when it is singular:
    /// [`StateMatrixFactors::from_rows`] of the entries in compressed rows.
    pub fn from_entries(size: usize, n: usize, entries: &[(usize, usize, f64)]) -> Option<Self> {
        Self::from_rows(n, CompressedRows::from_entries(size, entries))
    }

    /// Factorize the square matrix `D` (its nonzero entries; [`crate::assembly::StateSpace::d_rows`])
    /// whose first `n` unknowns are displacements; `None` when it is singular. The reduced
    /// path is taken when rows `0..n` hold exactly a unit diagonal and at most the entry
    /// `(i, n + i)`, and its solve is the cheaper one (fewer stored entries below 512
    /// unknowns; a smaller band estimate above); otherwise `D` is factored whole.
    ///
    /// `D` is taken by value so that it is released once the reduced matrix `E − B A` (in
    /// compressed rows, built row by row from `D`'s rows) is formed and chosen, before that
    /// matrix is factored.
    pub fn from_rows(n: usize, d: CompressedRows) -> Option<Self> {
        Self::from_rows_in_parts(n, d, false, true)
    }

    /// [`StateMatrixFactors::from_rows`] without `B` of the reduced path: the factors as
    /// [`StateMatrixFactors::release_coupling`] leaves them, for a caller whose steps fold the
    /// coupling product into the residual ([`StateMatrixFactors::solve_folded`]) and decided
    /// so on `d`'s rows. `B` never stands beside the effective matrix and its factor (issue
    /// 20: the start-up's peak); [`StateMatrixFactors::restore_coupling`] builds it if asked.
    /// The same factors.
    pub fn from_rows_without_coupling(n: usize, d: CompressedRows) -> Option<Self> {
        Self::from_rows_in_parts(n, d, false, false)
    }

    /// [`StateMatrixFactors::from_rows`], the effective matrix factored in two parts and a
    /// separator with part B's sweeps on a worker thread ([`TwoPartFactors`]) when the
    /// reduced path is taken and that factor exists (a banded symmetric positive definite
    /// effective matrix of 64 unknowns or more whose parts are stored by blocks); otherwise
    /// as [`StateMatrixFactors::from_rows`] ([`StateMatrixFactors::parts`] tells).
    pub fn from_rows_on_two_cores(n: usize, d: CompressedRows) -> Option<Self> {
        Self::from_rows_in_parts(n, d, true, true)
    }

    fn from_rows_in_parts(
        n: usize,
        d: CompressedRows,
        two_cores: bool,
        keep_coupling: bool,
    ) -> Option<Self> {
        let size = d.n_rows();
        let Some(a) = displacement_block(n, &d) else {
            return Some(Self {
                kind: StateFactorKind::Full(FactoredMatrix::from_rows(&d)?),
            });
        };
        let m = size - n;
        let coupling_terms = |r: usize| {
            let (cols, vals) = d.row(n + r);
            let k = cols.partition_point(|&j| (j as usize) < n);
            (&cols[..k], &vals[..k], &cols[k..], &vals[k..])
        };
        // `B`'s terms (the reduced solve's cost counts them whether kept or not).
        let b_terms = (0..m)
            .map(|r| coupling_terms(r).1.iter().filter(|&&v| v != 0.0).count())
            .sum::<usize>();
        // The whole `D`'s band estimate (above FACTOR_BOTH_BELOW unknowns) before `E − B A`
        // is formed: the pattern and the ordering of `D`'s `2 n` unknowns it builds are freed
        // before the reduced matrix stands beside `D` (issue 20: on the 10⁵-DOF frame, `D`,
        // the reduced matrix and `D`'s pattern together made the start-up's peak).
        let full_cost = (size >= FACTOR_BOTH_BELOW).then(|| FactoredMatrix::estimated_cost(&d));
        let (b_start, b_cols, b_vals) = if keep_coupling {
            coupling_of(n, &d)
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        // E − B A row by row: the terms −B[r, j] A[j] (at column j of the reduced unknowns)
        // and E[r, j] (column n + j of D at j) merged by column; the two terms of a place are
        // summed in D's order, the coupling term first.
        let reduced = CompressedRows::from_rows(m, |r, push| {
            let (bc, bv, ec, ev) = coupling_terms(r);
            let (mut p, mut q) = (0, 0);
            loop {
                while p < bc.len() && (bv[p] == 0.0 || a[bc[p] as usize] == 0.0) {
                    p += 1;
                }
                while q < ec.len() && ev[q] == 0.0 {
                    q += 1;
                }
                let cb = bc.get(p).map_or(usize::MAX, |&j| j as usize);
                let ce = ec.get(q).map_or(usize::MAX, |&j| j as usize - n);
                if cb == usize::MAX && ce == usize::MAX {
                    break;
                }
                if cb < ce {
                    push(cb, -(bv[p] * a[cb]));
                    p += 1;
                } else if ce < cb {
                    push(ce, ev[q]);
                    q += 1;
                } else {
                    push(cb, -(bv[p] * a[cb]) + ev[q]);
                    p += 1;
                    q += 1;
                }
            }
        });
        // The reduced path only where it is the cheaper solve: below FACTOR_BOTH_BELOW
        // unknowns both are factored and their stored entries compared (a single DOF keeps
        // the whole `D`, whose solve is as short), above by the band estimate of each.
        let coupling = b_terms + n;
        let factors = if let Some(full_cost) = full_cost {
            let reduced_cost = FactoredMatrix::estimated_cost(&reduced) + coupling as f64;
            if reduced_cost >= full_cost {
                drop(reduced);
                return Some(Self {
                    kind: StateFactorKind::Full(FactoredMatrix::from_rows(&d)?),
                });
            }
            drop(d);
            match two_cores
                .then(|| TwoPartFactors::from_rows(&reduced, true))
                .flatten()
            {
                Some(t) => EffectiveFactors::TwoPart(Box::new(t)),
                None => EffectiveFactors::from_owned_rows(reduced)?,
            }
        } else {
            let full = FactoredMatrix::from_rows(&d)?;
            let reduced = EffectiveFactors::from_rows(&reduced)?;
            if reduced.solve_terms() + coupling >= full.stored() {
                return Some(Self {
                    kind: StateFactorKind::Full(full),
                });
            }
            reduced
        };
        Some(Self {
            kind: StateFactorKind::Reduced {
                n,
                a,
                b_start,
                b_cols,
                b_vals,
                reduced: factors,
            },
        })
    }

    /// Whether the solve goes through the reduced (effective) matrix.
    pub fn is_reduced(&self) -> bool {
        matches!(self.kind, StateFactorKind::Reduced { .. })
    }

    /// Whether the effective matrix was found symmetric positive definite and factored as
    /// `L D Lᵀ` ([`SymmetricFactors`]) rather than by the band LU.
    pub fn is_symmetric(&self) -> bool {
        matches!(
            self.kind,
            StateFactorKind::Reduced {
                reduced: EffectiveFactors::Symmetric(_),
                ..
            }
        )
    }

    /// The sizes of the two parts and the separator of an effective matrix factored in two
    /// parts ([`StateMatrixFactors::from_rows_on_two_cores`]), and whether part B is solved
    /// on a worker thread; `None` for a factor in one part.
    pub fn parts(&self) -> Option<((usize, usize, usize), bool)> {
        match &self.kind {
            StateFactorKind::Reduced {
                reduced: EffectiveFactors::TwoPart(t),
                ..
            } => Some((t.sizes(), t.has_worker())),
            _ => None,
        }
    }

    /// The effective matrix's factor in two parts when part B is solved by a worker thread,
    /// with the diagonal of `A` (`x₁ = b₁ − A x₂`), for a caller that runs the halves of its
    /// own passes with the parts' sweeps ([`TwoPartFactors::join`]); `None` otherwise.
    pub fn two_cores(&self) -> Option<(&TwoPartFactors, &[f64])> {
        match &self.kind {
            StateFactorKind::Reduced {
                a,
                reduced: EffectiveFactors::TwoPart(t),
                ..
            } if t.has_worker() => Some((t, a)),
            _ => None,
        }
    }

    /// Whether the worker thread of a factor in two parts has failed (a panic): its solves
    /// since left `x` NaN. `false` for every other factor.
    #[inline]
    pub fn has_failed(&self) -> bool {
        match &self.kind {
            StateFactorKind::Reduced {
                reduced: EffectiveFactors::TwoPart(t),
                ..
            } => t.has_failed(),
            _ => false,
        }
    }

    /// Let the calling thread solve both parts of a factor in two parts (its worker thread
    /// ended; tests that compare the two-core step with the same factor on one core); nothing
    /// for other factors. Allocates (a copy of the factor).
    #[doc(hidden)]
    pub fn solve_on_one_thread(&mut self) {
        if let StateFactorKind::Reduced {
            reduced: EffectiveFactors::TwoPart(t),
            ..
        } = &mut self.kind
        {
            **t = (**t).clone();
        }
    }

    /// Make the worker thread of a factor in two parts panic in its next command (tests of
    /// the failure path); nothing for other factors.
    #[doc(hidden)]
    pub fn inject_worker_panic(&self) {
        if let StateFactorKind::Reduced {
            reduced: EffectiveFactors::TwoPart(t),
            ..
        } = &self.kind
        {
            t.inject_worker_panic();
        }
    }

    /// Stored factor entries plus the coupling terms (the cost of a solve).
    pub fn stored(&self) -> usize {
        match &self.kind {
            StateFactorKind::Full(f) => f.stored(),
            StateFactorKind::Reduced {
                a, b_vals, reduced, ..
            } => reduced.stored() + b_vals.len() + a.len(),
        }
    }

    /// The coupling `B` of the reduced path in compressed rows — `(b_start, b_cols,
    /// b_vals)`: row `r` (unknown `n + r`) holds columns `b_cols[b_start[r]..b_start[r + 1]]`,
    /// ascending — or `None` when `D` is factored whole.
    pub fn coupling(&self) -> Option<(&[usize], &[u32], &[f64])> {
        match &self.kind {
            StateFactorKind::Full(_) => None,
            StateFactorKind::Reduced {
                b_start,
                b_cols,
                b_vals,
                ..
            } if !b_start.is_empty() => Some((b_start, b_cols, b_vals)),
            StateFactorKind::Reduced { .. } => None,
        }
    }

    /// Free `B` of the reduced path (issue 20: memory a DOF), for a caller whose steps only
    /// solve with the coupling product folded into the right-hand side
    /// ([`Self::solve_folded`], [`Self::solve_folded_velocities`], which never read it):
    /// [`Self::solve`] and [`Self::coupling`] need it back first
    /// ([`Self::restore_coupling`]). Whether anything was freed (false for a `D` factored
    /// whole or a `B` already freed).
    pub fn release_coupling(&mut self) -> bool {
        match &mut self.kind {
            StateFactorKind::Reduced {
                b_start,
                b_cols,
                b_vals,
                ..
            } if !b_start.is_empty() => {
                *b_start = Vec::new();
                *b_cols = Vec::new();
                *b_vals = Vec::new();
                true
            }
            _ => false,
        }
    }

    /// Whether `B` was freed by [`Self::release_coupling`] (and not restored).
    pub fn coupling_released(&self) -> bool {
        matches!(&self.kind, StateFactorKind::Reduced { b_start, .. } if b_start.is_empty())
    }

    /// Build `B` again from `d`, the matrix these factors were made from
    /// ([`Self::from_rows`]): the same entries, in the same order. Nothing when `B` is held.
    /// Allocates.
    ///
    /// # Panics
    /// If `d` is not of the factors' size.
    pub fn restore_coupling(&mut self, d: &CompressedRows) {
        if let StateFactorKind::Reduced {
            n,
            a,
            b_start,
            b_cols,
            b_vals,
            ..
        } = &mut self.kind
        {
            if b_start.is_empty() {
                assert!(
                    d.n_rows() > *n && a.len() == *n,
                    "restore_coupling: dimension"
                );
                (*b_start, *b_cols, *b_vals) = coupling_of(*n, d);
            }
        }
    }

    /// The first half of [`Self::solve_folded`]: the reduced solve of `x₂` (which holds
    /// `b₂ − B b₁`), returning the diagonal of `A` so that the caller finishes
    /// `x₁ = b₁ − A x₂` row by row, inside its own pass over the rows (the generalized-α
    /// step's corrector, [`crate::integrators::AlphaStepper::step`]). `None`, with `x`
    /// untouched, for a `D` factored whole. Allocation-free.
    #[inline]
    pub fn solve_folded_velocities(&self, x: &mut [f64]) -> Option<&[f64]> {
        match &self.kind {
            StateFactorKind::Full(_) => None,
            StateFactorKind::Reduced { n, a, reduced, .. } => {
                reduced.solve(&mut x[*n..]);
                Some(a)
            }
        }
    }

    /// Solve `D x = b` in place when `x₂` already holds `b₂ − B b₁` (the coupling product
    /// folded into the right-hand side by the caller,
    /// [`crate::assembly::StateSpace::residual_folded`]): the reduced solve and
    /// `x₁ = b₁ − A x₂` only. A `D` factored whole ([`Self::coupling`] `None`) is solved as by
    /// [`Self::solve`] — the caller must not fold then. Allocation-free.
    #[inline]
    pub fn solve_folded(&self, x: &mut [f64]) {
        match &self.kind {
            StateFactorKind::Full(f) => f.solve(x),
            StateFactorKind::Reduced { n, a, reduced, .. } => {
                let (bu, rest) = x.split_at_mut(*n);
                reduced.solve(rest);
                for ((xu, ai), xv) in bu.iter_mut().zip(a).zip(rest.iter()) {
                    *xu -= ai * xv;
                }
            }
        }
    }

    /// Solve `D x = b` in place (`x` holds `b` on entry). Allocation-free.
    #[inline]
    pub fn solve(&self, x: &mut [f64]) {
        match &self.kind {
            StateFactorKind::Full(f) => f.solve(x),
            StateFactorKind::Reduced {
                n,
                a,
                b_start,
                b_cols,
                b_vals,
                reduced,
            } => {
                let n = *n;
                let (bu, rest) = x.split_at_mut(n);
                assert_eq!(
                    rest.len() + 1,
                    b_start.len(),
                    "StateMatrixFactors::solve: dimension (or `B` released, \
                     StateMatrixFactors::release_coupling)"
                );
                // By construction (`from_entries`): the columns of `B` are displacements
                // (`< n`) and `b_start` ascends from 0 to their count.
                debug_assert!(b_cols.iter().all(|&c| (c as usize) < n));
                debug_assert!(b_start.windows(2).all(|p| p[0] <= p[1]));
                debug_assert!(
                    b_start.last() == Some(&b_cols.len()) && b_vals.len() == b_cols.len()
                );
                // b₂ − B b₁
                for (r, xr) in rest.iter_mut().enumerate() {
                    let mut acc = 0.0;
                    // SAFETY: `r + 1 < b_start.len()` (asserted above), the terms of row `r`
                    // lie inside `b_cols` / `b_vals` and their columns inside `bu`.
                    unsafe {
                        let (lo, hi) = (*b_start.get_unchecked(r), *b_start.get_unchecked(r + 1));
                        for t in lo..hi {
                            acc += b_vals.get_unchecked(t)
                                * bu.get_unchecked(*b_cols.get_unchecked(t) as usize);
                        }
                    }
                    *xr -= acc;
                }
                reduced.solve(rest);
                // x₁ = b₁ − A x₂ (A couples u_i to v_i only)
                for ((xu, ai), xv) in bu.iter_mut().zip(a).zip(rest.iter()) {
                    *xu -= ai * xv;
                }
            }
        }
    }
}

/// A matrix of fixed sparsity pattern refactored in place, for Newton iterations whose matrix
/// changes every iteration (issue 17, `analysis.nonlinear_solver = "newton"`): the unknowns are
/// renumbered once by reverse Cuthill–McKee on the pattern (Cuthill & McKee 1969; George 1971)
/// and the matrix is held in band storage with room for the fill of partial pivoting — the
/// band LU of LAPACK's `dgbtf2`/`dgbtrs` (Anderson et al. 1999): `kl` subdiagonals, `ku`
/// superdiagonals and `kl` more above for the row interchanges. A matrix equal to the one
/// factored last (a hysteretic element on the same branch of its law) keeps its factors.
/// Build time allocates; [`BandLu::clear`], [`BandLu::add`], [`BandLu::factor`] and
/// [`BandLu::solve`] do not.
#[derive(Debug, Clone)]
pub struct BandLu {
    n: usize,
    /// Position of each unknown in the band order.
    position: Vec<usize>,
    kl: usize,
    ku: usize,
    /// Leading dimension: `2 kl + ku + 1`.
    ld: usize,
    /// The matrix being assembled, column-major band: entry `(r, c)` at
    /// `c · ld + (kl + ku + r − c)`.
    matrix: Vec<f64>,
    /// The matrix whose factors `band` holds (when `factored`).
    last: Vec<f64>,
    factored: bool,
    /// The factors, in the same layout.
    band: Vec<f64>,
    /// Factorizations made (the others reused the last one).
    factorizations: u64,
    /// Row interchanged with row `j` at step `j`.
    pivots: Vec<usize>,
    /// The right-hand side in band order.
    work: Vec<f64>,
}

impl BandLu {
    /// Storage for `n × n` matrices whose nonzero entries lie in `pattern` (`(row, column)`,
    /// repeats allowed). Allocates.
    pub fn new(n: usize, pattern: &[(usize, usize)]) -> Self {
        let ones = CompressedRows::assemble(n, |add| {
            for &(i, j) in pattern {
                add(i, j, 1.0);
            }
        });
        let position = positions(&reverse_cuthill_mckee(&Pattern::of(&ones)));
        let (mut kl, mut ku) = (0, 0);
        for &(i, j) in pattern {
            let (r, c) = (position[i], position[j]);
            kl = kl.max(r.saturating_sub(c));
            ku = ku.max(c.saturating_sub(r));
        }
        let ld = 2 * kl + ku + 1;
        Self {
            n,
            position,
            kl,
            ku,
            ld,
            matrix: vec![0.0; ld * n],
            last: vec![0.0; ld * n],
            factored: false,
            band: vec![0.0; ld * n],
            factorizations: 0,
            pivots: vec![0; n],
            work: vec![0.0; n],
        }
    }

    /// Factorizations made so far ([`BandLu::factor`] calls that did not reuse the factors).
    pub fn factorizations(&self) -> u64 {
        self.factorizations
    }

    /// Lower and upper bandwidths in the band order.
    pub fn bandwidths(&self) -> (usize, usize) {
        (self.kl, self.ku)
    }

    #[inline]
    fn at(&self, r: usize, c: usize) -> usize {
        c * self.ld + (self.kl + self.ku + r) - c
    }

    /// Set every entry to zero (before assembling a new matrix).
    pub fn clear(&mut self) {
        self.matrix.iter_mut().for_each(|x| *x = 0.0);
    }

    /// Add `value` to entry `(row, column)` (unknowns in their original numbering); the entry
    /// must lie in the pattern given to [`BandLu::new`].
    #[inline]
    pub fn add(&mut self, row: usize, column: usize, value: f64) {
        let (r, c) = (self.position[row], self.position[column]);
        debug_assert!(r <= c + self.kl && c <= r + self.ku, "outside the pattern");
        let k = self.at(r, c);
        self.matrix[k] += value;
    }

    /// Factorize the assembled matrix in place (LU with partial pivoting within the band),
    /// or keep the factors when it equals the matrix factored last; false when a pivot is
    /// zero (the matrix is singular). Allocation-free.
    pub fn factor(&mut self) -> bool {
        if self.factored && self.matrix == self.last {
            return true;
        }
        self.last.copy_from_slice(&self.matrix);
        self.band.copy_from_slice(&self.matrix);
        self.factorizations += 1;
        self.factored = self.factor_band();
        self.factored
    }

    fn factor_band(&mut self) -> bool {
        let (n, kl, kv) = (self.n, self.kl, self.kl + self.ku);
        let mut ju = 0usize;
        for j in 0..n {
            let km = kl.min(n - 1 - j);
            let mut p = j;
            let mut best = self.band[self.at(j, j)].abs();
            for r in j + 1..=j + km {
                let v = self.band[self.at(r, j)].abs();
                if v > best {
                    best = v;
                    p = r;
                }
            }
            self.pivots[j] = p;
            if best == 0.0 || !best.is_finite() {
                return false;
            }
            ju = ju.max((p + self.ku).min(n - 1));
            if p != j {
                for c in j..=ju {
                    let (a, b) = (self.at(j, c), self.at(p, c));
                    self.band.swap(a, b);
                }
            }
            let inv = 1.0 / self.band[self.at(j, j)];
            for r in j + 1..=j + km {
                let k = self.at(r, j);
                self.band[k] *= inv;
            }
            for c in j + 1..=ju.min(j + kv) {
                let u = self.band[self.at(j, c)];
                if u == 0.0 {
                    continue;
                }
                for r in j + 1..=j + km {
                    let l = self.band[self.at(r, j)];
                    let k = self.at(r, c);
                    self.band[k] -= l * u;
                }
            }
        }
        true
    }

    /// Solve `A x = b` in place with the factors of [`BandLu::factor`] (`x` holds `b` on
    /// entry, original numbering). Allocation-free.
    pub fn solve(&mut self, x: &mut [f64]) {
        let (n, kl, kv) = (self.n, self.kl, self.kl + self.ku);
        for (i, xi) in x.iter().enumerate() {
            self.work[self.position[i]] = *xi;
        }
        for j in 0..n {
            let km = kl.min(n - 1 - j);
            let p = self.pivots[j];
            if p != j {
                self.work.swap(j, p);
            }
            let b = self.work[j];
            if b != 0.0 {
                for r in j + 1..=j + km {
                    self.work[r] -= b * self.band[self.at(r, j)];
                }
            }
        }
        for j in (0..n).rev() {
            let b = self.work[j] / self.band[self.at(j, j)];
            self.work[j] = b;
            if b != 0.0 {
                for r in j.saturating_sub(kv)..j {
                    self.work[r] -= b * self.band[self.at(r, j)];
                }
            }
        }
        for (i, xi) in x.iter_mut().enumerate() {
            *xi = self.work[self.position[i]];
        }
    }
}

/// `B` of the reduced path of [`StateMatrixFactors`]: rows `n..` of `D`, columns `< n`, its
/// nonzero entries in compressed rows (`b_start`, `b_cols`, `b_vals`; each row of `D` is by
/// column, so `B`'s are too).
fn coupling_of(n: usize, d: &CompressedRows) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    let m = d.n_rows() - n;
    let coupling_terms = |r: usize| {
        let (cols, vals) = d.row(n + r);
        let k = cols.partition_point(|&j| (j as usize) < n);
        (&cols[..k], &vals[..k])
    };
    let mut b_start = Vec::with_capacity(m + 1);
    b_start.push(0);
    for r in 0..m {
        let (_, vals) = coupling_terms(r);
        b_start.push(b_start[r] + vals.iter().filter(|&&v| v != 0.0).count());
    }
    let mut b_cols = Vec::with_capacity(b_start[m]);
    let mut b_vals = Vec::with_capacity(b_start[m]);
    for r in 0..m {
        let (cols, vals) = coupling_terms(r);
        for (&j, &v) in cols.iter().zip(vals) {
            if v != 0.0 {
                b_cols.push(j);
                b_vals.push(v);
            }
        }
    }
    (b_start, b_cols, b_vals)
}

/// The diagonal `A` of the displacement rows of `D` (`D[i, n + i]`), when rows `0..n` hold
/// exactly a unit diagonal and at most that entry, and `0 < n < size`; `None` otherwise.
fn displacement_block(n: usize, d: &CompressedRows) -> Option<Vec<f64>> {
    let size = d.n_rows();
    if n == 0 || n >= size || size - n < n {
        return None;
    }
    let mut a = vec![0.0; n];
    for (i, ai) in a.iter_mut().enumerate() {
        let (cols, vals) = d.row(i);
        let mut unit = false;
        for (&j, &v) in cols.iter().zip(vals) {
            let j = j as usize;
            if v == 0.0 {
                continue;
            }
            if j == i && v == 1.0 {
                unit = true;
            } else if j == n + i {
                *ai = v;
            } else {
                return None;
            }
        }
        if !unit {
            return None;
        }
    }
    Some(a)
}

#[cfg(test)]
mod tests {
    /// The in-place band LU solves random banded systems (pivoting needed: small diagonals)
    /// to round-off against nalgebra's dense LU, and refactoring new values in the same
    /// storage gives the new solution.
    #[test]
    fn band_lu_refactored_in_place_solves_to_round_off() {
        let n = 40;
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        // A pattern scattered by an index shuffle (the renumbering must find the band).
        let shuffle = |i: usize| (i * 17) % n;
        let mut pattern = Vec::new();
        for i in 0..n {
            for j in i.saturating_sub(2)..(i + 3).min(n) {
                pattern.push((shuffle(i), shuffle(j)));
            }
        }
        let mut lu = BandLu::new(n, &pattern);
        assert!(lu.bandwidths().0 <= 4, "{:?}", lu.bandwidths());
        for round in 0..3 {
            let mut dense = DMatrix::<f64>::zeros(n, n);
            lu.clear();
            for &(i, j) in &pattern {
                let v = next() * if i == j { 0.01 } else { 1.0 } + round as f64 * 0.1;
                dense[(i, j)] += v;
                lu.add(i, j, v);
            }
            assert!(lu.factor());
            let b: Vec<f64> = (0..n).map(|_| next()).collect();
            let mut x = b.clone();
            lu.solve(&mut x);
            let mut expect = DVector::from_column_slice(&b);
            assert!(dense.clone().lu().solve_mut(&mut expect));
            for (a, e) in x.iter().zip(expect.iter()) {
                assert!(
                    (a - e).abs() <= 1e-9 * (1.0 + e.abs()),
                    "round {round}: {a} vs {e}"
                );
            }
        }
        // The same matrix again keeps its factors.
        let made = lu.factorizations();
        assert!(lu.factor());
        assert_eq!(lu.factorizations(), made);
        lu.clear();
        assert!(!lu.factor(), "a zero matrix is singular");
    }

    use super::*;
    use nalgebra::DVector;

    /// A seeded linear congruential sequence in [-1, 1) (seed recorded in the test).
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// A seeded symmetric, strictly diagonally dominant (so positive definite) matrix of `n`
    /// rows: the pair `(i, j)`, `j < i`, holds a draw of [`lcg`] when `coupled(i - j, seed)`,
    /// and each diagonal entry its row's absolute sum plus 0.5 and a draw.
    fn dominant_symmetric(
        n: usize,
        seed: &mut u64,
        mut coupled: impl FnMut(usize, &mut u64) -> bool,
    ) -> DMatrix<f64> {
        let mut a = DMatrix::<f64>::zeros(n, n);
        for i in 0..n {
            for j in 0..i {
                if coupled(i - j, seed) {
                    let x = lcg(seed);
                    a[(i, j)] = x;
                    a[(j, i)] = x;
                }
            }
        }
        for i in 0..n {
            let row: f64 = (0..n).map(|j| a[(i, j)].abs()).sum();
            a[(i, i)] = row + 0.5 + lcg(seed).abs();
        }
        a
    }

    fn entries_of(d: &DMatrix<f64>) -> Vec<(usize, usize, f64)> {
        let mut e = Vec::new();
        for i in 0..d.nrows() {
            for j in 0..d.ncols() {
                if d[(i, j)] != 0.0 {
                    e.push((i, j, d[(i, j)]));
                }
            }
        }
        e
    }

    /// The band LU stores nalgebra's dense LU factors bit for bit on irregular sparse
    /// patterns (rows whose windows do not start in order, pivoting, fill), in both orders.
    #[test]
    fn band_factors_equal_nalgebra_dense_factors() {
        let mut seed = 99u64;
        for n in [3usize, 17, 60, 150] {
            let d = DMatrix::from_fn(n, n, |i, j| {
                let x = lcg(&mut seed);
                let far = (i as isize - j as isize).unsigned_abs();
                if i == j {
                    0.2 * x
                } else if far <= 2 || (far == n / 3 && x > 0.0) {
                    x
                } else {
                    0.0
                }
            });
            let entries = entries_of(&d);
            let rows = CompressedRows::from_entries(n, &entries);
            let order = reverse_cuthill_mckee(&Pattern::of(&rows));
            let permuted = DMatrix::from_fn(n, n, |i, j| d[(order[i], order[j])]);
            for (m, ord) in [(&d, None), (&permuted, Some(order.as_slice()))] {
                // `d` read through the order is `permuted`.
                let f = FactoredMatrix::with_order(&rows, ord).expect("invertible");
                let lu = m.clone().lu();
                let (l, u) = (lu.l(), lu.u());
                for i in 0..n {
                    assert_eq!(
                        f.diag[i].to_bits(),
                        u[(i, i)].to_bits(),
                        "n = {n}, U[{i},{i}]"
                    );
                    for (t, r) in (f.u_first[i]..i).enumerate() {
                        assert_eq!(f.u_val[f.u_ptr[i] + t], u[(r, i)], "U[{r},{i}]");
                    }
                    for r in 0..f.u_first[i] {
                        assert_eq!(u[(r, i)], 0.0, "U[{r},{i}] outside the skyline");
                    }
                }
                let stored: std::collections::HashMap<(usize, usize), f64> = (0..n)
                    .flat_map(|c| {
                        let col = &f.l_val[f.l_ptr[c]..f.l_ptr[c + 1]];
                        col.iter()
                            .enumerate()
                            .map(move |(t, &v)| ((c + 1 + t, c), v))
                    })
                    .collect();
                for c in 0..n {
                    for r in c + 1..n {
                        let v = stored.get(&(r, c)).copied().unwrap_or(0.0);
                        assert_eq!(v.to_bits() & !(1 << 63), l[(r, c)].to_bits() & !(1 << 63));
                    }
                }
                let mut x = DVector::from_fn(n, |_, _| lcg(&mut seed));
                let mut expect = x.clone();
                assert!(lu.solve_mut(&mut expect));
                if ord.is_none() {
                    f.solve(x.as_mut_slice());
                    for (a, e) in x.iter().zip(expect.iter()) {
                        assert_eq!(a.to_bits(), e.to_bits());
                    }
                }
            }
        }
    }

    /// `L D Lᵀ` of symmetric positive definite banded matrices with an irregular envelope (in
    /// both orders) solves to round-off against nalgebra's dense LU; an unsymmetric matrix, a
    /// symmetric indefinite one and a singular one are refused (the caller keeps the LU).
    #[test]
    fn symmetric_factors_solve_spd_and_refuse_the_rest() {
        let mut seed = 4242u64;
        for n in [1usize, 5, 40, 61, 100, 200] {
            let a = dominant_symmetric(n, &mut seed, |far, seed| {
                far <= 3 || (far == n / 3 && lcg(seed) > 0.0)
            });
            // Scramble the numbering so that the reverse Cuthill–McKee order is taken.
            let p: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % n).collect();
            let scrambled = if n % 7 != 0 {
                DMatrix::from_fn(n, n, |i, j| a[(p[i], p[j])])
            } else {
                a.clone()
            };
            for m in [&a, &scrambled] {
                let f = SymmetricFactors::from_entries(n, &entries_of(m)).expect("SPD");
                assert!(f.stored() <= n * n.saturating_sub(1) / 2);
                let b = DVector::from_fn(n, |_, _| lcg(&mut seed));
                let expect = m.clone().lu().solve(&b).expect("invertible");
                let mut x = b.clone();
                f.solve(x.as_mut_slice());
                let err = (&x - &expect).amax() / expect.amax();
                assert!(err < 1e-13, "n = {n}: relative difference {err:e}");
                // The sweeps of the processor-specific build give the portable ones' bits.
                let mut portable = b.clone();
                f.portable_solve(portable.as_mut_slice());
                for (a, e) in x.iter().zip(portable.iter()) {
                    assert_eq!(a.to_bits(), e.to_bits());
                }
            }
            if n > 1 {
                let mut unsym = a.clone();
                unsym[(1, 0)] *= 1.0 + 1e-12;
                assert!(SymmetricFactors::from_entries(n, &entries_of(&unsym)).is_none());
                // Within 8 ε the pair counts as symmetric (the mean is factored).
                let mut nearly = a.clone();
                nearly[(1, 0)] *= 1.0 + f64::EPSILON;
                assert!(SymmetricFactors::from_entries(n, &entries_of(&nearly)).is_some());
                let mut indefinite = a.clone();
                indefinite[(n - 1, n - 1)] = -1.0;
                assert!(SymmetricFactors::from_entries(n, &entries_of(&indefinite)).is_none());
            }
        }
        let singular = DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 1.0, 1.0]);
        assert!(SymmetricFactors::from_entries(2, &entries_of(&singular)).is_none());
    }

    /// `SymmetricFactors::from_owned_rows` factors what `from_rows` factors, to the last bit
    /// of a solve, whether the lower triangle is copied (exactly symmetric) or read from the
    /// matrix (a pair differing by rounding); and gives back the very matrix when it is not
    /// factored so (indefinite: formed again from the copy; unsymmetric).
    #[test]
    fn symmetric_factors_of_an_owned_matrix_are_from_rows_s() {
        let mut seed = 77u64;
        for (wide, tall) in [(5usize, 13usize), (11, 8), (3, 1)] {
            let n = 3 * wide * tall;
            let a = dominant_symmetric(n, &mut seed, |far, _| far <= 3 || far == 3 * wide);
            let p: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % n).collect();
            let scrambled = DMatrix::from_fn(n, n, |i, j| a[(p[i], p[j])]);
            // One pair a unit in the last place apart (within 8 ε: factored as its mean).
            let mut nearly = a.clone();
            nearly[(1, 0)] = f64::from_bits(a[(1, 0)].to_bits() + 1);
            for m in [&a, &scrambled, &nearly] {
                let rows = CompressedRows::from_entries(n, &entries_of(m));
                assert_eq!(
                    RenumberedLower::exactly_symmetric(&rows),
                    !std::ptr::eq(m, &nearly)
                );
                let f = SymmetricFactors::from_rows(&rows).expect("SPD");
                let owned = SymmetricFactors::from_owned_rows(rows).expect("SPD");
                assert_eq!(f.stored(), owned.stored());
                let b: Vec<f64> = (0..n).map(|_| lcg(&mut seed)).collect();
                let (mut x, mut y) = (b.clone(), b);
                f.solve(&mut x);
                owned.solve(&mut y);
                assert!(x.iter().zip(&y).all(|(x, y)| x.to_bits() == y.to_bits()));
            }
            let mut indefinite = a.clone();
            indefinite[(n - 1, n - 1)] = -1.0;
            let mut unsymmetric = a.clone();
            unsymmetric[(1, 0)] *= 1.0 + 1e-9;
            for m in [&indefinite, &unsymmetric] {
                let rows = CompressedRows::from_entries(n, &entries_of(m));
                let back = SymmetricFactors::from_owned_rows(rows.clone()).expect_err("refused");
                assert_eq!(back, rows);
                let bits = |m: &CompressedRows| {
                    m.iter()
                        .map(|(i, j, v)| (i, j, v.to_bits()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&back), bits(&rows));
            }
        }
    }

    /// `L D Lᵀ` of a frame-like matrix (a grid of nodes with three unknowns each, every node
    /// coupled to its neighbours and to the neighbours' neighbours along a row, like beams and
    /// columns): the envelope is wide, so `L` is stored by blocks; the blocked sweeps solve to
    /// round-off against nalgebra's dense LU and against the row-by-row sweeps of the same
    /// factors, and the processor-specific build gives the portable sweeps' bits. Sizes with
    /// a last block of 1, 3, 4, 8, 9 and 16 rows, in the natural and a scrambled numbering.
    #[test]
    fn blocked_symmetric_sweeps_solve_a_frame_to_round_off() {
        let mut seed = 2020u64;
        for (wide, tall) in [(5usize, 13usize), (11, 8), (4, 4), (11, 4), (3, 9), (3, 1)] {
            let n = 3 * wide * tall;
            let node = |c: usize, f: usize| c + wide * f;
            let mut a = DMatrix::<f64>::zeros(n, n);
            let couple = |a: &mut DMatrix<f64>, p: usize, q: usize, seed: &mut u64| {
                for i in 0..3 {
                    for j in 0..3 {
                        let x = lcg(seed);
                        a[(3 * p + i, 3 * q + j)] += x;
                        a[(3 * q + j, 3 * p + i)] += x;
                    }
                }
            };
            for f in 0..tall {
                for c in 0..wide {
                    if c + 1 < wide {
                        couple(&mut a, node(c, f), node(c + 1, f), &mut seed);
                    }
                    if f + 1 < tall {
                        couple(&mut a, node(c, f), node(c, f + 1), &mut seed);
                    }
                }
            }
            for i in 0..n {
                let row: f64 = (0..n).map(|j| a[(i, j)].abs()).sum();
                a[(i, i)] = row + 0.5 + lcg(&mut seed).abs();
            }
            let p: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % n).collect();
            let scrambled = DMatrix::from_fn(n, n, |i, j| a[(p[i], p[j])]);
            for m in [&a, &scrambled] {
                let entries = entries_of(m);
                let f = SymmetricFactors::from_entries(n, &entries).expect("SPD");
                let rows = SymmetricFactors::with_layout(
                    &CompressedRows::from_entries(n, &entries),
                    false,
                )
                .expect("SPD");
                assert!(rows.blocks.is_none());
                assert_eq!(f.stored(), rows.stored());
                assert_eq!(
                    f.blocks.is_some(),
                    f.stored() >= BLOCKED_FROM_MEAN_WIDTH * n,
                    "n = {n}: {} stored",
                    f.stored()
                );
                if n >= 48 {
                    assert!(f.blocks.is_some(), "n = {n}: {} stored", f.stored());
                }
                if let Some(blocked) = &f.blocks {
                    // The staircase leaves out the panel's zeros below each column's last
                    // quad: fewer values than 16-row columns would take.
                    let padded: usize = (0..blocked.panel_first.len())
                        .map(|b| BLOCK_ROWS * (BLOCK_ROWS * b - blocked.panel_first[b]) + TRIANGLE)
                        .sum();
                    assert!(
                        n < 48 || blocked.values.len() < padded,
                        "n = {n}: {} values, {padded} padded",
                        blocked.values.len()
                    );
                }
                for _ in 0..3 {
                    let b = DVector::from_fn(n, |_, _| lcg(&mut seed));
                    let expect = m.clone().lu().solve(&b).expect("invertible");
                    let mut x = b.clone();
                    f.solve(x.as_mut_slice());
                    let err = (&x - &expect).amax() / expect.amax();
                    assert!(err < 1e-13, "n = {n}: relative difference {err:e}");
                    let mut by_rows = b.clone();
                    rows.solve(by_rows.as_mut_slice());
                    let err = (&x - &by_rows).amax() / by_rows.amax();
                    assert!(err < 1e-13, "n = {n}: blocked − rows {err:e}");
                    let mut portable = b.clone();
                    f.portable_solve(portable.as_mut_slice());
                    for (a, e) in x.iter().zip(portable.iter()) {
                        assert_eq!(a.to_bits(), e.to_bits(), "n = {n}");
                    }
                }
            }
        }
    }

    /// A chain of 20 000 unknowns (a dense LU would need 3.2 GB) factors as a band from its
    /// entries and solves to round-off; the factors hold a few entries per unknown.
    #[test]
    fn large_chain_factors_from_entries() {
        let n = 10_000;
        let c = 5e-4;
        let mut e = Vec::new();
        for i in 0..n {
            e.push((i, i, 1.0));
            e.push((i, n + i, -c));
            let k = if i + 1 < n { 2.0e7 } else { 1.0e7 };
            e.push((n + i, n + i, 1.0e3 + c * 2.0e4));
            e.push((n + i, i, c * k));
            if i + 1 < n {
                for (a, b) in [(i, i + 1), (i + 1, i)] {
                    e.push((n + a, b, -c * 1.0e7));
                    e.push((n + a, n + b, -c * 1.0e4));
                }
            }
        }
        let f = FactoredMatrix::from_entries(2 * n, &e).expect("invertible");
        assert!(f.stored() < 12 * 2 * n, "{} factor entries", f.stored());
        let mut seed = 5u64;
        let x_true: Vec<f64> = (0..2 * n).map(|_| lcg(&mut seed)).collect();
        let mut b = vec![0.0; 2 * n];
        for &(i, j, v) in &e {
            b[i] += v * x_true[j];
        }
        f.solve(&mut b);
        let err = b
            .iter()
            .zip(&x_true)
            .map(|(a, t)| (a - t).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-9, "largest error {err:e}");
    }

    /// Without renumbering, the skyline solve is bit-identical to nalgebra's `LU::solve_mut`
    /// on dense, banded and pivoting matrices.
    #[test]
    fn factored_solve_is_bit_identical_to_nalgebra_lu() {
        let mut seed = 20_240_601u64;
        for (n, band, diag_boost) in [
            (1, 0, 1.0),
            (6, 6, 0.0),
            (22, 1, 3.0),
            (24, 3, 0.1),
            (40, 40, 0.0),
        ] {
            let d = DMatrix::from_fn(n, n, |i, j| {
                let x = lcg(&mut seed);
                if (i as isize - j as isize).unsigned_abs() > band {
                    0.0
                } else if i == j {
                    x + diag_boost
                } else {
                    x
                }
            });
            let f =
                FactoredMatrix::with_order(&CompressedRows::from_entries(n, &entries_of(&d)), None)
                    .expect("invertible");
            let lu = d.clone().lu();
            for _ in 0..5 {
                let b = DVector::from_fn(n, |_, _| 1e3 * lcg(&mut seed));
                let mut expect = b.clone();
                assert!(lu.solve_mut(&mut expect));
                let mut x = b.clone();
                f.solve(x.as_mut_slice());
                for (a, e) in x.iter().zip(expect.iter()) {
                    assert_eq!(
                        a.to_bits(),
                        e.to_bits(),
                        "n = {n}, band = {band}: {a} vs {e}"
                    );
                }
            }
        }
        assert!(FactoredMatrix::new(&DMatrix::zeros(3, 3)).is_none());
    }

    /// On a chain's `D = M + c J0` (order `[u; v]`) the renumbered factors stay banded and the
    /// solve agrees with nalgebra's dense LU to round-off.
    #[test]
    fn renumbered_chain_is_banded_and_accurate() {
        let n = 12;
        let c = 5e-4;
        let mut d = DMatrix::<f64>::zeros(2 * n, 2 * n);
        for i in 0..n {
            d[(i, i)] = 1.0;
            d[(i, n + i)] = -c;
            d[(n + i, n + i)] = 1.0e3 + c * 2.0e4;
            d[(n + i, i)] = c * 2.0e7;
            if i + 1 < n {
                for (a, b) in [(i, i + 1), (i + 1, i)] {
                    d[(n + a, b)] = -c * 1.0e7;
                    d[(n + a, n + b)] = -c * 1.0e4;
                }
            }
        }
        let f = FactoredMatrix::new(&d).expect("invertible");
        assert!(
            f.stored() < 8 * 2 * n,
            "renumbered factors hold {} entries, dense would be {}",
            f.stored(),
            2 * n * (2 * n - 1)
        );
        let mut seed = 7u64;
        let b = DVector::from_fn(2 * n, |_, _| lcg(&mut seed));
        let expect = d.clone().lu().solve(&b).expect("invertible");
        let mut x = b.clone();
        f.solve(x.as_mut_slice());
        let err = (&x - &expect).amax() / expect.amax();
        assert!(err < 1e-13, "relative difference {err:e}");
        // and it really solves D x = b
        let resid = (&d * &x - &b).amax() / (d.amax() * x.amax());
        assert!(resid < 1e-14, "relative residual {resid:e}");
    }
}
