#!/usr/bin/env python3
"""Figures of the full-operator method (Hung and El-Tawil 2009) reproduced with hybridsim.

Runs the `hybridsim` binary on model files written from templates and
examples/fom_01_six_storey.toml, computes E_c with `hybridsim analyze energy-error`, and
writes small SVGs to docs/fom/ and the numbers (Markdown tables) to stdout:

  sdof_omega_0.02.svg, sdof_omega_0.1.svg   the paper's Figs 3 and 4: undamped SDOF, d0 = 1,
                                             estimate λ k with λ = 0.1 (a) and 10 (b), FOM with
                                             and without the corrector against Newmark with k
  sdof_energy_error.svg                      Figs 5 and 6: E_c(t) of those runs (log scale)
  six_storey_energy_error.svg                Fig 14(a) (and its overshoot case): E_c(t) at
                                             node 1 of FOM with every update and of OSM,
                                             without and with a 0.001 in overshoot, against
                                             the implicit Newmark solution at the same Δt
                                             (newmark_reference.py, the paper's kind of
                                             reference) and the monolithic scheme at Δt/10
  six_storey_overshoot.svg                   Fig 15: node-1 displacement with the overshoot,
                                             reference, FOM (BFGS), OSM and OSM with the
                                             I-modification, and each minus the reference

  python3 scripts/fom/figures.py --hybridsim target/release/hybridsim [--record PATH] [--synthetic]

The six-storey runs use El Centro 1940 NS at PGA = 1 g (20 s) from ../shared/data/ground-motions
(or --record); --synthetic uses the seeded synthetic record of the tests instead (10 s).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
plt.rcParams.update(
    {
        "svg.fonttype": "none",
        "font.size": 8,
        "lines.linewidth": 0.9,
        "axes.grid": True,
        "grid.linewidth": 0.3,
        "svg.hashsalt": "hybridsim-fom",
    }
)
PREVIEW = None  # --preview DIR: PNG copies to look at
MAX_POINTS = 1200  # per plotted series, to keep the SVGs small
OVERSHOOT = 2.54e-5  # 0.001 in, in m
UPDATES = ["none", "bfgs", "dfp", "broyden", "broyden-family", "sr1"]


def run(exe, model_text, folder, name):
    path = folder / f"{name}.toml"
    path.write_text(model_text)
    out = folder / name
    subprocess.run(
        [exe, "run", str(path), "-o", str(out), "--overwrite", "--quiet"],
        check=True,
        cwd=folder,
        stdout=subprocess.DEVNULL,
    )
    return out


def read(folder):
    with open(folder / "results.csv") as f:
        header = [h.split("[")[0] for h in f.readline().strip().split(",")]
    data = np.loadtxt(folder / "results.csv", delimiter=",", skiprows=1)
    return {h: data[:, i] for i, h in enumerate(header)}


def energy_error(exe, run_folder, ref_folder, *extra):
    subprocess.run(
        [exe, "analyze", "energy-error", str(run_folder), "--reference", str(ref_folder), *extra],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    out = Path(extra[extra.index("-o") + 1]) if "-o" in extra else run_folder
    summary = json.loads((out / "energy_error.json").read_text())
    with open(out / "energy_error.csv") as f:
        f.readline()
        data = np.loadtxt(f, delimiter=",")
    return summary["E_c"], data[:, 0], data[:, 4]


def thin(t, y):
    step = max(1, len(t) // MAX_POINTS)
    return t[::step], y[::step]


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    if PREVIEW:
        fig.savefig(Path(PREVIEW) / path.with_suffix(".png").name, dpi=110)
    plt.close(fig)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)", file=sys.stderr)


# ---------------------------------------------------------------- SDOF (Figs 3-6)

def sdof_model(ratio, integrator, dt, extra):
    """examples/fom_02_sdof.toml (Hung and El-Tawil 2009) with another estimate ratio, integrator,
    step and `[analysis]` tail; the example's own estimator table is replaced by `extra`."""
    text = (ROOT / "examples" / "fom_02_sdof.toml").read_text()
    text = text[: text.index("[analysis.estimator]")]
    for pattern, value in [
        (r"stiffness = \[\[[^\]]*\]\]", f"stiffness = [[{ratio}]]"),
        (r'integrator = "[^"]*"', f'integrator = "{integrator}"'),
        (r"time_step = \S+", f"time_step = {dt}"),
    ]:
        text, count = re.subn(pattern, value, text, count=1)
        assert count == 1, f"examples/fom_02_sdof.toml: no match for {pattern}"
    return text + extra + "\n"


def sdof(exe, work, table):
    ec_fig, ec_axes = plt.subplots(1, 2, figsize=(7.0, 2.6), sharey=True)
    table.append("| Ω | λ | peak with corrector | last-cycle amplitude without | E_c(50 s) with | E_c(50 s) without |")
    table.append("|---|---|---|---|---|---|")
    for omega in [0.02, 0.1]:
        fig, axes = plt.subplots(2, 1, figsize=(7.0, 4.2), sharex=True)
        ref = run(exe, sdof_model(1.0, "mg-alpha", omega, "rho_inf = 1.0"),
                  work, f"sdof_ref_{omega}")
        r = read(ref)
        for ax, ratio, label in zip(axes, [0.1, 10.0], "ab"):
            t, y = thin(r["time"], r["u.specimen.1.x"])
            ax.plot(t, y, color="0.6", lw=2.0, label="Newmark, exact k (reference)")
            row = [f"{omega}", f"{ratio:g}"]
            ecs = []
            for corrector, style in [(True, "-"), (False, "--")]:
                extra = "[analysis.estimator]\nupdate = \"none\"\n" + ("" if corrector else "corrector = false\n")
                name = f"sdof_{omega}_{ratio:g}_{'with' if corrector else 'without'}"
                folder = run(exe, sdof_model(ratio, "fom", omega, extra), work, name)
                x = read(folder)
                d = x["u.specimen.1.x"]
                t, y = thin(x["time"], d)
                ax.plot(t, y, style, label=f"FOM {'with' if corrector else 'without'} corrector")
                cycle = int(np.ceil(2 * np.pi / omega))
                if corrector:
                    row.append(f"{np.max(np.abs(d)):.5f}")
                else:
                    row.append(f"{np.max(np.abs(d[-cycle:])):.4g}")
                e, te, ye = energy_error(exe, folder, ref, "--force", "force.k.1.x")
                ecs.append(e)
                ec_ax = ec_axes[0 if ratio < 1 else 1]
                te, ye = thin(te, np.maximum(ye, 1e-16))
                ec_ax.semilogy(te, ye, style, label=f"Ω = {omega}, {'with' if corrector else 'without'} corrector")
            row += [f"{ecs[0]:.3g}", f"{ecs[1]:.3g}"]
            table.append("| " + " | ".join(row) + " |")
            ax.set_title(f"({label}) λ = K_est/K_real = {ratio:g}, Ω = ωΔt = {omega}")
            ax.set_ylabel("displacement")
            lim = 2.0 if ratio < 1 else 1.3
            ax.set_ylim(-lim, lim)
        axes[-1].set_xlabel("time [s]")
        axes[0].legend(loc="upper left", fontsize=7, ncol=3)
        save(fig, ROOT / "docs" / "fom" / f"sdof_omega_{omega}.svg")
    for ax, ratio in zip(ec_axes, [0.1, 10]):
        ax.set_title(f"E_c against Newmark with k, λ = {ratio}")
        ax.set_xlabel("time [s]")
        ax.legend(fontsize=6)
    ec_axes[0].set_ylabel("E_c (eq 18)")
    save(ec_fig, ROOT / "docs" / "fom" / "sdof_energy_error.svg")


# ---------------------------------------------------------------- six-storey (Figs 14, 15)


def six_storey_text(record, synthetic, edit):
    text = (ROOT / "examples" / "fom_01_six_storey.toml").read_text()
    start, end = text.index("[[ground_motion]]"), text.index("[analysis]")
    if synthetic:
        gm = '[[ground_motion]]\ndirection = "x"\nsynthetic = { seed = 15, duration = 10.0, pga = 1.0 }\n\n'
        text = text[:start] + gm + text[end:]
        text = text.replace("duration = 20.0", "duration = 10.0", 1)
    else:
        gm = f'[[ground_motion]]\ndirection = "x"\nrecord = "{record}"\npga = 1.0\n\n'
        text = text[:start] + gm + text[end:]
    return edit(text)


def integrator(text, name, update=None, i_modification=False):
    text = text.replace('integrator = "fom"', f'integrator = "{name}"', 1)
    text = text.replace('[analysis.estimator]\nupdate = "bfgs"\n', "", 1)
    table = []
    if update:
        table.append(f'update = "{update}"')
    if i_modification:
        table.append("i_modification = true")
    if table:
        text = text.replace("\n[lab]\n", "\n[analysis.estimator]\n" + "\n".join(table) + "\n\n[lab]\n", 1)
    return text


def overshoot(text, amount):
    if amount == 0:
        return text
    return text.replace(
        'name = "act1"\n', f'name = "act1"\ncontrol_error = {{ kind = "overshoot", amount = {amount:e} }}\n', 1
    )


def reference_text(text):
    text = text[: text.index("[lab]")]
    text = integrator(text, "mg-alpha")
    return text.replace("time_step = 0.005", "time_step = 0.0005", 1)


def newmark(work, gm_csv, dt, duration, name):
    """The implicit Newmark reference at the hybrid test's step (newmark_reference.py)."""
    out = work / name
    subprocess.run(
        [sys.executable, str(Path(__file__).parent / "newmark_reference.py"), "--ground-motion", str(gm_csv),
         "--dt", str(dt), "--duration", str(duration), "-o", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return out


def six_storey(exe, work, record, synthetic, table):
    base = lambda edit: six_storey_text(record, synthetic, edit)  # noqa: E731
    duration = 10.0 if synthetic else 20.0
    fine = run(exe, base(reference_text), work, "six_ref")
    same = newmark(work, fine / "ground_motion.x.csv", 0.005, duration, "six_newmark")
    refs = [("implicit Newmark at the same Δt", same), ("monolithic trapezoidal at Δt/10", fine)]
    results = {}
    fig, axes = plt.subplots(2, 2, figsize=(7.0, 5.6), sharex=True)
    cases = [("OSM", "osm", None)] + [(f"FOM {u}", "fom", u) for u in UPDATES]
    for col, amount in enumerate([0.0, OVERSHOOT]):
        for label, name, update in cases:
            folder = run(exe, base(lambda t: overshoot(integrator(t, name, update), amount)), work,
                         f"six_{name}_{update}_{amount > 0}")
            for row, (ref_label, ref) in enumerate(refs):
                e, te, ye = energy_error(exe, folder, ref, "--force", "force.storey1.1.x", "-o", str(work / "ec"))
                results[(label, amount > 0, row)] = e
                te, ye = thin(te, np.maximum(ye, 1e-3))
                axes[row][col].semilogy(te, ye, lw=1.4 if name == "osm" else 0.8,
                                        color="k" if name == "osm" else None, label=label)
        for row, (ref_label, _) in enumerate(refs):
            axes[row][col].set_title(("exact actuator" if amount == 0 else "0.001 in overshoot")
                                     + f"\nreference: {ref_label}", fontsize=7)
    for row in range(2):
        axes[row][0].set_ylabel("E_c at node 1 [N·m]")
        axes[row][1].set_ylim(axes[row][0].get_ylim())
    for ax in axes[1]:
        ax.set_xlabel("time [s]")
    axes[0][1].legend(fontsize=6, loc="lower right")
    save(fig, ROOT / "docs" / "fom" / "six_storey_energy_error.svg")
    table.append("E_c at node 1 (r_ref: the storey-1 shear), N·m, and the ratio to OSM's:")
    table.append("")
    table.append("| scheme | same-Δt Newmark, exact | / OSM | same-Δt Newmark, overshoot | / OSM | Δt/10, exact | / OSM | Δt/10, overshoot | / OSM |")
    table.append("|---|---|---|---|---|---|---|---|---|")
    for label, _, _ in cases:
        cells = []
        for row in range(2):
            for over in [False, True]:
                e = results[(label, over, row)]
                cells += [f"{e:.4g}", f"{e / results[('OSM', over, row)]:.3f}"]
        table.append(f"| {label} | " + " | ".join(cells) + " |")
    # Fig 15: node-1 displacement with the overshoot, and its error against the same-Δt
    # Newmark reference.
    fig, axes = plt.subplots(2, 1, figsize=(7.0, 4.6), sharex=True)
    r = read(same)
    t, y = thin(r["time"], r["u.assembled.1.x"])
    axes[0].plot(t, y, color="0.6", lw=2.0, label="reference (implicit Newmark, same Δt)")
    imod = run(exe, base(lambda t: overshoot(integrator(t, "osm", None, True), OVERSHOOT)), work, "six_osm_imod")
    for row, (_, ref) in enumerate(refs):
        e, _, _ = energy_error(exe, imod, ref, "--force", "force.storey1.1.x", "-o", str(work / "ec"))
        results[("OSM I-mod", True, row)] = e
    for label, folder in [
        ("FOM (BFGS)", work / "six_fom_bfgs_True"),
        ("OSM", work / "six_osm_None_True"),
        ("OSM with I-modification", imod),
    ]:
        x = read(folder)
        t, y = thin(x["time"], x["u.assembled.1.x"])
        axes[0].plot(t, y, lw=0.8, label=label)
        t, y = thin(x["time"], x["u.assembled.1.x"] - r["u.assembled.1.x"])
        axes[1].plot(t, y * 1e3, lw=0.8, label=label)
    axes[0].set_ylabel("node-1 displacement [m]")
    axes[0].set_title("0.001 in (2.54e-5 m) constant overshoot on the first-storey actuator")
    axes[0].legend(fontsize=7)
    axes[1].set_ylabel("minus the reference [mm]")
    axes[1].set_xlabel("time [s]")
    save(fig, ROOT / "docs" / "fom" / "six_storey_overshoot.svg")
    table.append("")
    for row, (ref_label, _) in enumerate(refs):
        e = results[("OSM I-mod", True, row)]
        table.append(f"OSM with the I-modification and the overshoot, against {ref_label}: E_c = {e:.4g} N·m "
                     f"({e / results[('OSM', True, row)]:.3f} of OSM without it)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hybridsim", default=str(ROOT / "target" / "release" / "hybridsim"))
    p.add_argument("--record", default=str(ROOT.parent / "shared" / "data" / "ground-motions"
                                           / "ElCentro1940_NS_PEER_IELC180.AT2"))
    p.add_argument("--synthetic", action="store_true", help="the seeded synthetic record (10 s)")
    p.add_argument("--work", help="keep the runs in this folder (default: a temporary one)")
    p.add_argument("--preview", help="also write PNG copies of the figures here")
    a = p.parse_args()
    global PREVIEW
    PREVIEW = a.preview
    exe = os.path.abspath(a.hybridsim)
    synthetic = a.synthetic or not Path(a.record).exists()
    if synthetic and not a.synthetic:
        print(f"no record at {a.record}: using the synthetic record", file=sys.stderr)
    (ROOT / "docs" / "fom").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        table = ["### SDOF (Figs 3-6)", ""]
        sdof(exe, work, table)
        table += ["", f"### Six-storey, {'synthetic record, 10 s' if synthetic else 'El Centro 1940 NS at 1 g, 20 s'} (Figs 14, 15)", ""]
        six_storey(exe, work, os.path.abspath(a.record), synthetic, table)
        print("\n".join(table))


if __name__ == "__main__":
    main()
