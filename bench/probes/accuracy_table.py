"""Probe, GPU: every precision's error against an fp64 product, with cuBLAS
FP32 and TF32 beside it, on the input classes an FP32 GEMM meets.

Classes: N(0, 1); U(0, 1); "wide s": N(0, 1) entries each scaled by 2^u,
u ~ U(-s, s), for s = 10, 20, 30 (one exponent per entry, so rows and
columns span up to 2s binades).  K from 64 to 65536, M = N = 1024 (512 past
K = 16384, to stay within a few seconds per row).  A and B are fresh for
every (class, K) and every engine reads the same ones.

Engines: cuBLAS FP32 (cupy.matmul, CUPY_TF32=0), cuBLAS TF32 (torch.matmul
with allow_tf32), and sgemm.gemm with precision "ieee", "tf32x3", "int8x"
(8 moduli) and "fp32", all on the same operands; "int8x_7" is the engine's
pipeline with 7 moduli and the scaling check off (runner.gemm(n_moduli=7,
on_loss="ignore"): what 7 moduli give where the check would refuse them);
"fp32_int8x" is precision="fp32" with sgemm.int8x.route.ALWAYS set (the
file of 2026-11-29 was made with the equivalent route.CROSSOVER = 0 of its
day), i.e. what "fp32" does on the sizes where it takes the integer engine
(7 moduli where the scaling check passes with them, else 8 where it passes
with 8, else tf32x3).  For "int8x" each cell records whether the call
warned (Int8xAccuracyWarning: the scaling check failed) and for
"fp32_int8x" which engine ran ("int8x/7", "int8x/8" or "tf32x3").

Errors, per engine: the median over entries of |C - C64| / |C64|, and the
largest componentwise error max |C - C64| / (|A| |B|) (the bound an FP32 dot
product's rounding obeys, independent of cancellation).

    OUT=dir python bench/probes/accuracy_table.py [--ks 64,256,...] [--classes ...]

Writes $OUT/accuracy-table.json and prints the table.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402

import sgemm  # noqa: E402

KS = (64, 256, 1024, 4096, 16384, 65536)
CLASSES = ("normal", "uniform", "wide10", "wide20", "wide30")
ENGINES = ("cublas_fp32", "cublas_tf32", "ieee", "tf32x3", "int8x", "int8x_7", "fp32",
           "fp32_int8x")


def operand(rs, cls: str, shape):
    if cls == "uniform":
        return rs.uniform(0.0, 1.0, shape, dtype=cp.float64).astype(cp.float32)
    x = rs.standard_normal(shape, dtype=cp.float64)
    if cls.startswith("wide"):
        s = float(cls[4:])
        x *= cp.exp2(rs.uniform(-s, s, shape))
    return x.astype(cp.float32)


def errors(c, ref, scale) -> dict:
    d = cp.abs(c.astype(cp.float64) - ref)
    rel = d / cp.maximum(cp.abs(ref), 1e-300)
    return {"median_rel": float(cp.median(rel)), "max_comp": float(cp.max(d / scale)),
            "nonfinite": int(cp.count_nonzero(~cp.isfinite(c)))}


def run(engine: str, a, b, c):
    if engine == "cublas_fp32":
        cp.matmul(a, b, out=c)
    elif engine == "cublas_tf32":
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
            c[...] = cp.asarray(torch.matmul(ta, tb))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    elif engine == "int8x_7":
        from sgemm.int8x import runner
        c[...] = runner.gemm(a, b, n_moduli=7, on_loss="ignore")
    elif engine == "fp32_int8x":
        from sgemm import plan_cache
        from sgemm.int8x import route
        route.ALWAYS = True
        # the plan cache keys on the call's arguments, not on ALWAYS: a
        # "fp32" plan made under the other setting must not answer here
        plan_cache.clear()
        try:
            sgemm.gemm(a, b, c, precision="fp32")
        finally:
            route.ALWAYS = False
            plan_cache.clear()
    else:
        sgemm.gemm(a, b, c, precision=engine)
    cp.cuda.Device().synchronize()


def run_noting(engine: str, a, b, c) -> dict:
    """run(), and what the integer engine decided: for "int8x" whether the
    scaling check warned, for "fp32_int8x" which engine ran (the check's
    verdict, read from sgemm.int8x.device.summaries on the same operands)."""
    import warnings

    from sgemm.int8x import bound, device, moduli, route
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(engine, a, b, c)
    note = {}
    if engine == "int8x":
        note["warned"] = any(issubclass(w.category, bound.Int8xAccuracyWarning)
                             for w in caught)
    elif engine == "fp32_int8x":
        k = a.shape[1]
        # a row-major C runs as C^T = B^T A^T (sgemm/int8x/route.py); the
        # statistics do not depend on the moduli count
        col = c.shape[0] <= 1 or c.strides[0] == 4
        sa, sb = device.summaries(a, b) if col else device.summaries(b.T, a.T)
        buds = [moduli.budget(n, k) for n in route.FP32_MODULI]
        note["ran"] = next((f"int8x/{bud.n}" for bud in buds
                            if bound.holds(sa, sb, k, bud.alpha, bud.beta)), "tf32x3")
    return note


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ks", default=",".join(map(str, KS)))
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--seed", type=int, default=20261126)
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    engines = args.engines.split(",")
    props = cp.cuda.runtime.getDeviceProperties(0)
    rows = []
    for cls in args.classes.split(","):
        for k in ks:
            n = 1024 if k <= 16384 else 512
            rs = cp.random.RandomState(args.seed + k + len(rows))
            a, b = operand(rs, cls, (n, k)), operand(rs, cls, (k, n))
            a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
            ref = a64 @ b64
            scale = cp.maximum(cp.abs(a64) @ cp.abs(b64), 1e-300)
            del a64, b64
            row = {"class": cls, "K": k, "M": n, "N": n}
            for e in engines:
                c = cp.full((n, n), cp.nan, dtype=cp.float32)
                try:
                    note = run_noting(e, a, b, c)
                    row[e] = {**errors(c, ref, scale), **note}
                except Exception as ex:  # noqa: BLE001 -- an engine that refuses is reported
                    row[e] = {"error": f"{type(ex).__name__}: {str(ex)[:160]}"}
            rows.append(row)
            cells = "  ".join(f"{e} {row[e]['median_rel']:.1e}/{row[e]['max_comp']:.1e}"
                              if "median_rel" in row[e] else f"{e} FAIL" for e in engines)
            print(f"{cls:8s} K={k:6d}  {cells}", flush=True)
            del a, b, ref, scale
            cp.get_default_memory_pool().free_all_blocks()
    out = {"device": props["name"].decode(), "date": datetime.date.today().isoformat(),
           "sgemm": getattr(sgemm, "__version__", "?"), "engines": engines, "rows": rows,
           "metrics": {"median_rel": "median over entries of |C - C64| / |C64|",
                       "max_comp": "max over entries of |C - C64| / (|A| |B|)"}}
    path = os.path.join(os.environ.get("OUT", "."), "accuracy-table.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
