#!/usr/bin/env bash
# Task A's GPU run (issue #18, item 1), from the checkout root copied into the
# device's tree as .wt-a: the judge's eager list (bench/probes/eager_costs.py
# --judge) on the tree the device holds at its root (main, the baseline) and
# on this checkout, in one machine call, then the GPU tests of the plan cache,
# hostile inputs and torch.  Logs and JSON under $OUT; a short table last.
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/sgemm-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d ../sgemm ] && [ "${BASELINE:-1}" = 1 ]; then
  PYTHONPATH=$(cd .. && pwd) python3 bench/probes/eager_costs.py --judge \
    --out "$OUT/eager-judge-main.json" > "$OUT/eager-judge-main.log" 2>&1
fi
export PYTHONPATH=$PWD
python3 bench/probes/eager_costs.py --judge --out "$OUT/eager-judge.json" > "$OUT/eager-judge.log" 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_entry_cache_gpu.py \
  tests/gpu/test_hostile_gpu.py tests/gpu/test_torch_gpu.py -x > "$OUT/gpu-tests.log" 2>&1
rc=$?
tail -n 25 "$OUT/gpu-tests.log"
for f in "$OUT"/eager-judge-main.log "$OUT"/eager-judge.log; do
  [ -f "$f" ] && { echo "===== $(basename "$f")"; cat "$f"; }
done
exit $rc
