#!/usr/bin/env bash
# One device call does everything: install, GPU tests, benchmark, short table last.
#   bash scripts/gpu_session.sh [tests|bench|all] [pytest args...]
# Writes logs and results under $OUT (the device tool brings them back).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/sgemm-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGEMM_CACHE_DIR=${SGEMM_CACHE_DIR:-/tmp/sgemm-cache}
mode=${1:-all}; shift || true
# Editable install for the `sgemm` entry point; PYTHONPATH as a fallback so a
# failed install (old setuptools without PEP 660) still finds the package.
python3 -m pip install --no-deps --no-build-isolation -q -e . 2>&1 | tail -3
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
rc=0
if [[ $mode == tests || $mode == all ]]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider "$@" 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
  rc=${PIPESTATUS[0]}
fi
if [[ $mode == bench || $mode == all ]]; then
  python3 -m sgemm.cli bench --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -40
fi
exit $rc
