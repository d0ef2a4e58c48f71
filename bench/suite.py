#!/usr/bin/env python
"""Public shape suite (issue 5): sgemm's auto-dispatched plan against cuBLAS.

    python bench/suite.py --out results.json [--shapes bench/shapes/public.txt]

For every shape, in one process and on the same operands:
  1. correctness first: C poisoned with NaN, beta = 0, against an fp64
     product on the GPU (‖out - ref‖_F / ‖ref‖_F; NaN fails), and once more
     with alpha = 0.5, beta = -1.5 against alpha*ref + beta*C0;
  2. device time, CUDA events, median of alternating batches of ours
     (``plan.execute()``) and cuBLAS (``cupy.matmul`` / batched matmul, TF32
     off), each batch about 2 ms long, after warm-up;
  3. for squares <= 512 (and other problems up to 512^3): the same under CUDA
     graphs, 20 GEMMs captured per graph (PyTorch's capture, since CuPy
     refuses to capture cuBLAS; cuBLAS through torch.matmul on the same
     memory, TF32 off), time per GEMM;
then the host overhead per call (CPU wall time of 1000 back-to-back calls on
64^3, median of 5): a cached plan's ``execute()``, ``sgemm.gemm``,
``sgemm.plan_cache.gemm`` and ``cupy.matmul``, with and without an output.
Writes JSON to --out and prints a short table last: per-shape ratio
cuBLAS time / our time (> 1: we are faster), geomean and minimum.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
import zlib
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")          # FP32 cuBLAS, not TF32

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

GRAPH_MAX_FLOPS = 2 * 512 ** 3
GRAPH_CALLS = 20


def _operands(cp, sh, seed):
    rs = cp.random.RandomState(seed)
    a_st = (sh.k, sh.m) if sh.ta else (sh.m, sh.k)
    b_st = (sh.n, sh.k) if sh.tb else (sh.k, sh.n)
    lead = (sh.batch,) if sh.batch > 1 else ()
    a = rs.standard_normal(lead + a_st, dtype=cp.float32)
    b = rs.standard_normal(lead + b_st, dtype=cp.float32)
    A = a.swapaxes(-1, -2) if sh.ta else a
    B = b.swapaxes(-1, -2) if sh.tb else b
    return A, B


def _plan(sgemm, sh, A, B, C, **kw):
    if sh.batch > 1:
        return sgemm.Plan(A, B, C, _ndims=(3,), _what="gemm_batched", **kw)
    return sgemm.plan(A, B, C, **kw)


def _relerr(cp, out, ref) -> float:
    if bool(cp.isnan(out).any()) and not bool(cp.isnan(ref).any()):
        return float("inf")
    d = float(cp.linalg.norm((out.astype(cp.float64) - ref).ravel()))
    r = float(cp.linalg.norm(ref.ravel()))
    return d / r if r else d


def _bench_pair(cp, fa, fb, reps: int, target_ms: float = 2.0):
    """Median ms per call of fa and fb, alternating batches (drift hits both)."""
    s = cp.cuda.get_current_stream()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()

    def one(f, n):
        e0.record(s)
        for _ in range(n):
            f()
        e1.record(s)
        e1.synchronize()
        return cp.cuda.get_elapsed_time(e0, e1) / n

    for f in (fa, fb):
        for _ in range(3):
            f()
    na = int(min(max(1, math.ceil(target_ms / max(one(fa, 1), 1e-3))), 2000))
    nb = int(min(max(1, math.ceil(target_ms / max(one(fb, 1), 1e-3))), 2000))
    ta, tb = [], []
    for _ in range(reps):
        ta.append(one(fa, na))
        tb.append(one(fb, nb))
    return statistics.median(ta), statistics.median(tb), ta, tb


def _graph_time(enqueue, reps: int = 15) -> float:
    """ms per GEMM: GRAPH_CALLS calls captured in one CUDA graph (PyTorch's
    capture: CuPy refuses to capture cuBLAS calls), replayed 5 times per
    timed sample; median of ``reps`` samples."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            enqueue(side.cuda_stream)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h = torch.cuda.current_stream().cuda_stream
        for _ in range(GRAPH_CALLS):
            enqueue(h)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        e0.record()
        for _ in range(5):
            g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / (5 * GRAPH_CALLS))
    return statistics.median(times)


def _torch_matmul(A, B):
    """cuBLAS through PyTorch on the same memory (strides kept), TF32 off."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    tA, tB = torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda")
    out = torch.empty(tuple(A.shape[:-1]) + (B.shape[-1],), device="cuda", dtype=torch.float32)

    def enqueue(_handle):
        torch.matmul(tA, tB, out=out)
    return enqueue, out


def _precompile(sgemm, shapes, dev):
    """Compile what the dispatcher will pick, in parallel, before timing."""
    from sgemm import dispatch, tune
    items = []
    for sh in shapes:
        for aligned in (True, False):
            pr = tune.canonical(sh, aligned)
            try:
                spec, p = dispatch.choose(pr, dev, "auto", None)
            except Exception:  # noqa: BLE001
                continue
            items.append((*tune._instantiation(spec, p, pr), dev.arch))
    t0 = time.time()
    bad = {k: v for k, v in tune.compile_all(items).items() if v}
    print(f"precompiled {len(set(items))} instantiations in {time.time() - t0:.1f} s"
          + (f"; problems: {bad}" if bad else ""), flush=True)


def run_shape(cp, sgemm, sh, dev, args) -> dict:
    from sgemm import dispatch
    row = {"shape": sh.key, "m": sh.m, "n": sh.n, "k": sh.k, "ta": sh.ta, "tb": sh.tb,
           "batch": sh.batch, "flops": sh.flops}
    A, B = _operands(cp, sh, seed=zlib.crc32(sh.key.encode()) & 0xffff)
    out_shape = ((sh.batch,) if sh.batch > 1 else ()) + (sh.m, sh.n)
    C = cp.full(out_shape, cp.nan, dtype=cp.float32)
    p = _plan(sgemm, sh, A, B, C, kernel=args.kernel)
    row.update(kernel=p.kernel.name if p.kernel else None, scheme=p.scheme,
               params=p.params.as_dict() if p.params else None, grid=list(p.grid),
               launches=len(p.launches), waves=round(p.waves, 3),
               shape_class=dispatch.shape_class(p.problems[0]),
               tuned=dispatch.lookup(p.problems[0], p.device) is not None)
    # 1. correctness
    p.execute()
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    row["nan"] = bool(cp.isnan(C).any())
    row["err"] = _relerr(cp, C, ref)
    Cb = cp.matmul(A, B)
    row["err_cublas"] = _relerr(cp, Cb, ref)
    C0 = cp.random.RandomState(3).standard_normal(out_shape, dtype=cp.float32)
    C2 = C0.copy()
    p2 = _plan(sgemm, sh, A, B, C2, alpha=0.5, beta=-1.5, kernel=args.kernel)
    p2.execute()
    row["err_alpha_beta"] = _relerr(cp, C2, 0.5 * ref - 1.5 * C0.astype(cp.float64))
    tol = 1e-5 * max(1.0, math.sqrt(sh.k / 4096))
    row["ok"] = (not row["nan"]) and row["err"] < tol and row["err_alpha_beta"] < tol
    del ref, C0, C2, p2
    # 2. device time, ours vs cuBLAS on the same operands
    Cc = cp.empty(out_shape, dtype=cp.float32)
    ours_ms, cub_ms, ta, tb = _bench_pair(cp, p.execute, lambda: cp.matmul(A, B, out=Cc),
                                          args.reps)
    row.update(ours_ms=ours_ms, cublas_ms=cub_ms, ratio=cub_ms / ours_ms,
               ours_tflops=sh.flops / ours_ms / 1e9, cublas_tflops=sh.flops / cub_ms / 1e9,
               ours_spread=(max(ta) - min(ta)) / ours_ms, cublas_spread=(max(tb) - min(tb)) / cub_ms)
    # 3. CUDA graphs for small problems
    if args.graphs and sh.flops // sh.batch <= GRAPH_MAX_FLOPS and sh.batch == 1:
        try:
            cp.cuda.Device().synchronize()
            g_ours = _graph_time(lambda h: p.execute(stream=h))
            enqueue, tout = _torch_matmul(A, B)
            g_cub = _graph_time(enqueue)
            row.update(graph_ours_ms=g_ours, graph_cublas_ms=g_cub, graph_ratio=g_cub / g_ours,
                       graph_check=_relerr(cp, C, cp.asarray(tout).astype(cp.float64)))
        except Exception as e:  # noqa: BLE001
            row["graph_error"] = f"{type(e).__name__}: {e}"
    return row


def host_overhead(cp, sgemm, n: int = 1000, size: int = 64) -> dict:
    from sgemm import plan_cache
    a = cp.random.standard_normal((size, size), dtype=cp.float32)
    b = cp.random.standard_normal((size, size), dtype=cp.float32)
    c = cp.empty((size, size), dtype=cp.float32)
    p = sgemm.plan(a, b, c)
    cases = {
        "plan.execute()": p.execute,
        "sgemm.gemm(a, b, c)": lambda: sgemm.gemm(a, b, c),
        "plan_cache.gemm(a, b, c)": lambda: plan_cache.gemm(a, b, c),
        "cupy.matmul(a, b, out=c)": lambda: cp.matmul(a, b, out=c),
        "sgemm.gemm(a, b)": lambda: sgemm.gemm(a, b),
        "plan_cache.gemm(a, b)": lambda: plan_cache.gemm(a, b),
        "cupy.matmul(a, b)": lambda: cp.matmul(a, b),
    }
    from sgemm.runtime import launcher
    l0 = p.launches[0]
    cases["launcher.launch (floor)"] = lambda: launcher.launch(l0.kernel, l0.grid, l0.block,
                                                               l0.smem, 0, l0.args)
    # the same launch through cuLaunchKernelEx with its arguments packed once
    # (what plans and the plan cache use unless SGEMM_LAUNCH=core)
    prep = launcher.PreparedLaunch(l0.kernel, l0.grid, l0.block, l0.smem, l0.args)
    cases["PreparedLaunch (floor)"] = lambda: prep(0)
    out = {}
    for name, f in cases.items():
        for _ in range(20):
            f()
        cp.cuda.Device().synchronize()
        walls, cpus = [], []
        for _ in range(5):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                f()
            t1, c1 = time.perf_counter(), time.process_time()
            cp.cuda.Device().synchronize()
            walls.append((t1 - t0) / n * 1e6)
            cpus.append((c1 - c0) / n * 1e6)
        out[name] = {"wall_us": statistics.median(walls), "cpu_us": statistics.median(cpus)}
    out["_size"] = size
    out["_plan_cache_stats"] = dict(plan_cache.stats)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=str(ROOT / "bench" / "shapes" / "public.txt"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernel", default="auto")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--only", default="", help="substring filter on shape labels")
    ap.add_argument("--budget-s", type=float, default=0, help="skip shapes after this long")
    ap.add_argument("--no-graphs", dest="graphs", action="store_false")
    ap.add_argument("--no-host", dest="host", action="store_false")
    ap.add_argument("--no-precompile", dest="precompile", action="store_false")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw OUT's ratio plot from the JSON already there")
    args = ap.parse_args(argv)
    if args.replot:
        return _plot(args.out)

    import cupy as cp

    import sgemm
    from sgemm import dispatch
    from sgemm.runtime import device as devmod
    from sgemm.runtime import launcher
    from sgemm.runtime.compiler import nvrtc_version
    from sgemm.tune import read_shapes

    shapes = [s for s in read_shapes(args.shapes) if args.only in s.key]
    dev = devmod.info(0)
    env = {"device": dev.name, "sm_count": dev.sm_count, "arch": dev.arch,
           "gpu_key": dispatch.gpu_key(dev), "cupy": cp.__version__,
           "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
           "driver": cp.cuda.runtime.driverGetVersion(), "nvrtc": "%d.%d" % nvrtc_version(),
           "python": platform.python_version(), "cupy_tf32": os.environ.get("CUPY_TF32"),
           "tuned_tables": [str(t.path) for t in dispatch.load_tables(dev)],
           "tables_enabled": dispatch.tables_enabled(),
           "launch_path": "driver" if launcher.DRIVER_LAUNCH else "cuda.core",
           "defines": os.environ.get("SGEMM_DEFINES", ""),
           "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    print(json.dumps(env), flush=True)
    if args.precompile:
        _precompile(sgemm, shapes, dev)
    rows = []
    t_start = time.time()
    for sh in shapes:
        if args.budget_s and time.time() - t_start > args.budget_s:
            rows.append({"shape": sh.key, "skipped": "time budget"})
            continue
        t0 = time.time()
        try:
            row = run_shape(cp, sgemm, sh, dev, args)
        except Exception as e:  # noqa: BLE001 -- record and go on
            row = {"shape": sh.key, "error": f"{type(e).__name__}: {e}",
                   "trace": traceback.format_exc()[-2000:]}
        row["wall_s"] = round(time.time() - t0, 2)
        rows.append(row)
        _print_row(row)
        cp.get_default_memory_pool().free_all_blocks()
    host = host_overhead(cp, sgemm) if args.host else {}
    summary = _summary(rows, host)
    result = {"env": env, "rows": rows, "host_overhead": host, "summary": summary}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    _print_table(rows, summary, host)
    _plot(args.out)
    return 0 if summary["all_ok"] else 1


def _plot(out: str) -> int:
    """OUT-ratio.png next to the JSON (skipped, with a line, without matplotlib)."""
    try:
        from sgemm.bench.plots import plot_suite
        path = Path(out).with_name(Path(out).stem + "-ratio.png")
        plot_suite(json.loads(Path(out).read_text()), path)
        print(f"wrote {path}")
    except ImportError as e:
        print(f"no plot: {e}")
    return 0


def _print_row(r):
    if "error" in r or "skipped" in r:
        print(f"{r['shape']:>24}  {r.get('error') or r.get('skipped')}", flush=True)
        return
    g = f" graph {r['graph_ratio']:.2f}x" if "graph_ratio" in r else ""
    print(f"{r['shape']:>24} {r['kernel']:>13}/{r['scheme']:<6} err {r['err']:.1e} "
          f"{'ok' if r['ok'] else 'FAIL'}  ours {r['ours_ms']:.4f} ms  cuBLAS "
          f"{r['cublas_ms']:.4f} ms  ratio {r['ratio']:.2f}{g}", flush=True)


def _geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def _summary(rows, host) -> dict:
    done = [r for r in rows if "ratio" in r]
    ratios = [r["ratio"] for r in done]
    worst = min(done, key=lambda r: r["ratio"]) if done else None
    small_sq = [r for r in done if r["m"] == r["n"] == r["k"] and r["m"] <= 512
                and r["batch"] == 1 and "graph_ratio" in r]
    s = {"shapes": len(rows), "timed": len(done),
         "failed": [r["shape"] for r in rows if ("error" in r) or (not r.get("ok", True))],
         "geomean_ratio": _geomean(ratios), "min_ratio": worst["ratio"] if worst else None,
         "min_ratio_shape": worst["shape"] if worst else None,
         "below_0.8": [r["shape"] for r in done if r["ratio"] < 0.8],
         "graph_small_squares": {r["shape"]: round(r["graph_ratio"], 3) for r in small_sq},
         "graph_geomean_small_squares": _geomean([r["graph_ratio"] for r in small_sq])}
    s["all_ok"] = not s["failed"]
    if host:
        s["host_us"] = {k: round(v["wall_us"], 2) for k, v in host.items()
                        if isinstance(v, dict) and "wall_us" in v}
    return s


def _print_table(rows, s, host):
    print("\n" + "=" * 100)
    print(f"{'shape':>24} {'kernel/scheme':>20} {'err':>8} {'ours ms':>9} {'cuBLAS ms':>9} "
          f"{'ratio':>6} {'TFLOP/s':>7} {'graph':>6}")
    for r in rows:
        if "ratio" not in r:
            print(f"{r['shape']:>24}  {r.get('error') or r.get('skipped')}")
            continue
        g = f"{r['graph_ratio']:.2f}" if "graph_ratio" in r else "-"
        flag = "" if r["ok"] else " FAIL"
        print(f"{r['shape']:>24} {r['kernel'] + '/' + r['scheme']:>20} {r['err']:8.1e} "
              f"{r['ours_ms']:9.4f} {r['cublas_ms']:9.4f} {r['ratio']:6.2f} "
              f"{r['ours_tflops']:7.2f} {g:>6}{flag}")
    if host:
        print("host overhead per call (us, wall / cpu):  " + "  ".join(
            f"{k} {v['wall_us']:.1f}/{v['cpu_us']:.1f}" for k, v in host.items()
            if isinstance(v, dict) and "wall_us" in v))
    print(f"geomean ratio (cuBLAS/ours) {s['geomean_ratio']:.3f}   min {s['min_ratio']:.3f} "
          f"({s['min_ratio_shape']})   below 0.8: {len(s['below_0.8'])}   "
          f"graph geomean (squares <= 512) {s['graph_geomean_small_squares']:.3f}   "
          f"failed: {s['failed'] or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
