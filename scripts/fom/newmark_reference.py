#!/usr/bin/env python3
"""Implicit Newmark reference of examples/fom_01_six_storey.toml, written independently of
hybridsim (numpy only): the average-acceleration rule (β = 1/4, γ = 1/2) with Newton–Raphson
iterations to convergence at every step, the bilinear storeys integrated exactly (a linear
spring αk in parallel with a spring (1−α)k in series with a slider at ±δ: the Mostaghel model
with a piecewise-linear path), mass-proportional damping C = a0 M, under the ground
acceleration of a hybridsim results folder (ground_motion.x.csv, linear between samples).

This is the reference of Hung and El-Tawil (2009): the whole structure simulated by an
implicit Newmark program (OpenSees there) at the *same* time step as the hybrid test, so that
E_c (eq 18) measures the error of the hybrid scheme's approximations (explicit predictor, the
stiffness estimate, the splitting) and not the time discretization both share.

Writes a minimal results folder (results.csv with time, u.assembled.N.x and the storey forces
force.storeyI.N.x; run.json with the units) that `hybridsim analyze energy-error --reference`
reads.

  python3 scripts/fom/newmark_reference.py --ground-motion RUN/ground_motion.x.csv \
      --dt 0.005 --duration 20 -o REF
"""

import argparse
import json
from pathlib import Path

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ground-motion", required=True, help="ground_motion.x.csv of a hybridsim run")
    p.add_argument("--dt", type=float, default=0.005)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--storeys", type=int, default=6)
    p.add_argument("--mass", type=float, default=2.0e4)
    p.add_argument("--k", type=float, default=4.0e7)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--delta", type=float, default=0.01)
    p.add_argument("--a0", type=float, default=0.47, help="mass-proportional damping coefficient")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()

    n = a.storeys
    gm = np.loadtxt(a.ground_motion, delimiter=",", skiprows=1)
    steps = int(round(a.duration / a.dt))
    t = np.arange(steps + 1) * a.dt
    ag = np.interp(t, gm[:, 0], gm[:, 1], left=0.0, right=0.0)
    M = np.full(n, a.mass)
    C = a.a0 * M
    k, al, dl = a.k, a.alpha, a.delta
    # Drift of storey i: d_i = u_i − u_{i−1} (u_0 = 0). Shear r_i = αk d_i + (1−α)k s_i.
    B = np.eye(n) - np.eye(n, k=-1)  # drifts = B u

    def state(u, s0, d0):
        d = B @ u
        s = np.clip(s0 + (d - d0), -dl, dl)
        elastic = np.abs(s0 + (d - d0)) < dl
        r = al * k * d + (1 - al) * k * s
        kt = np.where(elastic, k, al * k)
        # Nodal restoring force: storey i pushes node i by +r_i and node i−1 by −r_i.
        return B.T @ r, B.T @ np.diag(kt) @ B, r, s, d

    beta, gamma, dt = 0.25, 0.5, a.dt
    u = np.zeros(n)
    v = np.zeros(n)
    s = np.zeros(n)
    d_c = np.zeros(n)
    f = lambda j: -M * ag[j]  # noqa: E731
    R, _, r, _, _ = state(u, s, d_c)
    acc = (f(0) - C * v - R) / M
    U = [u.copy()]
    RS = [r.copy()]
    iters = 0
    for j in range(1, steps + 1):
        u_pred = u + dt * v + dt * dt * (0.5 - beta) * acc
        v_pred = v + dt * (1 - gamma) * acc
        un = u_pred.copy()
        for it in range(50):
            an = (un - u_pred) / (beta * dt * dt)
            vn = v_pred + gamma * dt * an
            R, Kt, r, s_new, d_new = state(un, s, d_c)
            res = f(j) - M * an - C * vn - R
            scale = max(1.0, np.max(np.abs(f(j))), np.max(np.abs(M * an)), np.max(np.abs(R)))
            if np.max(np.abs(res)) <= 1e-10 * scale:
                break
            Keff = np.diag(M) / (beta * dt * dt) + np.diag(C) * gamma / (beta * dt) + Kt
            un = un + np.linalg.solve(Keff, res)
            iters += 1
        else:
            # a Newton cycle across a kink of the bilinear law, ended well below the forces
            if np.max(np.abs(res)) > 1e-7 * scale:
                raise SystemExit(f"step {j}: Newton did not converge (residual {np.max(np.abs(res)):e})")
        an = (un - u_pred) / (beta * dt * dt)
        v = v_pred + gamma * dt * an
        u, acc, s, d_c = un, an, s_new, d_new
        U.append(u.copy())
        RS.append(r.copy())
    U = np.array(U)
    RS = np.array(RS)
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    cols = ["time[s]"] + [f"u.assembled.{i + 1}.x[m]" for i in range(n)]
    data = [t] + [U[:, i] for i in range(n)]
    # Element forces at their nodes, as hybridsim records them: storey i between nodes i−1, i.
    for i in range(n):
        if i > 0:
            cols.append(f"force.storey{i + 1}.{i}.x[N]")
            data.append(-RS[:, i])
        cols.append(f"force.storey{i + 1}.{i + 1}.x[N]")
        data.append(RS[:, i])
    np.savetxt(out / "results.csv", np.column_stack(data), delimiter=",", header=",".join(cols),
               comments="", fmt="%.17g")
    (out / "run.json").write_text(json.dumps({
        "model": {"units": {"length": "m", "force": "N", "time": "s"}, "sha256": None,
                  "title": "implicit Newmark reference (scripts/fom/newmark_reference.py)"},
        "settings": {"integrator": "newmark-newton", "time_step": dt},
        "status": "completed",
        "substructures": [],
    }, indent=2))
    print(f"{steps} steps, {iters} Newton iterations; peak node-1 displacement "
          f"{np.max(np.abs(U[:, 0])):.5f} m; results in {out}")


if __name__ == "__main__":
    main()
