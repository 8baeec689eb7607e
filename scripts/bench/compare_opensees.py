#!/usr/bin/env python3
"""Whole-analysis wall time of the same models in openseespy and in hybridsim (issue 6).

Models (SI units, same time step, same number of steps, same quantities recorded):

  split-mass  Abbiati et al. (2019), Variant 1 assembled (m1+m2 = 8000 kg, m3 = 9000 kg, k1 = 4e5,
              k2 = 5e5 N/m), u2(0) = 0.01 m, free vibration. OpenSees: Newmark average acceleration
              (γ=1/2, β=1/4), algorithm Linear. hybridsim: MG-α with ρ∞ = 1 (the same trapezoidal
              rule) and PG-α ss = 1.
  bouc-wen    SDOF, m = 2e5 kg, Bouc-Wen spring to ground (A = 5e7 N/m, β = 3.5 /m, γ = 60 /m, n = 1;
              OpenSees uniaxialMaterial BoucWen with alpha = 0, ko = A, Ao = 1, no degradation:
              the same ż law with r = ko z), sine force 6e5 N at 1 Hz. OpenSees: Newmark average
              acceleration with Newton iterations (NormDispIncr 1e-10). hybridsim: MG-α ρ∞ = 1, one
              linearized correction per step.

Timing: one analysis per run, the runs alternate (OpenSees, hybridsim, OpenSees, ...) `--repeat`
times and the medians are reported.
  compute only    OpenSees: ops.analyze(N) without recorders. hybridsim: `hybridsim run` with
                  [output] every = N (one row), wall time of the run loop from run.json.
  with recording  OpenSees: Node recorders (disp, vel, accel of every node) and the element
                  force recorder, to files. hybridsim: every step recorded to results.csv
                  (all channels: u, v, a, absolute a, element forces/states, Λ, ...), run.json
                  wall time (includes the writer thread's flush).

Usage:  python3 scripts/bench/compare_opensees.py [--steps 20000] [--repeat 5] [--hybridsim PATH]
                                                  [--baseline PATH]
        --baseline runs a second hybridsim binary (e.g. a build of an earlier commit) in the
        same alternation, for before/after figures from one run.
Needs:  pip install openseespy (and apt-get install -y libblas3 liblapack3), a release build of
        hybridsim (cargo build --release).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DT = 1e-3


def opensees_split_mass(ops, steps, record, folder):
    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(0, 0.0)
    ops.node(1, 0.0)
    ops.node(2, 0.0)
    ops.fix(0, 1)
    ops.mass(1, 8.0e3)
    ops.mass(2, 9.0e3)
    ops.uniaxialMaterial("Elastic", 1, 4.0e5)
    ops.uniaxialMaterial("Elastic", 2, 5.0e5)
    ops.element("zeroLength", 1, 0, 1, "-mat", 1, "-dir", 1)
    ops.element("zeroLength", 2, 1, 2, "-mat", 2, "-dir", 1)
    ops.setNodeDisp(2, 1, 0.01, "-commit")
    if record:
        for q in ("disp", "vel", "accel"):
            ops.recorder("Node", "-file", os.path.join(folder, f"{q}.out"), "-time",
                         "-node", 1, 2, "-dof", 1, q)
        ops.recorder("Element", "-file", os.path.join(folder, "force.out"), "-time",
                     "-ele", 1, 2, "force")
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    ops.algorithm("Linear")
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
    t0 = time.perf_counter()
    ok = ops.analyze(steps, DT)
    wall = time.perf_counter() - t0
    ops.wipe()  # closes the recorder files
    if ok != 0:
        raise RuntimeError("OpenSees split-mass analysis failed")
    return wall


def opensees_bouc_wen(ops, steps, record, folder):
    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(0, 0.0)
    ops.node(1, 0.0)
    ops.fix(0, 1)
    ops.mass(1, 2.0e5)
    # BoucWen alpha ko n gamma beta Ao deltaA deltaNu deltaEta
    ops.uniaxialMaterial("BoucWen", 1, 0.0, 5.0e7, 1.0, 60.0, 3.5, 1.0, 0.0, 0.0, 0.0)
    ops.element("zeroLength", 1, 0, 1, "-mat", 1, "-dir", 1)
    ops.timeSeries("Trig", 1, 0.0, 1.0e9, 1.0)
    ops.pattern("Plain", 1, 1)
    ops.load(1, 6.0e5)
    if record:
        for q in ("disp", "vel", "accel"):
            ops.recorder("Node", "-file", os.path.join(folder, f"{q}.out"), "-time",
                         "-node", 1, "-dof", 1, q)
        ops.recorder("Element", "-file", os.path.join(folder, "force.out"), "-time",
                     "-ele", 1, "force")
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    ops.test("NormDispIncr", 1.0e-10, 25)
    ops.algorithm("Newton")
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
    t0 = time.perf_counter()
    ok = ops.analyze(steps, DT)
    wall = time.perf_counter() - t0
    ops.wipe()
    if ok != 0:
        raise RuntimeError("OpenSees Bouc-Wen analysis failed")
    return wall


SPLIT_MASS = """
title = "split-mass V1 assembled (benchmark)"
[[node]]
id = 1
dofs = ["x"]
[[node]]
id = 2
dofs = ["x"]
initial_displacement = {{ x = 0.01 }}
[substructure.numerical]
[substructure.specimen]
physical = true
estimate = {{ dofs = [[1, "x"]], stiffness = [[4.0e5]] }}
[[element]]
type = "mass"
node = 1
mass = 4.0e3
substructure = "specimen"
[[element]]
type = "spring"
nodes = [1]
dof = "x"
k = 4.0e5
substructure = "specimen"
[[element]]
type = "mass"
node = 1
mass = 4.0e3
substructure = "numerical"
[[element]]
type = "spring"
nodes = [1, 2]
dof = "x"
k = 5.0e5
substructure = "numerical"
[[element]]
type = "mass"
node = 2
mass = 9.0e3
substructure = "numerical"
[analysis]
integrator = "{integrator}"
rho_inf = 1.0
time_step = {dt}
duration = {duration}
[output]
every = {every}
"""

BOUC_WEN = """
title = "SDOF Bouc-Wen (benchmark)"
[[node]]
id = 1
dofs = ["x"]
[[element]]
type = "mass"
node = 1
mass = 2.0e5
[[element]]
type = "bouc_wen"
nodes = [1]
dof = "x"
A = 5.0e7
beta = 3.5
gamma = 60.0
n = 1.0
[[load]]
node = 1
dof = "x"
sine = {{ amplitude = 6.0e5, frequency = 1.0 }}
[analysis]
integrator = "{integrator}"
rho_inf = 1.0
time_step = {dt}
duration = {duration}
[output]
every = {every}
"""


def hybridsim_run(exe, template, integrator, steps, record, folder):
    every = 1 if record else steps
    text = template.format(integrator=integrator, dt=DT, duration=steps * DT, every=every)
    model = os.path.join(folder, "model.toml")
    with open(model, "w") as f:
        f.write(text)
    out = os.path.join(folder, "out")
    subprocess.run([exe, "run", "-q", model, "-o", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    if run["steps_completed"] != steps:
        raise RuntimeError(f"hybridsim ran {run['steps_completed']} of {steps} steps")
    return run["timing"]["wall_seconds"]


def machine():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--hybridsim", default=os.path.join(here, "..", "..", "target", "release", "hybridsim"))
    ap.add_argument("--baseline", default=None, help="a second hybridsim binary timed in the same alternation")
    args = ap.parse_args()
    try:
        import openseespy
        import openseespy.opensees as ops
    except ImportError:
        sys.exit("openseespy is not installed: pip install openseespy (and apt-get install -y libblas3 liblapack3)")
    if not os.path.exists(args.hybridsim):
        sys.exit(f"{args.hybridsim}: no hybridsim binary (cargo build --release)")
    try:
        from importlib.metadata import version
        osv = version("openseespy")
    except Exception:
        osv = "?"
    print(f"machine: {machine()}; openseespy {osv}")
    print(f"steps {args.steps}, dt {DT} s, {args.repeat} alternating repetitions, medians\n")
    cases = [
        ("split-mass", opensees_split_mass, SPLIT_MASS, ["mg-alpha", "pg-alpha"]),
        ("bouc-wen SDOF", opensees_bouc_wen, BOUC_WEN, ["mg-alpha"]),
    ]
    base = args.baseline
    if base:
        print(f"baseline: {base}\n")
        print("| model | mode | OpenSees [µs/step] | hybridsim scheme | baseline [µs/step] | ratio | hybridsim [µs/step] | ratio |")
        print("|---|---|---:|---|---:|---:|---:|---:|")
    else:
        print("| model | mode | OpenSees [µs/step] | hybridsim scheme | hybridsim [µs/step] | ratio |")
        print("|---|---|---:|---|---:|---:|")
    for name, os_fn, template, schemes in cases:
        for record in (False, True):
            os_times = []
            hs_times = {s: [] for s in schemes}
            base_times = {s: [] for s in schemes}
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as d:
                    os_times.append(os_fn(ops, args.steps, record, d))
                for s in schemes:
                    if base:
                        with tempfile.TemporaryDirectory() as d:
                            base_times[s].append(hybridsim_run(base, template, s, args.steps, record, d))
                    with tempfile.TemporaryDirectory() as d:
                        hs_times[s].append(hybridsim_run(args.hybridsim, template, s, args.steps, record, d))
            o = statistics.median(os_times) / args.steps * 1e6
            for s in schemes:
                h = statistics.median(hs_times[s]) / args.steps * 1e6
                mode = "with recording" if record else "compute only"
                if base:
                    b = statistics.median(base_times[s]) / args.steps * 1e6
                    print(f"| {name} | {mode} | {o:.3f} | {s} | {b:.3f} | {o / b:.1f}× | {h:.3f} | {o / h:.1f}× |")
                else:
                    print(f"| {name} | {mode} | {o:.3f} | {s} | {h:.3f} | {o / h:.1f}× |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
