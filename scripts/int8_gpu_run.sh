#!/usr/bin/env bash
# One device call for the integer engine, <= 300 s on an H100:
# install (SKIP_INSTALL=1: none, PYTHONPATH only), the GPU tests of
# tests/int8x/test_wide_gpu.py (the scaling check) and
# tests/gpu/test_int8x_gpu.py (conversion routes and byte planes bit for
# bit, the public precision="int8x"/"fp32" path), bench/probes/int8_gemm.py
# at PROBE_SIZES (default 4096 8192 16384), with ACC=1 the accuracy table
# (bench/probes/accuracy_table.py; SKIP_SAN=1 stops there), then
# compute-sanitizer memcheck
# (a shape that crosses every tile edge), racecheck, synccheck and initcheck
# (a smaller one; initcheck because Garner's 4-row loads read the byte
# planes' padding rows, which the GEMMs must have written) over
# scripts/int8_sanitize.py.  Writes under $OUT:
# int8-gpu-tests.log, int8-sanitize.log, int8-probe.log, int8_gemm.json; a
# short table last.
#   bash scripts/int8_gpu_run.sh [PYTEST_ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/int8-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGEMM_CACHE_DIR=${SGEMM_CACHE_DIR:-/tmp/sgemm-cache}
[ -n "${SKIP_INSTALL:-}" ] || python3 -m pip install --no-deps --no-build-isolation -e . -q 2>&1 | tail -2
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
s=$(date +%s)
timeout "${TESTS_S:-80}" python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/int8x/test_wide_gpu.py tests/gpu/test_int8x_gpu.py "${@:--x}" 2>&1 \
  | tee "$OUT/int8-gpu-tests.log" | tail -25
t_tests=$(( $(date +%s) - s )); s=$(date +%s)
timeout "${PROBE_S:-90}" python3 bench/probes/int8_gemm.py ${PROBE_SIZES:-4096 8192 16384} 2>&1 \
  | tee "$OUT/int8-probe.log"
t_probe=$(( $(date +%s) - s )); s=$(date +%s)
# ACC=1: the accuracy table of docs/accuracy.md (bench/probes/accuracy_table.py)
if [ -n "${ACC:-}" ]; then
  timeout "${ACC_S:-150}" python3 bench/probes/accuracy_table.py > "$OUT/accuracy-table.log" 2>&1
  echo "accuracy probe rc=$? ($(( $(date +%s) - s )) s)"; tail -3 "$OUT/accuracy-table.log"
  s=$(date +%s)
fi
[ -n "${SKIP_SAN:-}" ] && exit 0
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
tail -8 "$OUT/int8-sanitize.log"
t_san=$(( $(date +%s) - s ))
echo "==== summary"
echo "tests ($t_tests s): $(tail -1 "$OUT/int8-gpu-tests.log")"
echo "sanitizer ($t_san s): memcheck rc=$mem racecheck rc=$race synccheck rc=$sync initcheck rc=$init"
grep -E "SUMMARY|WRONG" "$OUT/int8-sanitize.log"
echo "probe ($t_probe s): $(tail -1 "$OUT/int8-probe.log")"
python3 - "$OUT/int8_gemm.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"no probe JSON: {e}")
print(f"{'size':>6} {'int8x':>7} {'api':>7} {'tf32x3':>7} {'cuBLAS':>7}  "
      f"steps ms (convA/convB/gemm/garner)  err int8x | fp32   fp32 picks")
for r in d["records"]:
    st = r["steps_ms"]
    print(f"{r['m']:>6} {r['int8x']['tflops']:>7.1f} {r['api_int8x']['tflops']:>7.1f} "
          f"{r['api_tf32x3']['tflops']:>7.1f} {r['cublas_fp32']['tflops']:>7.1f}  "
          + "/".join(f"{st[k]:.2f}" for k in ("convert_a", "convert_b", "int8_gemm",
                                             "garner"))
          + f"  {r['int8x_err'][1]:.1e} | {r['cublas_fp32_err'][1]:.1e}  {r['fp32_picks']}")
print("complete" if d.get("complete") else "INCOMPLETE: the probe stopped early")
PY
