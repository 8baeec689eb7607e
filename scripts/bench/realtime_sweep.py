#!/usr/bin/env python3
"""The largest PG-α numerical substructure that holds real time (issue 20).

For each controller rate (default 1000 and 4096 Hz) and each N, writes the shear chain of
`chain_model.py` (N storeys, storey 1 the physical substructure on the virtual lab, PG-α with
ss = 4 subcycles, so Δt^N = 4 / rate) and runs it with `hybridsim realtime --pacing realtime`
for a few seconds, then reads run.json: status, deadline misses and wake-up lateness of every
task, and the `startup` record. A rate "holds" at N when the run completed with at most
--miss-fraction of the controller ticks and of the numerical steps missed. The machine's load
(`/proc/loadavg`) is printed with every row: the numbers mean little on a loaded machine.

Usage:
  cargo build --release -p hybridsim-cli
  python3 scripts/bench/realtime_sweep.py --exe target/release/hybridsim \
      --rates 1000 4096 --n 100 1000 3000 10000 30000 --seconds 3 --out out/sweep

Stops a rate's sweep at its first N that does not hold (--keep-going runs every N).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chain_model  # noqa: E402  (the chain model)


def chain(n, seconds, rate, subcycles, every=None):
    """The chain of `chain_model` (storey 1 physical) with Δt^N = subcycles / rate, a results
    row every `every` steps (default: every `subcycles`)."""
    return chain_model.chain(
        n,
        duration=seconds,
        time_step=subcycles / rate,
        every=every or subcycles,
        physical=True,
        subcycles=subcycles,
        max_overruns=1000,
        title=f"Shear chain of {n} storeys, first storey tested, {rate:g} Hz",
    )


def load():
    return open("/proc/loadavg").read().split()[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=os.path.join(HERE, "..", "..", "target", "release", "hybridsim"))
    ap.add_argument("--rates", type=float, nargs="+", default=[1000.0, 4096.0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000, 3000, 10000, 30000])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--subcycles", type=int, default=4)
    ap.add_argument("--miss-fraction", type=float, default=0.001)
    ap.add_argument("--allow-soft-realtime", action="store_true")
    ap.add_argument("--keep-going", action="store_true")
    ap.add_argument("--every", type=int, default=None,
                    help="[output] every of the chains (default: --subcycles); a large value "
                    "records one row, to separate the compute from the writer's CSV")
    ap.add_argument("--out", default="out/sweep")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("| rate (Hz) | N | status | start-up (s) | peak RSS (MB) | task: misses / ticks, "
          "late p99 / max (µs) | holds | load 1/5/15 min |")
    print("|---|---|---|---|---|---|---|---|")
    for rate in a.rates:
        for n in a.n:
            stem = f"chain{n}_{int(rate)}hz"
            model = os.path.join(a.out, stem + ".toml")
            open(model, "w").write(chain(n, a.seconds, rate, a.subcycles, a.every))
            folder = os.path.join(a.out, stem)
            args = [a.exe, "realtime", "--pacing", "realtime", "--overwrite", "-o", folder, model]
            if a.allow_soft_realtime:
                args.insert(4, "--allow-soft-realtime")
            before = load()
            t0 = time.monotonic()
            p = subprocess.run(args, capture_output=True, text=True)
            wall = time.monotonic() - t0
            path = os.path.join(folder, "run.json")
            if not os.path.exists(path):
                print(f"| {rate:g} | {n} | failed ({p.returncode}): "
                      f"{p.stderr.strip()[-200:]} | | | | no | {'/'.join(before)} |")
                sys.stdout.flush()
                if not a.keep_going:
                    break
                continue
            j = json.load(open(path))
            st = j.get("startup") or {}
            tasks, holds = [], j.get("status") == "completed"
            for t in j.get("tasks", []):
                late = t.get("wakeup_lateness") or {}
                ticks = (t.get("execution") or {}).get("count") or 0
                misses = t.get("deadline_misses", 0)
                tasks.append(f"{t['task']}: {misses} / {ticks or '?'}, "
                             f"{late.get('p99_us', '–')} / {late.get('max_us', '–')}")
                if ticks and misses > a.miss_fraction * ticks:
                    holds = False
                if not ticks and misses > 0:
                    holds = False
            secs = st.get("seconds")
            rss = st.get("peak_rss_bytes")
            print(f"| {rate:g} | {n} | {j.get('status')} ({j.get('steps_completed')} steps, "
                  f"{wall:.1f} s wall) | {'–' if secs is None else f'{secs:.3f}'} | "
                  f"{'–' if rss is None else f'{rss / 1e6:.0f}'} | {'; '.join(tasks)} | "
                  f"{'yes' if holds else 'no'} | {'/'.join(before)} |")
            sys.stdout.flush()
            if not holds and not a.keep_going:
                break


if __name__ == "__main__":
    main()
