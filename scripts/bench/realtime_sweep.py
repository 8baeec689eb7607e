#!/usr/bin/env python3
"""The largest PG-α numerical substructure that holds real time (issue 20).

For each controller rate (default 1000 and 4096 Hz) and each N, writes the shear chain of
`chain_model.py` (N storeys, storey 1 the physical substructure on the virtual lab, PG-α with
ss = 4 subcycles, so Δt^N = 4 / rate) and runs it with `hybridsim realtime --pacing realtime`
for a few seconds, then reads run.json: status, deadline misses and wake-up lateness of every
task, the tasks' compute time (`execution` p50/p99/max) against their budget (the physical
task: one controller tick; the numerical and link tasks: one coarse step Δt^N), and the
`startup` record. The machine's load (`/proc/loadavg`) is printed with every row.

A VM pauses now and then (2–5 ms, a few per 3 s), which misses a few ticks at any N. So each
run of N is alternated with a baseline run of the same rate at `--baseline-n` (default 10)
storeys, `--repeats` times, and a rate "holds" at N when every run completed, the median of
its physical misses exceeds the most any baseline run missed by at most --miss-fraction of
the controller ticks, and the p99 of every task's compute time fits its budget.

`--record` chooses the recorder: `full` (every column: every DOF's u, v, a_abs, every
element's force and states, energies) or `selected` (`[output] nodes` of --selected-nodes
storeys spread over the chain, `dofs = ["x"]`, `elements = false`, energies on: a few dozen
columns, what a lab records from a large model). `--every` is `[output] every` (default 1:
a row every coarse step).

Usage:
  cargo build --release -p hybridsim-cli
  python3 scripts/bench/realtime_sweep.py --exe target/release/hybridsim \
      --rates 1000 4096 --n 1000 3000 10000 --record selected --seconds 3 --out out/sweep

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


def chain(n, seconds, rate, subcycles, every=1, record="full", selected_nodes=32, cpus=None,
          energy=True):
    """The chain of `chain_model` (storey 1 physical) with Δt^N = subcycles / rate, a results
    row every `every` steps; `record = "selected"` records `selected_nodes` storeys spread
    over the chain (and always the physical and interface DOFs), no element columns;
    `cpus`: `[runner] cpus` (default: not pinned); `energy = False` leaves out the energy
    columns of a selected record."""
    text = chain_model.chain(
        n,
        duration=seconds,
        time_step=subcycles / rate,
        every=every,
        physical=True,
        subcycles=subcycles,
        max_overruns=1000,
        title=f"Shear chain of {n} storeys, first storey tested, {rate:g} Hz",
    )
    if record == "selected":
        k = min(selected_nodes, n)
        nodes = sorted({max(1, round(n * (i + 1) / k)) for i in range(k)})
        head = f"[output]\nevery = {every}"
        assert head in text
        text = text.replace(
            head,
            head + f"\nnodes = [{', '.join(map(str, nodes))}]\ndofs = [\"x\"]\nelements = false"
            + ("" if energy else "\nenergy = false"),
        )
    if cpus:
        assert "[runner]" not in text
        text += "\n[runner]\ncpus = [" + ", ".join(str(c) for c in cpus) + "]\n"
    return text


def load():
    return open("/proc/loadavg").read().split()[:3]


def run_one(a, rate, n, record, tag):
    """One real-time run; its run.json's figures (or None when it wrote no run.json)."""
    stem = f"chain{n}_{int(rate)}hz_{record}_{tag}"
    model = os.path.join(a.out, stem + ".toml")
    open(model, "w").write(chain(n, a.seconds, rate, a.subcycles, a.every, record,
                                 a.selected_nodes, a.cpus, not a.no_energy))
    folder = os.path.join(a.out, stem)
    args = [a.exe, "realtime", "--pacing", "realtime", "--overwrite", "-o", folder, model]
    if a.trace:
        args.insert(4, "--trace")
    if a.allow_soft_realtime:
        args.insert(4, "--allow-soft-realtime")
    before = load()
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - t0
    path = os.path.join(folder, "run.json")
    if not os.path.exists(path):
        return {"error": f"failed ({p.returncode}): {p.stderr.strip()[-200:]}", "load": before}
    j = json.load(open(path))
    st = j.get("startup") or {}
    tick_us = 1e6 / rate
    budget = {"physical": tick_us, "numerical": a.subcycles * tick_us,
              "link": a.subcycles * tick_us, "estimation": a.subcycles * tick_us}
    tasks = {}
    for t in j.get("tasks", []):
        ex = t.get("execution") or {}
        tasks[t["task"]] = {
            "misses": t.get("deadline_misses", 0),
            "ticks": ex.get("count") or 0,
            "p50": ex.get("p50_us"), "p99": ex.get("p99_us"), "max": ex.get("max_us"),
            "budget": budget.get(t["task"]),
        }
    columns = columns_of(folder)
    if not a.keep_files:
        for f in ("results.csv", "lab.csv"):
            try:
                os.remove(os.path.join(folder, f))
            except OSError:
                pass
    return {"status": j.get("status"), "steps": j.get("steps_completed"), "wall": wall,
            "startup": st.get("seconds"), "rss": st.get("peak_rss_bytes"), "tasks": tasks,
            "load": before, "columns": columns}


def columns_of(folder):
    """The number of results columns (the header of results.csv, before it is removed)."""
    try:
        with open(os.path.join(folder, "results.csv")) as f:
            return len(f.readline().split(","))
    except OSError:
        return None


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def fmt(x, f="{:.0f}"):
    return "–" if x is None else f.format(x)


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
    ap.add_argument("--keep-files", action="store_true",
                    help="keep results.csv and lab.csv (removed by default: GBs at large N)")
    ap.add_argument("--every", type=int, default=1, help="[output] every of the chains")
    ap.add_argument("--record", choices=["full", "selected"], default="full")
    ap.add_argument("--selected-nodes", type=int, default=32)
    ap.add_argument("--baseline-n", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2,
                    help="runs of each N, each after a baseline run (alternated)")
    ap.add_argument("--cpus", type=int, nargs="+",
                    help="[runner] cpus of the chains (e.g. 0 1: link and physical on CPU 0, "
                         "numerical on CPU 1); default: not pinned")
    ap.add_argument("--no-energy", action="store_true",
                    help="leave the energy columns out of a selected record")
    ap.add_argument("--trace", action="store_true",
                    help="run with --trace and keep trace.csv (scripts/bench/pipeline_trace.py)")
    ap.add_argument("--out", default="out/sweep")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(f"recorder: {a.record}{' without energies' if a.no_energy else ''}, every = {a.every}; "
          f"cpus {a.cpus or 'not pinned'}; baseline N = {a.baseline_n}, "
          f"{a.repeats} alternated repeats; {a.seconds:g} s a run")
    print("| rate (Hz) | N | columns | status | start-up (s) | physical misses: N runs (baseline runs) "
          "/ ticks | compute p50 / p99 / max (µs) vs budget: physical; numerical; link "
          "| holds | load 1/5/15 min |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rate in a.rates:
        for n in a.n:
            runs, base = [], []
            for r in range(a.repeats):
                base.append(run_one(a, rate, a.baseline_n, a.record, f"base{r}"))
                runs.append(run_one(a, rate, n, a.record, f"r{r}"))
            failed = [x for x in runs + base if "error" in x]
            if failed:
                print(f"| {rate:g} | {n} | | {failed[0]['error']} | | | | no | "
                      f"{'/'.join(failed[0]['load'])} |")
                sys.stdout.flush()
                if not a.keep_going:
                    break
                continue
            phys = [x["tasks"].get("physical", {}) for x in runs]
            phys0 = [x["tasks"].get("physical", {}) for x in base]
            ticks = max(p.get("ticks", 0) for p in phys) or 1
            m_n = [p.get("misses", 0) for p in phys]
            m_0 = [p.get("misses", 0) for p in phys0]
            # The baseline's own runs differ by tens of ticks on a busy VM: N is compared
            # with the worst of them.
            excess = median(m_n) - max(m_0)
            holds = all(x["status"] == "completed" for x in runs) and \
                excess <= a.miss_fraction * ticks
            compute = []
            for task in ("physical", "numerical", "link"):
                worst = max((x["tasks"].get(task, {}) for x in runs),
                            key=lambda t: t.get("p99") or 0)
                if not worst:
                    continue
                if worst.get("p99") is not None and worst.get("budget") and \
                        worst["p99"] > worst["budget"]:
                    holds = False
                compute.append(f"{fmt(worst.get('p50'))} / {fmt(worst.get('p99'))} / "
                               f"{fmt(worst.get('max'))} vs {fmt(worst.get('budget'))}")
            loads = "; ".join("/".join(x["load"]) for x in runs)
            print(f"| {rate:g} | {n} | {fmt(runs[0]['columns'])} | "
                  f"{', '.join(sorted(set(x['status'] for x in runs)))} "
                  f"({runs[0]['steps']} steps) | {fmt(median([x['startup'] or 0 for x in runs]), '{:.2f}')} | "
                  f"{', '.join(map(str, m_n))} ({', '.join(map(str, m_0))}) / {ticks} | "
                  f"{'; '.join(compute)} | {'yes' if holds else 'no'} | {loads} |")
            sys.stdout.flush()
            if not holds and not a.keep_going:
                break


if __name__ == "__main__":
    main()
