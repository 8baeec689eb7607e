#!/usr/bin/env python3
"""A 2D moment frame of about N DOFs, for hybridsim and for openseespy (issue 20).

The frame has `bays` bays of 6 m and as many storeys of 3 m as it takes to reach N DOFs
(3 DOFs `x`, `y`, `rz` a free node, `bays + 1` free nodes a floor: N = 3 (bays + 1) storeys).
Every column and beam is an elastic Euler-Bernoulli beam-column (units m, kN, s, t):
columns E = 2e8 kPa, A = 0.02 m², I = 3e-4 m⁴; beams A = 0.01 m², I = 2e-4 m⁴.
The library has no uncondensed 2D beam element (`type = "frame"` condenses to a dense
superelement), so each member is written as an ordinary 6-DOF `type = "linear"` element with
the global stiffness `Tᵀ k T` of the beam-column (members are vertical or horizontal, so T is
a signed permutation and the matrix is exactly symmetric); OpenSees builds the same member as
`elasticBeamColumn` with a `Linear` transformation. Masses are lumped at the nodes (20 t in x
and y, 0.5 t·m² in rz; half at the roof), Rayleigh damping α = 0.2 /s on the mass, β = 2e-3 s
on the initial stiffness, the ground acceleration along x is a two-column record (written
next to the model, in m/s², sampled at the time step: a seeded sum of sines with a 1 s
ramp, PGA about 1 m/s²).

Nodes are numbered floor by floor (base 1..bays+1, fixed; then each floor left to right),
so the DOF order of hybridsim (by node id) is banded with a half-bandwidth of about
3 (bays + 1) + 3.

Usage: python3 scripts/bench/frame_model.py --n 1000 [--bays 10] [--steps 2000] -o frame.toml
"""
import argparse
import math
import os
import random

SPAN, HEIGHT = 6.0, 3.0
E = 2.0e8
COLUMN = (0.02, 3.0e-4)
BEAM = (0.01, 2.0e-4)
NODE_MASS, NODE_ROTARY = 20.0, 0.5
ALPHA, BETA = 0.2, 2.0e-3


def storeys_for(n, bays):
    return max(1, round(n / (3 * (bays + 1))))


def node_id(floor, column, bays):
    return floor * (bays + 1) + column + 1


def members(storeys, bays):
    """(tag, i, j, kind) of every member: columns bottom→top, beams left→right."""
    out = []
    tag = 1
    for f in range(1, storeys + 1):
        for c in range(bays + 1):
            out.append((tag, node_id(f - 1, c, bays), node_id(f, c, bays), "column"))
            tag += 1
        for c in range(bays):
            out.append((tag, node_id(f, c, bays), node_id(f, c + 1, bays), "beam"))
            tag += 1
    return out


def global_stiffness(kind):
    """6×6 global stiffness of a column (local x = global y) or a beam (local x = global x)
    over [x1, y1, rz1, x2, y2, rz2]."""
    length = HEIGHT if kind == "column" else SPAN
    a, i = COLUMN if kind == "column" else BEAM
    ea, ei = E * a / length, E * i
    k1, k2, k3, k4 = 12 * ei / length**3, 6 * ei / length**2, 4 * ei / length, 2 * ei / length
    local = [
        [ea, 0, 0, -ea, 0, 0],
        [0, k1, k2, 0, -k1, k2],
        [0, k2, k3, 0, -k2, k4],
        [-ea, 0, 0, ea, 0, 0],
        [0, -k1, -k2, 0, k1, -k2],
        [0, k2, k4, 0, -k2, k3],
    ]
    if kind == "beam":
        return [[float(x) for x in row] for row in local]
    # Column: u_local = y, v_local = −x, θ = rz (rotation by +90°).
    t1 = [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]
    t = [[0.0] * 6 for _ in range(6)]
    for b in range(2):
        for p in range(3):
            for q in range(3):
                t[3 * b + p][3 * b + q] = float(t1[p][q])
    # Tᵀ k T with a signed permutation T: every product is exact, the result symmetric.
    kt = [[sum(local[p][r] * t[r][q] for r in range(6)) for q in range(6)] for p in range(6)]
    return [[sum(t[r][p] * kt[r][q] for r in range(6)) + 0.0 for q in range(6)] for p in range(6)]


def record(steps, dt, seed=2026):
    """Ground acceleration (m/s²) at t = 0, dt, …, steps·dt: a seeded sum of sines."""
    rng = random.Random(seed)
    waves = [(rng.uniform(0.5, 8.0), rng.uniform(0, 2 * math.pi), rng.uniform(0.5, 1.0))
             for _ in range(12)]
    norm = sum(w[2] for w in waves)
    out = []
    for k in range(steps + 1):
        t = k * dt
        ramp = min(1.0, t)
        out.append(ramp * sum(a * math.sin(2 * math.pi * f * t + p) for f, p, a in waves) / norm)
    return out


def hybridsim_model(n, bays, steps, dt, record_file, every):
    storeys = storeys_for(n, bays)
    lines = [
        f'title = "2D frame, {bays} bays x {storeys} storeys ({3 * (bays + 1) * storeys} DOFs)"',
        '[units]\nlength = "m"\nforce = "kN"\ntime = "s"',
    ]
    for f in range(storeys + 1):
        for c in range(bays + 1):
            fixed = '\nfixed = ["x", "y", "rz"]' if f == 0 else ""
            lines.append(f'[[node]]\nid = {node_id(f, c, bays)}\ndofs = ["x", "y", "rz"]{fixed}')
    kc, kb = global_stiffness("column"), global_stiffness("beam")
    fmt = lambda k: "[" + ", ".join("[" + ", ".join(repr(x) for x in row) + "]" for row in k) + "]"
    kc_text, kb_text = fmt(kc), fmt(kb)
    for tag, i, j, kind in members(storeys, bays):
        lines.append(
            f'[[element]]\ntype = "linear"\nname = "{kind}{tag}"\n'
            f'dofs = [[{i}, "x"], [{i}, "y"], [{i}, "rz"], [{j}, "x"], [{j}, "y"], [{j}, "rz"]]\n'
            f"k = {kc_text if kind == 'column' else kb_text}"
        )
    for f in range(1, storeys + 1):
        share = 0.5 if f == storeys else 1.0
        for c in range(bays + 1):
            m, r = NODE_MASS * share, NODE_ROTARY * share
            lines.append(
                f'[[element]]\ntype = "mass"\nname = "m{node_id(f, c, bays)}"\n'
                f'node = {node_id(f, c, bays)}\ndofs = ["x", "y", "rz"]\nmass = [{m!r}, {m!r}, {r!r}]'
            )
    lines.append(f"[damping]\nalpha = {ALPHA!r}\nbeta = {BETA!r}")
    lines.append(
        f'[[ground_motion]]\ndirection = "x"\nrecord = "{record_file}"\nrecord_units = "model"'
    )
    lines.append(
        '[analysis]\nintegrator = "mg-alpha"\nrho_inf = 1.0\n'
        f"time_step = {dt!r}\nduration = {steps * dt!r}"
    )
    lines.append(f"[output]\nevery = {every}")
    return "\n\n".join(lines) + "\n"


def write(n, bays, steps, dt, path, every):
    """Write the model and its record; returns (model path, roof node id, storeys)."""
    base = os.path.splitext(path)[0]
    rec = base + "_record.txt"
    with open(rec, "w") as f:
        for k, a in enumerate(record(steps, dt)):
            f.write(f"{k * dt!r} {a!r}\n")
    with open(path, "w") as f:
        f.write(hybridsim_model(n, bays, steps, dt, os.path.basename(rec), every))
    storeys = storeys_for(n, bays)
    return path, node_id(storeys, 0, bays), storeys


def opensees_build(ops, n, bays, steps, dt, factor_once=True):
    """Build the same frame in openseespy (model, masses, damping, load, analysis); the
    `Linear` algorithm factors once (`-factorOnce`, its fastest linear option) unless told."""
    storeys = storeys_for(n, bays)
    ops.wipe()
    ops.model("basic", "-ndm", 2, "-ndf", 3)
    for f in range(storeys + 1):
        for c in range(bays + 1):
            tag = node_id(f, c, bays)
            ops.node(tag, c * SPAN, f * HEIGHT)
            if f == 0:
                ops.fix(tag, 1, 1, 1)
            else:
                share = 0.5 if f == storeys else 1.0
                ops.mass(tag, NODE_MASS * share, NODE_MASS * share, NODE_ROTARY * share)
    ops.geomTransf("Linear", 1)
    for tag, i, j, kind in members(storeys, bays):
        a, iz = COLUMN if kind == "column" else BEAM
        ops.element("elasticBeamColumn", tag, i, j, a, E, iz, 1)
    ops.rayleigh(ALPHA, 0.0, BETA, 0.0)
    ops.timeSeries("Path", 1, "-dt", dt, "-values", *record(steps, dt))
    ops.pattern("UniformExcitation", 1, 1, "-accel", 1)
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("BandGeneral")
    ops.algorithm("Linear", *(["-factorOnce"] if factor_once else []))
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
    return storeys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--bays", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("-o", "--output", default="frame.toml")
    a = ap.parse_args()
    path, roof, storeys = write(a.n, a.bays, a.steps, a.dt, a.output, a.every)
    print(f"{path}: {a.bays} bays x {storeys} storeys, {3 * (a.bays + 1) * storeys} DOFs, roof node {roof}")


if __name__ == "__main__":
    main()
