"""Probe: products whose two operands both lie along k beside a narrow side
of 5-16 (``x @ W.T`` with a few tokens: LLM decoding; skinny NT calls) --
gemv's k-contiguous blocks (33_gemv.cu) at other strips, warps and chunk
depths than the shipped ones, forced at several K splits, beside the
planner's best candidates, its own plan and cuBLAS.  Not part of the
package.  Each forced run is checked against fp64 on a NaN-poisoned output
first (_gpu.checked_time); the error is reported over cuBLAS's.

Why: the judges' 8-16-token ``x @ W.T`` layers of 100 MB-1 GB of weight
stream it at 1.7-2.3 TB/s in both libraries (e.g. 8x32000x8192 NT: cuBLAS
464 us, sgemm 526), where one token's gemv block reads 3.2 TB/s
(bench/results/narrow-single-sweep-h200-2026-11-29*.json).

    OUT=dir python bench/probes/dot_decode.py
    PROBS='[[m, n, k], ...]' OUT=dir python bench/probes/dot_decode.py   # a @ b.T each

Writes $OUT/dot-decode.json; prints each row's best forced block.
"""
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
from sgemm import planner  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.kernels.params import TileParams  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _gpu import plan_row, run_rows, time_forced  # noqa: E402
from forced_cands import label  # noqa: E402

# (m, n, k) called as a @ b.T, a (m, k) and b (n, k) row-major
PROBS = [(8, 32000, 8192), (8, 20480, 5120), (16, 15360, 5120), (16, 50257, 2048),
         (5, 12288, 4096), (12, 4096, 4096), (7, 4864, 4864), (5, 8167, 7334),
         (3046, 7, 9009), (8, 6144, 2048)]
# (strip rows, threads, chunk depth) of gemv's k-contiguous loop, per small side S
BLOCKS = {8: [(32, 512, 1024), (32, 256, 1024), (64, 512, 1024), (32, 128, 1024),
              (64, 256, 512), (32, 256, 512)],
          16: [(32, 256, 256), (32, 512, 512), (32, 256, 512), (32, 512, 256)]}
SPLITS = (1, 2, 4, 8)


def trials(prob):
    """(label, spec, params, None) of every gemv block above at every split."""
    gemv = registry.get("gemv")
    side_m = prob.m <= prob.n
    small = prob.m if side_m else prob.n
    s = 8 if small <= 8 else 16
    out = []
    for rb, threads, bk in BLOCKS[s]:
        for sk in SPLITS:
            q = (TileParams(BM=s, BN=rb, BK=bk, threads=threads, split_k=sk) if side_m else
                 TileParams(BM=rb, BN=s, BK=bk, threads=threads, split_k=sk))
            if gemv.rules(q) or q.basic_reasons():
                continue
            out.append((f"gemv:{q.BM}x{q.BN}x{bk}:{threads}:s{sk}", gemv, q, None))
    return out


def row(dev, p):
    m, n, k = p
    r = plan_row(dict(m=m, n=n, k=k, ta=False, tb=True))
    prob = r["plan"].problems[0]
    top = [(label(c), c.spec, c.params, round(c.predicted * 1e6, 1))
           for c in planner.candidates(prob, dev, "ieee")[:4]]
    forced = time_forced(r, top + trials(prob), dev)
    return dict(m=m, n=n, k=k, ta=0, tb=1, cublas_us=r["cub"], auto_us=r["auto"],
                plan=repr(r["plan"])[:200], cands=forced)


def line(p, rec):
    ok = [c for c in rec["cands"] if "us" in c and c["err"] <= 2]
    g = [c for c in ok if c["c"].startswith("gemv")]
    best = min(ok, key=lambda c: c["us"]) if ok else None
    gb = min(g, key=lambda c: c["us"]) if g else None
    mb = 4.0 * max(p[0], p[1]) * p[2] / 1e6
    s = f"{p[0]}x{p[1]}x{p[2]} NT {mb:.0f} MB: cuBLAS {rec['cublas_us']:.1f} auto {rec['auto_us']:.1f}"
    if best:
        s += f" best {best['c']} {best['us']}"
    if gb:
        s += f" gemv {gb['c']} {gb['us']} ({mb / gb['us']:.2f} TB/s)"
    return s


if __name__ == "__main__":
    probs = PROBS
    if os.environ.get("PROBS"):
        probs = [tuple(x) for x in json.loads(os.environ["PROBS"])]
    run_rows(probs, row, line, "dot-decode.json")
