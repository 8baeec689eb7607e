"""The quick start from Python, notebook style (each `# %%` is a cell; CI runs the script).

    pip install ./crates/hybridsim-py matplotlib pandas
    python examples/python/quickstart.py [OUTPUT_FOLDER]

Runs the quick start (a three-storey frame whose first storey is tested on the virtual lab),
plots the specimen's force-displacement loop, and runs a 100-realization study of the load
cell's noise (one noise seed per realization, in parallel on every core).
"""

# %% Setup
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # file output, no display
import matplotlib.pyplot as plt
import numpy as np

import hybridsim

HERE = Path(__file__).resolve().parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("results/python-quickstart")
OUT.mkdir(parents=True, exist_ok=True)

# %% Load and check the model
model = hybridsim.load(HERE.parent / "quickstart.toml")
print(model.check())

# %% Run it (results folder written by `hybridsim run`'s own code path)
res = hybridsim.run(model, OUT / "run", overwrite=True)
print(res, "-", res.run_json["status"], "in", f"{res.run_json['timing']['wall_seconds']:.2f} s")
df = res.to_dataframe()
print(df.filter(like="[m]").abs().max().head())

# %% The specimen loop: measured force against the interface displacement
lab = res.lab_dataframe()
d = lab.filter(like="measured.").iloc[:, 0]  # the measured actuator displacement
f = lab.filter(regex=r"^force\.").iloc[:, 0]  # the load cell
fig, ax = plt.subplots(figsize=(5, 4))
ax.plot(d, f, lw=0.6)
ax.set_xlabel(d.name)
ax.set_ylabel(f.name)
ax.set_title("First-storey column on the virtual lab")
fig.tight_layout()
fig.savefig(OUT / "specimen_loop.png", dpi=120)
print("wrote", OUT / "specimen_loop.png")

# %% A 100-realization noise study: one seed of the load cell's noise per realization
seeds = range(1, 101)
t0 = time.perf_counter()
study = hybridsim.batch(model, [{"lab.seed": s} for s in seeds])
wall = time.perf_counter() - t0
name = next(n for n in study[0].names if n.startswith("u.") and n.endswith(".3.x"))
peaks = np.array([np.abs(r[name]).max() for r in study])
assert all(r.completed for r in study)
print(f"100 realizations in {wall:.2f} s: peak |{name}| = {peaks.mean():.6f} ± {peaks.std():.2e} "
      f"{study[0].unit(name)} (min {peaks.min():.6f}, max {peaks.max():.6f})")
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.hist(peaks, bins=20)
ax.set_xlabel(f"peak |{name}| [{study[0].unit(name)}]")
ax.set_ylabel("realizations")
fig.tight_layout()
fig.savefig(OUT / "noise_study.png", dpi=120)
print("wrote", OUT / "noise_study.png")
