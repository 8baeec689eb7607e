#!/usr/bin/env python3
"""Start-up (parse → first step) and per-step cost of large numerical substructures (issue 20).

Writes a shear chain of N storeys (`chain_model.py`: N DOFs, storey masses 50 t, storey springs
4e4 kN/m, Rayleigh damping α = 0.05 /s, β = 1e-3 s, a seeded synthetic ground motion; with
--pg-alpha the real-time benchmarks' chain, its first storey physical on the virtual lab, PG-α
ss = 1, with a current `[lab]`/`[safety]` table), runs it with `hybridsim run` and
reports from run.json `startup.seconds`, `startup.peak_rss_bytes` (VmHWM: the whole process,
parse to the first step) and the run loop's per-step time, with the same model built in
openseespy (zeroLength springs, lumped masses, `rayleigh α 0 β 0`, Newmark average
acceleration, Linear, BandGeneral) when it is installed: model build + first step timed, and
the steps.

Usage:  python3 scripts/bench/startup_chain.py --exe target/release/hybridsim \
            --n 1000 10000 100000 [--steps 1000] [--pg-alpha] [--opensees] [--out out/startup]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chain_model  # noqa: E402  (the chain model)


def chain(n, steps, pg_alpha):
    """`chain_model.chain` with Δt = 1 ms, one results row at the end."""
    dt = 1e-3
    return chain_model.chain(
        n,
        duration=steps * dt,
        time_step=dt,
        every=steps,
        physical=pg_alpha,
        subcycles=1,
        title=f"Shear chain of {n} storeys (start-up benchmark)",
    )


def opensees(n, steps):
    try:
        import openseespy.opensees as ops
    except ImportError:
        return None
    t0 = time.perf_counter()
    chain_model.opensees_build(ops, n, steps, 1e-3)
    ops.analyze(1, 1e-3)
    t1 = time.perf_counter()
    ops.analyze(steps - 1, 1e-3)
    t2 = time.perf_counter()
    ops.wipe()
    return t1 - t0, (t2 - t1) / max(steps - 1, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", default="target/release/hybridsim")
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--pg-alpha", action="store_true")
    ap.add_argument("--opensees", action="store_true")
    ap.add_argument("--out", default="out/startup")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("| N | integrator | start-up (s) | peak RSS (MB) | bytes/DOF | per step (µs) | "
          "OpenSees build + 1st step (s) | OpenSees per step (µs) |")
    print("|---|---|---|---|---|---|---|---|")
    for n in a.n:
        name = f"chain{n}{'_pg' if a.pg_alpha else ''}"
        model = os.path.join(a.out, name + ".toml")
        with open(model, "w") as f:
            f.write(chain(n, a.steps, a.pg_alpha))
        folder = os.path.join(a.out, name)
        t0 = time.perf_counter()
        r = subprocess.run([a.exe, "run", model, "-o", folder, "--overwrite", "-q"],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"| {n} | run failed ({r.returncode}): {r.stderr.strip()[-300:]} |")
            continue
        info = json.load(open(os.path.join(folder, "run.json")))
        st = info.get("startup", {})
        secs, rss = st.get("seconds", float("nan")), st.get("peak_rss_bytes", float("nan"))
        per_step = info.get("timing", {}).get("mean_step_microseconds", float("nan"))
        os_res = opensees(n, a.steps) if a.opensees else None
        os_cols = f"{os_res[0]:.3f} | {os_res[1] * 1e6:.1f}" if os_res else "– | –"
        print(f"| {n} | {'PG-α' if a.pg_alpha else 'MG-α'} | {secs:.3f} | {rss / 1e6:.1f} | "
              f"{rss / n:.0f} | {per_step:.1f} | {os_cols} |  (process wall {wall:.2f} s)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
