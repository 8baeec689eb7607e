#!/usr/bin/env python3
"""Reference histories of the unscented Kalman filter for crates/hybridsim/tests/updating.rs.

An independent implementation: filterpy's UnscentedKalmanFilter with MerweScaledSigmaPoints,
on a small nonlinear identification problem (after ALGORITHMS.md A12, /work/shared/checks/ukf.py):
a Bouc-Wen SDOF oscillator (unit mass, beta = 3.5, gamma = 60, n = 1) under f(t) = sin(6 t), with
augmented state [u, v, r, A] (A the Bouc-Wen initial stiffness, a random walk), propagated over
each step by 10 classical Runge-Kutta substeps, and u and r measured with seeded Gaussian noise.

Two sigma-point scalings: the paper's L + kappa = 3 (alpha = 1, beta = 0, kappa = -1) and the
scaled transform alpha = 0.8, beta = 2, kappa = 0.

Output (plain text, one record a line):
  case NAME ALPHA BETA KAPPA
  z N z0 z1           the measurement at step N (N = 1..)
  x N x0 x1 x2 x3     the estimate after step N
  p N p00 p01 ...     the covariance after step N, row by row
Usage: ukf_reference.py [--steps N]
"""
import argparse
import sys

import numpy as np
from filterpy.kalman import MerweScaledSigmaPoints, UnscentedKalmanFilter

DT = 0.01
SUBSTEPS = 10


def rhs(x, t):
    u, v, r, a = x
    f = np.sin(6.0 * t)
    return np.array([v, f - r, (a - (3.5 * np.sign(v * r) + 60.0) * abs(r)) * v, 0.0])


def propagate(x, t0):
    h = DT / SUBSTEPS
    for i in range(SUBSTEPS):
        t = t0 + i * h
        k1 = rhs(x, t)
        k2 = rhs(x + h / 2 * k1, t + h / 2)
        k3 = rhs(x + h / 2 * k2, t + h / 2)
        k4 = rhs(x + h * k3, t + h)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    steps = ap.parse_args().steps

    rng = np.random.default_rng(7)
    truth = np.array([0.0, 0.0, 0.0, 100.0])
    zs = []
    for n in range(steps):
        truth = propagate(truth, n * DT)
        zs.append(truth[[0, 2]] + rng.normal(scale=[1e-4, 1e-3]))

    out = sys.stdout
    for name, alpha, beta, kappa in (("paper", 1.0, 0.0, -1.0), ("scaled", 0.8, 2.0, 0.0)):
        points = MerweScaledSigmaPoints(4, alpha=alpha, beta=beta, kappa=kappa)
        ukf = UnscentedKalmanFilter(dim_x=4, dim_z=2, dt=DT, fx=None, hx=lambda x: x[[0, 2]], points=points)
        ukf.x = np.array([0.0, 0.0, 0.0, 60.0])
        ukf.P = np.diag([1e-8, 1e-8, 1e-8, 400.0])
        ukf.Q = np.diag([1e-10, 1e-10, 1e-10, 1e-4])
        ukf.R = np.diag([1e-8, 1e-6])
        out.write(f"case {name} {alpha!r} {beta!r} {kappa!r}\n")
        for n in range(steps):
            ukf.predict(fx=lambda s, dt, n=n: propagate(s, n * DT))
            ukf.update(zs[n])
            out.write(f"z {n + 1} " + " ".join(repr(float(v)) for v in zs[n]) + "\n")
            out.write(f"x {n + 1} " + " ".join(repr(float(v)) for v in ukf.x) + "\n")
            out.write(f"p {n + 1} " + " ".join(repr(float(v)) for v in ukf.P.ravel()) + "\n")


if __name__ == "__main__":
    main()
