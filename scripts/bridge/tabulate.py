"""The peaks of the bridge campaign (scripts/bridge/campaign.sh) as a Markdown table: per
configuration and PGA, Pier 1 top displacement and drift ratio, Pier 1 base shear (its restoring
force: the specimen's measured force when Pier 1 is tested, the Bouc-Wen element's otherwise),
Pier 2 top, the largest deck displacement, and for the isolated bridges the bearing pair over
Pier 1 (relative displacement deck - pier top, force of the pair: measured x 2 when one bearing
is tested).

    python3 scripts/bridge/tabulate.py OUT
"""
import csv
import os
import sys

PIER_HEIGHT = 9.5  # m, examples/bridge_ab.toml

CONFIGS = [
    ("ab", "AB (Pier 1 tested, λ = 128)"),
    ("iso", "ISO D-CSB (Pier 1 tested, λ = 256)"),
    ("iso_tested", "ISO D-CSB (one D-CSB tested, λ = 256)"),
    ("iso_pier_dcsb_tested", "ISO D-CSB (Pier 1 and one D-CSB tested, λ = 256)"),
    ("iso_lrb", "ISO LRB (one LRB tested, λ = 16)"),
    ("iso_tcsb", "ISO T-CSB (one T-CSB tested, λ = 16)"),
]


def peaks(folder):
    rows = list(csv.DictReader(open(os.path.join(folder, "results.csv"))))
    cols = list(rows[0].keys())

    def col(*names):
        for n in names:
            c = next((c for c in cols if c.startswith(n + "[")), None)
            if c:
                return c
        return None

    def peak(f):
        return max(abs(f(r)) for r in rows)

    p1 = col("u.pier.6.y", "u.pier.106.y", "u.bridge.106.y")
    p2 = col("u.bridge.111.y", "u.bridge.11.y")
    shear = col("measured.pier.6.y", "measured.pier.106.y", "force.pier1.106.y")
    deck = [c for c in cols if c.startswith("u.bridge.") and c.split(".")[2] in ("1", "6", "11", "16")]
    out = {
        "pier1": peak(lambda r: float(r[p1])),
        "shear": peak(lambda r: float(r[shear])),
        "pier2": peak(lambda r: float(r[p2])),
        "deck": max(peak(lambda r, c=c: float(r[c])) for c in deck),
    }
    top = col("u.pier.106.y", "u.bridge.106.y")
    if top and col("u.bridge.6.y"):
        d6 = col("u.bridge.6.y")
        out["bearing_u"] = peak(lambda r: float(r[d6]) - float(r[top]))
        f = col("measured.bearing.6.y", "force.dcsb_p1.6.y")
        if f:
            out["bearing_f"] = peak(lambda r: float(r[f]))
    return out


def main(out):
    print("| configuration | PGA (g) | Pier 1 top (mm) | Pier 1 drift (%) | Pier 1 base shear (kN) "
          "| Pier 2 top (mm) | deck (mm) | bearing over Pier 1 (mm) | bearing pair force (kN) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for config, label in CONFIGS:
        summary = os.path.join(out, config, "summary.csv")
        if not os.path.exists(summary):
            continue
        for v in csv.DictReader(open(summary)):
            pga = float(v["ground_motion.0.pga"])
            if v["status"] != "completed":
                reason = v["error"].split(":")[0] if v["error"] else v["status"]
                print(f"| {label} | {pga:.2f} | {v['status']} ({reason}) | | | | | | |")
                continue
            p = peaks(os.path.join(out, config, v["folder"]))
            bu = f"{1e3 * p['bearing_u']:.1f}" if "bearing_u" in p else "–"
            bf = f"{1e-3 * p['bearing_f']:.0f}" if "bearing_f" in p else "–"
            print(f"| {label} | {pga:.2f} | {1e3 * p['pier1']:.1f} "
                  f"| {100 * p['pier1'] / PIER_HEIGHT:.3f} | {1e-3 * p['shear']:.0f} "
                  f"| {1e3 * p['pier2']:.1f} | {1e3 * p['deck']:.1f} | {bu} | {bf} |")


if __name__ == "__main__":
    main(sys.argv[1])
