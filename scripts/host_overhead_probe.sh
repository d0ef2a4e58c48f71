#!/usr/bin/env bash
# Host overhead on the GPU machine, in one call (issues #20 and #21):
#   first-call-{cupy,torch}.{json,log}  bench/probes/first_call.py: a fresh process's first
#       sgemm.gemm (context created first), sgemm's bytecode present and absent, 5 processes
#       each; each log ends with a cProfile of one first call
#       (cumulative and self time) and the modules it imported, by package
#   eager-costs.{json,log}  bench/probes/eager_costs.py: host and wall us per call of the
#       torch entry points against torch.matmul / F.linear, 64^3 and two layer sizes, both
#       precisions, with the plan cache's hit counts
#   eager-costs-nopdl.{json,log}  the same, ieee, SGEMM_PDL=0: does programmatic dependent
#       launch add host time to cuLaunchKernelEx (6.9 us a launch in eager-probe-h100-2026-11-25.log)?
#   torch-bench-eager-{ieee,tf32x3}.json  python -m sgemm.torch.bench --no-mlp (the issue's ratio)
#   gpu-tests.log  the GPU tests of the files this work touched
# Ends with a short table: first-call minima and host us / ratio at 64^3 per row.
# Assumes `pip install --no-deps --no-build-isolation -e . -q` and
# `python3 -m sgemm.build --arch sm_90a -q` ran.  Usage: OUT=/some/dir bash scripts/host_overhead_probe.sh
cd "$(dirname "$0")/.." && OUT=${OUT:-/tmp/sgemm-out} && mkdir -p "$OUT" && export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} && for arr in cupy torch; do python3 bench/probes/first_call.py --array $arr --runs 5 --profile --out "$OUT/first-call-$arr.json" > "$OUT/first-call-$arr.log" 2>&1; done; python3 bench/probes/eager_costs.py --out "$OUT/eager-costs.json" > "$OUT/eager-costs.log" 2>&1; SGEMM_PDL=0 python3 bench/probes/eager_costs.py --precisions ieee --out "$OUT/eager-costs-nopdl.json" > "$OUT/eager-costs-nopdl.log" 2>&1; for pr in ieee tf32x3; do python3 -m sgemm.torch.bench --no-mlp --precision $pr --out "$OUT/torch-bench-eager-$pr.json" >> "$OUT/eager-costs.log" 2>&1; done; python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_torch_gpu.py tests/gpu/test_launcher_gpu.py > "$OUT/gpu-tests.log" 2>&1; rc=$?; grep -h "new modules" "$OUT"/first-call-*.log; tail -n 3 "$OUT/gpu-tests.log"; python3 bench/probes/eager_costs.py --summarize "$OUT"; exit $rc
