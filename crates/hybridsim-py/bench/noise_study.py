"""Benchmark (issue 19): a noise study of the quick start — N realizations, one load-cell
noise seed each — through the batch API (in memory, every core), against looping the CLI
(`hybridsim run` once per seed, a process each). Results in BENCHMARKS.md.

    python crates/hybridsim-py/bench/noise_study.py [--realizations 1000] [--cli-runs 50]

The CLI loop is timed over --cli-runs processes and scaled to N (each run is independent).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import hybridsim

ROOT = Path(__file__).resolve().parents[3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--realizations", type=int, default=1000)
    ap.add_argument("--cli-runs", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--bin", default=os.environ.get("HYBRIDSIM_BIN", str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "hybridsim")))
    a = ap.parse_args()
    model = hybridsim.load(ROOT / "examples" / "quickstart.toml")
    variants = [{"lab.seed": s} for s in range(1, a.realizations + 1)]

    t0 = time.perf_counter()
    single = hybridsim.run(model)
    t_single = time.perf_counter() - t0
    print(f"one run in memory: {t_single:.3f} s ({model.n_steps} steps)")

    t0 = time.perf_counter()
    study = hybridsim.batch(model, variants, jobs=a.jobs)
    t_batch = time.perf_counter() - t0
    assert all(r.completed for r in study)
    peaks = np.array([np.abs(r["u.frame.3.x"]).max() for r in study]) if "u.frame.3.x" in study[0].names else None
    print(f"batch API: {a.realizations} realizations in {t_batch:.2f} s "
          f"({t_batch / a.realizations * 1e3:.2f} ms per realization, {os.cpu_count()} cores)")
    if peaks is not None:
        print(f"  peak |u.frame.3.x|: mean {peaks.mean():.6f} m, std {peaks.std():.3e} m")

    if Path(a.bin).exists() and a.cli_runs > 0:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            for s in range(1, a.cli_runs + 1):
                m = Path(tmp) / f"m{s}.toml"
                m.write_text(model.with_overrides({"lab.seed": s}).text)
                subprocess.run([a.bin, "run", str(m), "-o", str(Path(tmp) / f"r{s}"), "--quiet"],
                               check=True, capture_output=True)
            t_cli = time.perf_counter() - t0
        print(f"CLI loop: {a.cli_runs} runs in {t_cli:.2f} s ({t_cli / a.cli_runs * 1e3:.1f} ms per run); "
              f"{a.realizations} runs ≈ {t_cli / a.cli_runs * a.realizations:.1f} s")
    else:
        print(f"no CLI binary at {a.bin}: CLI loop not timed", file=sys.stderr)


if __name__ == "__main__":
    main()
