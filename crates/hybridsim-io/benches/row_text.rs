//! The text of one results row (issue 20): a frame's row of 7742 numbers spelled by
//! `csv::push_row` (into the row's spare capacity, two spelling buffers in turn), against the
//! earlier spelling (each number's text appended with `extend_from_slice`), and in two pieces
//! as the results writer of `run` spells it on two threads.
//!
//! `cargo bench -p hybridsim-io --bench row_text`

use criterion::{criterion_group, criterion_main, Criterion};
use hybridsim_io::csv::{push_fields, push_row};
use std::hint::black_box;

/// Values like a recorded frame's: displacements, velocities, accelerations and forces of
/// varied magnitudes (full-precision f64s, 17–23 characters each), a few exact zeros.
fn frame_row(n: usize) -> Vec<f64> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if i % 97 == 0 {
                return 0.0;
            }
            let m = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            m * 10f64.powi((state % 9) as i32 - 5)
        })
        .collect()
}

/// The spelling before issue 20, session 21: each number's text appended to the line.
fn push_row_by_extend(out: &mut Vec<u8>, row: &[f64], num: &mut zmij::Buffer) {
    for (i, x) in row.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(num.format(*x).as_bytes());
    }
    out.push(b'\n');
}

fn bench(c: &mut Criterion) {
    let row = frame_row(7742);
    let mut out = Vec::with_capacity(row.len() * 25 + 1);
    let mut num = zmij::Buffer::new();
    let mut g = c.benchmark_group("row_text_7742");
    g.bench_function("push_row", |b| {
        b.iter(|| {
            out.clear();
            push_row(&mut out, black_box(&row), &mut num);
            black_box(out.len())
        })
    });
    g.bench_function("extend_from_slice", |b| {
        b.iter(|| {
            out.clear();
            push_row_by_extend(&mut out, black_box(&row), &mut num);
            black_box(out.len())
        })
    });
    g.bench_function("two_pieces", |b| {
        b.iter(|| {
            out.clear();
            push_fields(&mut out, black_box(&row[..3000]), false, &mut num);
            push_fields(&mut out, black_box(&row[3000..]), true, &mut num);
            out.push(b'\n');
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
