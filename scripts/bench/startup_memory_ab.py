#!/usr/bin/env python3
"""Start-up memory of two hybridsim binaries, alternated on the same model files (issue 20).

For every N and model (`startup_memory.py`'s chain and 2D frame), `--repeat` rounds run the
baseline binary then the candidate, each `hybridsim run MODEL` of a few steps; prints per
binary the median peak RSS at start-up (`startup.peak_rss_bytes` of run.json, VmHWM before the
first step), bytes per DOF, the whole run's maximum RSS (`/usr/bin/time -v`) and the start-up
time, then the marginal bytes per DOF between consecutive sizes (the process's fixed part
cancels out) and the load average.

Usage: python3 scripts/bench/startup_memory_ab.py --baseline OLD --exe NEW \
           --n 1000 10000 100000 [--models chain frame] [--repeat 3] [--out DIR]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import startup_memory  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--models", nargs="+", default=["chain", "frame"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    folder = a.out or tempfile.mkdtemp(prefix="startup_memory_ab_")
    os.makedirs(folder, exist_ok=True)
    exes = {"baseline": a.baseline, "candidate": a.exe}
    print(f"load {os.getloadavg()[0]:.2f}")
    print("| model | N (DOFs) | binary | peak RSS at start-up (MB) | bytes/DOF | whole run max RSS (MB) "
          "| start-up (s) |")
    print("|---|---|---|---|---|---|---|")
    peaks = {}
    for kind in a.models:
        for n in a.n:
            model = startup_memory.write_model(kind, n, folder)
            runs = {tag: [] for tag in exes}
            for _ in range(a.repeat):
                for tag, exe in exes.items():
                    runs[tag].append(startup_memory.hybridsim(exe, model, folder))
            for tag, r in runs.items():
                med = lambda k: statistics.median(x[k] for x in r)
                dofs = r[0][3]
                peaks[(kind, tag, n)] = (med(1), dofs)
                print(f"| {kind} | {dofs} | {tag} | {med(1) / 1e6:.1f} | {med(1) / dofs:.0f} "
                      f"| {med(2) / 1e6:.1f} | {med(0):.3f} |", flush=True)
            os.remove(model)
    shutil.rmtree(os.path.join(folder, "run"), ignore_errors=True)
    print("\nmarginal bytes per DOF between consecutive sizes:")
    for kind in a.models:
        for tag in exes:
            for lo, hi in zip(a.n, a.n[1:]):
                (p0, d0), (p1, d1) = peaks[(kind, tag, lo)], peaks[(kind, tag, hi)]
                print(f"  {kind} {tag} {d0}→{d1}: {(p1 - p0) / (d1 - d0):.0f}")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
