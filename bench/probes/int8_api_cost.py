"""Probe, GPU: what the integer engine costs through the public API against
the pipeline called directly, and why its B conversion measured 1.80 ms in
one probe and 3.29-4.17 ms in another at 16384^3.  Not part of the package;
one process, cuBLAS in the same run.

    OUT=dir python bench/probes/int8_api_cost.py [SIZES...]     # default 8192 16384

Per size (A and B column-major, as bench/probes/int8_gemm.py passes them;
N(0,1), so the scaling check passes and "fp32" takes the engine):
  * correctness first: sgemm.gemm(precision="int8x") equals the pipeline on
    the problem the route runs (C^T = B^T A^T for its row-major output) bit
    for bit, "fp32" equals "int8x", both near cupy.matmul;
  * time, as _gpu.tfn does (median of five batches of REPS calls between
    two CUDA events on one stream, two warm-ups) and one call alone between
    two events (median of SINGLE; what int8_gemm.py's numbers are: host
    work before the first launch shows there, in a loop it hides behind the
    previous call's GEMMs):
      previous  -- the pipeline as its one-call function ran it before the runner: the
                   step functions in sequence, workspace per step, one
                   synchronisation between the conversions and the GEMMs;
      pipeline  -- runner.gemm (the runner, workspace per call);
      int8x     -- sgemm.gemm(a, b, precision="int8x") (plan cache, kept workspace);
      fp32      -- sgemm.gemm(a, b, precision="fp32");
      cublas    -- cupy.matmul, CUPY_TF32=0.
At 16384^3 (the size where the notes disagree), the conversion of B (n =
16384 rows of k = 16384) by device.convert, for B column-major (its columns
contiguous: "rows" reads each once) and row-major ("tiles": a row-maximum
pass, then tiles), each route forced on each layout, with the statistics
and without, batched and alone; and the rows route on column-major B of
16384 rows of k = 8192 and 8192 rows of k = 16384, its time per element
(row length against footprint).

Writes $OUT/int8_api_cost.json and prints a line per measurement.
"""
import datetime
import json
import os
import sys
import time

os.environ["CUPY_TF32"] = "0"          # cupy.matmul FP32 as cuBLAS SGEMM, before import
import cupy as cp
import numpy as np

import _gpu

import sgemm
from sgemm import plan_cache
from sgemm.int8x import bound as BD
from sgemm.int8x import device as D
from sgemm.int8x import runner as RN
from sgemm.int8x import moduli as M
from sgemm.int8x import runner

REPS = {8192: 4, 16384: 2}
SINGLE = 7


def timed(f, reps):
    """{batched: ms a call in a batch, single: ms of one call alone}."""
    return {"batched_ms": _gpu.tfn(f, reps) / 1e3, "single_ms": _gpu.alone(f, SINGLE)}


def previous(a, b):
    """The one-call pipeline before the runner: the steps, one synchronisation between
    the conversions and the GEMMs, every buffer from the pool per step."""
    k = a.shape[1]
    bud = M.budget(8, k)
    mods = D.constants()
    words = D.summary_words()
    flags = words.view(np.int32).reshape(-1)
    pa, mu = D.convert(a, 1, bud.alpha, flags[0:1], stats=words[0])
    pb, nu = D.convert(b, 0, bud.beta, flags[2 * BD.WORDS:2 * BD.WORDS + 1],
                       stats=words[1])
    w = words.get()
    sa, sb = BD.Summary.from_words(w[0]), BD.Summary.from_words(w[1])
    if sa.bad or sb.bad or not BD.holds(sa, sb, k, bud.alpha, bud.beta):
        raise RuntimeError("previous: the check failed on N(0,1) data")
    planes = D.int8_gemm(pa, pb, mods)
    del pa, pb
    return D.garner(planes, mods, mu, nu)


def check(a, b) -> dict:
    with _gpu.stream:
        got = sgemm.gemm(a, b, precision="int8x")
        want = RN.gemm(b.T, a.T).T                      # the route's problem: C^T = B^T A^T
        fp32 = sgemm.gemm(a, b, precision="fp32")
        ref = cp.matmul(a, b)
        prev = previous(b.T, a.T).T
        rec = {"int8x_equals_pipeline": bool(cp.array_equal(got, want)),
               "fp32_equals_int8x": bool(cp.array_equal(fp32, got)),
               "previous_equals_pipeline": bool(cp.array_equal(prev, want)),
               "max_rel_vs_cublas": float(cp.max(cp.abs(got - ref)) / cp.max(cp.abs(ref))),
               "fp32_scheme": sgemm.plan(a, b, precision="fp32").scheme}
    _gpu.stream.synchronize()
    return rec


def products(s: int) -> dict:
    rng = cp.random.default_rng(s)
    a = cp.asfortranarray(rng.standard_normal((s, s), dtype=cp.float32))
    b = cp.asfortranarray(rng.standard_normal((s, s), dtype=cp.float32))
    rec = {"m": s, "n": s, "k": s, "reps": REPS.get(s, 2)}
    rec.update(check(a, b))
    hits = plan_cache.stats["hits"]
    rows = {"previous": lambda: previous(a, b), "pipeline": lambda: RN.gemm(a, b),
            "int8x": lambda: sgemm.gemm(a, b, precision="int8x"),
            "fp32": lambda: sgemm.gemm(a, b, precision="fp32"),
            "cublas": lambda: cp.matmul(a, b)}
    flops = 2.0 * s ** 3
    for name, f in rows.items():
        r = timed(f, rec["reps"])
        r["tflops"] = flops / r["batched_ms"] / 1e9
        r["tflops_single"] = flops / r["single_ms"] / 1e9
        rec[name] = r
        print(f"{s}^3 {name:9s} {r['batched_ms']:8.3f} ms batched ({r['tflops']:6.1f} TFLOPS)"
              f"  {r['single_ms']:8.3f} ms alone ({r['tflops_single']:6.1f})", flush=True)
    rec["plan_cache_hits"] = plan_cache.stats["hits"] - hits
    rec["kept_workspace_bytes"] = runner.kept_bytes()
    rec["workspace_bytes"] = D.workspace_bytes(s, s, s)
    return rec


def convert_b(b, s: int, layout: str, out: dict) -> None:
    """B (s rows of s: b's columns) converted by each route, with the
    statistics and without."""
    bud = M.budget(8, s)
    words = D.summary_words()
    floor = 4 * s * s + 8 * s * D.padded_k(s)          # float32 read once, 8 planes written
    natural = D.route_for(*D._as_rows(b, 0)[2:])
    for route in ("rows", "tiles"):
        for stats in (True, False):
            st = words[1] if stats else False
            r = timed(lambda: D.convert(b, 0, bud.beta, stats=st, route=route), 3)
            r["floor_gb_per_s"] = floor / r["batched_ms"] / 1e6
            key = f"{layout}-major B, {route}{'' if stats else ', no statistics'}"
            r.update(layout=layout, route=route, natural=route == natural, stats=stats)
            out[key] = r
            print(f"{s}^3 convert {key:40s} {r['batched_ms']:7.3f} ms batched, "
                  f"{r['single_ms']:7.3f} alone, {r['floor_gb_per_s']:5.0f} GB/s of the "
                  f"floor{'  (its own route)' if r['natural'] else ''}", flush=True)


def convert_rows_k(b, out: dict) -> None:
    """The rows route on column-major B (k x rows): time per element."""
    k, rows = b.shape
    kb = M.budget(8, k)
    words = D.summary_words()
    r = timed(lambda: D.convert(b, 0, kb.beta, stats=words[1], route="rows"), 3)
    r["ns_per_element"] = r["batched_ms"] * 1e6 / (k * rows)
    out[f"col-major B, rows, {rows} rows of k={k}"] = r
    print(f"convert col-major B, rows: {rows} rows of k={k}  {r['batched_ms']:7.3f} ms batched "
          f"({r['ns_per_element']:.4f} ns an element)", flush=True)


def conversions(s: int) -> dict:
    """Convert B at s^3 per layout and route; then the rows route on half
    the rows at full length and on all rows at half length, which tells a
    cost of the row length (all RCACHE registers of a thread live at s =
    16384) from one of the footprint (planes 8 s^2 bytes)."""
    out = {}
    rng = cp.random.default_rng(s + 1)
    for layout in ("col", "row"):
        host = rng.standard_normal((s, s), dtype=cp.float32)
        convert_b(cp.asfortranarray(host) if layout == "col" else host, s, layout, out)
        del host
        cp.get_default_memory_pool().free_all_blocks()
    for k, rows in ((s // 2, s), (s, s // 2)):
        convert_rows_k(cp.asfortranarray(rng.standard_normal((k, rows), dtype=cp.float32)), out)
    full = out["col-major B, rows"]
    full["ns_per_element"] = full["batched_ms"] * 1e6 / (s * s)
    cp.get_default_memory_pool().free_all_blocks()
    return out


def main(argv) -> int:
    sizes = [int(x) for x in argv] or [8192, 16384]
    t0 = time.time()
    props = cp.cuda.runtime.getDeviceProperties(0)
    res = {"probe": "int8_api_cost", "device": props["name"].decode(),
           "date": datetime.date.today().isoformat(), "cupy": cp.__version__,
           "keep_bytes": runner.KEEP_BYTES, "records": []}
    path = os.path.join(os.environ.get("OUT", "."), "int8_api_cost.json")
    for s in sizes:
        res["records"].append(products(s))
        cp.get_default_memory_pool().free_all_blocks()
        if s == 16384:
            res["convert_b_16384"] = conversions(s)
        res["seconds"] = time.time() - t0
        with open(path, "w") as fh:                       # kept after every size
            json.dump(res, fh, indent=1)
    print("wrote", path, f"({time.time() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
