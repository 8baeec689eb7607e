#!/usr/bin/env python3
"""OpenSees reference for stiffness-proportional Rayleigh damping on a yielding element
(issue 17: `[damping] stiffness = "initial" | "committed" | "current"`).

One SDOF: a mass on a Steel01 spring (zeroLength, `-doRayleigh 1`), at rest, loaded by a sine
force that yields it, then free. OpenSees's `rayleigh alphaM betaK betaKinit betaKcomm` with
only one of the three stiffness terms non-zero gives the three references:

* ``initial``   -- ``rayleigh 0 0 BETA 0``  (beta K_init)
* ``committed`` -- ``rayleigh 0 0 0 BETA``  (beta K_comm, the tangent of the last committed state)
* ``current``   -- ``rayleigh 0 BETA 0 0``  (beta K, the tangent of the trial state)

Newmark average acceleration (the trapezoidal rule, = hybridsim's mg-alpha with rho_inf = 1)
with full Newton at the same step. Writes ``steel01_sdof_<choice>.csv`` (``time[s],u[m],force[N]``,
every OUTPUT_EVERY steps, the first row at t = 0) into the folder given as the only argument
(default: ``tests/data/opensees-rayleigh``); ``steel01_sdof_parallel_<choice>.csv`` adds an
elastic spring ``K_PARALLEL`` without Rayleigh damping beside the Steel01 one (the specimen of
the PG-α variant of the test). ``crates/hybridsim/tests/rayleigh_stiffness.rs``
builds the same model in hybridsim's format (the parameters in the header line must match)
and compares.

Needs: Debian ``libblas3 liblapack3``; ``pip install openseespy``.
"""
import math
import sys
from pathlib import Path

import openseespy.opensees as ops

MASS = 1000.0  # kg
E = 4.0 * math.pi**2 * MASS  # N/m: T = 1 s elastic
FY = 0.02 * E  # N: yield at 2 cm
B = 0.05  # post-yield / elastic stiffness
BETA = 0.1 / (2.0 * math.pi)  # s: 5 % at the elastic period with beta K_0
F0 = 1.5 * FY  # N, amplitude of the sine force
FREQ = 0.75  # Hz
T_END_LOAD = 4.0  # s: three whole cycles, the force ends at zero
DT = 0.001  # s
DURATION = 6.0  # s
OUTPUT_EVERY = 10

K_PARALLEL = 0.1 * E  # N/m: the elastic spring of the ``parallel`` variant (no Rayleigh)

CHOICES = {
    "initial": (0.0, 0.0, BETA, 0.0),
    "committed": (0.0, 0.0, 0.0, BETA),
    "current": (0.0, BETA, 0.0, 0.0),
}


def header(kp):
    return (
        f"# mass={MASS!r} kp={kp!r} E={E!r} Fy={FY!r} b={B!r} beta={BETA!r} F0={F0!r} freq={FREQ!r} "
        f"t_end_load={T_END_LOAD!r} dt={DT!r} duration={DURATION!r} every={OUTPUT_EVERY}"
    )


def run(choice, kp):
    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(0, 0.0)
    ops.fix(0, 1)
    ops.node(1, 0.0)
    ops.mass(1, MASS)
    ops.uniaxialMaterial("Steel01", 1, FY, E, B)
    ops.element("zeroLength", 1, 0, 1, "-mat", 1, "-dir", 1, "-doRayleigh", 1)
    if kp > 0.0:
        ops.uniaxialMaterial("Elastic", 2, kp)
        ops.element("zeroLength", 2, 0, 1, "-mat", 2, "-dir", 1, "-doRayleigh", 0)
    ops.rayleigh(*CHOICES[choice])
    ops.timeSeries("Trig", 1, 0.0, T_END_LOAD, 1.0 / FREQ, "-factor", F0)
    ops.pattern("Plain", 1, 1)
    ops.load(1, 1.0)
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("FullGeneral")
    ops.test("NormDispIncr", 1e-14, 100)
    ops.algorithm("Newton")
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
    rows = [(0.0, 0.0, 0.0)]
    steps = int(round(DURATION / DT))
    for k in range(1, steps + 1):
        if ops.analyze(1, DT) != 0:
            raise SystemExit(f"OpenSees failed at step {k} ({choice})")
        if k % OUTPUT_EVERY == 0:
            rows.append((k * DT, ops.nodeDisp(1, 1), ops.eleForce(1)[1]))
    ops.wipe()
    return rows


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "tests" / "data" / "opensees-rayleigh"
    out.mkdir(parents=True, exist_ok=True)
    for stem, kp in [("steel01_sdof", 0.0), ("steel01_sdof_parallel", K_PARALLEL)]:
        for choice in CHOICES:
            rows = run(choice, kp)
            with open(out / f"{stem}_{choice}.csv", "w") as f:
                f.write(header(kp) + "\n")
                f.write("time[s],u[m],force[N]\n")
                for r in rows:
                    f.write(",".join(f"{v:.12g}" for v in r) + "\n")
            print(f"{stem} {choice}: {len(rows)} rows, peak |u| {max(abs(r[1]) for r in rows):.6g} m")


if __name__ == "__main__":
    main()
