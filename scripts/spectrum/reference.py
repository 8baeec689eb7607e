#!/usr/bin/env python3
"""Independent response spectrum of a PEER .AT2 record (the reference of
crates/hybridsim-cli/tests/spectrum.rs).

Each oscillator u'' + 2 z w u' + w^2 u = -a_g is simulated with scipy.signal.lsim, whose
linear interpolation of the input is the same assumption as hybridsim's (an excitation
linear between samples), but computed by scipy's own matrix exponential. Peaks are taken
at the record's samples.

usage: reference.py RECORD.AT2 --damping 0.05 --periods 0.1,0.5,1.0 > reference.csv
Output columns: period, SD [m], SV [m/s], SA [g], PSA [g] (accelerations of the record in g).
"""
import argparse
import re
import sys

import numpy as np
from scipy import signal

G = 9.80665


def read_at2(path):
    with open(path) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines[:20]):
        m = re.search(r"NPTS\s*=\s*(\d+)\s*,\s*DT\s*=\s*([0-9.Ee+-]+)", line, re.I)
        if m:
            npts, dt = int(m.group(1)), float(m.group(2))
            values = [float(x) for l in lines[i + 1:] for x in l.split()]
            if len(values) != npts:
                sys.exit(f"{path}: {len(values)} values for NPTS={npts}")
            return dt, np.array(values)
    sys.exit(f"{path}: no NPTS/DT line")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("record")
    p.add_argument("--damping", type=float, default=0.05)
    p.add_argument("--periods", required=True, help="comma-separated periods (s)")
    a = p.parse_args()
    dt, acc_g = read_at2(a.record)
    ag = acc_g * G
    t = np.arange(len(ag)) * dt
    z = a.damping
    print("period,SD,SV,SA,PSA")
    for period in (float(x) for x in a.periods.split(",")):
        w = 2 * np.pi / period
        A = np.array([[0.0, 1.0], [-w * w, -2 * z * w]])
        B = np.array([[0.0], [-1.0]])
        C = np.array([[1.0, 0.0], [0.0, 1.0], [-w * w, -2 * z * w]])
        D = np.zeros((3, 1))
        _, y, _ = signal.lsim((A, B, C, D), ag, t, interp=True)
        sd, sv, sa = np.abs(y).max(axis=0)
        print(",".join(repr(float(x)) for x in (period, sd, sv, sa / G, w * w * sd / G)))


if __name__ == "__main__":
    main()
