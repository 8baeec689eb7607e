#!/usr/bin/env python3
"""Per-step cost of a 2D frame of N DOFs in hybridsim and in openseespy (issue 20).

The frame of `frame_model.py` (elastic beam-columns, lumped masses, Rayleigh damping, a
ground acceleration record along x), Δt = 1 ms, linear: hybridsim MG-α ρ∞ = 1 (the
trapezoidal rule), OpenSees Newmark average acceleration (γ = 1/2, β = 1/4), `Linear
-factorOnce` (its fastest linear option; the default `Linear` refactors every step),
`BandGeneral` with the same (floor by floor) numbering.

First the agreement check: --check-steps steps with every step recorded; the roof node's x
displacement of hybridsim (results.csv) and of OpenSees (nodeDisp after every step) are
compared with an independent Newmark average-acceleration integration of the same matrices
(scipy.sparse): hybridsim must agree to --tolerance (1e-9) of the peak, OpenSees to
--opensees-tolerance (1e-4: OpenSees differs from the reference by 3.7e-5 of the peak on
this frame, for a reason not found; hybridsim by about 1e-13), else the script stops with
an error.

Then the timing, runs alternated (OpenSees, hybridsim, …) --repeat times, medians reported:
  compute only    OpenSees: analyze(steps) without recorders, wall time of analyze.
                  hybridsim: `hybridsim run`, [output] every = steps (one row), run.json
                  timing.wall_seconds (the run loop).
  every step      OpenSees: Node recorders of disp, vel and accel of every free node and the
                  element force recorder, to files; wall time of analyze + wipe (flush).
                  hybridsim: every = 1 (every channel of results.csv), run.json wall_seconds
                  (run loop and the writer's flush).
  what OpenSees   hybridsim only (issue 20, session 25): every = 1 with the `[output]`
  records         selection of what OpenSees's recorders above write, so that the two sides
                  write the same quantities: u, v, a_abs of every DOF of the free nodes
                  (`nodes`, `dofs`) and the 6 end forces of every beam-column (`elements` =
                  the members' names), without the Rayleigh element's force and the energy
                  column (`energy = false`), which OpenSees does not record (its `-time`
                  column is written to each of its 4 files, hybridsim's time once). Compared
                  with the same OpenSees recorded run. The all-columns figure is kept: it
                  writes 7 742 columns a row at 990 DOFs, this one 6 751 (OpenSees 6 750).
Start-up is reported too: hybridsim run.json `startup.seconds` and peak RSS, OpenSees the
model build (node, element, … calls) + analysis set-up.

`--format binary` (issue 20, session 19): the recorded runs write binary on both sides,
hybridsim `[output] format = "binary"` (results.bin) and OpenSees `-binary FILE` recorders.

Usage:  python3 scripts/bench/frame_benchmark.py --exe target/release/hybridsim \
            --n 1000 10000 [--bays 10] [--steps 2000] [--repeat 3] [--out out/frame] \
            [--format csv|binary]
Needs:  pip install openseespy scipy. Writes only under --out (a temporary folder by default,
        removed at the end).
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frame_model  # noqa: E402

DT = 1e-3
THREADS = None  # --threads: passed to `hybridsim run` (issue 20, session 22)


def opensees_selection(n, bays):
    """The `[output]` keys that record what the OpenSees recorders of `opensees(record=True)`
    write: the free nodes' DOFs and every member's forces, no Rayleigh force, no energy."""
    storeys = frame_model.storeys_for(n, bays)
    free = range(bays + 2, (storeys + 1) * (bays + 1) + 1)
    names = [f'"{kind}{tag}"' for tag, _, _, kind in frame_model.members(storeys, bays)]
    return (f"nodes = [{', '.join(str(k) for k in free)}]\n"
            'dofs = ["x", "y", "rz"]\n'
            f"elements = [{', '.join(names)}]\n"
            "energy = false\n")


def hybridsim(exe, n, bays, steps, every, folder, fmt="csv", select=False):
    os.makedirs(folder, exist_ok=True)
    model, roof, _ = frame_model.write(n, bays, steps, DT, os.path.join(folder, "frame.toml"), every)
    with open(model, "a") as f:  # [output] is the model's last table
        f.write(f'format = "{fmt}"\n')
        if select:
            f.write(opensees_selection(n, bays))
    out = os.path.join(folder, "out")
    threads = ["--threads", str(THREADS)] if THREADS else []
    p = subprocess.run([exe, "run", "-q", "--overwrite", *threads, model, "-o", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"hybridsim failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    if run["steps_completed"] != steps:
        raise RuntimeError(f"hybridsim ran {run['steps_completed']} of {steps} steps")
    return run, out, roof


def opensees(ops, n, bays, steps, record, folder, track=None, fmt="csv"):
    t0 = time.perf_counter()
    storeys = frame_model.opensees_build(ops, n, bays, steps, DT)
    build = time.perf_counter() - t0
    if record:
        os.makedirs(folder, exist_ok=True)
        free = list(range(bays + 2, (storeys + 1) * (bays + 1) + 1))
        to = "-binary" if fmt == "binary" else "-file"
        for q in ("disp", "vel", "accel"):
            ops.recorder("Node", to, os.path.join(folder, f"{q}.out"), "-time",
                         "-node", *free, "-dof", 1, 2, 3, q)
        n_members = len(frame_model.members(storeys, bays))
        ops.recorder("Element", to, os.path.join(folder, "force.out"), "-time",
                     "-ele", *range(1, n_members + 1), "force")
    history = []
    t0 = time.perf_counter()
    if track is None:
        ok = ops.analyze(steps, DT)
    else:
        ok = 0
        for _ in range(steps):
            ok |= ops.analyze(1, DT)
            history.append(ops.nodeDisp(track, 1))
    ops.wipe()  # closes the recorder files
    wall = time.perf_counter() - t0
    if ok != 0:
        raise RuntimeError("OpenSees analysis failed")
    return build, wall, history


def reference(n, bays, steps):
    """Roof x displacement of the frame by an independent Newmark average-acceleration
    integration (scipy.sparse: the members' `Tᵀ k T`, the lumped masses, C = α M + β K,
    load −M ι a_g, zero initial state), after each step."""
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    storeys = frame_model.storeys_for(n, bays)
    first = bays + 2  # the first free node
    size = 3 * storeys * (bays + 1)
    rows, cols, vals = [], [], []
    for _, i, j, kind in frame_model.members(storeys, bays):
        k = frame_model.global_stiffness(kind)
        dofs = [3 * (node - first) + d if node >= first else -1 for node in (i, j) for d in range(3)]
        for a, da in enumerate(dofs):
            for b, db in enumerate(dofs):
                if da >= 0 and db >= 0:
                    rows.append(da)
                    cols.append(db)
                    vals.append(k[a][b])
    stiffness = sp.csc_matrix((vals, (rows, cols)), shape=(size, size))
    m = np.zeros(size)
    for f in range(1, storeys + 1):
        share = 0.5 if f == storeys else 1.0
        for c in range(bays + 1):
            at = 3 * (frame_model.node_id(f, c, bays) - first)
            m[at:at + 3] = [frame_model.NODE_MASS * share] * 2 + [frame_model.NODE_ROTARY * share]
    mass = sp.diags(m)
    damping = frame_model.ALPHA * mass + frame_model.BETA * stiffness
    iota = np.zeros(size)
    iota[0::3] = 1.0
    ag = frame_model.record(steps, DT)
    effective = spla.splu((stiffness + 2 / DT * damping + 4 / DT**2 * mass).tocsc())
    u, v, a = np.zeros(size), np.zeros(size), -iota * ag[0]
    roof = 3 * (frame_model.node_id(storeys, 0, bays) - first)
    out = []
    for k in range(1, steps + 1):
        p = -m * iota * ag[k] + mass @ (4 / DT**2 * u + 4 / DT * v + a) + damping @ (2 / DT * u + v)
        un = effective.solve(p)
        vn = 2 / DT * (un - u) - v
        a = 4 / DT**2 * (un - u) - 4 / DT * v - a
        u, v = un, vn
        out.append(u[roof])
    return out


def check(exe, ops, n, bays, steps, tolerance, folder, opensees_tolerance):
    """Roof x displacement of hybridsim and of OpenSees, step by step, against an independent
    Newmark integration (`reference`); returns the largest differences relative to the
    peak."""
    _, out, roof = hybridsim(exe, n, bays, steps, 1, os.path.join(folder, f"check{n}"))
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    name = f"u.structure.{roof}.x[m]"
    if name not in header:
        raise RuntimeError(f"results.csv has no column {name!r} (columns start {header[:6]})")
    col = header.index(name)
    ours = [float(r[col]) for r in rows[1:]]
    ours = ours[-steps:]  # without the t = 0 row, if written
    _, _, theirs = opensees(ops, n, bays, steps, False, None, track=roof)
    ref = reference(n, bays, steps)
    peak = max(abs(x) for x in ref)
    rel = max(abs(a - b) for a, b in zip(ours, ref)) / peak
    rel_os = max(abs(a - b) for a, b in zip(theirs, ref)) / peak
    rel_both = max(abs(a - b) for a, b in zip(ours, theirs)) / peak
    print(f"agreement, N = {n}, {steps} steps, roof x peak {peak:.4e} m, largest difference "
          f"relative to the peak: hybridsim − reference {rel:.2e}, OpenSees − reference "
          f"{rel_os:.2e}, hybridsim − OpenSees {rel_both:.2e}")
    if not (rel <= tolerance and len(ours) == steps):
        sys.exit(f"hybridsim and the Newmark reference disagree at N = {n}: {rel:.3e} > "
                 f"{tolerance:g} ({len(ours)} of {steps} steps)")
    if not (rel_os <= opensees_tolerance and len(theirs) == steps):
        sys.exit(f"OpenSees and the Newmark reference disagree at N = {n}: {rel_os:.3e} > "
                 f"{opensees_tolerance:g}")
    return rel, rel_os


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default="target/release/hybridsim")
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--bays", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--check-steps", type=int, default=500)
    ap.add_argument("--tolerance", type=float, default=1e-9,
                    help="hybridsim against the Newmark reference, relative to the peak")
    ap.add_argument("--opensees-tolerance", type=float, default=1e-4,
                    help="OpenSees against the Newmark reference, relative to the peak")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None,
                    help="`hybridsim run --threads N` (default: the model's, 1)")
    ap.add_argument("--out", default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--format", choices=["csv", "binary"], default="csv",
                    help="recorded runs: hybridsim [output] format, OpenSees -file or -binary")
    a = ap.parse_args()
    global THREADS
    THREADS = a.threads
    import openseespy.opensees as ops

    top = a.out or tempfile.mkdtemp(prefix="frame_benchmark_")
    try:
        rows = []
        for n in a.n:
            check(a.exe, ops, n, a.bays, a.check_steps, a.tolerance, top, a.opensees_tolerance)
            times = {k: [] for k in ("os_compute", "hs_compute", "os_record", "hs_record",
                                     "hs_select")}
            startup = build = select_startup = None
            for r in range(a.repeat):
                for record in (False, True):
                    tag = "record" if record else "compute"
                    b, wall, _ = opensees(ops, n, a.bays, a.steps, record,
                                          os.path.join(top, f"os{n}_{tag}"), fmt=a.format)
                    times[f"os_{tag}"].append(wall / a.steps)
                    build = b if build is None else min(build, b)
                    run, out, _ = hybridsim(a.exe, n, a.bays, a.steps, 1 if record else a.steps,
                                            os.path.join(top, f"hs{n}_{tag}"), a.format)
                    # Gigabytes at N = 10^4: keep the disk free between runs.
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(os.path.join(top, f"os{n}_{tag}"), ignore_errors=True)
                    times[f"hs_{tag}"].append(run["timing"]["wall_seconds"] / a.steps)
                    st = run.get("startup") or {}
                    startup = st if startup is None else min(
                        startup, st, key=lambda s: s.get("seconds", float("inf")))
                    if record:
                        # The same recorded run with OpenSees's columns only (right after).
                        run, out, _ = hybridsim(a.exe, n, a.bays, a.steps, 1,
                                                os.path.join(top, f"hs{n}_select"), a.format,
                                                select=True)
                        shutil.rmtree(out, ignore_errors=True)
                        times["hs_select"].append(run["timing"]["wall_seconds"] / a.steps)
                        select_startup = (run.get("startup") or {}).get("seconds")
            med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
            med["select_startup"] = select_startup
            rows.append((n, startup, build, med))
            print(f"N = {n}: " + ", ".join(f"{k} {v:.1f} µs" for k, v in med.items()
                                           if k != "select_startup")
                  + f", start-up with the selection {select_startup:.3f} s")
            sys.stdout.flush()
        print()
        print("| N (DOFs) | hybridsim start-up (s) / peak RSS (MB) | OpenSees build (s) | "
              "compute only: OpenSees / hybridsim (µs per step) | ratio | every step recorded, "
              "hybridsim every column: OpenSees / hybridsim (µs per step) | ratio | "
              "every step recorded, hybridsim OpenSees's columns: OpenSees / hybridsim "
              "(µs per step) | ratio |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n, st, b, m in rows:
            print(f"| {n} | {st.get('seconds', float('nan')):.3f} / "
                  f"{st.get('peak_rss_bytes', float('nan')) / 1e6:.0f} | {b:.3f} | "
                  f"{m['os_compute']:.1f} / {m['hs_compute']:.1f} | "
                  f"{m['os_compute'] / m['hs_compute']:.1f}× | "
                  f"{m['os_record']:.1f} / {m['hs_record']:.1f} | "
                  f"{m['os_record'] / m['hs_record']:.1f}× | "
                  f"{m['os_record']:.1f} / {m['hs_select']:.1f} | "
                  f"{m['os_record'] / m['hs_select']:.1f}× |")
    finally:
        if a.out is None:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
