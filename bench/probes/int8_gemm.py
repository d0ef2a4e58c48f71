"""Probe: the integer engine's INT8 GEMMs (41_int8_mma.cu, mma.sync; and
42_int8_wgmma.cu, wgmma, on sm_90a) and its whole pipeline
(sgemm.int8x.runner.gemm) against cupy.matmul FP32 (TF32 off), at 4096^3,
8192^3 and 16384^3 on N(0,1) data.  Not part of the package.

Per size, correctness first, then time (CUDA events, 2 warm-up calls, median
and spread of REPS):
  * int8_gemm, 8 moduli in one launch, every registered config of each
    kernel this GPU runs: sampled planes checked bit for bit against NumPy
    int64, then TOPS counted as 8 * 2 m n k integer ops;
  * the pipeline's steps (the conversion of A and of B -- exponents and
    residue planes, each by the route its layout takes, device.route_for --
    the INT8 GEMM as the pipeline picks it, writing byte planes, Garner
    reading them) and the whole call with each kernel, TFLOPS counted as
    2 m n k (the FP32 problem's flops); the conversions also as GB/s of
    their floor's bytes (float32 read once, 8 int8 planes written);
  * the public path, sgemm.gemm(precision="int8x"), and tf32x3
    (sgemm.gemm(precision="tf32x3")) on the same operands, and which engine
    precision="fp32" picks at this size (sgemm/int8x/route.py);
  * cupy.matmul FP32, the same count;
  * errors against fp64 (cupy float64 matmul): median relative and max
    componentwise |C - C64| / (|A||B|), for the pipeline and for cuBLAS.

A is column-major (Fortran order) and B too, as a column-major BLAS call
passes them: A's rows are strided (the "tiles" route: a row-maximum pass,
then a conversion pass), B's columns contiguous (the "rows" route: one
read).

    OUT=dir python bench/probes/int8_gemm.py [SIZES...]      # default 4096 8192 16384

Writes $OUT/int8_gemm.json (one record per size) and prints a table.
"""
import json
import os
import sys
import time

os.environ["CUPY_TF32"] = "0"          # cupy.matmul FP32 as cuBLAS SGEMM, before import
import cupy as cp
import numpy as np

from sgemm.int8x import device as D
from sgemm.int8x import runner as RN
from sgemm.int8x import moduli as M
from sgemm.kernels import utility as U

REPS = 5


def timed(f, reps=REPS):
    """(median ms, min ms, max ms) of f() over reps, after two warm-up calls."""
    f(); f()
    cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        e0.record()
        f()
        e1.record()
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def errors(out, ref, scale):
    d = cp.abs(out.astype(cp.float64) - ref)
    med = float(cp.median(d / cp.maximum(cp.abs(ref), 1e-300)))
    return med, float(cp.max(d / scale))


def kernels() -> list[str]:
    """The INT8 GEMMs this GPU runs, the pipeline's pick first."""
    return ["wgmma", "mma"] if D.gemm_spec().name == "int8_wgmma" else ["mma"]


def int8_steps(a, b, rec):
    """Each INT8 GEMM config alone on the pipeline's own residue planes, then
    each step of the pipeline; the planes are freed on return."""
    m, k = a.shape
    n = b.shape[1]
    bud = M.budget(8, k)
    mods = D.constants(8)
    bad = cp.zeros(1, cp.int32)
    pa, mu = D.convert(a, 1, bud.alpha, bad)
    pb, nu = D.convert(b, 0, bud.beta, bad)
    rows, cols = slice(0, m, max(1, m // 8)), slice(0, n, max(1, n // 64))   # a sample
    ha, hb = pa[:, rows].get().astype(np.int64), pb[:, cols].get().astype(np.int64)
    ms = np.array(M.moduli(8), np.int64)[:, None, None]
    want = np.mod(np.einsum("lik,ljk->lij", ha, hb), ms)       # byte planes: C'_l mod p_l
    rec["int8_gemm"] = {}
    ops = 8 * 2.0 * m * n * k
    for kernel in kernels():
        spec = D.gemm_spec(kernel)
        for config in spec.configs:
            got = D.int8_gemm(pa, pb, mods, config, kernel)[:, rows][:, :, cols].get()
            exact = bool(np.array_equal(got, want))
            med, lo, hi = timed(lambda: D.int8_gemm(pa, pb, mods, config, kernel))
            rec["int8_gemm"][f"{spec.name}:{config}"] = dict(
                exact_on_sample=exact, ms=med, ms_min=lo, ms_max=hi, tops=ops / med / 1e9)
    rec["pipeline_gemm"] = D.gemm_spec().name
    planes = D.int8_gemm(pa, pb, mods)
    steps = {
        "convert_a": lambda: D.convert(a, 1, bud.alpha, bad),
        "convert_b": lambda: D.convert(b, 0, bud.beta, bad),
        "int8_gemm": lambda: D.int8_gemm(pa, pb, mods),
        "garner": lambda: D.garner(planes, mods, mu, nu),
    }
    rec["steps_ms"] = {name: timed(f)[0] for name, f in steps.items()}
    st_a, st_b = (D._as_rows(a, 1)[2:], D._as_rows(b, 0)[2:])
    rec["convert_routes"] = {"convert_a": D.route_for(*st_a), "convert_b": D.route_for(*st_b)}
    kp = D.padded_k(k)
    # the floor's bytes (float32 read once, 8 int8 planes written) per time
    moved = {"convert_a": 4 * m * k + 8 * m * kp, "convert_b": 4 * k * n + 8 * n * kp}
    rec["convert_floor_gb_per_s"] = {s_: moved[s_] / rec["steps_ms"][s_] / 1e6 for s_ in moved}
    # new: the byte planes' size and Garner's traffic (8 planes read, C written)
    plane_bytes = 8 * n * D.padded_rows(m)
    rec["c_plane_bytes"] = plane_bytes
    rec["garner_gb_per_s"] = (plane_bytes + 4 * m * n) / rec["steps_ms"]["garner"] / 1e6


def accuracy(a, b, rec):
    a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    ref = cp.matmul(a64, b64)
    scale = cp.matmul(cp.abs(a64), cp.abs(b64))
    rec["int8x_err"] = errors(RN.gemm(a, b), ref, scale)
    rec["cublas_fp32_err"] = errors(cp.matmul(a, b), ref, scale)


def probe(s: int) -> dict:
    m = n = k = s
    rng = cp.random.default_rng(s)
    a = cp.asfortranarray(rng.standard_normal((m, k), dtype=cp.float32))   # column-major
    b = cp.asfortranarray(rng.standard_normal((k, n), dtype=cp.float32))
    rec = dict(m=m, n=n, k=k, device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               workspace_bytes=D.workspace_bytes(m, n, k))
    int8_steps(a, b, rec)
    accuracy(a, b, rec)
    flops = 2.0 * m * n * k
    med, lo, hi = timed(lambda: RN.gemm(a, b))
    rec["int8x"] = dict(ms=med, ms_min=lo, ms_max=hi, tflops=flops / med / 1e9,
                        gemm=D.gemm_spec().name)
    for kernel in kernels()[1:]:        # the pipeline with the other INT8 GEMM
        med, lo, hi = timed(lambda: RN.gemm(a, b, kernel=kernel))
        rec[f"int8x_{kernel}"] = dict(ms=med, ms_min=lo, ms_max=hi, tflops=flops / med / 1e9)
    med, lo, hi = timed(lambda: cp.matmul(a, b))
    rec["cublas_fp32"] = dict(ms=med, ms_min=lo, ms_max=hi, tflops=flops / med / 1e9)
    rec["speedup_vs_cublas"] = rec["cublas_fp32"]["ms"] / rec["int8x"]["ms"]
    # the public path and tf32x3 (the crossover), C-ordered outputs as
    # sgemm.gemm allocates them; errors of both against fp64
    import sgemm
    from sgemm.int8x import route
    a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    ref, scale = cp.matmul(a64, b64), cp.matmul(cp.abs(a64), cp.abs(b64))
    del a64, b64
    for prec in ("int8x", "tf32x3"):
        rec[f"api_{prec}_err"] = errors(sgemm.gemm(a, b, precision=prec), ref, scale)
        med, lo, hi = timed(lambda: sgemm.gemm(a, b, precision=prec))
        rec[f"api_{prec}"] = dict(ms=med, ms_min=lo, ms_max=hi, tflops=flops / med / 1e9)
    del ref, scale
    rec["fp32_picks"] = sgemm.plan(a, b, precision="fp32").scheme
    rec["fp32_rule"] = {"min_k": route.MIN_K, "margin": route.MARGIN}
    return rec


def main(argv):
    sizes = [int(x) for x in argv] or [4096, 8192, 16384]
    out_dir = os.environ.get("OUT", ".")
    os.makedirs(out_dir, exist_ok=True)
    recs = []
    path = os.path.join(out_dir, "int8_gemm.json")
    t0 = time.time()
    for s in sizes:
        r = probe(s)
        recs.append(r)
        g = r["int8_gemm"]
        print(f"{s:>6}^3  int8_gemm " + "  ".join(
            f"{c}: {v['tops']:.0f} TOPS ({v['ms']:.2f} ms, exact={v['exact_on_sample']})"
            for c, v in g.items()))
        print("        conversion floor-bytes GB/s " + "  ".join(
            f"{k_} ({r['convert_routes'][k_]})={v:.0f}"
            for k_, v in r["convert_floor_gb_per_s"].items()))
        print("        steps ms " + "  ".join(f"{k}={v:.2f}" for k, v in r["steps_ms"].items()))
        others = "".join(f"  {k_} {v['tflops']:.1f}" for k_, v in r.items()
                         if k_.startswith(("int8x_", "api_")) and not k_.endswith("_err"))
        print(f"        int8x ({r['pipeline_gemm']}) {r['int8x']['tflops']:.1f} TFLOPS{others}"
              f"  cuBLAS FP32 "
              f"{r['cublas_fp32']['tflops']:.1f}  ({r['speedup_vs_cublas']:.2f}x)  "
              f"err med/max int8x {r['int8x_err'][0]:.2e}/{r['int8x_err'][1]:.2e}  "
              f"fp32 {r['cublas_fp32_err'][0]:.2e}/{r['cublas_fp32_err'][1]:.2e}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
        # rewritten after every size: a run stopped at its time limit keeps
        # the sizes it finished ("complete" says whether all were)
        with open(path, "w") as f:
            json.dump(dict(probe="int8_gemm", sizes=sizes, complete=len(recs) == len(sizes),
                           seconds=time.time() - t0, records=recs), f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main(sys.argv[1:])
