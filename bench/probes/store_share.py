"""Probe (CPU, no GPU): judge rows split by whether writing C dominates
(output at 2.5 TB/s over 15 % of the time at 40 TFLOP/s), whether the
canonical problem is 16-byte aligned, and whether the output is over 4 MB:
count, geometric mean and minimum of the ieee ratio, and the model's picks.
The split that pointed at unaligned stores (docs/notes/ffma-fast.md,
2026-11-27 fourth session).

    python bench/probes/store_share.py JUDGE.json [JUDGE.json ...]
"""
import collections
import json
import math
import sys

from model_picks import canonical
from sgemm import planner
from sgemm.tune import DEVICE_MODELS


def store_share(r) -> float:
    out = r["m"] * r["n"] * r["batch"] * 4 / 2.5e12
    return out / (out + 2 * r["m"] * r["n"] * r["k"] * r["batch"] / 40e12)


def main(files):
    dev, groups = DEVICE_MODELS["h100"], collections.defaultdict(list)
    for f in files:
        for r in json.load(open(f))["rows"]:
            p = canonical(r)
            pick = planner.candidates(p, dev, "ieee")[0].spec.name
            key = (store_share(r) > 0.15, p.aligned, r["m"] * r["n"] * r["batch"] * 4 > 4e6)
            groups[key].append((r["ieee"]["ratio"], pick))
    print("store-heavy aligned big-output   n  geomean   min  picks")
    for key in sorted(groups):
        v = [x for x, _ in groups[key]]
        geo = math.exp(sum(map(math.log, v)) / len(v))
        picks = collections.Counter(p for _, p in groups[key]).most_common(3)
        print(f"{key[0]!s:11s} {key[1]!s:7s} {key[2]!s:10s} {len(v):4d} {geo:8.3f} {min(v):5.2f}  {picks}")


if __name__ == "__main__":
    main(sys.argv[1:])
