#!/usr/bin/env bash
# The bridge campaign of Abbiati et al. (2019, 2020) on the virtual lab: the as-built bridge (AB,
# Pier 1 tested, lambda = 128), the D-CSB-isolated bridge with Pier 1 tested (iso, lambda = 256)
# with one D-CSB over Pier 1 tested (iso_tested, lambda = 256), with Pier 1 and that D-CSB
# tested at once (iso_pier_dcsb_tested, two physical substructures, lambda = 256), and the LRB- and
# T-CSB-isolated bridges with one bearing over Pier 1 tested (iso_lrb, iso_tcsb, lambda = 16) at
# the papers' PGA levels, one `hybridsim sweep` each, then a table of peaks (Markdown, printed
# and written to OUT/peaks.md).
#
#     scripts/bridge/campaign.sh [OUT] [DURATION_S]
#
# OUT defaults to results/bridge-campaign; DURATION_S (default: the model files' 10 s) shortens
# every run. HYBRIDSIM names the binary (default: `hybridsim` on the PATH).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-results/bridge-campaign}"
duration="${2:-}"
bin="${HYBRIDSIM:-hybridsim}"
pgas='[0.12, 0.30, 0.35, 0.50, 0.75]'
extra=()
if [ -n "$duration" ]; then
    extra+=(--set "analysis.duration=$duration")
fi
for config in ab iso iso_tested iso_pier_dcsb_tested iso_lrb iso_tcsb; do
    "$bin" sweep -q "$root/examples/bridge_$config.toml" -o "$out/$config" --overwrite \
        --set "ground_motion.0.pga=$pgas" ${extra[@]+"${extra[@]}"} \
        || echo "note: some $config variants did not complete (see the table)" >&2
done
python3 "$here/tabulate.py" "$out" | tee "$out/peaks.md"
