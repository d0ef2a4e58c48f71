#!/usr/bin/env bash
# One device call for the PyTorch integration work: this tree ("new") against
# the checkout it sits in ("old", BASE, default ..), same machine, same run.
#   OUT=/dir BASE=/path/of/old/checkout bash scripts/torch_gpu_run.sh STEP...
# Steps (each under its own timeout, logs and JSON under $OUT):
#   epi       bench/probes/epilogue.py on the MLP sizes, new then old tree
#   eager     bench/probes/eager_costs.py (host us per call), new then old tree
#   cases     the epilogue's boundary cases (--cases), plain, then under
#             compute-sanitizer for each tool in $TOOLS (default memcheck);
#             $CASES_K (comma-separated kernel names) narrows them
#   tests     the GPU tests of the torch operators and of the changed kernels' epilogue
#   step      python -m sgemm.torch.bench (the MLP training step), new tree
set -uo pipefail
cd "$(dirname "$0")/.."
NEW=$PWD; BASE=${BASE:-$NEW/..}; OUT=${OUT:-/tmp/sgemm-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGEMM_CACHE_DIR=${SGEMM_CACHE_DIR:-/tmp/sgemm-cache}
T=${T:-150}
new() { PYTHONPATH=$NEW timeout "$T" python3 "$@"; }
old() { (cd "$BASE" && PYTHONPATH=$BASE timeout "$T" python3 "$@"); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
for step in "$@"; do
  case $step in
    epi)   new bench/probes/epilogue.py --label new --out "$OUT/epilogue-new.json" 2>&1 | tee "$OUT/epilogue.log"
           old "$NEW/bench/probes/epilogue.py" --label old --out "$OUT/epilogue-old.json" 2>&1 | tee -a "$OUT/epilogue.log" ;;
    eager) new bench/probes/eager_costs.py --out "$OUT/eager-new.json" > "$OUT/eager.log" 2>&1
           old bench/probes/eager_costs.py --out "$OUT/eager-old.json" >> "$OUT/eager.log" 2>&1
           tail -n 40 "$OUT/eager.log" ;;
    cases) CK=(${CASES_K:+--case-kernels "$CASES_K"})
           new bench/probes/epilogue.py --cases "${CK[@]}" > "$OUT/cases.log" 2>&1; echo "cases rc=$?"; tail -n 2 "$OUT/cases.log"
           for tool in ${TOOLS:-memcheck}; do
             PYTHONPATH=$NEW timeout "$T" compute-sanitizer --tool "$tool" --error-exitcode 9 \
               python3 bench/probes/epilogue.py --cases "${CK[@]}" > "$OUT/cases-$tool.log" 2>&1
             echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|cases:" "$OUT/cases-$tool.log" | tail -n 3
           done ;;
    tests) PYTHONPATH=$NEW timeout "$T" python3 -m pytest -q -m gpu -p no:cacheprovider -x \
             tests/gpu/test_torch_gpu.py tests/gpu/test_epilogue_gpu.py \
             -k "${TESTS_K:-not test_every_kernel or double_buffer or warptile or async or swizzle or db_cluster or wgmma}" \
             > "$OUT/gpu-tests.log" 2>&1; echo "tests rc=$?"; tail -n 3 "$OUT/gpu-tests.log" ;;
    step)  new -m sgemm.torch.bench --precision tf32x3 --out "$OUT/torch-bench.json" > "$OUT/torch-bench.log" 2>&1
           echo "step rc=$?"; tail -n 8 "$OUT/torch-bench.log" ;;
  esac
done
