#!/usr/bin/env python3
"""OpenSees reference for the Steel01-like and Steel02-like elements (issue 17).

Drives OpenSees's uniaxialMaterial Steel01 and Steel02 (openseespy) through one strain
history with testUniaxialMaterial / setStrain / getStress and writes
`strain,steel01,steel02` (one row per strain point, the first at zero strain) to the CSV file
given as the only argument. tests/new_elements.rs runs this script and compares the
hybridsim elements driven through the same history.

The history: cycles of growing amplitude (0.5, 1, 2, 4, 8 yield strains), partial unloading
and reloading inside a cycle, and a drift off-centre, sampled with a step of 0.05 yield
strains; every parameter is printed in the header comment and fixed here.
"""
import sys

import openseespy.opensees as ops

E, FY, B = 200000.0, 400.0, 0.02
R0, CR1, CR2 = 18.0, 0.925, 0.15
EPSY = FY / E


def history():
    """Reversal targets (multiples of the yield strain) joined by straight segments."""
    targets = [0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, 1.5, 3.0, -4.0, -1.0, -2.5,
               8.0, -8.0, 5.0, 2.0, 6.0, -3.0, 0.0]
    h = 0.05
    points = [0.0]
    for t in targets:
        start = points[-1]
        n = max(1, int(round(abs(t - start) / h)))
        for k in range(1, n + 1):
            points.append(start + (t - start) * k / n)
    return [p * EPSY for p in points]


def drive(args):
    ops.wipe()
    ops.uniaxialMaterial(*args)
    ops.testUniaxialMaterial(1)
    out = []
    for eps in history():
        ops.setStrain(eps)
        out.append(ops.getStress())
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: steel_reference.py OUTPUT.csv")
    strains = history()
    s1 = drive(["Steel01", 1, FY, E, B])
    s2 = drive(["Steel02", 1, FY, E, B, R0, CR1, CR2])
    with open(sys.argv[1], "w") as f:
        f.write(f"# E={E!r} Fy={FY!r} b={B!r} R0={R0!r} cR1={CR1!r} cR2={CR2!r}\n")
        f.write("strain,steel01,steel02\n")
        for e, a, b in zip(strains, s1, s2):
            f.write(f"{e!r},{a!r},{b!r}\n")


if __name__ == "__main__":
    main()
