#!/usr/bin/env python3
"""Device check for the gemv_wide and fused split-K schemes (issue 5).

    bash: python3 scripts/schemes_check.py --out $OUT/schemes-h200-DATE.json [--tests]

One call does everything: precompile the scheme kernels in parallel, the GPU
tests of the schemes (--tests), then for each shape: the fp64 reference, our
variants (kernel="auto" with the shipped table, the heuristic alone, and
explicit kernel/params through tune.launches_for -- what plan.prepare would
launch), each checked against the reference before it is timed, beside
cuBLAS (cupy.matmul, FP32, TF32 off).  Stream timing: sgemm.bench.harness
(CUDA events, warm-up, median); graph timing for small problems and for
every variant of the gemv / deep-K shapes: bench/suite.py's _graph_time
(PyTorch capture, since CuPy refuses to capture cuBLAS) for ours and cuBLAS
alike.  Writes JSON and prints a short table last.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")          # FP32 cuBLAS, not TF32
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

# (user m, n, k, ta, tb) and the variants to time besides auto/heuristic:
# (label, kernel name, params overrides applied to the spec's own choice)
SHAPES = [
    ((1, 4096, 4096, False, False), [("wide s16", "gemv_wide", {"split_k": 16}),
                                     ("wide s32", "gemv_wide", {"split_k": 32}),
                                     ("wide s64", "gemv_wide", {"split_k": 64}),
                                     ("wide s32 t512", "gemv_wide", {"split_k": 32, "threads": 512}),
                                     ("wide s32 bk256", "gemv_wide", {"split_k": 32, "BK": 256}),
                                     ("gemv", "gemv", {}), ("splitk", "splitk", {})]),
    ((1, 4096, 4096, False, True), [("gemv", "gemv", {})]),
    ((4096, 1, 4096, False, False), [("gemv", "gemv", {})]),
    ((4096, 1, 4096, True, False), [("wide", "gemv_wide", {}), ("gemv", "gemv", {})]),
    ((16, 8192, 2048, False, False), [("wide", "gemv_wide", {}), ("gemv", "gemv", {}),
                                      ("wide s8", "gemv_wide", {"split_k": 8})]),
    ((512, 512, 512, False, False), [("small", "small", {}),
                                     ("fused 64x64 s2", "splitk_fused", {"cfg": "large", "split_k": 2}),
                                     ("fused 64x64 s4", "splitk_fused", {"cfg": "large", "split_k": 4}),
                                     ("fused 32x32 s2", "splitk_fused", {"cfg": "small", "split_k": 2}),
                                     ("unfused 64x64 s4", "splitk", {"cfg": "large", "split_k": 4})]),
    ((384, 384, 384, False, False), [("small", "small", {}),
                                     ("fused 64x64 s2", "splitk_fused", {"cfg": "large", "split_k": 2}),
                                     ("fused 64x64 s4", "splitk_fused", {"cfg": "large", "split_k": 4}),
                                     ("fused 32x32 s2", "splitk_fused", {"cfg": "small", "split_k": 2}),
                                     ("unfused 64x64 s4", "splitk", {"cfg": "large", "split_k": 4})]),
    ((256, 256, 256, False, False), [("small", "small", {}),
                                     ("fused 32x32 s2", "splitk_fused", {"cfg": "small", "split_k": 2}),
                                     ("fused 64x64 s4", "splitk_fused", {"cfg": "large", "split_k": 4})]),
    ((256, 256, 65536, False, False), [("fused", "splitk_fused", {}), ("unfused", "splitk", {}),
                                       ("fused x2", "splitk_fused", {"mul": 2}),
                                       ("fused /2", "splitk_fused", {"mul": 0.5})]),
    ((128, 128, 131072, False, False), [("fused", "splitk_fused", {}), ("unfused", "splitk", {}),
                                        ("fused 32x32", "splitk_fused", {"cfg": "small", "split_k": 32}),
                                        ("fused /2", "splitk_fused", {"mul": 0.5})]),
    ((512, 512, 16384, False, False), [("fused", "splitk_fused", {}), ("unfused", "splitk", {}),
                                       ("fused x2", "splitk_fused", {"mul": 2}),
                                       ("fused s16", "splitk_fused", {"split_k": 16})]),
]
GRAPH_MAX_FLOPS = 2 * 512 ** 3


def key(s):
    m, n, k, ta, tb = s
    t = ("T" if ta else "N") + ("T" if tb else "N")
    return f"{m}x{n}x{k}" + ("" if t == "NN" else f":{t}")


def precompile():
    from sgemm import tune
    from sgemm.kernels.registry import KERNELS
    items = []
    for s in KERNELS.values():
        if "scheme" not in s.extra:
            continue
        for _, p, ta, tb, al in s.instantiations():
            items.append((s.source, s.name_expression(p, ta, tb, al), "sm_90a"))
    t0 = time.time()
    bad = {k: v for k, v in tune.compile_all(items).items() if v}
    print(f"precompiled {len(items)} in {time.time() - t0:.1f} s; problems: {bad}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tests", action="store_true")
    ap.add_argument("--test-timeout", type=int, default=150)
    args = ap.parse_args()
    precompile()
    result = {"date": time.strftime("%Y-%m-%d"), "rows": []}
    if args.tests:
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "--maxfail=10",
               "tests/gpu/test_schemes_gpu.py", "tests/gpu/test_determinism.py",
               "tests/gpu/test_gemm_gpu.py", "tests/gpu/test_concurrency.py",
               "-k", os.environ.get("SCHEMES_K", "fused or wide or splitk or gemv or scheme")]
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.test_timeout)
            tail = (r.stdout + r.stderr)[-4000:]
            rc = r.returncode
        except subprocess.TimeoutExpired as e:
            tail = ((e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))[-4000:]
            rc = "timeout"
        print(tail, flush=True)
        result["tests"] = {"rc": rc, "seconds": round(time.time() - t0, 1),
                           "tail": tail.strip().splitlines()[-3:] if tail.strip() else []}

    import cupy as cp
    import numpy as np
    import sgemm
    from sgemm import dispatch, tune
    from sgemm.bench import harness
    from sgemm.kernels.registry import KERNELS
    from sgemm.runtime import launcher
    import suite as S                              # bench/suite.py: _graph_time, _torch_matmul

    dev_name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    result["device"] = dev_name
    stream = cp.cuda.Stream(non_blocking=True)

    def stream_ms(fn):
        t = harness.time_launches(lambda i: fn(), stream, 1, 15, False)
        return statistics.median(t.samples_ms)

    for shape, variants in SHAPES:
        m, n, k, ta, tb = shape
        rs = cp.random.RandomState(m * 31 + n + k)
        a = rs.standard_normal((k, m) if ta else (m, k), dtype=cp.float32)
        b = rs.standard_normal((n, k) if tb else (k, n), dtype=cp.float32)
        A = a.T if ta else a
        B = b.T if tb else b
        # contiguous fp64 copies: the transposed-view fp64 product gave err 1.0 for
        # 4096x1x4096:TN on cuBLAS and ours alike in the first run
        ref = cp.matmul(cp.ascontiguousarray(A, dtype=cp.float64),
                        cp.ascontiguousarray(B, dtype=cp.float64))
        tol = 1e-5 * max(1.0, math.sqrt(k / 4096))
        small = 2 * m * n * k <= GRAPH_MAX_FLOPS or min(m, n) <= 16 or k >= 16384

        def relerr(C):
            if bool(cp.isnan(C).any()):
                return float("inf")
            return float(cp.linalg.norm((C.astype(cp.float64) - ref).ravel())
                         / cp.linalg.norm(ref.ravel()))

        # cuBLAS
        Cc = cp.empty((m, n), cp.float32)
        with stream:
            cub = stream_ms(lambda: cp.matmul(A, B, out=Cc))
        cub_err = relerr(cp.matmul(A, B))
        cub_g = None
        if small:
            enq, _ = S._torch_matmul(A, B)
            cub_g = S._graph_time(enq)
        print(f"{key(shape)}: cuBLAS {cub * 1e3:.2f} us (graph "
              f"{cub_g * 1e3 if cub_g else float('nan'):.2f}) err {cub_err:.1e}", flush=True)

        runs = [("auto", None, None), ("heuristic", None, None)] + [
            (lab, kn, ov) for lab, kn, ov in variants]
        for lab, kn, ov in runs:
            row = {"shape": key(shape), "variant": lab, "cublas_us": cub * 1e3,
                   "cublas_graph_us": cub_g * 1e3 if cub_g else None, "cublas_err": cub_err}
            try:
                C = cp.full((m, n), cp.nan, cp.float32)
                if lab == "heuristic":
                    os.environ["SGEMM_TUNED"] = "0"
                p = sgemm.plan(A, B, C, kernel="auto")
                os.environ.pop("SGEMM_TUNED", None)
                spec, params = p.kernel, p.params
                if kn is not None:
                    spec = KERNELS[kn]
                    ov = dict(ov)
                    base = dispatch.spec_params(spec, p.problems[0], p.device)
                    if "cfg" in ov:
                        base = spec.configs[ov.pop("cfg")].replace(split_k=base.split_k)
                    if "mul" in ov:
                        base = base.replace(split_k=max(1, int(base.split_k * ov.pop("mul"))))
                    params = base.replace(**ov)
                    why = spec.can_implement(params, p.device.smem_optin)
                    if why:
                        raise ValueError("; ".join(why))
                launches = tune.launches_for(spec, params, p.problems, p.device)

                def enqueue(h=None, launches=launches):
                    s = stream if h is None else h
                    for l in launches:
                        launcher.launch(l.kernel, l.grid, l.block, l.smem, s, l.args)

                enqueue()
                stream.synchronize()
                err = relerr(C)
                rep = []
                for _ in range(3):                      # bitwise repeatability
                    C.fill(cp.nan)
                    cp.cuda.Device().synchronize()
                    enqueue()
                    stream.synchronize()
                    rep.append(cp.asnumpy(C).tobytes())
                row.update(kernel=spec.name, params=params.as_dict(),
                           scheme=dispatch.scheme_for(spec, params, p.problems[0]),
                           launches=len(launches), grid=list(launches[0].grid), err=err,
                           ok=err < tol, bitwise_repeat=len(set(rep)) == 1)
                ours = stream_ms(enqueue)
                row.update(ours_us=ours * 1e3, ratio=cub / ours)
                if small:
                    cp.cuda.Device().synchronize()
                    g = S._graph_time(lambda h: enqueue(h))
                    row.update(graph_us=g * 1e3, graph_ratio=cub_g / g)
                print(f"  {lab:<18} {spec.name:>12} split={params.split_k:<3} "
                      f"{row['ours_us']:8.2f} us  ratio {row['ratio']:.2f}"
                      + (f"  graph {row['graph_us']:7.2f} us ratio {row['graph_ratio']:.2f}"
                         if 'graph_us' in row else "")
                      + f"  err {err:.1e} {'ok' if row['ok'] else 'FAIL'}"
                      + ("" if row["bitwise_repeat"] else " NONDETERMINISTIC"), flush=True)
            except Exception as e:  # noqa: BLE001 -- record and go on
                os.environ.pop("SGEMM_TUNED", None)
                row["error"] = f"{type(e).__name__}: {e}"[:300]
                print(f"  {lab:<18} ERROR {row['error']}", flush=True)
            result["rows"].append(row)
        del ref
        cp.get_default_memory_pool().free_all_blocks()

    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"\n{'shape':<18} {'variant':<18} {'ours us':>9} {'cuBLAS':>8} {'ratio':>6} "
          f"{'graph':>8} {'cuB gr':>8} {'g.ratio':>7}")
    for r in result["rows"]:
        if "ours_us" not in r:
            continue
        g = (f"{r['graph_us']:8.2f} {r['cublas_graph_us']:8.2f} {r['graph_ratio']:7.2f}"
             if r.get("graph_us") else "")
        print(f"{r['shape']:<18} {r['variant']:<18} {r['ours_us']:9.2f} {r['cublas_us']:8.2f} "
              f"{r['ratio']:6.2f} {g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
