#!/usr/bin/env bash
# Probe (CPU, no GPU): the model's picks on the two single-product sweeps of
# 2026-11-29 (claim narrow-single-fit) with 43_narrow.cu weighed for batches
# only (as before) and for single products too, under the shipped
# calibration (narrow's rates fitted on batches only: both sweeps are out of
# sample for the rates; the first chose the rule, the second checks it);
# then each sweep's report, narrow against every other candidate.
#   bash bench/probes/narrow_single_fit.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
COST=sgemm/data/cost-nvidia-h100-80gb-hbm3-sm132-sm_90a.json
for s in bench/results/narrow-single-sweep-h200-2026-11-29.json \
         bench/results/narrow-single-sweep-h200-2026-11-29-2.json; do
  echo "== $s: batches only"
  python bench/probes/sweep_regret.py --worst 3 --sides --narrow-batches "$s" h200 "$COST"
  echo "== $s: single products too"
  python bench/probes/sweep_regret.py --worst 3 --sides "$s" h200 "$COST"
  echo "== $s: report"
  python bench/probes/narrow_batch_sweep.py report "$s" narrow | tail -9
done
