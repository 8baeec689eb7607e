#!/usr/bin/env python3
"""OpenSees reference histories for hybridsim's cross-validation tests (issue 3).

For every case this script writes, into OUT:

* ``<case>_dt<µs>.toml`` -- the model in *our* file format (read by ``hybridsim run``);
* ``<case>_dt<µs>.csv``  -- the same model integrated by OpenSees (openseespy), sampled at
  the output times of the TOML's ``[output] every``; the header cells are the names of the
  matching ``results.csv`` columns of hybridsim (``u.frame.2.x[m]``, ``force.s1.1.x[N]``);
* ``manifest.json``      -- cases, time steps, files, the record used, seeds and versions.

The Rust test ``crates/hybridsim-cli/tests/opensees_agreement.rs`` runs each TOML through the
CLI and compares with the CSV. CI regenerates everything into a temporary folder
(``HYBRIDSIM_OPENSEES_REFERENCE``); the committed copy in ``tests/data/opensees`` (made with
``--synthetic``) is the fallback.

Cases (SI units: N, m, s, kg):

``linear_frame``
    3-storey linear shear frame, Rayleigh damping, Newmark average acceleration in OpenSees vs
    our ``mg-alpha`` with rho_inf = 1 (the trapezoidal rule) at the same step: the same
    algorithm on a linear model, so they agree to round-off (tests masses, ground-motion sign
    and relative displacements).
``bouc_wen_sdof``
    SDOF on a Bouc-Wen spring (Abbiati et al. 2020, eq 16; ALGORITHMS.md A13, E30). Parameter
    mapping to ``uniaxialMaterial BoucWen tag alpha ko n gamma beta Ao deltaA deltaNu deltaEta``:
    OpenSees' force is ``alpha*ko*eps + (1-alpha)*ko*z`` with
    ``dz = (Ao - |z|^n (gamma + beta*sgn(deps*z))) deps``. With ``alpha = 0``, ``r = ko*z``:
    ``ko = A``, ``Ao = 1``, ``gamma_OS = gamma*A^(n-1)``, ``beta_OS = beta*A^(n-1)``
    (so for n = 1 the published beta = 3.5 /m, gamma = 60 /m carry over unchanged),
    ``deltaA = deltaNu = deltaEta = 0`` (no degradation). OpenSees updates z by backward Euler
    in the strain increment (first order); ours integrates r with the trapezoidal rule, so the
    difference shrinks like dt.
``mostaghel_sdof``
    SDOF on our ``mostaghel`` bilinear spring (003 eqs 17-19: k, alpha, delta) against
    ``Steel01 Fy=k*delta E0=k b=alpha`` (both bilinear with kinematic hardening).
``bilinear_frame``
    3-storey shear building with bilinear storey springs (``mostaghel`` / ``Steel01``).

Ground motion: El Centro 1940 NS (PEER ``ElCentro1940_NS_PEER_IELC180.AT2``) from
``--ground-motions`` / ``$HYBRIDSIM_GROUND_MOTIONS`` / ``<repo>/../shared/data/ground-motions``
when present (the record is referenced by absolute path, never copied), else (or with
``--synthetic``) a seeded Kanai-Tajimi record written beside the models as a two-column file.

OpenSees starts a transient analysis at rest with zero acceleration; the initial relative
acceleration -a_g(0) is set with ``setNodeAccel`` so that both sides start from the same
consistent state.

Needs: Debian ``libblas3 liblapack3``; ``pip install openseespy``. Standard library otherwise.
Usage: ``python3 scripts/opensees/reference.py [--out DIR] [--synthetic] [--ground-motions DIR]``
"""

import argparse
import json
import math
import os
import random
import re
import sys
import time
from pathlib import Path

G = 9.80665  # m/s^2, the standard gravity hybridsim uses (units.rs)
REPO = Path(__file__).resolve().parents[2]
RECORD = "ElCentro1940_NS_PEER_IELC180.AT2"
SYNTHETIC_SEED = 20260403
SYNTHETIC_FILE = "synthetic_ground_motion.txt"

# Time steps of the convergence study for the nonlinear cases (s).
NONLINEAR_DTS = [0.002, 0.001, 0.0005, 0.00025, 0.000125]
OUTPUT_INTERVAL = 0.02  # s, sampling of the histories written (both sides)

# Models. Masses in kg, stiffness in N/m.
FRAME_MASSES = [2.0e5, 2.0e5, 1.5e5]
FRAME_STIFFNESS = [2.4e8, 2.0e8, 1.6e8]
SDOF_MASS = 1.0e5
SDOF_K = 4.0 * math.pi**2 * SDOF_MASS / 0.5**2  # T = 0.5 s
BOUC_WEN = {"A": SDOF_K, "beta": 3.5, "gamma": 60.0, "n": 1.0}  # 003 Table/eq 16 values (1/m)
MOSTAGHEL_ALPHA = 0.05
MOSTAGHEL_DELTA = 0.2 * SDOF_MASS * G / SDOF_K  # yield force 0.2 W
# Storey yield forces of the bilinear frame: 0.25 x weight above each storey.
FRAME_YIELD = [
    0.25 * G * sum(FRAME_MASSES[i:]) for i in range(len(FRAME_MASSES))
]
FRAME_ALPHA = 0.03
MASS_DAMPING = 0.5  # Rayleigh alpha (1/s) of the nonlinear cases: ~2 % at T = 0.5 s


def read_at2(path):
    """PEER AT2: 3 header lines, `NPTS=..., DT=...`, then values in g."""
    lines = Path(path).read_text().splitlines()
    m = re.search(r"NPTS\s*=\s*(\d+)\s*,\s*DT\s*=\s*([0-9.Ee+-]+)", lines[3])
    if not m:
        raise SystemExit(f"{path}: line 4: expected `NPTS=..., DT=...`")
    npts, dt = int(m.group(1)), float(m.group(2))
    values = [float(v) for line in lines[4:] for v in line.split()]
    if len(values) != npts:
        raise SystemExit(f"{path}: NPTS={npts} but {len(values)} values")
    return dt, values


def synthetic_record(seed, duration=20.0, dt=0.01, pga=0.3):
    """Seeded Kanai-Tajimi filtered white noise (omega_g = 15.6 rad/s, zeta_g = 0.6) with a
    Jennings-type envelope, scaled to `pga` (g). Our own generator: deterministic for a seed
    through Python's Mersenne Twister."""
    rng = random.Random(seed)
    wg, zg = 15.6, 0.6
    n = int(round(duration / dt)) + 1
    sub = 10  # filter substeps per sample
    h = dt / sub
    x = xd = 0.0
    out = []
    for k in range(n):
        t = k * dt
        for _ in range(sub):
            w = rng.gauss(0.0, 1.0) / math.sqrt(h)
            # x'' + 2 zg wg x' + wg^2 x = -w  (semi-implicit Euler, h << 1/wg)
            xdd = -w - 2 * zg * wg * xd - wg * wg * x
            xd += h * xdd
            x += h * xd
        a = -(2 * zg * wg * xd + wg * wg * x)
        env = min(t / 2.0, 1.0) ** 2 if t < 2.0 else (1.0 if t < 10.0 else math.exp(-0.25 * (t - 10.0)))
        out.append(a * env)
    out[0] = 0.0
    peak = max(abs(v) for v in out)
    return dt, [pga * v / peak for v in out]


def find_ground_motions(arg):
    for d in [arg, os.environ.get("HYBRIDSIM_GROUND_MOTIONS"), REPO.parent / "shared" / "data" / "ground-motions"]:
        if d and (Path(d) / RECORD).is_file():
            return Path(d).resolve()
    return None


def dt_tag(dt):
    return f"dt{int(round(dt * 1e6))}us"


def fmt(x):
    return repr(float(x))


# --------------------------------------------------------------------------- our model files


def toml_model(case, dt, gm, every, duration):
    """The model in hybridsim's format; `gm` is the ground-motion table text."""
    lines = [
        f'title = "OpenSees cross-check: {case["title"]}"',
        "",
        "[units]",
        'length = "m"',
        'force = "N"',
        'time = "s"',
        "",
        "[substructure.frame]",
        "",
    ]
    for i, m in enumerate(case["masses"], start=1):
        lines += ["[[node]]", f"id = {i}", 'dofs = ["x"]', ""]
    for i, m in enumerate(case["masses"], start=1):
        lines += [
            "[[element]]",
            'type = "mass"',
            f'name = "m{i}"',
            f"node = {i}",
            f"mass = {fmt(m)}",
            'substructure = "frame"',
            "",
        ]
    for i, s in enumerate(case["springs"], start=1):
        nodes = "[1]" if i == 1 else f"[{i}, {i - 1}]"
        lines += ["[[element]]", f'type = "{s["type"]}"', f'name = "s{i}"', f"nodes = {nodes}", 'dof = "x"']
        lines += [f"{k} = {fmt(v)}" for k, v in s["params"].items()]
        lines += ['substructure = "frame"', ""]
    lines += ["[damping]", f"alpha = {fmt(case['rayleigh'][0])}", f"beta = {fmt(case['rayleigh'][1])}", ""]
    lines += gm
    lines += [
        "",
        "[analysis]",
        'integrator = "mg-alpha"',
        "rho_inf = 1.0",
        f"time_step = {fmt(dt)}",
        f"duration = {fmt(duration)}",
        f"corrections = {case['corrections']}",
        "",
        "[output]",
        f"every = {every}",
        "energy = false",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- OpenSees side


def opensees_run(case, dt, record_dt, acc_g, every, duration):
    """Integrate the case in OpenSees; returns (header, rows) with hybridsim column names."""
    import openseespy.opensees as ops

    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(0, 0.0)
    ops.fix(0, 1)
    n = len(case["masses"])
    for i, m in enumerate(case["masses"], start=1):
        ops.node(i, 0.0)
        ops.mass(i, m)
    for i, s in enumerate(case["springs"], start=1):
        p = s["params"]
        if s["type"] == "spring":
            ops.uniaxialMaterial("Elastic", i, p["k"])
        elif s["type"] == "bouc_wen":
            # alpha ko n gamma beta Ao deltaA deltaNu deltaEta (see the module docstring)
            scale = p["A"] ** (p["n"] - 1.0)
            ops.uniaxialMaterial(
                "BoucWen", i, 0.0, p["A"], p["n"], p["gamma"] * scale, p["beta"] * scale, 1.0, 0.0, 0.0, 0.0
            )
        elif s["type"] == "mostaghel":
            ops.uniaxialMaterial("Steel01", i, p["k"] * p["delta"], p["k"], p["alpha"])
        else:
            raise SystemExit(f"unknown spring type {s['type']}")
        # zeroLength deformation = u_j - u_i: i = storey below, j = storey above. Its Rayleigh
        # stiffness term is off unless `-doRayleigh 1` (ours: on for linear elements).
        ops.element("zeroLength", i, i - 1, i, "-mat", i, "-dir", 1, "-doRayleigh", 1)
    a_m, b_k = case["rayleigh"]
    ops.rayleigh(a_m, b_k, 0.0, 0.0)
    ops.timeSeries("Path", 1, "-dt", record_dt, "-values", *acc_g, "-factor", G)
    ops.pattern("UniformExcitation", 1, 1, "-accel", 1)
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    ops.test("NormDispIncr", 1e-13, 100)
    ops.algorithm("Newton")
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
    # Consistent start: at rest, M a0 = -M 1 a_g(0).
    for i in range(1, n + 1):
        ops.setNodeAccel(i, 1, -acc_g[0] * G, "-commit")

    header = ["time[s]"] + [f"u.frame.{i}.x[m]" for i in range(1, n + 1)]
    header += [f"force.s{i}.{i}.x[N]" for i in range(1, n + 1)]

    def row(t):
        return [t] + [ops.nodeDisp(i, 1) for i in range(1, n + 1)] + [ops.eleForce(i)[1] for i in range(1, n + 1)]

    steps = int(round(duration / dt))
    rows = [row(0.0)]
    for k in range(1, steps + 1):
        if ops.analyze(1, dt) != 0:
            raise SystemExit(f"OpenSees failed at step {k} of case {case['name']} (dt = {dt})")
        if k % every == 0:
            rows.append(row(k * dt))
    ops.wipe()
    return header, rows


# --------------------------------------------------------------------------- cases


def cases():
    lin = [{"type": "spring", "params": {"k": k}} for k in FRAME_STIFFNESS]
    bw = [{"type": "bouc_wen", "params": dict(BOUC_WEN)}]
    mo = [{"type": "mostaghel", "params": {"k": SDOF_K, "alpha": MOSTAGHEL_ALPHA, "delta": MOSTAGHEL_DELTA}}]
    frame = [
        {"type": "mostaghel", "params": {"k": k, "alpha": FRAME_ALPHA, "delta": fy / k}}
        for k, fy in zip(FRAME_STIFFNESS, FRAME_YIELD)
    ]
    return [
        {
            "name": "linear_frame",
            "title": "3-storey linear shear frame, Newmark average acceleration = mg-alpha rho_inf 1",
            "masses": FRAME_MASSES,
            "springs": lin,
            "rayleigh": (0.4, 0.002),
            "corrections": 1,
            "dts": [0.005],
            "duration": 40.0,
            "kind": "linear",
        },
        {
            "name": "bouc_wen_sdof",
            "title": "SDOF Bouc-Wen (003 eq 16) vs uniaxialMaterial BoucWen",
            "masses": [SDOF_MASS],
            "springs": bw,
            "rayleigh": (MASS_DAMPING, 0.0),
            "corrections": 20,
            "dts": NONLINEAR_DTS,
            "duration": 20.0,
            "kind": "nonlinear",
        },
        {
            "name": "mostaghel_sdof",
            "title": "SDOF Mostaghel bilinear (003 eqs 17-19) vs Steel01",
            "masses": [SDOF_MASS],
            "springs": mo,
            "rayleigh": (MASS_DAMPING, 0.0),
            "corrections": 20,
            "dts": NONLINEAR_DTS,
            "duration": 20.0,
            "kind": "nonlinear",
        },
        {
            "name": "bilinear_frame",
            "title": "3-storey shear building, bilinear storeys (mostaghel vs Steel01)",
            "masses": FRAME_MASSES,
            "springs": frame,
            "rayleigh": (MASS_DAMPING, 0.0),
            "corrections": 20,
            "dts": NONLINEAR_DTS,
            "duration": 20.0,
            "kind": "nonlinear",
        },
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "opensees"), help="output folder")
    ap.add_argument("--ground-motions", default=None, help="folder holding " + RECORD)
    ap.add_argument("--synthetic", action="store_true", help="use the seeded synthetic record even if the real one exists")
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    args = ap.parse_args()

    import openseespy.opensees as ops  # noqa: F401  (fail early with a clear message)

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    gm_dir = None if args.synthetic else find_ground_motions(args.ground_motions)
    if gm_dir is not None:
        record_path = gm_dir / RECORD
        record_dt, acc = read_at2(record_path)
        gm = ["[[ground_motion]]", 'direction = "x"', f"record = {json.dumps(str(record_path))}", "scale = 1.0"]
        record = {"kind": "real", "file": str(record_path), "dt": record_dt, "npts": len(acc)}
    else:
        record_dt, acc = synthetic_record(SYNTHETIC_SEED)
        with open(out / SYNTHETIC_FILE, "w") as f:
            f.write(f"# synthetic Kanai-Tajimi record (scripts/opensees/reference.py, seed {SYNTHETIC_SEED}), time [s], acceleration [g]\n")
            for k, a in enumerate(acc):
                f.write(f"{fmt(round(k * record_dt, 9))} {fmt(a)}\n")
        gm = ["[[ground_motion]]", 'direction = "x"', f'record = "{SYNTHETIC_FILE}"', 'record_units = "g"', "scale = 1.0"]
        record = {"kind": "synthetic", "file": SYNTHETIC_FILE, "seed": SYNTHETIC_SEED, "dt": record_dt, "npts": len(acc)}
    record_duration = record_dt * (len(acc) - 1)

    import openseespy

    manifest = {
        "generator": "scripts/opensees/reference.py",
        "openseespy": getattr(openseespy, "__version__", "unknown"),
        "python": sys.version.split()[0],
        "record": record,
        "output_interval": OUTPUT_INTERVAL,
        "cases": [],
    }
    wanted = set(args.cases.split(",")) if args.cases else None
    t0 = time.time()
    for case in cases():
        if wanted and case["name"] not in wanted:
            continue
        # A whole number of output intervals, within the record.
        # (strictly inside: past its last sample OpenSees' Path series is zero while round-off in
        # the accumulated time decides which side of the end the last step falls on).
        duration = math.floor((min(case["duration"], record_duration) - 1e-6) / OUTPUT_INTERVAL) * OUTPUT_INTERVAL
        duration = round(duration, 9)
        for dt in case["dts"]:
            every = int(round(OUTPUT_INTERVAL / dt))
            stem = f"{case['name']}_{dt_tag(dt)}"
            (out / f"{stem}.toml").write_text(toml_model(case, dt, gm, every, duration))
            header, rows = opensees_run(case, dt, record_dt, acc, every, duration)
            digits = 17 if case["kind"] == "linear" else 9
            with open(out / f"{stem}.csv", "w") as f:
                f.write(",".join(header) + "\n")
                for r in rows:
                    f.write(",".join(f"{v:.{digits}g}" for v in r) + "\n")
            manifest["cases"].append(
                {
                    "case": case["name"],
                    "kind": case["kind"],
                    "dt": dt,
                    "model": f"{stem}.toml",
                    "reference": f"{stem}.csv",
                    "rows": len(rows),
                    "columns": header,
                }
            )
            print(f"{stem}: {len(rows)} rows", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(manifest['cases'])} references with the {record['kind']} record to {out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
