#!/usr/bin/env python3
"""End-to-end wall time of a whole record (parse → last row written), hybridsim against
openseespy building and running the same model with recorders of the same columns (issue 20).

Models: the shear chain of `chain_model.py` (N storeys, one `x` DOF a node, Rayleigh damping,
MG-α ρ∞ = 1) and the 2D frame of `frame_model.py` (N DOFs, 3 a node), both excited by the
same ground record (`frame_model.record`, a seeded sum of sines, written as a two-column file
for hybridsim and given to OpenSees as a `Path` series), Δt = 1 ms, `--seconds` of record
(default 20 s: 20 000 steps).

- hybridsim: `hybridsim run -q MODEL -o OUT` with `[output] every = 1` (every results.csv
  column every step: u, v, a_abs of every DOF, every element force, energy); the wall time
  of the whole process (start, parse, start-up, the run, the writer's last row and flush,
  exit), measured around the subprocess.
- OpenSees: a child python process builds the same model (chain: `zeroLength` springs with an
  `Elastic` material; frame: `elasticBeamColumn`s), Newmark average acceleration (the same
  trapezoidal rule), `Linear -factorOnce`, `BandGeneral`, and recorders of the same columns
  to files (OpenSees's default 6 significant digits; hybridsim writes shortest round-trip
  numbers): Node disp, vel, accel with `-timeSeries` (absolute acceleration) and
  rayleighForces of every free node, Element force of every element. Reported: the child's
  time from the first model command to `wipe()` (recorders closed) — without the interpreter
  start and the openseespy import — and the child's whole wall time, measured around it.

Runs alternate (OpenSees, hybridsim) `--repeat` times; medians are printed with the load
average before and after each row. Each run's output folder is removed after it (every step of
20 s of the N = 10^3 frame is about 3.5 GB of CSV for hybridsim and 3 GB of OpenSees text).

Options (issue 20, session 19):
- `--format binary`: hybridsim `[output] format = "binary"` (results.bin, f64 rows), OpenSees
  `-binary FILE` recorders instead of `-file FILE` (the same columns).
- `--selection storeys`: a realistic recording of a large model instead of every column:
  hybridsim `[output] nodes = [...]`, `dofs = ["x"]`, `elements = false`, `energy = false`
  (time and u, v, a_abs of the selected nodes' x DOF); OpenSees `recorder Node -node ... -dof 1`
  of disp, vel and accel (with `-timeSeries`) of the same nodes, no element recorder. The
  nodes: the frame's left column line, one node a storey; the chain's every 10th storey.

Usage: python3 scripts/bench/end_to_end.py --exe target/release/hybridsim \
           --n 1000 10000 [--models chain frame] [--seconds 20] [--repeat 2] [--out DIR] \
           [--format csv|binary] [--selection all|storeys]
"""
import argparse
import json
import os
import shutil
import struct
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chain_model  # noqa: E402
import frame_model  # noqa: E402

DT = 1e-3


def write_record(steps, path):
    with open(path, "w") as f:
        for k, a in enumerate(frame_model.record(steps, DT)):
            f.write(f"{k * DT!r} {a!r}\n")


def selected_nodes(kind, n):
    """The nodes of `--selection storeys`: the frame's left column line (one node a storey),
    the chain's every 10th storey."""
    if kind == "frame":
        storeys = frame_model.storeys_for(n, 10)
        return [frame_model.node_id(f, 0, 10) for f in range(1, storeys + 1)]
    return list(range(10, n + 1, 10))


def write_model(kind, n, steps, folder, fmt="csv", selection="all"):
    """The model file (every step recorded, `[output]` last) and its record; returns the model
    path."""
    path = os.path.join(folder, f"{kind}{n}.toml")
    if kind == "frame":
        frame_model.write(n, 10, steps, DT, path, 1)
    else:
        rec = os.path.join(folder, f"{kind}{n}_record.txt")
        write_record(steps, rec)
        text = chain_model.chain(n, duration=steps * DT, time_step=DT, every=1)
        start = text.index("synthetic = {")
        end = text.index("}", start) + 1
        text = (text[:start] + f'record = "{os.path.basename(rec)}"\nrecord_units = "model"'
                + text[end:])
        with open(path, "w") as f:
            f.write(text)
    extra = [f'format = "{fmt}"']
    if selection == "storeys":
        extra += [f"nodes = {selected_nodes(kind, n)}", 'dofs = ["x"]', "elements = false",
                  "energy = false"]
    with open(path, "a") as f:
        f.write("\n".join(extra) + "\n")
    return path


def header_columns(out):
    """Columns of the results file of folder `out` (results.csv or results.bin)."""
    csv_path = os.path.join(out, "results.csv")
    if os.path.exists(csv_path):
        with open(csv_path) as f:
            return len(f.readline().split(","))
    with open(os.path.join(out, "results.bin"), "rb") as f:
        head = f.read(24)
    assert head[:8] == b"HSRESULT", head
    return struct.unpack("<I", head[12:16])[0]


def hybridsim(exe, model, folder, steps):
    out = os.path.join(folder, "hs_out")
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.run([exe, "run", "-q", "--overwrite", model, "-o", out],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"hybridsim failed on {model}:\n{p.stderr[-2000:]}")
    run = json.load(open(os.path.join(out, "run.json")))
    if run["steps_completed"] != steps:
        raise SystemExit(f"hybridsim ran {run['steps_completed']} of {steps} steps")
    columns = header_columns(out)
    shutil.rmtree(out, ignore_errors=True)  # a 20 s record of 10^4 DOFs is gigabytes
    return wall, run["startup"]["seconds"], columns


def opensees_chain(ops, n, steps):
    chain_model.opensees_build(
        ops, n, steps, DT, record=frame_model.record(steps, DT), factor_once=True
    )
    return list(range(1, n + 1)), [1], n, [1]


def opensees_frame(ops, n, steps):
    storeys = frame_model.opensees_build(ops, n, 10, steps, DT)
    free = list(range(10 + 2, (storeys + 1) * (10 + 1) + 1))
    # The recorder takes one series a DOF for the absolute acceleration (one for 3 DOFs reads
    # past its list and crashes): the record along x, nothing along y and rz.
    ops.timeSeries("Constant", 2, "-factor", 0.0)
    return free, [1, 2, 3], len(frame_model.members(storeys, 10)), [1, 2, 2]


def opensees_child(kind, n, steps, folder, fmt="csv", selection="all"):
    import openseespy.opensees as ops
    t0 = time.perf_counter()
    build = opensees_chain if kind == "chain" else opensees_frame
    free, dofs, elements, series = build(ops, n, steps)
    to = "-binary" if fmt == "binary" else "-file"
    if selection == "storeys":
        nodes = selected_nodes(kind, n)
        for q in ("disp", "vel"):
            ops.recorder("Node", to, os.path.join(folder, f"{q}.out"), "-time",
                         "-node", *nodes, "-dof", 1, q)
        ops.recorder("Node", to, os.path.join(folder, "accel.out"), "-time", "-timeSeries",
                     1, "-node", *nodes, "-dof", 1, "accel")
    else:
        for q in ("disp", "vel", "rayleighForces"):
            ops.recorder("Node", to, os.path.join(folder, f"{q}.out"), "-time",
                         "-node", *free, "-dof", *dofs, q)
        ops.recorder("Node", to, os.path.join(folder, "accel.out"), "-time", "-timeSeries",
                     *series, "-node", *free, "-dof", *dofs, "accel")
        ops.recorder("Element", to, os.path.join(folder, "force.out"), "-time",
                     "-ele", *range(1, elements + 1), "force")
    ok = ops.analyze(steps, DT)
    ops.wipe()
    print(json.dumps({"seconds": time.perf_counter() - t0, "ok": ok}))


def opensees(kind, n, steps, folder, fmt="csv", selection="all"):
    out = os.path.join(folder, "os_out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--opensees-child", kind,
                        str(n), str(steps), out, fmt, selection], capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    if p.returncode != 0:
        raise SystemExit(f"OpenSees failed on {kind} {n} (exit {p.returncode}):\n"
                         f"{p.stderr[-2000:]}{p.stdout[-2000:]}")
    r = json.loads([x for x in p.stdout.splitlines() if x.startswith("{")][-1])
    if r["ok"] != 0:
        raise SystemExit(f"OpenSees analysis of {kind} {n} failed")
    return r["seconds"], wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default="target/release/hybridsim")
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--models", nargs="+", default=["chain", "frame"])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--format", choices=["csv", "binary"], default="csv",
                    help="hybridsim [output] format; OpenSees -file (text) or -binary recorders")
    ap.add_argument("--selection", choices=["all", "storeys"], default="all",
                    help="every column, or u, v, a_abs along x of one node a storey (frame) / "
                         "every 10th storey (chain) on both sides")
    ap.add_argument("--opensees-child", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.opensees_child:
        kind, n, steps, folder, fmt, selection = a.opensees_child
        opensees_child(kind, int(n), int(steps), folder, fmt, selection)
        return
    steps = round(a.seconds / DT)
    top = a.out or tempfile.mkdtemp(prefix="end_to_end_")
    os.makedirs(top, exist_ok=True)
    try:
        print(f"{a.seconds:g} s of record, {steps} steps, every step recorded, format "
              f"{a.format}, selection {a.selection}")
        print("| model | N (DOFs) | columns | hybridsim wall (s) [start-up] | OpenSees build→wipe (s)"
              " | OpenSees process (s) | ratio (build→wipe / hybridsim) | load |")
        print("|---|---|---|---|---|---|---|---|")
        for n in a.n:
            for kind in a.models:
                model = write_model(kind, n, steps, top, a.format, a.selection)
                hs, hs_start, os_in, os_wall = [], [], [], []
                l0 = os.getloadavg()[0]
                columns = None
                for _ in range(a.repeat):
                    i, w = opensees(kind, n, steps, top, a.format, a.selection)
                    os_in.append(i)
                    os_wall.append(w)
                    wall, start, columns = hybridsim(a.exe, model, top, steps)
                    hs.append(wall)
                    hs_start.append(start)
                med = statistics.median
                print(f"| {kind} | {n} | {columns} | {med(hs):.2f} ({', '.join(f'{x:.2f}' for x in hs)})"
                      f" [{med(hs_start):.3f}] | {med(os_in):.2f} ({', '.join(f'{x:.2f}' for x in os_in)})"
                      f" | {med(os_wall):.2f} | {med(os_in) / med(hs):.1f}× "
                      f"| {l0:.1f}–{os.getloadavg()[0]:.1f} |", flush=True)
    finally:
        if a.out is None:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
