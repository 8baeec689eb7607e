#!/usr/bin/env python3
"""Soak of the real-time runner at a 4096 Hz controller rate (issue 20).

Writes two models and runs each with `hybridsim realtime --pacing realtime` for a given wall
time, then prints one line per task from run.json: deadline misses, wake-up lateness
percentiles, execution percentiles and the CPU share of each thread (its work plus its waiting
loop, from getrusage(RUSAGE_THREAD)), and the CPU time of the whole process (from the
parent's getrusage(RUSAGE_CHILDREN)).

  - quickstart: examples/quickstart.toml with Δt^N = 5/4096 s and ss = 5 (Δt^C = 1/4096 s),
    the synthetic record stretched to the soak's length;
  - chain: a shear chain of N storeys (default 1000), its first storey the physical
    substructure on the virtual lab, PG-α with ss = 4 (Δt^N = 4/4096 s).

Usage:
  cargo build --release -p hybridsim-cli
  python3 scripts/bench/soak_4096.py --exe target/release/hybridsim --minutes 10 --out out/soak

Add --allow-soft-realtime where SCHED_FIFO is not permitted (the run is then refused
without it). The models are written to the output folder; nothing else is needed.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chain_model  # noqa: E402  (the chain model)


def quickstart(seconds, max_overruns):
    text = open(os.path.join(ROOT, "examples", "quickstart.toml")).read()
    edits = [
        ("time_step = 0.005     # numerical step Δt^N", "time_step = 0.001220703125"),
        ("duration = 20.0\n\n[output]", f"duration = {seconds:.1f}\n\n[output]"),
        (
            "synthetic = { seed = 2026, duration = 20.0, pga = 0.3 }",
            f"synthetic = {{ seed = 2026, duration = {seconds:.1f}, pga = 0.3 }}",
        ),
    ]
    if max_overruns is not None:
        edits.append(('[safety]\non_trip = "hold"', f'[safety]\non_trip = "hold"\nmax_overruns = {max_overruns}'))
    for old, new in edits:
        if old not in text:
            sys.exit(f"quickstart.toml: cannot find {old!r}")
        text = text.replace(old, new)
    return text


def chain(n, seconds, max_overruns, every=4):
    """A shear chain of n storeys (n DOFs): storey 1 physical, the rest numerical
    (`chain_model.chain` with Δt^N = 4/4096 s, ss = 4)."""
    return chain_model.chain(
        n,
        duration=seconds,
        time_step=4 / 4096,
        every=every,
        physical=True,
        subcycles=4,
        max_overruns=max_overruns,
        title=f"Shear chain of {n} storeys, first storey tested, 4096 Hz",
    )


def run(exe, model, folder, soft):
    args = [exe, "realtime", "--pacing", "realtime", "--overwrite", "-o", folder, model]
    if soft:
        args.insert(4, "--allow-soft-realtime")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(p.stdout, end="")
    print(p.stderr, end="", file=sys.stderr)
    return wall, cpu, p.returncode


def report(name, folder, wall, cpu, code):
    j = json.load(open(os.path.join(folder, "run.json")))
    print(f"\n### {name}: status {j['status']} (exit {code}), {j['steps_completed']} steps, "
          f"loop {j['wall_seconds']:.1f} s, process {wall:.1f} s wall / {cpu:.1f} s CPU "
          f"({100 * cpu / wall:.0f} % of one core)")
    if j.get("safety_event"):
        print(f"safety event: {j['safety_event']}")
    print(f"pacing check: {j.get('pacing_check')}")
    print("| task | misses | longest run | late p50 | p99 | p99.9 | max (µs) | exec p99 | max (µs) | CPU share |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in j["tasks"]:
        late = t.get("wakeup_lateness") or {}
        ex = t.get("execution") or {}
        share = t.get("cpu_share")
        print(
            f"| {t['task']} | {t['deadline_misses']} | {t['longest_miss_run']} | "
            f"{late.get('p50_us', '–')} | {late.get('p99_us', '–')} | {late.get('p999_us', '–')} | "
            f"{late.get('max_us', '–')} | {ex.get('p99_us', '–')} | {ex.get('max_us', '–')} | "
            f"{'–' if share is None else f'{100 * share:.1f} %'} |"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=os.path.join(ROOT, "target", "release", "hybridsim"))
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--chain", type=int, default=1000, help="storeys of the chain (0: skip)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "soak"))
    ap.add_argument("--allow-soft-realtime", action="store_true")
    ap.add_argument("--only", choices=["quickstart", "chain"])
    ap.add_argument(
        "--chain-every", type=int, default=4,
        help="[output] every of the chain: a row of an N = 1000 chain has 7006 columns, so "
             "every = 4 at 4096 Hz writes about 40 MB/s of CSV; a long soak needs a coarser "
             "record (e.g. 256) or the disk fills and the writer falls behind")
    ap.add_argument(
        "--cpus", type=int, nargs="+",
        help="[runner] cpus of the soak models (e.g. 0 1: link and physical on CPU 0, numerical "
             "on CPU 1); default: not pinned")
    ap.add_argument(
        "--max-overruns",
        type=int,
        help="[safety] max_overruns for the soak (default: the model's, 10): a VM is not an "
        "RT kernel, and a larger limit lets the soak ride through host freezes and count them",
    )
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    seconds = 60.0 * a.minutes
    models = []
    if a.only in (None, "quickstart"):
        models.append(("quickstart at 4096 Hz", "quickstart_4096", quickstart(seconds, a.max_overruns)))
    if a.chain > 0 and a.only in (None, "chain"):
        models.append((f"chain N = {a.chain} at 4096 Hz", f"chain{a.chain}_4096",
                       chain(a.chain, seconds, a.max_overruns, a.chain_every)))
    for name, stem, text in models:
        if a.cpus:
            text += "\n[runner]\ncpus = [" + ", ".join(str(c) for c in a.cpus) + "]\n"
        path = os.path.join(a.out, stem + ".toml")
        open(path, "w").write(text)
        folder = os.path.join(a.out, stem)
        wall, cpu, code = run(a.exe, path, folder, a.allow_soft_realtime)
        report(name, folder, wall, cpu, code)


if __name__ == "__main__":
    main()
