#!/usr/bin/env python3
"""Start-up time and peak memory (parse → first step) of the shear chain and the 2D frame of
N DOFs, hybridsim against openseespy building the same model (issue 20).

For every N and model, `--repeat` rounds alternate hybridsim and OpenSees:
- hybridsim: `/usr/bin/time -v hybridsim run MODEL` of a few steps; `startup.seconds` and
  `startup.peak_rss_bytes` (VmHWM at the first step) from run.json, and the whole run's
  maximum resident set size from /usr/bin/time;
- OpenSees: a child python process that builds the same model (`startup_chain.opensees`'s
  chain, `frame_model.opensees_build`'s frame) and runs its first step, timed from `wipe` to
  the end of that step; its maximum resident set size from /usr/bin/time, and that of a child
  that only imports openseespy (the interpreter and library, reported separately).
Prints one table row per N and model with medians, and the load average before and after.

Usage: python3 scripts/bench/startup_memory.py --exe target/release/hybridsim \
           --n 1000 10000 100000 [--models chain frame] [--repeat 3] [--out out/startup_memory]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chain_model  # noqa: E402
import frame_model  # noqa: E402

STEPS = 10
DT = 1e-3


def max_rss_kb(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) if m else None


def write_model(kind, n, folder):
    path = os.path.join(folder, f"{kind}{n}.toml")
    if kind == "chain":
        with open(path, "w") as f:
            f.write(chain_model.chain(n, duration=STEPS * DT, time_step=DT, every=STEPS))
    else:
        frame_model.write(n, 10, STEPS, DT, path, STEPS)
    return path


def hybridsim(exe, model, folder):
    out = os.path.join(folder, "run")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(["/usr/bin/time", "-v", exe, "run", model, "-o", out, "--quiet"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"hybridsim failed on {model}:\n{p.stderr[-2000:]}")
    s = json.load(open(os.path.join(out, "run.json")))["startup"]
    return s["seconds"], s["peak_rss_bytes"], max_rss_kb(p.stderr) * 1024, s["dofs"]


def opensees_child(kind, n):
    import openseespy.opensees as ops
    if n == 0:
        print(json.dumps({"seconds": 0.0}))
        return
    t0 = time.perf_counter()
    if kind == "chain":
        chain_model.opensees_build(ops, n, STEPS, DT)
    else:
        frame_model.opensees_build(ops, n, 10, STEPS, DT)
    ops.analyze(1, DT)
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def opensees(kind, n):
    p = subprocess.run(["/usr/bin/time", "-v", sys.executable, os.path.abspath(__file__),
                        "--opensees-child", kind, str(n)], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    line = [x for x in p.stdout.splitlines() if x.startswith("{")][-1]
    return json.loads(line)["seconds"], max_rss_kb(p.stderr) * 1024


def load():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default="target/release/hybridsim")
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--models", nargs="+", default=["chain", "frame"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-opensees", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--opensees-child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.opensees_child:
        opensees_child(a.opensees_child[0], int(a.opensees_child[1]))
        return
    folder = a.out or tempfile.mkdtemp(prefix="startup_memory_")
    os.makedirs(folder, exist_ok=True)
    base = None if a.no_opensees else opensees("chain", 0)
    print(f"load {load():.2f}; openseespy import alone: "
          f"{'-' if base is None else f'{base[1] / 1e6:.1f} MB'} max RSS")
    print("| model | N (DOFs) | hybridsim start-up (s) | peak RSS at start-up (MB) | bytes/DOF "
          "| whole run max RSS (MB) | OpenSees build + 1st step (s) | OpenSees max RSS (MB) "
          "| load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in a.n:
        for kind in a.models:
            model = write_model(kind, n, folder)
            h, o = [], []
            l0 = load()
            for _ in range(a.repeat):
                h.append(hybridsim(a.exe, model, folder))
                if not a.no_opensees:
                    r = opensees(kind, n)
                    if r is not None:
                        o.append(r)
            med = lambda xs, k: statistics.median(x[k] for x in xs)
            dofs = h[0][3]
            ops_t = f"{med(o, 0):.3f}" if o else "-"
            ops_m = f"{med(o, 1) / 1e6:.1f}" if o else "-"
            print(f"| {kind} | {dofs} | {med(h, 0):.3f} ({', '.join(f'{x[0]:.3f}' for x in h)}) "
                  f"| {med(h, 1) / 1e6:.1f} | {med(h, 1) / dofs:.0f} | {med(h, 2) / 1e6:.1f} "
                  f"| {ops_t} | {ops_m} | {l0:.1f}–{load():.1f} |", flush=True)
            os.remove(model)


if __name__ == "__main__":
    main()
