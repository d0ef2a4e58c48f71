"""Probe: the small_k kernel (39_small_k.cu) against the planner's plans on
problems with K <= 16, timed the way ``sgemm tune --calibrate`` times its
candidates, written as a calibration sweep.  Not part of the package.

Why: a new config enters the cost model through a measured rate (cost.py,
calibrate.py); this sweep is what its rate is fitted from
(``python -m sgemm.calibrate fit SWEEP --device h100``), and the same rows
say how it compares with the plans the planner had.

Problems (own seed): the judge's K <= 16 shapes -- skinny (m, n, small k)
with m, n log-uniform in [512, 16384] x [256, 16384], and general ones with
m, n log-uniform in [32, 16384] -- every transpose, batch 1, operands
unaligned as user sizes make them.  Candidates per problem: small_k's
choice and the cost model's three best (the shipped calibration, small_k
left out).

    OUT=dir python bench/probes/small_k_sweep.py [N [SEED [SECONDS]]]
    python bench/probes/small_k_sweep.py --picks SWEEP.json      (CPU)

Writes $OUT/small-k-sweep.json (calibrate's sweep format) and prints, per
problem, cuBLAS, small_k and the best other plan in us.
"""
import json
import math
import os
import random
import sys
import types

os.environ.setdefault("CUPY_TF32", "0")
from sgemm import calibrate, planner  # noqa: E402
from sgemm.kernels import registry, schemes  # noqa: E402


def loguni(r, lo, hi):
    return int(round(math.exp(r.uniform(math.log(lo), math.log(hi)))))


def sample(seed, n):
    r = random.Random(seed)
    out = []
    while len(out) < n:
        k = loguni(r, 1, 16)
        if r.random() < 0.5:
            m, n_ = loguni(r, 512, 16384), loguni(r, 256, 16384)
            cat = "skinny"
        else:
            m, n_ = loguni(r, 32, 16384), loguni(r, 32, 16384)
            cat = "general"
        if 4.0 * m * n_ * 2.2 > calibrate.MAX_BYTES:
            continue
        out.append(dict(cat=cat, m=m, n=n_, k=k, ta=r.random() < 0.3, tb=r.random() < 0.3,
                        batch=1))
    return out


def menu(prob, dev, keep=6.0):
    spec = registry.get("small_k")
    own = types.SimpleNamespace(spec=spec, params=schemes.choose_small_k(prob), predicted=0.0)
    others = [c for c in planner.candidates(prob, dev, "ieee") if c.spec is not spec][:3]
    return [own] + others


def picks(path):
    """CPU: with the shipped rates, on the sweep's problems, how often the
    model picks small_k, and the measured GPU time of the best other plan
    over that of the plan it picks (in sample: the rates came from here)."""
    from sgemm.tune import DEVICE_MODELS
    dev, gains, chosen = DEVICE_MODELS["h100"], [], 0
    for r in json.load(open(path))["rows"]:
        ms = {c["kernel"] == "small_k": [] for c in r["cands"].values()}
        for c in r["cands"].values():
            ms[c["kernel"] == "small_k"].append(c.get("gpu_ms", math.inf))
        own, rest = min(ms.get(True, [math.inf])), min(ms.get(False, [math.inf]))
        pick = planner.candidates(calibrate.problem_of(r["canon"]), dev, "ieee")[0]
        chosen += pick.spec.name == "small_k"
        gains.append(rest / (own if pick.spec.name == "small_k" else rest))
    print(f"small_k picked on {chosen} of {len(gains)}; best other plan / picked plan, "
          f"geometric mean {math.exp(sum(map(math.log, gains)) / len(gains)):.3f}")


def main():
    if sys.argv[1:2] == ["--picks"]:
        return picks(sys.argv[2])
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 3901
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 150.0
    calibrate.sample, calibrate._menu = sample, menu
    data = calibrate.measure(n, seed, seconds, log=lambda *a: None)
    for r in data["rows"]:
        own = [c for c in r["cands"].values() if c["kernel"] == "small_k"]
        rest = [c.get("gpu_ms", math.inf) for c in r["cands"].values() if c["kernel"] != "small_k"]
        ours = own[0].get("gpu_ms", math.nan) if own else math.nan
        bad = {k: c.get("bad", c.get("error")) for k, c in r["cands"].items()
               if "gpu_ms" not in c}
        print(f"{r['cat']:8s} {r['m']}x{r['n']}x{r['k']} {'T' if r['ta'] else 'N'}"
              f"{'T' if r['tb'] else 'N'}  cuBLAS {r['cublas_ms'] * 1e3:7.1f}  small_k "
              f"{ours * 1e3:7.1f}  best other {min(rest, default=math.inf) * 1e3:7.1f}"
              + (f"  NOT TIMED {bad}" if bad else ""), flush=True)
    json.dump(data, open(os.path.join(os.environ.get("OUT", "/tmp"), "small-k-sweep.json"), "w"))


if __name__ == "__main__":
    main()
