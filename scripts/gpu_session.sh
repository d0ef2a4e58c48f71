#!/usr/bin/env bash
# One device call does everything asked of it: install, then each step named,
# in order, with a short table last.
#   bash scripts/gpu_session.sh [STEP...]        (default: tests bench)
# Steps:
#   tests     GPU tests (pytest -m gpu); PYTEST_ARGS narrows them
#   bench     `sgemm bench` on its embedded defaults (the ladder against cuBLAS)
#   seeds     the whole ladder on the seeds' shapes and odd sizes
#             (bench/shapes/ladder-seeds.txt), against cuBLAS
#   recheck   the best FFMA rung and `auto` against cuBLAS at 4096^3 and 8192^3,
#             all four transposes of 4096^3, 30 samples
#   sanitize  python -m sgemm.bench.sanitize (compute-sanitizer, four tools) $SANITIZE_ARGS
#   profile   `sgemm profile` on $PROFILE_RUNS (KERNEL:SIZE ...; default every
#             ladder rung at 2048^3 and rung 9 at 4096^3)
#   tune      `sgemm tune` over $TUNE_SHAPES (default: the public suite), merged
#             into a copy of the shipped table ($OUT/tuned-table.json)
#   ncusmall  ncu --set full on plan(kernel=$NCU_KERNEL) at $NCU_SHAPES (MxNxK ...),
#             details and SASS-level source counters
#   suite     bench/suite.py over the public shapes (uses the tuned table above
#             when the tune step ran)
#   prebuild  python -m sgemm.build for this GPU's arch: the kernel bundle a
#             wheel ships (first calls load it instead of compiling)
#   judge     the random-problem judge (.judge/judge.py, a copy of
#             ../shared/tools/judge.py) with a fresh seed, $JUDGE_ARGS;
#             a second `judge` step writes judge-2.*, a third judge-3.*
#   sweep     `sgemm tune --calibrate`: candidate plans timed and the cost model
#             fitted ($OUT/cost.json, the rows in $OUT/sweep.json)
#   bundle    tar everything under $OUT into $OUT/bundle.tgz (put it last)
# Writes logs and results under $OUT (the device tool brings them back; it
# returns at most 8 files, so steps that make many files tar them).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/sgemm-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGEMM_CACHE_DIR=${SGEMM_CACHE_DIR:-/tmp/sgemm-cache}
# Editable install for the `sgemm` entry point; PYTHONPATH as a fallback so a
# failed install (old setuptools without PEP 660) still finds the package.
python3 -m pip install --no-deps --no-build-isolation -q -e . 2>&1 | tail -3
# Bytecode, as a wheel install writes it (pip compiles a wheel's modules; an
# editable install of a fresh copy has none, and the first call of a process
# then spends ~90 ms compiling sgemm's sources: bench/probes/judge_first_call.py).
python3 -m compileall -q sgemm >/dev/null 2>&1 || true
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
[[ $# -eq 0 ]] && set -- tests bench
rc=0
summary=()
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    tests)
      python3 -m pytest -q -m gpu -p no:cacheprovider ${PYTEST_ARGS:-} 2>&1 \
        | tee "$OUT/gpu-tests.log" | tail -15
      r=${PIPESTATUS[0]}; [[ $r -ne 0 ]] && rc=$r
      summary+=("tests: $(tail -1 "$OUT/gpu-tests.log")") ;;
    bench)
      python3 -m sgemm.cli bench --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -40
      summary+=("bench: $(tail -1 "$OUT/bench.log")") ;;
    seeds)
      python3 -m sgemm.cli bench --shapes bench/shapes/ladder-seeds.txt --out "$OUT" 2>&1 \
        | tee "$OUT/seeds.log" | tail -25
      summary+=("seeds: $(tail -1 "$OUT/seeds.log")") ;;
    recheck)
      python3 -m sgemm.cli bench --kernels auto,double_buffer --sizes 4096,8192 \
        --repeat 30 --no-plots --out "$OUT/recheck" 2>&1 | tee "$OUT/recheck.log" | tail -12
      printf '4096 4096 4096 N N\n4096 4096 4096 N T\n4096 4096 4096 T N\n4096 4096 4096 T T\n' \
        > /tmp/transposes.txt
      python3 -m sgemm.cli bench --kernels auto,double_buffer --shapes /tmp/transposes.txt \
        --repeat 30 --no-plots --out "$OUT/recheck-t" 2>&1 | tee -a "$OUT/recheck.log" | tail -12
      tar czf "$OUT/recheck.tgz" -C "$OUT" recheck recheck-t && rm -rf "$OUT/recheck" "$OUT/recheck-t"
      summary+=("recheck: done") ;;
    sanitize)
      python3 -m sgemm.bench.sanitize --out "$OUT" --parallel ${SANITIZE_ARGS:-} 2>&1 \
        | tee "$OUT/sanitize.log" | tail -25
      summary+=("sanitize: $(grep -m1 -iE 'total|errors' "$OUT/sanitize.log")") ;;
    profile)
      # PROFILE_RUNS: KERNEL:SIZE pairs (default: every rung at 2048^3, rung 9 at 4096^3)
      runs=${PROFILE_RUNS:-"1:2048 2:2048 3:2048 4:2048 5:2048 6:2048 7:2048 8:2048 9:2048 10:2048 11:2048 12:2048 9:4096"}
      mkdir -p /tmp/prof
      for kr in $runs; do
        k=${kr%%:*}; n=${kr##*:}
        python3 -m sgemm.cli profile "$k" --size "$n" "$n" "$n" --out /tmp/prof
      done 2>&1 | tee "$OUT/profile.log" | grep -E "^sgemm profile|duration|FMA pipe|bank conf|top warp"
      tar czf "$OUT/profile-csv.tgz" -C /tmp prof
      summary+=("profile: $(grep -c '^sgemm profile' "$OUT/profile.log") runs") ;;
    tune)
      table="$OUT/tuned-table.json"
      cp sgemm/data/tuned-nvidia-h200-sm132-sm_90a.json "$table"
      SGEMM_TUNED_TABLE="$table" python3 -m sgemm.cli tune \
        --shapes "${TUNE_SHAPES:-bench/shapes/public.txt}" --out "$table" \
        --log "$OUT/tune-log.json" --budget-s "${TUNE_BUDGET_S:-300}" 2>&1 \
        | tee "$OUT/tune.log" | tail -50
      export SGEMM_TUNED_TABLE="$table"
      summary+=("tune: $(tail -1 "$OUT/tune.log")") ;;
    ncusmall)
      # ncu --set full (clocks as found) on `plan(kernel=$NCU_KERNEL)` (default
      # db_cluster) at each MxNxK of $NCU_SHAPES: the details page and the
      # SASS-level source counters (stall samples per instruction)
      for mnk in ${NCU_SHAPES:-512x512x512 512x512x4096}; do
        IFS=x read -r m n k <<< "$mnk"
        ncu --clock-control none -k "regex:${NCU_REGEX:-sgemm_db_cluster}" --launch-skip 3 \
          --launch-count 1 --set full --import-source no -f -o "/tmp/ncu-$mnk" \
          python3 -m sgemm.bench.profile_target "${NCU_KERNEL:-db_cluster}" "$m" "$n" "$k" \
          2>&1 | tail -3
        ncu -i "/tmp/ncu-$mnk.ncu-rep" --page details --csv > "$OUT/ncu-$mnk-details.csv" 2>&1
        ncu -i "/tmp/ncu-$mnk.ncu-rep" --page source --csv --print-source sass 2>&1 \
          | gzip > "$OUT/ncu-$mnk-source.csv.gz"
      done
      summary+=("ncusmall: $(cat "$OUT"/ncu-*-details.csv | grep -c 'Duration') duration rows") ;;
    suite)
      # a second `suite` step in one call writes suite-repeat.* (run-to-run spread)
      name=suite; [[ -e "$OUT/suite.json" ]] && name=suite-repeat
      python3 bench/suite.py --out "$OUT/$name.json" ${SUITE_ARGS:-} 2>&1 \
        | tee "$OUT/$name.log" | tail -70
      summary+=("$name: $(grep -m1 -i geomean "$OUT/$name.log")") ;;
    prebuild)
      arch=$(python3 -c "from sgemm.runtime import device; print(device.info(0).arch)")
      python3 -m sgemm.build --arch "$arch" -q 2>&1 | tee "$OUT/prebuild.log" | tail -2
      summary+=("prebuild: $(tail -1 "$OUT/prebuild.log" | cut -c1-120)") ;;
    judge)
      j=1; while [[ -e "$OUT/judge-$j.json" ]]; do j=$((j + 1)); done
      python3 .judge/judge.py --out "$OUT/judge-$j.json" ${JUDGE_ARGS:-} 2>&1 \
        | tee "$OUT/judge-$j.log" | tail -32
      summary+=("judge-$j: $(grep -E '^seed|^   all' "$OUT/judge-$j.log" | tr -s ' ' | tr '\n' ' ')") ;;
    sweep)
      # the cost model's calibration: candidate plans timed on problems drawn
      # from sgemm.calibrate.sample, then fitted (sgemm tune --calibrate)
      python3 -m sgemm.cli tune --calibrate --seconds "${SWEEP_S:-240}" --n "${SWEEP_N:-300}" \
        --save-sweep "$OUT/sweep.json" --out "$OUT/cost.json" 2>&1 | tee "$OUT/sweep.log" | tail -8
      summary+=("sweep: $(tail -1 "$OUT/sweep.log")") ;;
    bundle)
      # everything under $OUT in one archive (the device tool returns <= 8 files)
      tar czf /tmp/bundle.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete \
        && mv /tmp/bundle.tgz "$OUT/bundle.tgz"
      summary+=("bundle: $(du -h "$OUT/bundle.tgz" | cut -f1)") ;;
    *) echo "unknown step: $step" >&2; rc=2; summary+=("$step: unknown") ;;
  esac
  summary[-1]="${summary[-1]} ($(( $(date +%s) - t0 )) s)"
done
echo "==== summary"
printf '%s\n' "${summary[@]}"
exit $rc
