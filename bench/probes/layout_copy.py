"""Probe: large x @ W^T layers (the judge's ml-layer "fwd" draws over a
flop floor, this probe's own seed) run by sgemm as called, and again on
operands copied into the other three layouts, beside the copies' own time
and cuBLAS's.  Not part of the package.

Why: rung 9's large tile runs x @ W^T (canonical TN: both operands
contiguous along k, both transposed into shared memory) at 44-47 TFLOP/s
where cuBLAS runs 49-52; the public suite's 4096^3 runs canonical NT (no
operand transposed) ~7 % faster.  If a layout's gain outweighs the copy
that makes it, a transposing pack scheme is worth building.

    DRAW=SEED:COUNT:MIN_GFLOP OUT=dir python bench/probes/layout_copy.py
"""
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
import sgemm  # noqa: E402
from sgemm.plan import Plan  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _draw import judge_draws  # noqa: E402
from _gpu import stream, tfn  # noqa: E402


def problems():
    seed, count, floor = os.environ.get("DRAW", "9191:16:40").split(":")
    keep = lambda p: (not p["ta"] and p["tb"]
                      and 2 * p["m"] * p["n"] * p["k"] >= float(floor) * 1e9)
    return judge_draws("ml-layer", int(count), int(seed), keep)


# A plain shared-memory transpose (32x32 tiles, 32x8 threads): what a
# transposing pack would cost, where cupy's own copy of a transposed view
# runs at about a third of the bandwidth.
_TRANSPOSE = cp.RawKernel(r"""
extern "C" __global__ void transpose(const float* __restrict__ s, float* __restrict__ d,
                                     int R, int C) {
    __shared__ float t[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
    for (int j = ty; j < 32; j += 8)
        if (r0 + j < R && c0 + tx < C) t[j][tx] = s[(long long)(r0 + j) * C + c0 + tx];
    __syncthreads();
    for (int j = ty; j < 32; j += 8)
        if (c0 + j < C && r0 + tx < R) d[(long long)(c0 + j) * R + r0 + tx] = t[tx][j];
}
""", "transpose")


def transpose(src, dst):
    """dst (C, R) = src (R, C)^T, both C-order, on the current stream."""
    R, C = src.shape
    _TRANSPOSE(((C + 31) // 32, (R + 31) // 32), (32, 8), (src, dst, cp.int32(R), cp.int32(C)))


def one(p) -> dict:
    m, n, k = p["m"], p["n"], p["k"]
    x = cp.random.standard_normal((m, k), dtype=cp.float32)
    w = cp.random.standard_normal((n, k), dtype=cp.float32)
    c = cp.empty((m, n), cp.float32)
    xt = cp.empty((k, m), cp.float32)
    wt = cp.empty((k, n), cp.float32)
    cp.cuda.Device().synchronize()   # the probe's stream does not wait for the null stream
    with stream:
        transpose(x, xt)
        transpose(w, wt)
    stream.synchronize()
    assert bool(cp.array_equal(xt, x.T)) and bool(cp.array_equal(wt, w.T))
    cub = tfn(lambda: cp.matmul(x, w.T, out=c))
    ref = c.copy()
    nr = float(cp.linalg.norm(ref))
    # (label, a, b, trans_a, trans_b): op(a) = x, op(b) = W^T in every layout.
    forms = [("xWT", x, w, False, True), ("xWt", x, wt, False, False),
             ("xtWt", xt, wt, True, False), ("xtWT", xt, w, True, True)]
    rec = dict(m=m, n=n, k=k, cublas_us=round(cub, 1), layouts={})
    for lab, a, b, ta, tb in forms:
        with stream:
            c.fill(cp.nan)
            sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb)
        stream.synchronize()
        cp.cuda.Device().synchronize()
        err = float(cp.linalg.norm(c - ref)) / nr
        t = tfn(lambda: sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb))
        plan = repr(Plan(a, b, c, trans_a=ta, trans_b=tb))
        rec["layouts"][lab] = dict(us=round(t, 1), err_vs_cublas=err, plan=plan[:200])
    rec["copy_w_us"] = round(tfn(lambda: transpose(w, wt)), 1)
    rec["copy_x_us"] = round(tfn(lambda: transpose(x, xt)), 1)
    rec["cupy_copy_w_us"] = round(tfn(lambda: cp.ascontiguousarray(w.T)), 1)
    return rec


def main():
    from sgemm.runtime import device as devmod
    dev = devmod.info(0)
    rows = []
    for p in problems():
        r = one(p)
        rows.append(r)
        L = r["layouts"]
        base = L["xWT"]["us"]
        print(f"{r['m']:6d} {r['n']:6d} {r['k']:6d} cub {r['cublas_us']:8.1f} "
              + " ".join(f"{k_} {v['us']:8.1f}" for k_, v in L.items())
              + f" cpW {r['copy_w_us']:6.1f} cpX {r['copy_x_us']:6.1f}"
              + f" | vs cub {r['cublas_us'] / base:.3f} NN+copy {r['cublas_us'] / (L['xWt']['us'] + r['copy_w_us']):.3f}"
              + f" NT+2copy {r['cublas_us'] / (L['xtWt']['us'] + r['copy_w_us'] + r['copy_x_us']):.3f}",
              flush=True)
        cp.get_default_memory_pool().free_all_blocks()
        with open(os.path.join(os.environ.get("OUT", "."), "layout-copy.json"), "w") as f:
            json.dump(dict(device=dev.name, draw=os.environ.get("DRAW", "9191:16:40"), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
