#!/usr/bin/env bash
# Probe (CPU, no GPU): the check behind narrow's refit on the H200 sweeps of
# 2026-11-29 (claim narrow-groups-fit).  The model's picks on each sweep
# under the shipped calibration before the refit (commit $BEFORE), after it,
# and with narrow's rates fitted without the second sweep (out of sample on
# that one).
#   bash bench/probes/narrow_groups_fit.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
R=bench/results
COST=sgemm/data/cost-nvidia-h100-80gb-hbm3-sm132-sm_90a.json
S0=$R/narrow-groups-sweep-h200-2026-11-29.json
S1=$R/narrow-groups-sweep-h200-2026-11-29-2.json
S8=$R/narrow-side8-sweep-h200-2026-11-29.json
T=$(mktemp -d)
git show "${BEFORE:-e45da2e}:$COST" > "$T/before.json"
cp "$COST" "$T/after.json"
cp "$T/before.json" "$T/held-out.json"
python -m sgemm.calibrate --sweep "$S0" "$S8" --device h200 --out "$T/fit.json" >/dev/null
python bench/probes/merge_rates.py "$T/fit.json" narrow: "without $S1" "$T/held-out.json" >/dev/null
for s in "$S0" "$S1" "$S8"; do
  echo "== $s (held-out.json: fitted without $S1)"
  python bench/probes/sweep_regret.py "$s" h200 "$T/before.json" "$T/after.json" "$T/held-out.json"
done
for s in "$S0" "$S1" "$S8"; do
  echo "== $s, after: the rows where cuBLAS leads the pick most"
  python bench/probes/sweep_regret.py --worst 6 "$s" h200 "$T/after.json"
done
rm -rf "$T"
