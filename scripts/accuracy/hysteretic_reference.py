#!/usr/bin/env python3
"""Independent references for the second-order accuracy of hysteretic substructures (issue 17).

For each case this script writes, into OUT:

* ``<case>_dt<us>.toml`` -- the model in hybridsim's format at the time steps of the study, with
  DEFAULT nonlinear-solver settings (no ``corrections`` key);
* ``<case>_reference.csv`` -- a fine-step reference: our own numpy integration, independent of
  hybridsim's code: Newmark average acceleration with full Newton iterations and, for the
  bilinear storeys, the exact return mapping of the force over each step (the elastic
  predictor clipped to the bounding lines ``alpha k d +- (1 - alpha) k delta``); for Bouc-Wen the
  same scheme with ``z`` integrated by the trapezoidal rule inside the Newton solve. Two fine
  steps (``dt/4`` and ``dt/8``) are combined by Richardson extrapolation (both second order),
  sampled every ``dt``;
* ``<case>_opensees.csv`` -- OpenSees (openseespy) at ``dt`` (Newmark average acceleration,
  ``Steel01`` / ``BoucWen``), when openseespy is installed.

For the Bouc-Wen SDOF the reference is instead an adaptive solution of the ODEs
``u' = v``, ``m v' = -m a_g - c v - r``, ``r' = (A - |r|^n (beta sgn(r v) + gamma)) v`` by scipy's
DOP853 (rtol 1e-12), restarted at every sample of the record (where the load has a kink); the
kinks of the law at velocity reversals and at ``r = 0`` are located by its error control (no
fixed step straddles them), so the reference has no error of the order of a step there. (The
fine Newmark steps integrate ``r`` by the trapezoidal rule across those kinks, whose error is
second order but not smooth in the step, so Richardson extrapolation does not remove it.)

For the elastic twins of the six-storey building (``shear6_elastic_damped``,
``shear6_elastic_undamped``: the same masses, storey stiffnesses and damping, no yield) the
reference is the exact solution of the linear equations under the piecewise-linear record,
stepped with the matrix exponential of the augmented system (exact to round-off at every
``dt``), so the error of the trapezoidal rule at ``dt`` on this building is known exactly.

Cases (SI units): ``bouc_wen_sdof`` (the SDOF of ``scripts/opensees/reference.py``),
``shear6_damped`` and ``shear6_undamped`` (six-storey shear building, ``mostaghel`` storeys
equal to OpenSees ``Steel01``; mass-proportional Rayleigh damping 0.5/s or none). Ground
motion: the first DURATION seconds of El Centro 1940 NS (PEER), found like the other scripts.

Usage: ``python3 scripts/accuracy/hysteretic_reference.py --out DIR [--ground-motions DIR]``
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "opensees"))
import reference as osref  # noqa: E402  (the record reader, TOML writer and OpenSees runner)

G = osref.G
DURATION = 10.0
DT = 0.001
STUDY_DTS = [0.002, 0.001, 0.0005, 0.00025]
FINE = (4, 8)

SHEAR6_MASSES = [2.0e5] * 6
SHEAR6_K = [3.0e8, 2.8e8, 2.6e8, 2.3e8, 2.0e8, 1.6e8]
SHEAR6_YIELD = [0.2 * G * sum(SHEAR6_MASSES[i:]) for i in range(6)]
SHEAR6_ALPHA = 0.03


def cases():
    frame = [
        {"type": "mostaghel", "params": {"k": k, "alpha": SHEAR6_ALPHA, "delta": fy / k}}
        for k, fy in zip(SHEAR6_K, SHEAR6_YIELD)
    ]
    elastic = [{"type": "spring", "params": {"k": k}} for k in SHEAR6_K]
    bw = [{"type": "bouc_wen", "params": dict(osref.BOUC_WEN)}]
    return [
        {"name": "bouc_wen_sdof", "title": "SDOF Bouc-Wen", "masses": [osref.SDOF_MASS],
         "springs": bw, "rayleigh": (osref.MASS_DAMPING, 0.0), "corrections": 1},
        {"name": "shear6_damped", "title": "six-storey bilinear shear building, damped",
         "masses": SHEAR6_MASSES, "springs": frame, "rayleigh": (0.5, 0.0), "corrections": 1},
        {"name": "shear6_undamped", "title": "six-storey bilinear shear building, undamped",
         "masses": SHEAR6_MASSES, "springs": frame, "rayleigh": (0.0, 0.0), "corrections": 1},
        {"name": "shear6_elastic_damped", "title": "six-storey elastic shear building, damped",
         "masses": SHEAR6_MASSES, "springs": elastic, "rayleigh": (0.5, 0.0), "corrections": 1,
         "exact": True},
        {"name": "shear6_elastic_undamped", "title": "six-storey elastic shear building, undamped",
         "masses": SHEAR6_MASSES, "springs": elastic, "rayleigh": (0.0, 0.0), "corrections": 1,
         "exact": True},
    ]


def ground(record_dt, acc_g, t):
    """Linear interpolation of the record (m/s^2), zero after its end."""
    k = int(math.floor(t / record_dt + 1e-9))
    if k + 1 >= len(acc_g):
        return 0.0
    w = t / record_dt - k
    return G * ((1.0 - w) * acc_g[k] + w * acc_g[k + 1])


def newmark(case, h, record_dt, acc_g, duration, every):
    """Newmark average acceleration with full Newton; returns displacements every `every` steps."""
    m = np.array(case["masses"])
    n = len(m)
    a_m = case["rayleigh"][0]
    springs = case["springs"]
    kind = springs[0]["type"]
    p = [s["params"] for s in springs]
    # B: deformation of storey i = u_i - u_{i-1}
    B = np.eye(n) - np.eye(n, k=-1)
    u = np.zeros(n)
    v = np.zeros(n)
    r = np.zeros(n)  # storey forces (state)
    a = -np.ones(n) * ground(record_dt, acc_g, 0.0)
    out = [u.copy()]
    steps = int(round(duration / h))
    for step in range(1, steps + 1):
        t = step * h
        P = -m * ground(record_dt, acc_g, t)
        d0 = B @ u
        un = u + h * v + 0.25 * h * h * a  # predictor (a_{n+1} = a_n guess replaced below)
        un = u.copy()
        for _ in range(50):
            an = 4.0 / h**2 * (un - u) - 4.0 / h * v - a
            vn = v + 0.5 * h * (a + an)
            d1 = B @ un
            if kind == "mostaghel":
                rn = np.empty(n)
                kt = np.empty(n)
                for i, q in enumerate(p):
                    k, al, de = q["k"], q["alpha"], q["delta"]
                    trial = r[i] + k * (d1[i] - d0[i])
                    hi = al * k * d1[i] + (1 - al) * k * de
                    lo = al * k * d1[i] - (1 - al) * k * de
                    if trial > hi:
                        rn[i], kt[i] = hi, al * k
                    elif trial < lo:
                        rn[i], kt[i] = lo, al * k
                    else:
                        rn[i], kt[i] = trial, k
            else:  # Bouc-Wen SDOF: r' = (A - |r|^n (beta sgn(r d') + gamma)) d', trapezoidal
                q = p[0]
                A, be, ga, nn = q["A"], q["beta"], q["gamma"], q["n"]
                dd0 = (B @ v)[0]
                dd1 = (B @ vn)[0]

                def rate(rr, ddv):
                    sg = np.sign(rr * ddv)
                    return (A - abs(rr) ** nn * (be * sg + ga)) * ddv

                # inner Newton for r_{n+1}: r1 = r0 + h/2 (rate(r0, dd0) + rate(r1, dd1))
                r1 = r[0] + h * rate(r[0], dd0)
                for _ in range(50):
                    sg = np.sign(r1 * dd1)
                    g = r1 - r[0] - 0.5 * h * (rate(r[0], dd0) + rate(r1, dd1))
                    dg = 1.0 + 0.5 * h * nn * abs(r1) ** (nn - 1) * np.sign(r1) * (be * sg + ga) * dd1
                    step_r = g / dg
                    r1 -= step_r
                    if abs(step_r) <= 1e-15 * max(abs(r1), 1.0):
                        break
                rn = np.array([r1])
                # d r1 / d u1 through d1' = 2/h (u1 - u0) - v0
                dr_ddv = 0.5 * h * (A - abs(r1) ** nn * (be * np.sign(r1 * dd1) + ga)) / dg
                kt = np.array([dr_ddv * 2.0 / h])
            f = B.T @ rn
            res = m * an + a_m * m * vn + f - P
            K = np.diag(m) * (4.0 / h**2 + a_m * 2.0 / h) + B.T @ np.diag(kt) @ B
            du = np.linalg.solve(K, -res)
            un = un + du
            if np.max(np.abs(du)) <= 1e-14 * max(np.max(np.abs(un)), 1e-12):
                break
        an = 4.0 / h**2 * (un - u) - 4.0 / h * v - a
        vn = v + 0.5 * h * (a + an)
        # final state update at the converged displacement
        d1 = B @ un
        if kind == "mostaghel":
            for i, q in enumerate(p):
                k, al, de = q["k"], q["alpha"], q["delta"]
                trial = r[i] + k * (d1[i] - d0[i])
                hi = al * k * d1[i] + (1 - al) * k * de
                lo = al * k * d1[i] - (1 - al) * k * de
                r[i] = min(max(trial, lo), hi)
        else:
            r = rn
        u, v, a = un, vn, an
        if step % every == 0:
            out.append(u.copy())
    return np.array(out)


def exact_linear(case, h, record_dt, acc_g, duration):
    """Exact displacements every `h` of the elastic shear building (linear springs, mass-
    proportional damping) under the record interpolated linearly: over each step the ground
    acceleration is linear in time (`h` divides the record step), so the state and the two
    load coefficients evolve by one matrix exponential of the augmented system."""
    from scipy.linalg import expm

    m = np.array(case["masses"])
    n = len(m)
    B = np.eye(n) - np.eye(n, k=-1)
    K = B.T @ np.diag([s["params"]["k"] for s in case["springs"]]) @ B
    a_m = case["rayleigh"][0]
    # x = [u; v], x' = A x + e a_g(t), a_g = g0 + (g1 - g0) s / h over the step.
    A = np.zeros((2 * n + 2, 2 * n + 2))
    A[:n, n : 2 * n] = np.eye(n)
    A[n : 2 * n, :n] = -K / m[:, None]
    A[n : 2 * n, n : 2 * n] = -a_m * np.eye(n)
    A[n : 2 * n, 2 * n] = -1.0
    A[2 * n, 2 * n + 1] = 1.0 / h
    E = expm(A * h)
    x = np.zeros(2 * n + 2)
    out = [x[:n].copy()]
    for step in range(int(round(duration / h))):
        g0 = ground(record_dt, acc_g, step * h)
        g1 = ground(record_dt, acc_g, (step + 1) * h)
        x[2 * n] = g0
        x[2 * n + 1] = g1 - g0
        x = E @ x
        out.append(x[:n].copy())
    return np.array(out)


def adaptive_bouc_wen(case, h, record_dt, acc_g, duration, rtol=1e-12):
    """Displacements every `h` of the Bouc-Wen SDOF by DOP853, one solve per record interval."""
    from scipy.integrate import solve_ivp

    m = case["masses"][0]
    a_m = case["rayleigh"][0]
    q = case["springs"][0]["params"]
    A, be, ga, nn = q["A"], q["beta"], q["gamma"], q["n"]
    r_u = (A / (be + ga)) ** (1.0 / nn)

    def rhs(t, x, g0, g1, t0):
        _, v, r = x
        ag = G * (g0 + (g1 - g0) * (t - t0) / record_dt)
        return [v, -ag - a_m * v - r / m, (A - abs(r) ** nn * (be * np.sign(r * v) + ga)) * v]

    x = np.zeros(3)
    out = [0.0]
    per = int(round(record_dt / h))
    for k in range(int(round(duration / record_dt))):
        t0 = k * record_dt
        g0 = acc_g[k] if k < len(acc_g) else 0.0
        g1 = acc_g[k + 1] if k + 1 < len(acc_g) else 0.0
        sol = solve_ivp(rhs, (t0, t0 + record_dt), x, method="DOP853", rtol=rtol,
                        atol=[1e-14, 1e-13, 1e-14 * r_u], args=(g0, g1, t0), dense_output=True)
        out.extend(sol.sol(t0 + h * np.arange(1, per + 1))[0])
        x = sol.y[:, -1].copy()
    return np.array(out)[:, None]


def write_csv(path, times, u):
    n = u.shape[1]
    with open(path, "w") as f:
        f.write("time[s]," + ",".join(f"u{i}[m]" for i in range(1, n + 1)) + "\n")
        for t, row in zip(times, u):
            f.write(f"{t:.6f}," + ",".join(f"{x:.17e}" for x in row) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--ground-motions")
    ap.add_argument("--no-opensees", action="store_true")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    args = ap.parse_args()
    gm_dir = osref.find_ground_motions(args.ground_motions)
    if gm_dir is None:
        raise SystemExit("El Centro record not found (--ground-motions or $HYBRIDSIM_GROUND_MOTIONS)")
    record = gm_dir / osref.RECORD
    record_dt, acc_g = osref.read_at2(record)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gm = ["[[ground_motion]]", 'direction = "x"', f"record = {json.dumps(str(record))}", "scale = 1.0"]
    manifest = {"record": str(record), "duration": DURATION, "dt": DT, "study_dts": STUDY_DTS, "cases": []}
    only = set(args.cases.split(",")) if args.cases else None
    for case in cases():
        if only is not None and case["name"] not in only:
            continue
        for dt in STUDY_DTS:
            text = osref.toml_model(case, dt, gm, 1, DURATION)
            text = "\n".join(l for l in text.splitlines() if not l.startswith("corrections"))
            (out / f"{case['name']}_dt{int(round(dt * 1e6))}.toml").write_text(text + "\n")
        if case.get("exact"):
            ref = exact_linear(case, DT, record_dt, acc_g, DURATION)
            times = np.arange(ref.shape[0]) * DT
            write_csv(out / f"{case['name']}_reference.csv", times, ref)
            entry = {"name": case["name"], "exact": True}
            manifest["cases"].append(entry)
            print(json.dumps(entry), flush=True)
            continue
        if case["springs"][0]["type"] == "bouc_wen":
            ref = adaptive_bouc_wen(case, DT, record_dt, acc_g, DURATION)
            entry = {"name": case["name"], "method": "DOP853 rtol 1e-12"}
        else:
            fine = [newmark(case, DT / f, record_dt, acc_g, DURATION, f) for f in FINE]
            ref = (4.0 * fine[1] - fine[0]) / 3.0
            spread = float(np.max(np.abs(fine[1] - fine[0])) / np.max(np.abs(ref)))
            entry = {"name": case["name"], "fine_step_spread": spread}
        times = np.arange(ref.shape[0]) * DT
        write_csv(out / f"{case['name']}_reference.csv", times, ref)
        if not args.no_opensees:
            header, rows = osref.opensees_run(case, DT, record_dt, acc_g, 1, DURATION)
            n = len(case["masses"])
            u = np.array([r[1 : 1 + n] for r in rows])
            write_csv(out / f"{case['name']}_opensees.csv", np.array([r[0] for r in rows]), u)
        manifest["cases"].append(entry)
        print(json.dumps(entry), flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
