"""Probe, CPU only: what the measured choice (sgemm/measure.py) would gain
on a committed calibration sweep, whose rows hold the GPU time of every
candidate plan beside cuBLAS's.

For each sweep problem: the model's pick (the shipped calibration's first
candidate), and the candidate measure.shortlist would time and measure.pick
keep, both looked up in the sweep's timings; the ratio of their times per
category (geometric mean), and the GPU time the measuring would spend
(1 + 2 reps runs of each shortlisted candidate, at its measured time).
In sample for the calibration, which was fitted to this sweep: the model
errs more on problems it was not fitted to, so this understates the gain.

    python bench/probes/measured_choice.py [SWEEP.json] [--precision ieee]
"""
import argparse
import collections
import json
import math

from sgemm import measure, planner
from sgemm.calibrate import problem_of
from sgemm.tune import DEVICE_MODELS


def key(c) -> str:
    q = c.params
    return f"{c.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep", nargs="?",
                    default="bench/results/calibration-sweep-h100-2026-11-25.json")
    ap.add_argument("--precision", default="ieee")
    args = ap.parse_args()
    dev = DEVICE_MODELS["h100"]
    rows = json.load(open(args.sweep))["rows"]
    gain, cost, tuned = collections.defaultdict(list), collections.defaultdict(float), collections.Counter()
    for r in rows:
        prob = problem_of(r["canon"])
        meas = {k: v["gpu_ms"] * 1e-3 for k, v in r["cands"].items()}
        cands = planner.candidates(prob, dev, args.precision)
        if not cands or key(cands[0]) not in meas:
            continue
        model = meas[key(cands[0])]
        short = [c for c in measure.shortlist(prob, dev, args.precision) if key(c) in meas]
        chosen = model
        if len(short) >= 2 and key(short[0]) == key(cands[0]):
            scores = [max(meas[key(c)], dict(c.parts)["host"]) for c in short]
            chosen = meas[key(short[measure.pick(short, scores)])]
            cost[r["cat"]] += sum(meas[key(c)] * (1 + 2 * measure.reps_for(dict(c.parts)["gpu"]))
                                  for c in short)
            tuned[r["cat"]] += 1
        gain[r["cat"]].append(model / chosen)
    print(f"{'category':10s} {'n':>4s} {'measured':>8s} {'gain':>7s} {'worst':>6s} {'best':>6s} "
          f"{'measuring ms':>13s}")
    allg = []
    for cat, g in sorted(gain.items()):
        allg += g
        print(f"{cat:10s} {len(g):4d} {tuned[cat]:8d} {math.exp(sum(map(math.log, g)) / len(g)):7.3f} "
              f"{min(g):6.2f} {max(g):6.2f} {cost[cat] * 1e3:13.1f}")
    print(f"{'all':10s} {len(allg):4d} {sum(tuned.values()):8d} "
          f"{math.exp(sum(map(math.log, allg)) / len(allg)):7.3f} {min(allg):6.2f} {max(allg):6.2f} "
          f"{sum(cost.values()) * 1e3:13.1f}")


if __name__ == "__main__":
    main()
