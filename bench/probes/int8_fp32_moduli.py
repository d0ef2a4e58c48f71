"""Probe, GPU: precision="fp32" on the integer engine with norm scaling -- 7
moduli where the scaling check passes with them, 8 where it does not --
against precision="int8x" (8 moduli), tf32x3 and cuBLAS FP32, at square
sizes.  Not part of the package; one process, cuBLAS in the same run.

    OUT=dir python bench/probes/int8_fp32_moduli.py [SIZES...]   # default 4096 8192 16384

A size is n (n^3) or MxNxK.  Per size (A and B column-major N(0,1), as
bench/probes/int8_api_cost.py):
  * correctness first: "fp32" equals runner.gemm with the moduli count its
    plan took on the problem the route runs (C^T = B^T A^T) bit for bit,
    "int8x" equals it with 8; the median relative error and the largest
    componentwise error |C - C64| / (|A||B|) of fp32, int8x, tf32x3 and
    cuBLAS against an fp64 product on the GPU;
  * time: median of five batches of REPS calls back to back on one stream
    (the call held at the power cap at 16384^3, as a user's loop is) and
    of SINGLE calls alone; three rounds, the four alternating in order, and
    the median round reported.
ALWAYS=1 sets sgemm.int8x.route.ALWAYS for the run: "fp32" takes the
engine on every size, to time it where the cost model would pick tf32x3
(the files of 2026-11-29 with "crossover": 1 were made with CROSSOVER=1, the
same thing for the route of that day).
Writes $OUT/int8_fp32_moduli.json and prints a line per measurement.
"""
import datetime
import json
import os
import sys
import time

os.environ["CUPY_TF32"] = "0"          # cupy.matmul FP32 as cuBLAS SGEMM, before import
import cupy as cp

import _gpu

import sgemm
from sgemm.int8x import route
from sgemm.int8x import runner as RN

route.ALWAYS = os.environ.get("ALWAYS") == "1"

def reps(flops: float) -> int:
    """Calls a batch: ~0.5 s of work at ~150 TFLOPS, at least 2."""
    return max(2, min(10, int(0.05 / (flops / 150e12))))
SINGLE = 5


def errors(c, ref, scale) -> list:
    d = cp.abs(c.astype(cp.float64) - ref)
    return [float(cp.median(d / cp.maximum(cp.abs(ref), 1e-300))), float(cp.max(d / scale))]


def run(m: int, n: int, k: int) -> dict:
    rng = cp.random.default_rng(m + 3 * n + 7 * k)
    a = cp.asfortranarray(rng.standard_normal((m, k), dtype=cp.float32))
    b = cp.asfortranarray(rng.standard_normal((k, n), dtype=cp.float32))
    flops = 2.0 * m * n * k
    rec = {"m": m, "n": n, "k": k, "reps": reps(flops)}
    s = f"{m}x{n}x{k}"
    calls = {"fp32": lambda: sgemm.gemm(a, b, precision="fp32"),
             "int8x": lambda: sgemm.gemm(a, b, precision="int8x"),
             "tf32x3": lambda: sgemm.gemm(a, b, precision="tf32x3"),
             "cublas": lambda: cp.matmul(a, b)}
    with _gpu.stream:
        p = sgemm.plan(a, b, precision="fp32")
        got = {name: f() for name, f in calls.items()}
        eng = p._int8x.replay.__self__ if p.scheme == "int8x" else None
        p.execute()                  # its first call settles the count (7, else 8)
        rec["fp32_scheme"], rec["fp32_moduli"] = p.scheme, eng.counts[0] if eng else None
        want7 = RN.gemm(b.T, a.T, n_moduli=rec["fp32_moduli"] or 8).T
        want8 = RN.gemm(b.T, a.T, n_moduli=8).T
        rec["fp32_equals_pipeline"] = bool(cp.array_equal(got["fp32"], want7))
        rec["int8x_equals_pipeline"] = bool(cp.array_equal(got["int8x"], want8))
        del want7, want8
        a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
        ref = a64 @ b64
        scale = cp.abs(a64) @ cp.abs(b64)
        del a64, b64
        rec["errors_median_max"] = {name: errors(c, ref, scale) for name, c in got.items()}
    _gpu.stream.synchronize()
    del got, ref, scale
    cp.get_default_memory_pool().free_all_blocks()
    print(f"{s} fp32 ran {rec['fp32_scheme']} with {rec['fp32_moduli']} moduli; "
          f"fp32 == pipeline: {rec['fp32_equals_pipeline']}, int8x == pipeline: "
          f"{rec['int8x_equals_pipeline']}; errors (median, max componentwise): "
          + ", ".join(f"{k} {v[0]:.2e} {v[1]:.2e}" for k, v in rec["errors_median_max"].items()),
          flush=True)
    times = {name: {"batched_ms": [], "single_ms": []} for name in calls}
    for rnd in range(3):
        for name in (list(calls) if rnd == 0 else list(calls)[::-1]):
            times[name]["batched_ms"].append(_gpu.tfn(calls[name], rec["reps"]) / 1e3)
            times[name]["single_ms"].append(_gpu.alone(calls[name], SINGLE, warm=1))
    for name, t in times.items():
        bm, sm = sorted(t["batched_ms"])[1], sorted(t["single_ms"])[1]
        rec[name] = dict(t, tflops=flops / bm / 1e9, tflops_single=flops / sm / 1e9)
        print(f"{s} {name:7s} {bm:8.3f} ms batched ({rec[name]['tflops']:6.1f} TFLOPS)  "
              f"{sm:8.3f} ms alone ({rec[name]['tflops_single']:6.1f})  runs "
              + " ".join(f"{x:.3f}" for x in t["batched_ms"]), flush=True)
    return rec


def main(argv) -> int:
    sizes = [tuple(int(v) for v in x.split("x")) if "x" in x else (int(x),) * 3
             for x in argv] or [(s, s, s) for s in (4096, 8192, 16384)]
    t0 = time.time()
    props = cp.cuda.runtime.getDeviceProperties(0)
    res = {"probe": "int8_fp32_moduli", "device": props["name"].decode(),
           "date": datetime.date.today().isoformat(), "cupy": cp.__version__,
           "note": "tflops: the median of three rounds (each a median of five batches)",
           "always": route.ALWAYS, "records": []}
    path = os.path.join(os.environ.get("OUT", "."), "int8_fp32_moduli.json")
    for m, n, k in sizes:
        res["records"].append(run(m, n, k))
        res["wall_s"] = time.time() - t0
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
