"""Probe: split counts that fill whole waves, forced beside the planner's
plan and its best candidates, on large ML layers of the judge's
distribution (this probe's own seed).  Not part of the package.

Why: the planner weighs the coarse SPLITS list only (finer counts moved
picks by less than the model's error and measured 0.91x, dispatch notes
2026-11-27), and a layer with fewer tiles than SMs can then leave a
wave mostly empty: 3072x768x4096 TN (72 tiles of 256x128) ran 568 us
against cuBLAS's 406 on a 64x128 plan split 3 that the model put at 463.
Here every count s <= 24 whose blocks (tiles x s) fill the last wave of
the tile's resident blocks to 90 % or more is timed for four rung-9
tiles.  Each timing is checked against fp64 on a NaN-poisoned output
first (_gpu.checked_time).

    DRAW=ml-layer:12:SEED:MIN_OUTPUTS OUT=dir python bench/probes/wave_splits.py
"""
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
from sgemm import cost, planner  # noqa: E402
from sgemm.kernels import ladder  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _draw import judge_draws  # noqa: E402
from _gpu import plan_row, run_rows, time_forced  # noqa: E402
from forced_cands import label  # noqa: E402

TILES = ("large", "medium", "rect", "rect_t")


def problems():
    cat, count, seed, lo = os.environ.get("DRAW", "ml-layer:12:6262:1000000").split(":")
    return judge_draws(cat, int(count), int(seed),
                       lambda p: p["m"] * p["n"] >= int(lo) and p["batch"] == 1)


def wave_splits(prob, q, dev):
    spec = ladder.DOUBLE_BUFFER
    tiles = -(-prob.m // q.BM) * -(-prob.n // q.BN)
    slots = dev.sm_count * cost.resident(spec, q, dev)
    out = []
    for s in range(1, 25):
        if s > 1 and prob.k < s * planner.MIN_SLICE:
            break
        blocks = tiles * s
        last = blocks - (blocks - 1) // slots * slots        # blocks in the last wave
        if last >= 0.9 * slots or s == 1:
            out.append(s)
    return out


def row(dev, p) -> dict:
    r = plan_row(p)
    prob = r["plan"].problems[0]
    spec = ladder.DOUBLE_BUFFER
    tried = [(label(c), c.spec, c.params, round(c.predicted * 1e6, 1))
             for c in planner.candidates(prob, dev, "ieee")[:6]]
    names = {}
    for t in TILES:
        q = spec.configs[t]
        for s in wave_splits(prob, q, dev):
            names[q.replace(split_k=s)] = f"{t}:s{s}"
    for _, q in planner._accurate([(spec, q) for q in names], prob, dev):
        pred = cost.predict(spec, q, prob, dev, cost.calibration(dev))
        tried.append((names[q], spec, q, round(pred["total"] * 1e6, 1)))
    return dict(p, cublas_us=r["cub"], auto_us=r["auto"], plan=repr(r["plan"])[:160],
                cands=time_forced(r, tried, dev))


def line(p, rec) -> str:
    ok = [c for c in rec["cands"] if "us" in c and c["err"] <= 2]
    best = min(ok, key=lambda c: c["us"]) if ok else None
    return (f"{p['m']}x{p['n']}x{p['k']} {'T' if p['ta'] else 'N'}{'T' if p['tb'] else 'N'} "
            f"cub {rec['cublas_us']:.1f} auto {rec['auto_us']:.1f} best "
            + (f"{best['c']} {best['us']} pred {best['pred']}" if best else "-"))


def main():
    run_rows(problems(), row, line, "wave-splits.json")


if __name__ == "__main__":
    main()
