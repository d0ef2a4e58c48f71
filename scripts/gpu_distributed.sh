#!/usr/bin/env bash
# Distributed SGEMM on a GPU host (made for 4 x H200, extended for 8; any GPU
# count works): install, the cost model's plans (plans.txt), correctness (one
# process, then MPI + NCCL with 2, 4 and 8 ranks: small uneven sizes under
# SUMMA and the K split, and tall / wide / deep / square problems with the
# model's choice, against NumPy), benchmark (N = 32768 and 16384 on 1, 2, 4, 8
# GPUs, the model's plan vs the seed-002 scheme vs cuBLAS; rectangular SHAPES
# with the model's plan against one GPU; the deep shape under each algorithm
# forced, to test the model's choice; then everything under MPI), a scaling
# plot, and the merged table printed last.  About 6-8 minutes on 4 H200s.
#
#   bash scripts/gpu_distributed.sh            # results and logs under $OUT
#   EXTRA_PRECISION=tf32x3 BUDGET_S=540 bash scripts/gpu_distributed.sh   # + a tf32x3 SUMMA run
#   MPI_SWEEP="default 8 4" SIZES=32768 bash scripts/gpu_distributed.sh      # MPI run per NCCL channel count
#   PHASES="check threads" bash scripts/gpu_distributed.sh   # then PHASES="shapes mpi": two
#                                                            # calls of < 10 minutes on 8 GPUs
#
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on shared H200 hosts a
# program using it can take the GPUs out of service.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/sgemm-dist-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 SGEMM_CACHE_DIR=${SGEMM_CACHE_DIR:-/tmp/sgemm-cache}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# Open MPI in a VM/container: no CMA single-copy (needs ptrace rights).
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_sm_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Absolute path: mpirun-spawned ranks may not see the same PATH (seen on the
# 4xH200 machine: ranks found a python3 without mpi4py).
PY=${PY:-$(command -v python3)}
SIZES=${SIZES:-32768 16384}
# tall, wide, deep: P x 1, 1 x P and the K split on 4 and 8 GPUs by the model
SHAPES=${SHAPES:-262144x2048x8192 2048x262144x8192 1024x1024x1048576}
DEEP=${DEEP:-1024x1024x1048576}
PHASES=${PHASES:-check threads shapes mpi}
has() { [[ " $PHASES " == *" $1 "* ]]; }
T0=$SECONDS
left() { echo $(( ${BUDGET_S:-450} - (SECONDS - T0) )); }
step() { echo; echo "=== [$((SECONDS - T0)) s] $*"; }

step install
$PY -m pip install --no-deps --no-build-isolation -q -e . 2>&1 | tail -2
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm --format=csv,noheader
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1 || true
NGPU=$($PY -c "import cupy; print(cupy.cuda.runtime.getDeviceCount())")
echo "GPUs: $NGPU; NCCL $($PY -c 'from cupy.cuda import nccl; print(nccl.get_version())' 2>&1)"
GPUS="1"; for p in 2 4 8; do (( p <= NGPU )) && GPUS="$GPUS $p"; done
rc=0

step "MPI launcher"
LAUNCH=""
if $PY -c "import mpi4py" 2>/dev/null; then
  pydir=$(dirname "$(command -v $PY)")
  for cand in "$pydir/mpiexec" "$pydir/mpirun" /usr/bin/mpirun "$(command -v mpirun)" "$(command -v mpiexec)"; do
    [[ -n $cand && -x $cand ]] || continue
    ver=$($cand --version 2>&1 | head -5)
    if grep -qiE "open ?mpi|openrte" <<<"$ver"; then
      flags=(--allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x PYTHONPATH
             -x SGEMM_CACHE_DIR -x PYTHONUNBUFFERED -x TORCH_SYMM_MEM_DISABLE_MULTICAST
             -x NVSHMEM_DISABLE_NVLS)
      flavor="Open MPI"
    else
      flags=(-genv NCCL_NVLS_ENABLE 0)
      flavor="MPICH-like"
    fi
    # Does mpi4py load the MPI library of this launcher?  (Otherwise every
    # process is a singleton of size 1.)
    if timeout 60 $cand "${flags[@]}" -n 2 $PY -c \
        "import sys; from mpi4py import MPI; sys.exit(0 if MPI.COMM_WORLD.Get_size() == 2 else 3)" \
        >"$OUT/mpi-probe.log" 2>&1; then
      LAUNCH="$cand"; echo "using $cand ($flavor): $(head -1 <<<"$ver")"; break
    else
      echo "skipping $cand ($flavor): mpi4py does not see 2 ranks under it"
    fi
  done
else
  echo "mpi4py is not installed: MPI runs skipped (carry wheels: pip download mpi4py mpich)"
fi
mpi() { local n=$1; shift; timeout "${TMO:-180}" "$LAUNCH" "${flags[@]}" -n "$n" "$@"; }

if [[ -n ${MPI_SWEEP:-} ]]; then
  # MPI_SWEEP="default 8 4 2": only the MPI benchmark on all GPUs, once per
  # NCCL_MAX_NCHANNELS value (fewer channels: fewer SMs taken from the GEMM by
  # the overlapped broadcasts), then the table; everything else is skipped.
  [[ -n $LAUNCH ]] || { echo "no working MPI launcher"; exit 1; }
  [[ ${flags[0]} == --allow-run-as-root ]] && flags+=(-x NCCL_MAX_NCHANNELS)
  SW=()
  for ch in $MPI_SWEEP; do
    if [[ $ch == default ]]; then unset NCCL_MAX_NCHANNELS; else export NCCL_MAX_NCHANNELS=$ch; fi
    (( $(left) > 60 )) || { echo "no time left for channels=$ch"; break; }
    step "benchmark, MPI, $NGPU processes, NCCL_MAX_NCHANNELS=$ch  ($(left) s left)"
    TMO=$(( $(left) - 10 )) mpi "$NGPU" $PY bench/distributed_bench.py --launcher mpi \
      --sizes $SIZES --reps 3 --budget-s $(( $(left) - 40 )) --out "$OUT/mpi_ch$ch.json" \
      2>&1 | tee "$OUT/bench-mpi-ch$ch.log" | tail -3
    [[ -s $OUT/mpi_ch$ch.json ]] && SW+=("$OUT/mpi_ch$ch.json")
  done
  unset NCCL_MAX_NCHANNELS
  for f in "${SW[@]}"; do echo "== $f"; $PY bench/distributed_bench.py --table "$f" | grep summa; done
  (cd "$OUT" && tar czf mpi-sweep.tgz ./*.json ./*.log)
  exit 0
fi

step "the cost model's plans (no GPU work)"
$PY bench/distributed_bench.py --explain --gpus $GPUS --sizes $SIZES --shapes $SHAPES \
  > "$OUT/plans.txt" 2>&1
grep -E "^(distributed|chosen)" "$OUT/plans.txt"

if has check; then
  step "correctness, one process (sgemm.multi_gpu), ${NGPU} GPU(s), both algorithms + shapes"
  timeout 240 $PY -m sgemm.distributed.selftest --inproc "$NGPU" --backend cupy \
    --algorithm summa,ksplit --shapes 2>&1 | tee "$OUT/check-inproc.log" | grep -E "choice|SELFTEST"
  (( PIPESTATUS[0] == 0 )) || rc=1
  if (( NGPU >= 2 )); then
    timeout 120 $PY -m sgemm.distributed.selftest --inproc 2 --backend cupy --cases quick \
      --local-gemm cublas 2>&1 | tee -a "$OUT/check-inproc.log" | tail -1
    (( PIPESTATUS[0] == 0 )) || rc=1
  fi

  if [[ -n $LAUNCH ]]; then
    for n in 2 4 8; do
      (( n <= NGPU )) || continue
      step "correctness, MPI + NCCL, $n ranks, both algorithms + shapes"
      TMO=240 mpi "$n" $PY -m sgemm.distributed.selftest --backend cupy --expect-size "$n" \
        --algorithm summa,ksplit --shapes 2>&1 | tee "$OUT/check-mpi$n.log" \
        | grep -E "choice .*:|SELFTEST"
      (( PIPESTATUS[0] == 0 )) || rc=1
    done
    for alg in summa ksplit; do
      step "failure handling: a raising rank must end the job ($alg)"
      TMO=120 mpi 2 $PY -m sgemm.distributed.selftest --backend cupy --cases quick \
        --algorithm $alg --fault raise --fault-rank 1 --fault-step 2 --timeout 20 \
        --watchdog 60 >"$OUT/check-fault-$alg.log" 2>&1
      frc=$?
      echo "exit status $frc (expected non-zero): $(grep -m1 -o 'injected fault[^:]*' "$OUT/check-fault-$alg.log")"
      (( frc != 0 && frc != 124 )) || rc=1
    done
  fi
fi

JSONS=()
if has threads; then
  step "benchmark, one process driving $GPUS GPU(s)  ($(left) s left)"
  budget=$(( $(left) - 120 )); (( budget < 60 )) && budget=60
  timeout $(( budget + 90 )) $PY bench/distributed_bench.py --gpus $GPUS --sizes $SIZES \
    --local-gemm sgemm cublas --budget-s "$budget" --out "$OUT/dist_threads.json" \
    2>&1 | tee "$OUT/bench-threads.log" | grep -v "^ " | tail -3
  [[ -s $OUT/dist_threads.json ]] && JSONS+=("$OUT/dist_threads.json")
fi

if has shapes; then
  # Rectangular problems with the model's plan against one GPU, then the deep
  # one under each algorithm forced: does the K split win where the model says?
  step "benchmark, shapes $SHAPES on $GPUS GPU(s)  ($(left) s left)"
  budget=$(( $(left) - 150 )); (( budget < 60 )) && budget=60
  timeout $(( budget + 90 )) $PY bench/distributed_bench.py --gpus $GPUS --sizes \
    --shapes $SHAPES --no-seed002 --no-cublas --no-nccl-bench --budget-s "$budget" \
    --out "$OUT/dist_shapes.json" 2>&1 | tee "$OUT/bench-shapes.log" | grep -v "^ " | tail -3
  [[ -s $OUT/dist_shapes.json ]] && JSONS+=("$OUT/dist_shapes.json")
  for alg in summa ksplit; do
    (( $(left) > 70 )) || { echo "no time left for $DEEP under $alg"; continue; }
    step "benchmark, $DEEP forced to $alg on $NGPU GPUs  ($(left) s left)"
    timeout $(( $(left) - 20 )) $PY bench/distributed_bench.py --gpus "$NGPU" --sizes \
      --shapes $DEEP --algorithm $alg --no-seed002 --no-cublas --no-nccl-bench \
      --budget-s $(( $(left) - 50 )) --out "$OUT/dist_deep_$alg.json" \
      2>&1 | tee "$OUT/bench-deep-$alg.log" | grep -v "^ " | tail -2
    [[ -s $OUT/dist_deep_$alg.json ]] && JSONS+=("$OUT/dist_deep_$alg.json")
  done
fi

if [[ -n $LAUNCH ]] && has mpi; then
  for n in 8 4 2; do
    (( n <= NGPU )) || continue
    (( $(left) > 70 )) || { echo "no time left for the MPI benchmark on $n GPUs"; continue; }
    step "benchmark, MPI, $n processes  ($(left) s left)"
    extra=(); (( n == NGPU )) && extra=(--shapes $SHAPES)
    TMO=$(( $(left) - 10 )) mpi "$n" $PY bench/distributed_bench.py --launcher mpi \
      --sizes $SIZES "${extra[@]}" --reps 2 --budget-s $(( $(left) - 40 )) \
      --out "$OUT/dist_mpi$n.json" 2>&1 | tee "$OUT/bench-mpi$n.log" | tail -4
    [[ -s $OUT/dist_mpi$n.json ]] && JSONS+=("$OUT/dist_mpi$n.json")
  done
fi

if [[ -n ${EXTRA_PRECISION:-} ]]; then
  # The local GEMM in another precision (tf32x3: FP32-level accuracy on tensor
  # cores), SUMMA on all GPUs at the largest size, one process.
  if (( $(left) > 100 )); then
    step "benchmark, one process, local GEMM precision=$EXTRA_PRECISION  ($(left) s left)"
    big=$(tr ' ' '\n' <<<"$SIZES" | sort -n | tail -1)
    timeout $(( $(left) - 20 )) $PY bench/distributed_bench.py --gpus 1 "$NGPU" --sizes "$big" \
      --precision "$EXTRA_PRECISION" --no-seed002 --no-cublas --no-nccl-bench \
      --budget-s $(( $(left) - 60 )) --out "$OUT/dist_$EXTRA_PRECISION.json" \
      2>&1 | tee "$OUT/bench-$EXTRA_PRECISION.log" | grep -v "^ " | tail -3
    [[ -s $OUT/dist_$EXTRA_PRECISION.json ]] && JSONS+=("$OUT/dist_$EXTRA_PRECISION.json")
  else
    echo "no time left for the precision=$EXTRA_PRECISION benchmark"
  fi
fi

if (( ${#JSONS[@]} )); then
  step "plot"
  $PY bench/plot_scaling.py "${JSONS[@]}" --out "$OUT/scaling.png" 2>&1 | tail -1

  step "results (check column: sampled max relative error; model: predicted exposed ms)"
  $PY bench/distributed_bench.py --merge "${JSONS[@]}" --out "$OUT/distributed.json"
fi
echo "correctness: $([[ $rc == 0 ]] && echo PASSED || echo FAILED)"
# The device tool returns at most 8 files: everything goes into one archive,
# and the merged JSON and the plot also stay beside it.
(cd "$OUT" && tar czf distributed-all.tgz --exclude distributed-all.tgz ./* &&
  find . -maxdepth 1 -type f ! -name distributed-all.tgz ! -name distributed.json \
    ! -name scaling.png ! -name bench-threads.log ! -name plans.txt -delete)
exit $rc
