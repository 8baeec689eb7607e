#!/usr/bin/env python3
"""Spectral radius of the interfield parallel LSRT2 (Bursi et al. 2011, §5.1) over
(Ω_A, b1, ss, γ), drawn from `hybridsim analyze spectral` into one figure.

For every γ ∈ {low, high}, b1 ∈ {0.1, 0.5} and ss ∈ {2, 10} the split-mass model of
examples/lsrt2_interfield_split_mass.toml is rewritten with that b1 (m_A = b1/(1+b1),
m_B = 1/(1+b1), k_A = 1/(1+b1), k_B = b1/(1+b1)), `hybridsim analyze spectral` sweeps
Ω = ωΔt from 0.0025 to 250 (Ω_A = ωΔt_A = 4Ω from 0.01 to 1000), and the spectral radius
without the unit drift mode (`rho_without_drift`) is plotted against Ω_A. The bands where
ρ > 1 + 1e-6 are printed (docs/lsrt2_partitioned.md quotes them).

    cargo build --release -p hybridsim-cli
    python3 scripts/lsrt2/spectral_figure.py --bin target/release/hybridsim \
        -o docs/figures/lsrt2_spectral_radius.svg
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(ROOT, "examples", "lsrt2_interfield_split_mass.toml")


def model_text(b1, gamma, ss):
    ma, mb = b1 / (1 + b1), 1 / (1 + b1)
    ka, kb = 1 / (1 + b1), b1 / (1 + b1)
    values = iter([repr(ma), repr(ka), repr(mb), repr(kb)])
    out = []
    for line in open(EXAMPLE, encoding="utf-8"):
        key = line.split("=")[0].strip()
        if key in ("mass", "k"):
            line = f"{key} = {next(values)}\n"
        elif key == "subcycles":
            line = f"subcycles = {ss}\n"
        elif key == "lsrt2_gamma":
            line = f'lsrt2_gamma = "{gamma}"\n'
        out.append(line)
    return "".join(out)


def sweep(binary, tmp, b1, gamma, ss, points):
    name = f"b1_{b1}_{gamma}_ss{ss}"
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(model_text(b1, gamma, ss))
    out = os.path.join(tmp, name)
    subprocess.run(
        [binary, "analyze", "spectral", path, "--omega-min", "0.0025", "--omega-max", "250",
         "--points", str(points), "--format", "none", "-o", out],
        check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "spectral.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [4 * float(r["Omega"]) for r in rows], [float(r["rho_without_drift"]) for r in rows]


def bands(om, rho):
    """Intervals of Ω_A (sample points) where ρ > 1 + 1e-6, with the largest ρ in each."""
    out, start, peak = [], None, 0.0
    for o, r in zip(om + [None], rho + [0.0]):
        if r > 1 + 1e-6:
            start = o if start is None else start
            peak = max(peak, r)
            last = o
        elif start is not None:
            out.append((start, last, peak))
            start, peak = None, 0.0
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "hybridsim"))
    p.add_argument("--points", type=int, default=121)
    p.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "figures",
                                                          "lsrt2_spectral_radius.svg"))
    a = p.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "lsrt2"  # reproducible ids
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    with tempfile.TemporaryDirectory() as tmp:
        for ax, gamma, label in zip(axes, ["low", "high"], ["1 − √2/2", "1 + √2/2"]):
            for b1, colour in [(0.1, "tab:blue"), (0.5, "tab:orange")]:
                for ss, style in [(2, "--"), (10, "-")]:
                    om, rho = sweep(a.bin, tmp, b1, gamma, ss, a.points)
                    ax.semilogx(om, rho, style, color=colour, lw=1.2,
                                label=f"b1 = {b1}, ss = {ss}")
                    found = bands(om, rho)
                    print(f"γ {gamma}, b1 = {b1}, ss = {ss}: max ρ {max(rho):.4f}; ρ > 1 at "
                          + (", ".join(f"Ω_A {s:.3g}–{e:.3g} (max {m:.4f})" for s, e, m in found)
                             or "no Ω_A"))
            ax.axhline(1.0, color="k", lw=0.6)
            ax.set_title(f"γ = {label}")
            ax.set_xlabel("Ω_A = ω Δt_A")
            ax.grid(True, which="both", lw=0.3)
        axes[0].set_ylabel("spectral radius ρ (drift mode excluded)")
        axes[1].legend(fontsize=8, loc="lower left")
        fig.suptitle("Interfield parallel LSRT2, split-mass SDoF (Bursi et al. 2011, §5.1)",
                     fontsize=10)
        fig.tight_layout()
        os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
        fig.savefig(a.output, metadata={"Date": None})
    print(f"wrote {a.output}")


if __name__ == "__main__":
    sys.exit(main())
