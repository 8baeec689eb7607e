#!/usr/bin/env python3
"""Two-pier bridge study of online model updating (issue 14; Abbiati et al. 2020, §4).

For each peak ground acceleration, runs `examples/updating_two_pier_bridge.toml` three ways
with `hybridsim run` on its virtual laboratory (same seeds, so the same ground motion and
sensor noise):

- all-true: the numerical pier B has the tested pier's true law (A = 5e7, gamma = 60);
- without updating: pier B keeps its wrong starting law (A = 7e7, gamma = 36);
- with updating: pier B starts wrong and receives the online estimates ([updating]).

and reports pier B's top-displacement error against the all-true run (RMS over the record,
normalised by the all-true RMS, and the peak error normalised by the all-true peak), the final
estimates, and whether and when the freeze switch (freeze_above_pga = 0.50 g) acted.

    cargo build --release -p hybridsim-cli
    python3 scripts/updating_study.py [--hybridsim target/release/hybridsim] [--pga 0.12 0.25 ...]

Standard library only.
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "updating_two_pier_bridge.toml")


def variant(text, pga, kind):
    text = re.sub(r"pga = [0-9.]+ \}", f"pga = {pga} }}", text)
    if kind == "true":
        text = text.replace("A = 7.0e7\nbeta = 3.5\ngamma = 36.0", "A = 5.0e7\nbeta = 3.5\ngamma = 60.0")
    if kind in ("true", "without"):
        text = text.split("[updating]")[0]
    return text


def column(path, name):
    with open(path) as f:
        rows = list(csv.reader(f))
    k = [h.split("[")[0] for h in rows[0]].index(name)
    return [float(r[k]) for r in rows[1:]]


def run(exe, text, folder):
    model = folder + ".toml"
    with open(model, "w") as f:
        f.write(text)
    p = subprocess.run([exe, "run", "--quiet", "-o", folder, model], capture_output=True, text=True)
    doc = json.load(open(os.path.join(folder, "run.json")))
    if p.returncode != 0:
        print(f"  {os.path.basename(folder)}: {doc.get('status')}: {doc.get('error')}", file=sys.stderr)
    return doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hybridsim", default=os.path.join(ROOT, "target", "release", "hybridsim"))
    ap.add_argument("--pga", type=float, nargs="+", default=[0.12, 0.25, 0.35, 0.50, 0.60])
    a = ap.parse_args()
    base = open(EXAMPLE).read()
    tmp = tempfile.mkdtemp(prefix="updating-study-")
    print("| PGA (g) | RMS error without | RMS error with | peak error without | peak error with "
          "| A final | gamma final | freeze |")
    print("|---|---|---|---|---|---|---|---|")
    for pga in a.pga:
        docs, u = {}, {}
        for kind in ("true", "without", "with"):
            folder = os.path.join(tmp, f"{kind}-{pga}")
            docs[kind] = run(a.hybridsim, variant(base, pga, kind), folder)
            u[kind] = column(os.path.join(folder, "results.csv"), "u.deck.2.x")
        n = min(len(x) for x in u.values())
        ref = u["true"][:n]
        rms_ref = math.sqrt(sum(x * x for x in ref) / n)
        peak_ref = max(abs(x) for x in ref)

        def err(kind):
            d = [x - y for x, y in zip(u[kind][:n], ref)]
            return math.sqrt(sum(x * x for x in d) / n) / rms_ref, max(abs(x) for x in d) / peak_ref

        (rw, pw), (ru, pu) = err("without"), err("with")
        up = docs["with"].get("updating") or {}
        pars = {p["name"]: p["estimate"] for p in up.get("parameters", [])}
        fr = up.get("frozen")
        freeze = f"frozen at {fr['time']:.2f} s" if fr else "no"
        status = "" if all(d["status"] == "completed" for d in docs.values()) else " (a run stopped)"
        print(f"| {pga:.2f} | {rw:.3f} | {ru:.3f} | {pw:.3f} | {pu:.3f} | {pars.get('A', float('nan')):.4g} "
              f"| {pars.get('gamma', float('nan')):.4g} | {freeze}{status} |")


if __name__ == "__main__":
    main()
