"""Probe: a 128x256 rung-9 tile (rung 9's 256x128 "large" turned on its
side) forced on problems of the judge's distribution (this probe's own
seed), against the planner's plan, its best candidates and cuBLAS.  Not
part of the package.

Why: on deep K with a few hundred rows and a narrow side (505x98x258556 NN:
cuBLAS 724 us, sgemm 866 on the 128x64 tile split 192 ways), the 256x128
tile pads the narrow side to 256 and the 128x64 tile runs at ~0.85 of its
rate; a 128x256 tile pads it to 128 at the 256x128 tile's rate.  Two
variants: "a" (BK 16, warps of 128x32, 16x8 a thread: the large tile's
warp shape; BK 8 cannot park its epilogue in As) and "b" (BK 8, warps of
64x64, 8x16 a thread).  Each timing is checked against fp64 on a
NaN-poisoned output first (_gpu.checked_time).

    DRAW=deep-k:16:SEED:MIN_OUTPUTS ML=8 OUT=dir python bench/probes/large_t_ab.py
"""
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
from sgemm import planner  # noqa: E402
from sgemm.kernels import ladder  # noqa: E402
from sgemm.kernels.params import TileParams  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _draw import judge_draws  # noqa: E402
from _gpu import plan_row, run_rows, time_forced  # noqa: E402
from forced_cands import label  # noqa: E402

VARIANTS = {"a": TileParams(BM=128, BN=256, BK=16, WM=128, WN=32, TM=16, TN=8, threads=256),
            "b": TileParams(BM=128, BN=256, BK=8, WM=64, WN=64, TM=8, TN=16, threads=256),
            "large": ladder.DOUBLE_BUFFER.configs["large"]}


def problems():
    cat, count, seed, lo = os.environ.get("DRAW", "deep-k:16:5150:8192").split(":")
    out = judge_draws(cat, int(count), int(seed), lambda p: p["m"] * p["n"] >= int(lo))
    ml = int(os.environ.get("ML", "8"))
    if ml:
        out += judge_draws("ml-layer", ml, int(seed) + 1)
    return out


def row(dev, p) -> dict:
    r = plan_row(p)
    prob = r["plan"].problems[0]
    tried = [(label(c), c.spec, c.params, None) for c in planner.candidates(prob, dev, "ieee")[:4]]
    spec = ladder.DOUBLE_BUFFER
    names = {}
    for name, q in VARIANTS.items():
        for s in planner._splits(prob, q, dev):
            names[q.replace(split_k=s)] = f"{name}:s{s}"
    # the planner's accuracy limit on FFMA slices
    for _, q in planner._accurate([(spec, q) for q in names], prob, dev):
        tried.append((names[q], spec, q, None))
    return dict(p, cublas_us=r["cub"], auto_us=r["auto"], plan=repr(r["plan"])[:160],
                cands=time_forced(r, tried, dev))


def line(p, rec) -> str:
    ok = [c for c in rec["cands"] if "us" in c and c["err"] <= 2]
    best = lambda pre: min((c["us"] for c in ok if c["c"].startswith(pre)), default=None)
    return (f"{p['cat'][:6]} {p['m']}x{p['n']}x{p['k']} {'T' if p['ta'] else 'N'}"
            f"{'T' if p['tb'] else 'N'} cub {rec['cublas_us']:.1f} auto {rec['auto_us']:.1f} "
            f"a {best('a:')} b {best('b:')} large {best('large:')} "
            f"cands {best('double_buffer') or best('')}")


def main():
    run_rows(problems(), row, line, "large-t-ab.json")


if __name__ == "__main__":
    main()
