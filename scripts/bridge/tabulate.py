"""The peaks of the bridge campaign (scripts/bridge/campaign.sh) as a Markdown table: per
configuration and PGA, Pier 1 top displacement (the tested pier) and drift ratio, Pier 2 top,
the largest deck displacement, and for ISO the bearing over Pier 1 (relative displacement, force
of the pair).

    python3 scripts/bridge/tabulate.py OUT
"""
import csv
import os
import sys

PIER_HEIGHT = 9.5  # m, examples/bridge_ab.toml


def peaks(folder):
    rows = list(csv.DictReader(open(os.path.join(folder, "results.csv"))))
    def peak(f):
        return max(abs(f(r)) for r in rows)
    cols = rows[0].keys()
    col = lambda prefix: next((c for c in cols if c.startswith(prefix)), None)
    p1 = col("u.pier.106.y") or col("u.pier.6.y")
    p2 = col("u.bridge.111.y") or col("u.bridge.11.y")
    deck = [c for c in cols if c.startswith("u.bridge.") and c.split(".")[2] in ("1", "6", "11", "16")]
    out = {
        "pier1": peak(lambda r: float(r[p1])),
        "pier2": peak(lambda r: float(r[p2])),
        "deck": max(peak(lambda r, c=c: float(r[c])) for c in deck),
    }
    if col("u.pier.106.y"):
        out["bearing_u"] = peak(lambda r: float(r["u.bridge.6.y[m]"]) - float(r["u.bridge.106.y[m]"]))
        out["bearing_f"] = peak(lambda r: float(r[col("force.dcsb_p1.6.y")]))
    return out


def main(out):
    print("| configuration | PGA (g) | Pier 1 top (mm) | Pier 1 drift (%) | Pier 2 top (mm) "
          "| deck (mm) | bearing over Pier 1 (mm) | bearing pair force (kN) |")
    print("|---|---|---|---|---|---|---|---|")
    for config in ("ab", "iso"):
        summary = os.path.join(out, config, "summary.csv")
        for v in csv.DictReader(open(summary)):
            if v["status"] != "completed":
                reason = v["error"].split(":")[0] if v["error"] else v["status"]
                print(f"| {config.upper()} | {float(v['ground_motion.0.pga']):.2f} | {v['status']} "
                      f"({reason}) | | | | | |")
                continue
            p = peaks(os.path.join(out, config, v["folder"]))
            bu = f"{1e3 * p['bearing_u']:.1f}" if "bearing_u" in p else "–"
            bf = f"{1e-3 * p['bearing_f']:.0f}" if "bearing_f" in p else "–"
            print(f"| {config.upper()} | {float(v['ground_motion.0.pga']):.2f} | {1e3 * p['pier1']:.1f} "
                  f"| {100 * p['pier1'] / PIER_HEIGHT:.3f} | {1e3 * p['pier2']:.1f} | {1e3 * p['deck']:.1f} "
                  f"| {bu} | {bf} |")


if __name__ == "__main__":
    main(sys.argv[1])
