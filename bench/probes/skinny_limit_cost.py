"""Probe, CPU only: what the FP32 chain limit of skinny outputs (planner.
ACC_SLICE_SKINNY) costs in predicted time, over the judge rows whose output
has 64 or fewer rows or columns: the model's best prediction with no such
limit over its best with the limit, geometric mean and worst, per limit.

    python bench/probes/skinny_limit_cost.py [JUDGE.json ...]
    (default: bench/results/judge-before-skinny-limit-h100-2026-11-26-{a,b,c}.json)
"""
import json
import math
import sys

from model_oos import H100, row_major

from sgemm import planner


def main() -> None:
    files = sys.argv[1:] or [f"bench/results/judge-before-skinny-limit-h100-2026-11-26-{s}.json"
                             for s in "abc"]
    probs = [row_major(r) for f in files for r in json.load(open(f))["rows"]]
    probs = [p for p in probs if min(p.m, p.n) <= 64]
    keep = planner.ACC_SLICE_SKINNY
    try:
        planner.ACC_SLICE_SKINNY = 10 ** 9
        free = [planner.candidates(p, H100, "ieee")[0].predicted for p in probs]
        for lim in (512, 1024, 2048):
            planner.ACC_SLICE_SKINNY = lim
            r = [f / planner.candidates(p, H100, "ieee")[0].predicted for p, f in zip(probs, free)]
            print(f"limit {lim:5d}: {len(r)} rows, predicted speed without / with the limit "
                  f"{math.exp(sum(map(math.log, r)) / len(r)):.4f} (worst {min(r):.3f})")
    finally:
        planner.ACC_SLICE_SKINNY = keep


if __name__ == "__main__":
    main()
