//! A sparse matrix in compressed rows with 32-bit column indices, assembled from element
//! contributions in two passes (issue 20: start-up memory per DOF).

/// The nonzero entries of a sparse matrix, row by row and by column within a row: row `i`
/// holds `columns[k]`, `values[k]` for `k` in `row_start[i]..row_start[i + 1]`. Twelve bytes an
/// entry (a 32-bit column and the value) where `(row, column, value)` triplets take 24.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompressedRows {
    row_start: Vec<usize>,
    columns: Vec<u32>,
    values: Vec<f64>,
}

impl CompressedRows {
    /// The matrix of `n_rows` rows whose entry `(i, j)` is the sum, in the order given and
    /// starting from 0, of the contributions `(i, j, x)` that `emit` passes to its callback —
    /// the value a dense `a[(i, j)] += x` assembly in that order leaves, to the last bit —
    /// keeping the nonzero sums only.
    ///
    /// `emit` is called twice and must give the same contributions both times: once to count
    /// them by row, once to place them (so no `(row, column, value)` triplet list is held).
    /// Contributions that are exact zeros are skipped: a sum from `+0` is unchanged by adding
    /// `±0` (it can never be `−0`), so the nonzero sums are the same.
    ///
    /// # Panics
    /// If a row is `≥ n_rows`, a column does not fit 32 bits, or the two calls of `emit`
    /// differ.
    pub fn assemble(n_rows: usize, emit: impl Fn(&mut dyn FnMut(usize, usize, f64))) -> Self {
        // Pass 1: nonzero contributions by row.
        let mut row_start = vec![0usize; n_rows + 1];
        emit(&mut |i, _, x| {
            if x != 0.0 {
                row_start[i + 1] += 1;
            }
        });
        for i in 0..n_rows {
            row_start[i + 1] += row_start[i];
        }
        let total = row_start[n_rows];
        // Pass 2: each contribution at the next free place of its row (rows keep the order
        // of the contributions).
        let mut columns = vec![0u32; total];
        let mut values = vec![0.0f64; total];
        let mut next = row_start.clone();
        emit(&mut |i, j, x| {
            if x != 0.0 {
                let k = next[i];
                columns[k] = u32::try_from(j).expect("column index fits 32 bits");
                values[k] = x;
                next[i] = k + 1;
            }
        });
        assert!(
            next[..n_rows] == row_start[1..],
            "the two passes of CompressedRows::assemble gave different contributions"
        );
        drop(next);
        // Sort each row by column (stable: a place keeps its contributions' order), sum the
        // contributions of a place from 0, keep the nonzero sums, compacted to the left.
        let mut write = 0;
        let mut order: Vec<u32> = Vec::new();
        let mut row_cols: Vec<u32> = Vec::new();
        let mut row_vals: Vec<f64> = Vec::new();
        for i in 0..n_rows {
            let (lo, hi) = (row_start[i], row_start[i + 1]);
            row_start[i] = write;
            let sorted = columns[lo..hi].windows(2).all(|w| w[0] <= w[1]);
            if !sorted {
                order.clear();
                order.extend(0..(hi - lo) as u32);
                order.sort_by_key(|&t| columns[lo + t as usize]);
                row_cols.clear();
                row_vals.clear();
                row_cols.extend(order.iter().map(|&t| columns[lo + t as usize]));
                row_vals.extend(order.iter().map(|&t| values[lo + t as usize]));
                columns[lo..hi].copy_from_slice(&row_cols);
                values[lo..hi].copy_from_slice(&row_vals);
            }
            let mut k = lo;
            while k < hi {
                let j = columns[k];
                let mut sum = 0.0;
                while k < hi && columns[k] == j {
                    sum += values[k];
                    k += 1;
                }
                if sum != 0.0 {
                    columns[write] = j;
                    values[write] = sum;
                    write += 1;
                }
            }
        }
        row_start[n_rows] = write;
        columns.truncate(write);
        values.truncate(write);
        columns.shrink_to_fit();
        values.shrink_to_fit();
        Self {
            row_start,
            columns,
            values,
        }
    }

    /// The matrix of `n_rows` rows whose row `i` holds the entries `(column, value)` that
    /// `row(i, …)` passes to its callback, by increasing column and each column once; exact
    /// zeros are not stored. `row` is called twice for every row (to count, then to place), so
    /// the arrays are allocated once at their final length: no triplets, no growth.
    ///
    /// # Panics
    /// If a column does not fit 32 bits, or the two calls of `row` differ.
    pub fn from_rows(n_rows: usize, row: impl Fn(usize, &mut dyn FnMut(usize, f64))) -> Self {
        let mut row_start = Vec::with_capacity(n_rows + 1);
        row_start.push(0usize);
        let mut total = 0;
        for i in 0..n_rows {
            row(i, &mut |_, x| {
                if x != 0.0 {
                    total += 1;
                }
            });
            row_start.push(total);
        }
        let mut columns = Vec::with_capacity(total);
        let mut values = Vec::with_capacity(total);
        for i in 0..n_rows {
            row(i, &mut |j, x| {
                if x != 0.0 {
                    let j = u32::try_from(j).expect("column index fits 32 bits");
                    debug_assert!(
                        columns.len() == row_start[i] || columns.last() < Some(&j),
                        "CompressedRows::from_rows: columns ascending, each once"
                    );
                    columns.push(j);
                    values.push(x);
                }
            });
            assert_eq!(
                columns.len(),
                row_start[i + 1],
                "the two calls of CompressedRows::from_rows's row gave different entries"
            );
        }
        Self {
            row_start,
            columns,
            values,
        }
    }

    /// The matrix whose row `i` holds the entries `(column, value)` that
    /// `row(i, columns, values, …)` passes to its callback from row `i` of `self` (its columns
    /// and values), by increasing column and each column once; exact zeros are not stored:
    /// [`CompressedRows::from_rows`] of those rows, to the last bit, but formed in `self`'s
    /// own arrays, so that the new matrix never stands beside the old one (issue 20: the
    /// start-up's peak; `D = M + c J0` formed in `J0`'s arrays). `row` is called twice for
    /// every row (to count, then to place, last row first). In place when no row starts
    /// before its old start (the arrays grow by the entries added at most); otherwise the
    /// matrix is formed beside `self`, which is freed after.
    ///
    /// # Panics
    /// If a column does not fit 32 bits, or the two calls of `row` differ.
    pub fn map_rows(self, row: impl Fn(usize, &[u32], &[f64], &mut dyn FnMut(usize, f64))) -> Self {
        let n_rows = self.n_rows();
        // Pass 1: the new rows' starts, and whether each starts at or after its old start
        // (then writing a row, once copied aside, overwrites no row not yet read).
        let mut row_start = Vec::with_capacity(n_rows + 1);
        row_start.push(0usize);
        let (mut total, mut in_place, mut widest) = (0, true, 0);
        for i in 0..n_rows {
            let (cols, vals) = self.row(i);
            in_place &= total >= self.row_start[i];
            widest = widest.max(cols.len());
            row(i, cols, vals, &mut |_, x| {
                if x != 0.0 {
                    total += 1;
                }
            });
            row_start.push(total);
        }
        if !in_place {
            drop(row_start);
            return Self::from_rows(n_rows, |i, push| {
                let (cols, vals) = self.row(i);
                row(i, cols, vals, push)
            });
        }
        let Self {
            row_start: old_start,
            mut columns,
            mut values,
        } = self;
        let old_total = columns.len();
        // At their final length (no room grown by doubling).
        columns.reserve_exact(total.saturating_sub(old_total));
        values.reserve_exact(total.saturating_sub(old_total));
        columns.resize(total.max(old_total), 0);
        values.resize(total.max(old_total), 0.0);
        // Pass 2, last row first: row i read into the row buffers, then written at its new
        // place, which lies at or after its old start (rows before it are not overwritten).
        let (mut row_cols, mut row_vals) = (Vec::with_capacity(widest), Vec::with_capacity(widest));
        for i in (0..n_rows).rev() {
            let (lo, hi) = (old_start[i], old_start[i + 1]);
            row_cols.clear();
            row_cols.extend_from_slice(&columns[lo..hi]);
            row_vals.clear();
            row_vals.extend_from_slice(&values[lo..hi]);
            let mut k = row_start[i];
            row(i, &row_cols, &row_vals, &mut |j, x| {
                if x != 0.0 {
                    let j = u32::try_from(j).expect("column index fits 32 bits");
                    debug_assert!(
                        k == row_start[i] || columns[k - 1] < j,
                        "CompressedRows::map_rows: columns ascending, each once"
                    );
                    assert!(
                        k < row_start[i + 1],
                        "the two calls of CompressedRows::map_rows's row gave different entries"
                    );
                    columns[k] = j;
                    values[k] = x;
                    k += 1;
                }
            });
            assert_eq!(
                k,
                row_start[i + 1],
                "the two calls of CompressedRows::map_rows's row gave different entries"
            );
        }
        drop(old_start);
        columns.truncate(total);
        values.truncate(total);
        if total < old_total {
            columns.shrink_to_fit();
            values.shrink_to_fit();
        }
        Self {
            row_start,
            columns,
            values,
        }
    }

    /// The matrix of `n_rows` rows of the entries `(row, column, value)`, each position given
    /// at most once, in any order (zeros not stored).
    pub fn from_entries(n_rows: usize, entries: &[(usize, usize, f64)]) -> Self {
        Self::assemble(n_rows, |add| {
            for &(i, j, x) in entries {
                add(i, j, x);
            }
        })
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.row_start.len().saturating_sub(1)
    }

    /// Number of stored (nonzero) entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The columns and values of row `i`, by column.
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (lo, hi) = (self.row_start[i], self.row_start[i + 1]);
        (&self.columns[lo..hi], &self.values[lo..hi])
    }

    /// The entries `(row, column, value)`, row by row and by column within a row.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        (0..self.n_rows()).flat_map(move |i| {
            let (c, v) = self.row(i);
            c.iter().zip(v).map(move |(&j, &x)| (i, j as usize, x))
        })
    }

    /// The value at `(i, j)` (0 when not stored).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let (c, v) = self.row(i);
        match c.binary_search(&(j as u32)) {
            Ok(k) => v[k],
            Err(_) => 0.0,
        }
    }

    /// Add `x` to entry `(i, j)`, storing it (as `0 + x`) when absent; an entry that becomes
    /// zero stays stored. Allocates when it stores a new entry: not for a real-time step.
    pub fn add(&mut self, i: usize, j: usize, x: f64) {
        let (lo, hi) = (self.row_start[i], self.row_start[i + 1]);
        let col = u32::try_from(j).expect("column index fits 32 bits");
        match self.columns[lo..hi].binary_search(&col) {
            Ok(k) => self.values[lo + k] += x,
            Err(k) => {
                self.columns.insert(lo + k, col);
                self.values.insert(lo + k, 0.0 + x);
                self.row_start[i + 1..].iter_mut().for_each(|s| *s += 1);
            }
        }
    }

    /// Keep only the entries for which `keep(row, column, value)` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(usize, usize, f64) -> bool) {
        let mut write = 0;
        for i in 0..self.n_rows() {
            let (lo, hi) = (self.row_start[i], self.row_start[i + 1]);
            self.row_start[i] = write;
            for k in lo..hi {
                if keep(i, self.columns[k] as usize, self.values[k]) {
                    self.columns[write] = self.columns[k];
                    self.values[write] = self.values[k];
                    write += 1;
                }
            }
        }
        let n = self.n_rows();
        if let Some(end) = self.row_start.get_mut(n) {
            *end = write;
        }
        self.columns.truncate(write);
        self.values.truncate(write);
    }

    /// Whether every stored entry is on the diagonal.
    pub fn is_diagonal(&self) -> bool {
        self.iter().all(|(i, j, _)| i == j)
    }

    /// Heap bytes held (capacities of the three arrays).
    pub fn heap_bytes(&self) -> usize {
        self.row_start.capacity() * std::mem::size_of::<usize>()
            + self.columns.capacity() * std::mem::size_of::<u32>()
            + self.values.capacity() * std::mem::size_of::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::CompressedRows;

    /// The reference: triplets merged by a stable sort, each place summed from 0 in order,
    /// zeros dropped (the start-up assembly before compressed rows).
    fn merged(mut t: Vec<(usize, usize, f64)>) -> Vec<(usize, usize, f64)> {
        t.sort_by_key(|&(i, j, _)| (i, j));
        let mut out: Vec<(usize, usize, f64)> = Vec::new();
        let mut k = 0;
        while k < t.len() {
            let (i, j) = (t[k].0, t[k].1);
            let mut v = 0.0;
            while k < t.len() && (t[k].0, t[k].1) == (i, j) {
                v += t[k].2;
                k += 1;
            }
            if v != 0.0 {
                out.push((i, j, v));
            }
        }
        out
    }

    #[test]
    fn assembly_sums_each_place_in_the_order_given_as_a_sorted_merge_does() {
        // Contributions whose sums depend on their order (0.1 + 0.2 + 0.3 ≠ 0.3 + 0.2 + 0.1),
        // zeros, places that cancel, rows given out of column order and an empty row.
        let mut t = Vec::new();
        let mut x = 0.123_f64;
        for k in 0..400 {
            x = (x * 3.7 + 0.31).fract();
            let i = (k * 7) % 9;
            let j = (k * 13 + 5) % 11;
            let v = match k % 7 {
                0 => 0.0,
                1 => -0.0,
                _ => x * 10f64.powi((k % 5) as i32 - 2),
            };
            t.push((i, j, v));
        }
        t.push((3, 12, 1.0));
        t.push((3, 12, -1.0));
        t.push((8, 11, 0.1));
        t.push((8, 11, 0.2));
        t.push((8, 11, 0.3));
        let rows = CompressedRows::assemble(10, |add| {
            for &(i, j, v) in &t {
                add(i, j, v);
            }
        });
        let reference = merged(t.clone());
        let got: Vec<(usize, usize, f64)> = rows.iter().collect();
        assert_eq!(got.len(), reference.len());
        for (a, b) in got.iter().zip(&reference) {
            assert_eq!((a.0, a.1, a.2.to_bits()), (b.0, b.1, b.2.to_bits()));
        }
        assert_eq!(rows.n_rows(), 10);
        assert_eq!(rows.row(9).0.len(), 0);
        assert_eq!(rows.get(8, 11), 0.1 + 0.2 + 0.3);
        assert_eq!(rows.get(3, 12), 0.0);
        // Twelve bytes an entry, plus the row starts.
        assert_eq!(rows.heap_bytes(), 12 * rows.len() + 8 * 11);
    }

    #[test]
    fn add_and_retain_keep_the_rows_in_column_order() {
        let mut rows = CompressedRows::assemble(3, |add| {
            add(0, 2, 1.0);
            add(2, 0, 2.0);
        });
        rows.add(0, 1, 5.0);
        rows.add(1, 1, 3.0);
        rows.add(0, 2, -1.0);
        let got: Vec<(usize, usize, f64)> = rows.iter().collect();
        assert_eq!(
            got,
            vec![(0, 1, 5.0), (0, 2, 0.0), (1, 1, 3.0), (2, 0, 2.0)]
        );
        rows.retain(|i, j, _| i != j);
        let got: Vec<(usize, usize, f64)> = rows.iter().collect();
        assert_eq!(got, vec![(0, 1, 5.0), (0, 2, 0.0), (2, 0, 2.0)]);
        assert!(!rows.is_diagonal());
    }

    /// `map_rows` gives what `from_rows` of the same rows gives, to the last bit: rows that
    /// grow (an entry added before and after, in place), rows that shrink (a sum that
    /// cancels: formed beside), and a matrix that keeps its size.
    #[test]
    fn map_rows_gives_from_rows_s_matrix_in_place_or_beside() {
        let n = 40;
        let base = CompressedRows::from_rows(n, |i, push| {
            let below = i.checked_sub(3);
            let above = (i + 2 < n).then_some(i + 2);
            let diag = (i % 5 != 0).then_some(i);
            for j in [below, diag, above].into_iter().flatten() {
                push(j, 0.1 * (i * n + j) as f64 + 1.0);
            }
        });
        // Row i: the diagonal added (1 + c·x), a mirror entry at column n + i, each value
        // scaled; and, for `cancel`, the first entry of each third row cancelled.
        let mapped = |cancel: bool| {
            move |i: usize, cols: &[u32], vals: &[f64], push: &mut dyn FnMut(usize, f64)| {
                let mut seen_diag = false;
                for (k, (&j, &x)) in cols.iter().zip(vals).enumerate() {
                    let j = j as usize;
                    if j > i && !seen_diag {
                        push(i, 1.0);
                        seen_diag = true;
                    }
                    let y = if j == i {
                        seen_diag = true;
                        1.0 + 0.3 * x
                    } else if cancel && k == 0 && i.is_multiple_of(3) {
                        x - x
                    } else {
                        0.3 * x
                    };
                    push(j, y);
                }
                if !seen_diag {
                    push(i, 1.0);
                }
                push(n + i, -0.3);
            }
        };
        for cancel in [false, true] {
            let expected = CompressedRows::from_rows(n, |i, push| {
                let (c, v) = base.row(i);
                mapped(cancel)(i, c, v, push)
            });
            let got = base.clone().map_rows(mapped(cancel));
            assert_eq!(got.row_start, expected.row_start);
            assert_eq!(got.columns, expected.columns);
            let bits =
                |m: &CompressedRows| m.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&expected));
        }
        // Shrinking rows (every entry halved, the first of each row dropped): formed beside.
        let expected = CompressedRows::from_rows(n, |i, push| {
            let (c, v) = base.row(i);
            for (&j, &x) in c.iter().zip(v).skip(1) {
                push(j as usize, 0.5 * x);
            }
        });
        let got = base.clone().map_rows(|_, c, v, push| {
            for (&j, &x) in c.iter().zip(v).skip(1) {
                push(j as usize, 0.5 * x);
            }
        });
        assert_eq!(got, expected);
        // The same entries: in place, the same matrix.
        assert_eq!(
            base.clone().map_rows(|_, c, v, push| {
                for (&j, &x) in c.iter().zip(v) {
                    push(j as usize, x);
                }
            }),
            base
        );
    }
}
