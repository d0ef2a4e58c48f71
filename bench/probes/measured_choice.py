"""Probe, CPU only: what the measured choice (sgemm/measure.py) would gain
on committed timings of every candidate plan: a calibration sweep's rows,
or a forced-candidates file's (bench/probes/forced_cands.py: the model's
top candidates of each problem forced and timed).

For each problem: the model's pick (the shipped calibration's first
candidate), and the candidate measure.shortlist would time and measure.pick
keep, both looked up in the timings; the ratio of their times per category
(geometric mean), the kept plan's time against the fastest timed one
("of best"), and the GPU time the measuring would spend (1 + 2 reps runs
of each shortlisted candidate, at its measured time).  ``--max`` runs the
shortlist at several MAX_CANDIDATES.  A calibration sweep is in sample
for the calibration, which was fitted to it: the model errs more on
problems it was not fitted to, so a sweep understates the gain.

    python bench/probes/measured_choice.py [TIMINGS.json ...] [--precision ieee] [--max 4,6]
"""
import argparse
import collections
import json
import math
import os
import sys

from sgemm import measure, planner
from sgemm.calibrate import problem_of
from sgemm.tune import DEVICE_MODELS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_picks import canonical  # noqa: E402


def key(c) -> str:
    q = c.params
    return f"{c.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}"


def timed_rows(path: str) -> list:
    """(category, canonical problem, {candidate key: GPU seconds}) per problem."""
    d = json.load(open(path))
    if "rows" in d:                                   # a calibration sweep
        return [(r["cat"], problem_of(r["canon"]),
                 {k: v["gpu_ms"] * 1e-3 for k, v in r["cands"].items()}) for r in d["rows"]]
    out = []                                          # forced candidates, by section
    for name, sec in d["sections"].items():
        for r in sec["rows"]:
            p = dict(m=r["m"], n=r["n"], k=r["k"], ta=bool(r["ta"]), tb=bool(r["tb"]),
                     batch=r["b"])
            out.append((name, canonical(p), {c["c"]: c["us"] * 1e-6 for c in r["cands"]
                                             if "us" in c and c["err"] <= 2}))
    return out


def report(rows: list, dev, precision: str) -> None:
    gain, cost, tuned = collections.defaultdict(list), collections.defaultdict(float), collections.Counter()
    for cat, prob, meas in rows:
        cands = planner.candidates(prob, dev, precision)
        if not cands or key(cands[0]) not in meas:
            continue
        model = meas[key(cands[0])]
        short = [c for c in measure.shortlist(prob, dev, precision) if key(c) in meas]
        chosen = model
        if len(short) >= 2 and key(short[0]) == key(cands[0]):
            scores = [max(meas[key(c)], dict(c.parts)["host"]) for c in short]
            chosen = meas[key(short[measure.pick(short, scores)])]
            cost[cat] += sum(meas[key(c)] * (1 + 2 * measure.reps_for(dict(c.parts)["gpu"]))
                             for c in short)
            tuned[cat] += 1
        gain[cat].append((model / chosen, min(meas.values()) / chosen))
    print(f"{'category':10s} {'n':>4s} {'measured':>8s} {'gain':>7s} {'worst':>6s} {'best':>6s} "
          f"{'of best':>7s} {'measuring ms':>13s}")

    def line(name, g, n_tuned, ms):
        geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
        print(f"{name:10s} {len(g):4d} {n_tuned:8d} {geo([x for x, _ in g]):7.3f} "
              f"{min(x for x, _ in g):6.2f} {max(x for x, _ in g):6.2f} "
              f"{geo([b for _, b in g]):7.3f} {ms:13.1f}")
    for cat, g in sorted(gain.items()):
        line(cat, g, tuned[cat], cost[cat] * 1e3)
    line("all", [x for g in gain.values() for x in g], sum(tuned.values()),
         sum(cost.values()) * 1e3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("timings", nargs="*",
                    default=["bench/results/calibration-sweep-h100-2026-11-25.json"])
    ap.add_argument("--precision", default="ieee")
    ap.add_argument("--max", default=str(measure.MAX_CANDIDATES),
                    help="comma-separated MAX_CANDIDATES to compare")
    args = ap.parse_args()
    dev = DEVICE_MODELS["h100"]
    for path in args.timings:
        rows = timed_rows(path)
        for n in map(int, args.max.split(",")):
            measure.MAX_CANDIDATES = n
            print(f"== {path}: MAX_CANDIDATES {n}")
            report(rows, dev, args.precision)


if __name__ == "__main__":
    main()
