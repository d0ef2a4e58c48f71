#!/usr/bin/env bash
# One device call for the integer engine (issue #22): install, the GPU tests
# of tests/gpu/test_int8x_gpu.py, compute-sanitizer (memcheck on a shape that
# crosses every tile edge; racecheck, synccheck, initcheck on a smaller one) over
# scripts/int8_sanitize.py, then bench/probes/int8_gemm.py; logs and JSON
# under $OUT, a short summary last.
#   bash scripts/int8_gpu_run.sh [PYTEST_ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/int8-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGEMM_CACHE_DIR=${SGEMM_CACHE_DIR:-/tmp/sgemm-cache}
python3 -m pip install --no-deps --no-build-isolation -e . -q 2>&1 | tail -2
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
s=$(date +%s)
timeout "${TESTS_S:-110}" python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_int8x_gpu.py "${@:--x}" 2>&1 | tee "$OUT/int8-gpu-tests.log" | tail -25
t_tests=$(( $(date +%s) - s )); s=$(date +%s)
# --report-api-errors no: cuda.bindings probes driver entry points with
# cuGetProcAddress, and the misses are host API return codes, not kernel
# errors (34 of them in the first run; sgemm.bench.sanitize does the same)
san() { timeout "${SAN_S:-40}" compute-sanitizer --tool "$1" --error-exitcode 9 \
  --report-api-errors no python3 scripts/int8_sanitize.py "${@:2}" >> "$OUT/int8-sanitize.log" 2>&1; }
: > "$OUT/int8-sanitize.log"
san memcheck; mem=$?
san racecheck --small; race=$?
san synccheck --small; sync=$?
san initcheck --small; init=$?
tail -12 "$OUT/int8-sanitize.log"
t_san=$(( $(date +%s) - s )); s=$(date +%s)
timeout "${PROBE_S:-70}" python3 bench/probes/int8_gemm.py ${PROBE_SIZES:-4096 8192} 2>&1 \
  | tee "$OUT/int8-probe.log"
echo "==== summary"
echo "tests ($t_tests s): $(tail -1 "$OUT/int8-gpu-tests.log")"
echo "sanitizer ($t_san s): memcheck rc=$mem racecheck rc=$race synccheck rc=$sync initcheck rc=$init"
grep -E "SUMMARY" "$OUT/int8-sanitize.log"
echo "probe ($(( $(date +%s) - s )) s): $(tail -1 "$OUT/int8-probe.log")"
