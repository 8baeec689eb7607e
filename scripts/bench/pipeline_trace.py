#!/usr/bin/env python3
"""Where the physical task's deadline misses come from: reads the `trace.csv` of
`hybridsim realtime --trace` (docs/realtime-pipeline.md) and prints, for the threaded PG-α
runner, the misses and wake-up lateness by substep, how late each coarse step's physical job
reached the physical task against its first tick, and the link thread's hand-off between the
last physical substep of a coarse step and the jobs of the next one, split into its parts.

Usage:
  hybridsim realtime --pacing realtime --trace -o out/run model.toml
  python3 scripts/bench/pipeline_trace.py out/run [--tick-us 244.140625]
"""

import argparse
import collections
import csv
import json
import math
import os


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def row(name, xs):
    return (f"{name:46s} n {len(xs):6d}  p50 {pct(xs, .5):8.1f}  p99 {pct(xs, .99):8.1f}  "
            f"max {max(xs) if xs else float('nan'):8.1f} µs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--tick-us", type=float, help="controller tick (default: from run.json)")
    a = ap.parse_args()
    run = json.load(open(os.path.join(a.folder, "run.json")))
    tick = a.tick_us or run["pacing_check"]["controller_tick_us"]
    ev = collections.defaultdict(list)
    with open(os.path.join(a.folder, "trace.csv")) as f:
        for r in csv.DictReader(f):
            ev[r["task"]].append((int(r["step"]), int(r["substep"]), int(r["cpu"]),
                                  *[float(r[f"t{i}_us"]) for i in range(4)]))
    phys = ev["physical"]
    ss = max(e[1] for e in phys)
    # Physical ticks: t0 deadline, t1 job received, t2 start (after the sleep), t3 end.
    misses = collections.Counter()
    late = collections.defaultdict(list)
    cpus = collections.Counter()
    for step, j, cpu, dl, rec, start, end in phys:
        late[j].append(start - dl)
        cpus[cpu] += 1
        if end > dl + tick:
            misses[j] += 1
    print(f"{a.folder}: tick {tick:.1f} µs, ss = {ss}, {len(phys)} physical ticks, "
          f"misses {sum(misses.values())}; physical ticks by CPU {dict(cpus)}")
    for j in range(1, ss + 1):
        print(row(f"physical substep {j}: start − deadline", late[j]) + f"  misses {misses[j]}")
    first = {e[0]: e for e in phys if e[1] == 1}
    last = {e[0]: e for e in phys if e[1] == ss}
    handoff = [first[s][4] - first[s][3] for s in first]
    print(row("job received − first tick's deadline", handoff))
    late_jobs = sum(1 for h in handoff if h > 0)
    print(f"  jobs received after their first tick's deadline: {late_jobs} of {len(handoff)}")
    # Link: substep 0: t0 step entered, t1 jobs sent, t2 numerical report seen, t3 physical
    # report seen; substep 1: t0 interface solve start, t1 link update end (pipelined hand-off:
    # the physical partitions' update), t2 the physical job of the next step sent (released;
    # NaN when not released, and in traces of the runner before the pipelined hand-off), t3
    # the numerical partition's link update end (NaN before the pipelined hand-off).
    link0 = {e[0]: e for e in ev["link"] if e[1] == 0}
    link1 = {e[0]: e for e in ev["link"] if e[1] == 1}
    num = {e[0]: e for e in ev["numerical"]}
    parts = collections.defaultdict(list)
    for s in sorted(link0):
        e0 = link0[s]
        if s in last:
            parts["physical report seen − last substep end"].append(e0[6] - last[s][6])
        if s in num:
            n = num[s]  # t0 start, t1 end, t2 report pushed
            parts["numerical: start − jobs sent"].append(n[3] - e0[4])
            parts["numerical: compute"].append(n[4] - n[3])
            parts["numerical end − last physical substep end"].append(
                n[4] - last[s][6] if s in last else float("nan"))
        released = float("nan")
        if s in link1:
            l1 = link1[s]  # t0 solve start, t1 (physical) update end, t2 released, t3 NS update end
            released = l1[5]
            parts["link solve + update (interface_solve, link_update[_physical])"].append(
                l1[4] - l1[3])
            parts["reports settled → solve start (attach, checks)"].append(
                l1[3] - max(e0[5], e0[6]))
            done = l1[4] if math.isnan(l1[6]) else l1[6]
            if not math.isnan(released):
                parts["physical update end → next physical job sent (row's physical part, checks)"].append(
                    released - l1[4])
                parts["next physical job sent → numerical update end"].append(l1[6] - released)
            if s + 1 in link0:
                parts["update end → next step entered (record, sink)"].append(
                    link0[s + 1][3] - done)
        if s + 1 in link0 and s in last:
            # The hand-off: to the physical job of the next step (released early, or with the
            # numerical job at the next step's start).
            sent = released if not math.isnan(released) else link0[s + 1][4]
            parts["last substep end → next physical job sent (hand-off)"].append(
                sent - last[s][6])
        if s + 1 in link0:
            e1 = link0[s + 1]
            parts["next step entered → jobs sent (detach, push)"].append(e1[4] - e1[3])
            if s + 1 in first:
                parts["physical job of the next step received − next step entered"].append(
                    first[s + 1][4] - e1[3])
        parts["waiting for the numerical report after the physical one"].append(
            max(0.0, e0[5] - e0[6]))
    for k, xs in parts.items():
        xs = [x for x in xs if not math.isnan(x)]
        print(row(k, xs))
    # Misses of the first substep: was the job late (hand-off) or the tick (scheduling)?
    by_cause = collections.Counter()
    for step, j, cpu, dl, rec, start, end in phys:
        if end > dl + tick:
            if j == 1 and rec > dl:
                by_cause["first substep, job late (hand-off)"] += 1
            elif j == 1:
                by_cause["first substep, job in time (scheduling)"] += 1
            else:
                by_cause[f"substep {j} (scheduling)"] += 1
    print("misses by cause:", dict(by_cause))
    ncpu = collections.Counter(e[2] for e in ev["numerical"])
    lcpu = collections.Counter(e[2] for e in ev["link"])
    print(f"numerical steps by CPU {dict(ncpu)}; link events by CPU {dict(lcpu)}")


if __name__ == "__main__":
    main()
