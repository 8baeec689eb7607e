#!/usr/bin/env python3
"""A small numpy implementation of the PG-α coarse step (Abbiati et al. 2019, §2.2, Steps 4–14,
eqs 23–38; ALGORITHMS.md A2 with E8–E13), as a second per-step baseline for hybridsim (issue 6).

Same algorithm as hybridsim's PgAlpha on linear partitions: free numerical step with D^N built
with Δt^N, ss free physical substeps with (1 − j/ss) L^P Λ_n (from the coupled state for j = 1,
the free chain afterwards), Λ_{n+1} = −H⁻¹ Σ G^X Ẏ^{X,free}, link update 𝕐 = 𝕐^free + ℚ Λ_{n+1}.
D⁻¹ is applied through a precomputed LU factorization (scipy if present, else an explicit
inverse), as hybridsim factorizes once.

Models: the split-mass benchmark Variant 1 (6 states) and a linear 20-state chain (the
`linear 20-state` model of `crates/hybridsim/benches/common/mod.rs`: pier spring 5e7 N/m as
the physical substructure, isolator spring 5.81e5 N/m and a 9-node deck chain with Rayleigh
β = 0.002 as the numerical one). Free vibration from an initial displacement.

Usage: python3 scripts/bench/pg_alpha_numpy.py [--steps 20000] [--ss 1]
Check: with --check, the split-mass result at t = 0.01 s is compared with the exact modal
solution (second-order error, as hybridsim's tests).
"""
import argparse
import os
import platform
import time

import numpy as np

try:
    from scipy.linalg import lu_factor, lu_solve
except ImportError:  # explicit inverse fallback
    lu_factor = None


def params(rho):
    am = (3 - rho) / (2 * (1 + rho))
    af = 1 / (1 + rho)
    return am, af, 0.5 + am - af


class Part:
    """One linear partition: M Ẏ + J Y = L Λ w, Y = [u; v]."""

    def __init__(self, m, k, c, iface_rows, signs, rho, dt, substeps):
        n = m.shape[0]
        self.n = n
        self.size = 2 * n
        self.dt = dt / substeps
        self.ss = substeps
        self.am, self.af, self.g = params(rho)
        self.M = np.eye(2 * n)
        self.M[n:, n:] = m
        self.J = np.zeros((2 * n, 2 * n))
        self.J[:n, n:] = -np.eye(n)
        self.J[n:, :n] = k
        self.J[n:, n:] = c
        self.c = self.g * self.dt * self.af / self.am
        D = self.M + self.c * self.J
        if lu_factor is not None:
            self.lu = lu_factor(D)
            self.solve = lambda b: lu_solve(self.lu, b)
        else:
            Dinv = np.linalg.inv(D)
            self.solve = lambda b: Dinv @ b
        self.L = np.zeros((2 * n, len(iface_rows)))
        self.G = np.zeros((len(iface_rows), 2 * n))
        for j, (r, s) in enumerate(zip(iface_rows, signs)):
            self.L[n + r, j] = s
            self.G[j, r] = s
        # Link operator Q (eqs 32–33, E9).
        am, af, g, h = self.am, self.af, self.g, self.dt
        I = np.eye(2 * n)
        Z = np.zeros((2 * n, 2 * n))
        MM = np.block([[self.J, self.M, Z], [I, Z, -g * h * I], [Z, -af * I, am * I]])
        NN = np.block([[Z, Z, Z], [-I, Z, -h * (1 - g) * I], [Z, -(1 - af) * I, (1 - am) * I]])
        LL = np.vstack([self.L, np.zeros((4 * n, self.L.shape[1]))])
        Q = np.zeros((6 * n, self.L.shape[1]))
        for j in range(1, substeps + 1):
            Q = np.linalg.solve(MM, (j / substeps) * LL - NN @ Q)
        self.Q = Q
        self.y = np.zeros(2 * n)
        self.yd = np.zeros(2 * n)
        self.v = np.zeros(2 * n)

    def free_step(self, y, yd, v, lam, w):
        am, af, g, h = self.am, self.af, self.g, self.dt
        yt = y + yd * (g * h * (1 - af) / am) + v * (h * (am - g) / am)
        vt = yd * ((1 - af) / am) - v * ((1 - am) / am)
        rhs = -(self.J @ yt)
        if w != 0.0:
            rhs = rhs + w * (self.L @ lam)
        ydn = self.solve(rhs)
        return yt + self.c * ydn, ydn, vt + (af / am) * ydn


class PgAlpha:
    def __init__(self, parts, numerical, lam0):
        self.parts = parts
        self.numerical = numerical
        H = sum(p.G @ p.Q[p.size:2 * p.size] for p in parts)
        self.Hinv = np.linalg.inv(H)
        self.lam = lam0

    def step(self):
        free = []
        for k, p in enumerate(self.parts):
            if k == self.numerical:
                free.append(p.free_step(p.y, p.yd, p.v, self.lam, 0.0))
            else:
                y, yd, v = p.y, p.yd, p.v
                for j in range(1, p.ss + 1):
                    y, yd, v = p.free_step(y, yd, v, self.lam, 1.0 - j / p.ss)
                free.append((y, yd, v))
        g = sum(p.G @ f[1] for p, f in zip(self.parts, free))
        lam = -self.Hinv @ g
        for p, (y, yd, v) in zip(self.parts, free):
            s = p.size
            q = p.Q @ lam
            p.y = y + q[:s]
            p.yd = yd + q[s:2 * s]
            p.v = v + q[2 * s:]
        self.lam = lam


def start(parts, numerical, u0):
    """Consistent start (E11): Λ0 from acceleration compatibility; Ẏ0 = M⁻¹(−J Y0 + L Λ0)."""
    for p, u in zip(parts, u0):
        p.y[:p.n] = u
    A = sum(p.G[:, :p.n] @ np.linalg.solve(p.M[p.n:, p.n:], p.L[p.n:]) for p in parts)
    b = sum(p.G[:, :p.n] @ np.linalg.solve(p.M[p.n:, p.n:], -(p.J @ p.y)[p.n:]) for p in parts)
    lam0 = -np.linalg.solve(A, b)
    for p in parts:
        p.yd = np.linalg.solve(p.M, -(p.J @ p.y) + p.L @ lam0)
        p.v = p.yd.copy()
    return PgAlpha(parts, numerical, lam0)


def split_mass(rho, dt, ss):
    # NS: u1^N (m2), u2^N (m3), spring k2; PS: u1^P (m1), spring k1. Λ: +PS, −NS (E13).
    ns = Part(np.diag([4e3, 9e3]), np.array([[5e5, -5e5], [-5e5, 5e5]]), np.zeros((2, 2)), [0], [-1.0], rho, dt, 1)
    ps = Part(np.array([[4e3]]), np.array([[4e5]]), np.zeros((1, 1)), [0], [1.0], rho, dt, ss)
    return start([ns, ps], 0, [np.array([0.0, 0.01]), np.array([0.0])])


def chain20(rho, dt, ss, deck=9):
    n = deck + 1  # node 1 (pier top) + deck nodes
    m = np.zeros((n, n))
    k = np.zeros((n, n))
    m[0, 0] = 2e4  # half of the pier-top mass on the numerical side
    for i in range(deck):
        m[i + 1, i + 1] = 2.5e6 / deck

    def spring(a, b, kk):
        k[a, a] += kk
        k[b, b] += kk
        k[a, b] -= kk
        k[b, a] -= kk

    spring(0, 1, 5.81e5)
    for i in range(1, deck):
        spring(i, i + 1, 5e8)
    c = 0.002 * k  # Rayleigh β on the numerical side
    ns = Part(m, k, c, [0], [-1.0], rho, dt, 1)
    ps = Part(np.array([[2e4]]), np.array([[5e7]]), np.array([[0.0]]), [0], [1.0], rho, dt, ss)
    u0 = np.zeros(n)
    u0[-1] = 0.01
    return start([ns, ps], 0, [u0, np.array([0.0])])


def exact_split_mass(t):
    M = np.diag([8e3, 9e3])
    K = np.array([[9e5, -5e5], [-5e5, 5e5]])
    w2, phi = np.linalg.eig(np.linalg.solve(M, K))
    q0 = np.linalg.solve(phi, np.array([0.0, 0.01]))
    return phi @ (q0 * np.cos(np.sqrt(w2) * t))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--ss", type=int, default=1)
    ap.add_argument("--rho", type=float, default=0.9)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        errs = []
        for dt in (1e-3, 5e-4, 2.5e-4):
            pg = split_mass(args.rho, dt, args.ss)
            for _ in range(round(0.01 / dt)):
                pg.step()
            ex = exact_split_mass(0.01)
            errs.append(max(abs(pg.parts[0].y[0] - ex[0]), abs(pg.parts[0].y[1] - ex[1]), abs(pg.parts[1].y[0] - ex[0])))
        print("check: errors", errs, "slopes", [np.log2(errs[i] / errs[i + 1]) for i in range(2)])
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; numpy {np.__version__}; "
          f"scipy LU {'yes' if lu_factor else 'no (explicit inverse)'}")
    print("| model | states | ss | numpy PG-α [µs/coarse step] |")
    print("|---|---:|---:|---:|")
    for name, build, states in (("split-mass", split_mass, 6), ("linear 20-state", chain20, 22)):
        pg = build(args.rho, 1e-3, args.ss)
        for _ in range(200):
            pg.step()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            pg.step()
        per = (time.perf_counter() - t0) / args.steps * 1e6
        print(f"| {name} | {states} | {args.ss} | {per:.2f} |")


if __name__ == "__main__":
    main()
