"""Probe (CPU, no GPU): the cost model's bias on the committed sweeps, by
how full the last wave is: measured / predicted GPU time (geometric mean)
of rung 9's and rung 13's 8x8 and 8x4 tiles, compute-bound points only,
grouped by waves and, within one wave, by q (blocks on the busiest SM).
With --all, every config of the sweeps, by config.

    python bench/probes/model_bias.py [--all] [SWEEP.json ...]
"""
import collections
import json
import math
import sys

from sgemm import calibrate, cost
from sgemm.tune import DEVICE_MODELS

SWEEPS = ("bench/results/calibration-sweep-h100-2026-11-25.json",
          "bench/results/calibration-sweep-h100-2026-11-26.json",
          "bench/results/kmajor-sweep-h100-2026-11-27.json")
TILES = ((128, 64), (64, 128), (64, 64))


def main():
    dev = DEVICE_MODELS["h100"]
    cal = cost.calibration(dev)
    every = "--all" in sys.argv
    files = [a for a in sys.argv[1:] if a != "--all"] or SWEEPS
    rows = [r for f in files for r in json.load(open(f))["rows"]]
    groups = collections.defaultdict(list)
    for prob, spec, p, t in calibrate.points(rows):
        if not every and (spec.name not in ("double_buffer", "kmajor")
                          or (p.BM, p.BN) not in TILES):
            continue
        d = cost.predict(spec, p, prob, dev, cal)
        if d["compute"] < d["memory"]:
            continue
        slots = dev.sm_count * d["per_sm"]
        waves = d["blocks"] / slots
        q = math.ceil(min(d["blocks"], slots) / dev.sm_count)
        band = "one wave, q=%d" % q if waves <= 1 else ("1-3 waves" if waves <= 3 else "> 3 waves")
        name = f"{spec.name}:{p.BM}x{p.BN}:{p.threads}" if every else spec.name
        groups[(name, band)].append(math.log(t / d["gpu"]))
    print(f"{'kernel':24s} {'grid':16s} {'points':>6s}  measured / predicted")
    for (name, band), v in sorted(groups.items()):
        if len(v) >= 8:
            print(f"{name:24s} {band:16s} {len(v):6d}  {math.exp(sum(v) / len(v)):.3f}")


if __name__ == "__main__":
    main()
