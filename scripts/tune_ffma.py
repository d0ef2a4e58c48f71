"""Check, then time, the FFMA rungs 8-11 against cuBLAS in one device call.

    python scripts/tune_ffma.py [--quick] [--only=NAME,NAME]

1. Compiles every instantiation it will launch, in parallel (disk cache).
2. Correctness of every registered config (small and large of rungs 8-11,
   forced) on odd shapes, all four transposes, aligned (float4) and offset
   views with tight or odd leading dimensions, beta 0 (C poisoned with NaN)
   and beta != 0, one strided batch with a broadcast operand.  Inputs carry
   NaN in their padding; C's padding must stay NaN (only m x n is written).
   Reference: float64 CuPy.  Tuning candidates get a shorter check.
3. Timing: canonical NN, aligned, at 2048^3, 4096^3, 8192^3 (random normal
   inputs), CUDA events on one stream, 3 warm-ups, median of 25; cuBLAS SGEMM
   (cupy.matmul, float32, TF32 off) timed in the same run on the same sizes.
   Then the other transposes and the unaligned path for a few configs.
Writes $OUT/ffma_tuning.json (raw numbers) and prints a short table last.

    python scripts/tune_ffma.py --edges=LABEL [--reps=N]
    python scripts/tune_ffma.py --edges-table OLD.json NEW.json

--edges times rung 9's named configs, direct and with split-K, on the shapes
where edge blocks and unaligned operands decide (EDGE_SHAPES: row-major user
operands as in bench/shapes/public.txt), the dispatcher's current choice
('auto'), and cuBLAS in the same process (timed before and after the
candidates), each verified against cuBLAS's result first.  Timing: CUDA
events around batches of ~0.5 ms of back-to-back calls, median of N batches
(as sgemm.tune times candidates).  Candidates marked 'f' split K with
sgemm.dispatch's two-launch scheme but with slices rounded *down* to a
multiple of 4 (EDGE_FLOOR), so the S slices run as one batched launch and the
remainder slice (< 4*S deep) is cheap; today's split_slices rounds up to BK
and its remainder slice, nearly as deep as the others, runs as a second,
serial launch.  Writes $OUT/edges-LABEL.json.  Run it once per source tree
(PYTHONPATH picks the package); --edges-table joins two runs.
"""
from __future__ import annotations

import os

os.environ.setdefault("CUPY_TF32", "0")

import importlib
import json
import math
import multiprocessing
import subprocess
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor

import cupy as cp
import numpy as np

from sgemm.kernels.params import TileParams
from sgemm.kernels.registry import KERNELS
from sgemm.problem import Problem
from sgemm.runtime import device as sgdev
from sgemm.runtime import launcher
from sgemm.runtime.compiler import compile_kernel

OUT = os.environ.get("OUT", "/tmp/ffma_out")
QUICK = "--quick" in sys.argv
# --only NAME,NAME: time only these candidates (plus cuBLAS); all registered
# configs still get the full correctness check.
ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")), None)
RUNGS = ["warptile", "double_buffer", "async", "swizzle"]
T = TileParams

# ---- candidates for timing (name, kernel, params) -----------------------------
L = T(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=8, threads=256)
L16 = L.replace(BK=16)
W128 = L.replace(BM=256, BK=16, WM=128, TM=16)           # 256x128, warps 2x4 of 128x32, 16x8
W64 = L.replace(BM=256, BK=8, WM=64, WN=64, TN=16)        # 256x128, warps 4x2 of 64x64, 8x16
# (label, kernel, params, variant): variant = trailing KPATH template argument of
# rungs 10/11 (bit 0: k-contiguous operand through registers, bit 1: fragment-
# pipelined main loop); None = the default instantiation (KPATH -1: fragment
# pipeline when TM*TN >= 128).
CANDIDATES = [
    ("wt_128x128x16", "warptile", L16, None),
    ("db_128x128x16", "double_buffer", L16, None),
    ("db_256x128x8_w64", "double_buffer", W64, None),
    ("db_256x128x8_w128", "double_buffer", W128.replace(BK=8), None),
    # 2026-11-22: BK=16 on the 256x128 rung-9 tile (50 KB: dynamic shared memory)
    ("db_256x128x16_w128", "double_buffer", W128, None),
    ("as_128x128x16_s2", "async", L16.replace(stages=2), None),
    ("as_256x128x16_s3_w128", "async", W128.replace(stages=3), None),
    ("as_256x128x8_s3_w64", "async", W64.replace(stages=3), None),
    ("as_256x128x8_s3_w64_k0", "async", W64.replace(stages=3), 0),
    ("as_256x128x8_s3_w64_k1", "async", W64.replace(stages=3), 1),
    ("as_256x128x8_s4_w64", "async", W64.replace(stages=4), None),
    ("as_256x128x8_s3_w64_t16x8", "async", W64.replace(stages=3, TM=16, TN=8), None),
    ("as_256x128x16_s3_w64", "async", W64.replace(BK=16, stages=3), None),
    ("sw_128x128x16_s3_g8", "swizzle", L16.replace(stages=3, swizzle=8), None),
    ("sw_256x128x16_s3_g8_w128", "swizzle", W128.replace(stages=3, swizzle=8), None),
    ("sw_256x128x8_s3_g8_w64", "swizzle", W64.replace(stages=3, swizzle=8), None),
    ("sw_256x128x8_s3_g16_w64", "swizzle", W64.replace(stages=3, swizzle=16), None),
]
# Candidates that get the full correctness suite (every one a config that may be
# registered after this run).
FULLCHECK = ["wt_128x128x16", "db_128x128x16", "db_256x128x8_w64", "db_256x128x8_w128",
             "db_256x128x16_w128",
             "as_128x128x16_s2", "as_256x128x16_s3_w128", "as_256x128x8_s3_w64",
             "as_256x128x8_s3_w64_t16x8", "sw_128x128x16_s3_g8", "sw_256x128x16_s3_g8_w128",
             "sw_256x128x8_s3_g8_w64", "sw_256x128x8_s3_g16_w64"]
PROFILE = ["db_128x128x16", "as_256x128x8_s3_w64"]
SIZES = [2048, 4096, 8192]


def log(*a):
    print(*a, flush=True)


class Cand:
    """One timed configuration: a spec, its params and an optional variant."""

    def __init__(self, name, spec, p, variant=None):
        self.name, self.spec, self.p, self.variant = name, spec, p, variant
        self._k = {}

    def expr(self, ta, tb, al):
        e = self.spec.name_expression(self.p, ta, tb, al)
        return e if self.variant is None else e[:-1] + f", {self.variant}>"

    def run(self, prob, dev, stream):
        if self.variant is None:
            return launcher.run(self.spec, self.p, prob, dev, stream)
        al = prob.aligned and self.spec.vector_loads
        key = (prob.ta, prob.tb, al)
        k = self._k.get(key)
        if k is None:
            from cuda.core import ObjectCode
            c = compile_kernel(self.spec.source, self.expr(*key), dev.arch)
            k = ObjectCode.from_cubin(c.cubin, symbol_mapping=c.symbol_mapping).get_kernel(
                self.expr(*key))
            smem = self.spec.dynamic_smem(self.p)
            if smem > 48 * 1024:
                launcher._allow_dynamic_smem(k, smem, dev.id)
            self._k[key] = k
        launcher.launch(k, self.spec.grid(prob, self.p), self.spec.block(self.p),
                        self.spec.dynamic_smem(self.p), stream, self.spec.args(prob))


# ---- compilation ------------------------------------------------------------------
def _compile(job):
    src, expr, arch = job
    try:
        c = compile_kernel(src, expr, arch)
        return job, c.resources(), None
    except Exception as e:  # noqa: BLE001 - report and go on
        return job, None, f"{type(e).__name__}: {e}"[:2000]


def precompile(items, arch):
    jobs = set()
    for cand, combos in items:
        for ta, tb, al in combos:
            jobs.add((cand.spec.source, cand.expr(ta, tb, al), arch))
    res = {}
    t0 = time.time()
    ctx = multiprocessing.get_context("spawn")   # the parent has a CUDA context
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 4), mp_context=ctx) as ex:
        for job, r, err in ex.map(_compile, sorted(jobs)):
            res[job[1]] = {"resources": r, "error": err}
            if err:
                log("COMPILE ERROR", job[1], err[:600])
    log(f"compiled {len(jobs)} instantiations in {time.time() - t0:.1f}s")
    return res


ALL4 = [(ta, tb) for ta in (False, True) for tb in (False, True)]


# ---- operands ------------------------------------------------------------------------
class Operand:
    """rows x cols column-major matrix inside a NaN-filled buffer (batch entries
    stride apart); .mat(b) is the float64 view of entry b."""

    def __init__(self, rows, cols, ld, offset, batch=1, stride=None, fill=True, rng=None):
        self.rows, self.cols, self.ld = rows, cols, ld
        self.stride = stride if stride is not None else ld * cols
        n = offset + self.stride * (batch - 1) + ld * cols + 8
        self.buf = cp.full(n, np.nan, dtype=cp.float32)
        self.offset, self.batch = offset, batch
        self.ptr = self.buf.data.ptr + 4 * offset
        if fill:
            for b in range(batch if self.stride else 1):
                v = self.view(b)
                v[:, :rows] = cp.asarray(rng.standard_normal((cols, rows)), dtype=cp.float32)

    def view(self, b=0):
        s = self.offset + b * self.stride
        return self.buf[s:s + self.ld * self.cols].reshape(self.cols, self.ld)

    def mat(self, b=0):
        return self.view(b)[:, :self.rows].T.astype(cp.float64)


def rel_err(out, ref):
    d = float(cp.linalg.norm(out - ref))
    r = float(cp.linalg.norm(ref))
    return d / r if r > 0 else d


def check_case(cases, m, n, k, ta, tb, aligned, beta, batch, rng, stream, dev):
    """Build one problem, run every (spec, p) on it, return failures."""
    def ld_for(rows, extra):
        return (-(-rows // 4) * 4 + 4) if aligned else rows + extra
    off = 0 if aligned else 1
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)
    lda, ldb, ldc = ld_for(ar, 0), ld_for(br, 1), ld_for(m, 3)
    sa = lda * ac + (4 if aligned else 5)
    sb = 0 if batch > 1 else None          # B broadcast over the batch
    sc = ldc * n + (8 if aligned else 3)
    A = Operand(ar, ac, lda, off, batch, sa if batch > 1 else None, rng=rng)
    B = Operand(br, bc, ldb, off + 2 if not aligned else 0, batch, sb, rng=rng)
    alpha = 1.5
    refs = []
    for b in range(batch):
        opa = A.mat(b).T if ta else A.mat(b)
        opb = B.mat(0).T if tb else B.mat(0)
        refs.append(alpha * (opa @ opb))
    C0 = cp.asarray(rng.standard_normal((batch, n, m)), dtype=cp.float32)
    fails = []
    for cand in cases:
        name = cand.name
        C = Operand(m, n, ldc, off + 1 if not aligned else 0, batch,
                    sc if batch > 1 else None, fill=False)
        if beta != 0:
            for b in range(batch):
                C.view(b)[:, :m] = C0[b]
        prob = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=A.ptr, lda=lda, b=B.ptr, ldb=ldb,
                       c=C.ptr, ldc=ldc, alpha=alpha, beta=beta, batch=batch,
                       stride_a=sa if batch > 1 else 0, stride_b=0,
                       stride_c=sc if batch > 1 else 0)
        try:
            cand.run(prob, dev, stream)
            stream.synchronize()
        except Exception as e:  # noqa: BLE001
            fails.append((name, f"launch: {type(e).__name__}: {e}"[:300]))
            continue
        worst = 0.0
        ok = True
        for b in range(batch):
            out = C.view(b)[:, :m].T.astype(cp.float64)
            ref = refs[b] + (beta * C0[b].T.astype(cp.float64) if beta != 0 else 0)
            if not bool(cp.isfinite(out).all()):
                ok = False
                worst = float("nan")
                break
            e = rel_err(out, ref)
            worst = max(worst, e)
            if e > 3e-6 * math.sqrt(k) + 2e-6:
                ok = False
        # everything outside the m x n blocks must still be NaN
        mask = cp.ones(C.buf.shape, dtype=bool)
        for b in range(batch):
            s = C.offset + b * C.stride
            blk = mask[s:s + ldc * n].reshape(n, ldc)
            blk[:, :m] = False
        outside = C.buf[mask]
        if outside.size and not bool(cp.isnan(outside).all()):
            ok = False
            worst = float("inf")
        if not ok:
            fails.append((name, f"m={m} n={n} k={k} ta={ta} tb={tb} aligned={aligned} "
                                f"beta={beta} batch={batch} err={worst:.3g}"))
    return fails


SHAPES_FULL = [(1, 1, 1), (3, 5, 7), (33, 1, 65), (1, 130, 9), (33, 33, 33), (64, 64, 16),
               (129, 127, 129), (128, 128, 128), (200, 300, 17), (255, 257, 8),
               (1000, 999, 1001), (4097, 129, 257), (65, 4100, 40), (130, 70, 4097)]
SHAPES_SHORT = [(129, 127, 33), (300, 260, 100), (1000, 999, 1001)]


def correctness(registered, candidates, stream, dev):
    rng = np.random.default_rng(1234)
    report = {"checked": 0, "failures": []}
    t0 = time.time()
    shapes = SHAPES_FULL if not QUICK else SHAPES_FULL[::3]
    for (m, n, k) in shapes:
        for ta, tb in ALL4:
            for aligned in (True, False):
                for beta in ((0.0, 0.5) if (m * n * k) < 5e8 else (0.0,)):
                    f = check_case(registered, m, n, k, ta, tb, aligned, beta, 1, rng, stream,
                                   dev)
                    report["checked"] += len(registered)
                    report["failures"] += f
    for ta, tb in ALL4:   # strided batch, B broadcast
        for aligned in (True, False):
            f = check_case(registered, 70, 131, 45, ta, tb, aligned, 0.25, 3, rng, stream, dev)
            report["checked"] += len(registered)
            report["failures"] += f
    for (m, n, k) in SHAPES_SHORT:
        for ta, tb in ALL4:
            f = check_case(candidates, m, n, k, ta, tb, True, 0.0, 1, rng, stream, dev)
            report["checked"] += len(candidates)
            report["failures"] += f
    # the public API path (layout mapping, dispatch, launcher) on row-major CuPy arrays
    import sgemm
    for kname in RUNGS:
        for (m, n, k) in ((300, 200, 100), (1500, 1400, 600)):
            for ta, tb in ALL4:
                a = cp.asarray(rng.standard_normal((k, m) if ta else (m, k)), dtype=cp.float32)
                b = cp.asarray(rng.standard_normal((n, k) if tb else (k, n)), dtype=cp.float32)
                try:
                    c = sgemm.gemm(a, b, trans_a=ta, trans_b=tb, kernel=kname)
                    ref = (a.T if ta else a).astype(cp.float64) @ (b.T if tb else b).astype(
                        cp.float64)
                    e = rel_err(cp.asarray(c).astype(cp.float64), ref)
                    report["checked"] += 1
                    if not e < 1e-4:
                        report["failures"].append((f"api:{kname}", f"{m}x{n}x{k} ta={ta} "
                                                   f"tb={tb} err={e:.3g}"))
                except Exception as ex:  # noqa: BLE001
                    report["failures"].append((f"api:{kname}", f"{type(ex).__name__}: {ex}"[:300]))
    report["seconds"] = time.time() - t0
    return report


# ---- timing ---------------------------------------------------------------------------
def bench(fn, stream, reps=25, warm=3):
    for _ in range(warm):
        fn()
    evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for s, e in evs:
        s.record(stream)
        fn()
        e.record(stream)
    evs[-1][1].synchronize()
    ts = sorted(cp.cuda.get_elapsed_time(s, e) for s, e in evs)
    return {"median_ms": ts[len(ts) // 2], "min_ms": ts[0], "max_ms": ts[-1]}


def timing(cands, stream, dev, sizes, transposes=((False, False),), aligned=True):
    rng = np.random.default_rng(7)
    rows = []
    for s in sizes:
        m = n = k = s
        flops = 2.0 * m * n * k
        # cuBLAS on row-major float32 (a user's row-major NN = canonical NN)
        X = cp.asarray(rng.standard_normal((m, k)), dtype=cp.float32)
        Y = cp.asarray(rng.standard_normal((k, n)), dtype=cp.float32)
        Z = cp.empty((m, n), dtype=cp.float32)
        if aligned and transposes == ((False, False),):
            r = bench(lambda: cp.matmul(X, Y, out=Z), stream)
            r.update(name="cublas", size=s, ta=False, tb=False, aligned=True,
                     tflops=flops / r["median_ms"] / 1e9)
            rows.append(r)
            log(f"  {s:5d} cublas {r['median_ms']:.3f} ms {r['tflops']:.2f} TFLOPS")
        del X, Y, Z
        off = 0 if aligned else 1
        ld = s if aligned else s + 1
        buf_a = cp.asarray(rng.standard_normal(ld * s + 4), dtype=cp.float32)
        buf_b = cp.asarray(rng.standard_normal(ld * s + 4), dtype=cp.float32)
        buf_c = cp.zeros(ld * s + 4, dtype=cp.float32)
        for ta, tb in transposes:
            prob = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=buf_a.data.ptr + 4 * off, lda=ld,
                           b=buf_b.data.ptr + 4 * off, ldb=ld, c=buf_c.data.ptr + 4 * off,
                           ldc=ld, alpha=1.0, beta=0.0)
            for c in cands:
                try:
                    r = bench(lambda: c.run(prob, dev, stream), stream)
                except Exception as e:  # noqa: BLE001
                    log("  timing failed", c.name, s, e)
                    continue
                r.update(name=c.name, kernel=c.spec.name, params=c.p.as_dict(),
                         variant=c.variant, size=s, ta=ta, tb=tb, aligned=aligned,
                         tflops=flops / r["median_ms"] / 1e9)
                rows.append(r)
                log(f"  {s:5d} {c.name:28s} {'NT'[ta]}{'NT'[tb]} al={int(aligned)} "
                    f"{r['median_ms']:.3f} ms {r['tflops']:.2f} TFLOPS")
        del buf_a, buf_b, buf_c
    return rows


def smi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,"
                               "power.draw,temperature.gpu", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def make_cands(dev):
    registered = [Cand(f"{n}:{c}", KERNELS[n], p) for n in RUNGS
                  for c, p in KERNELS[n].configs.items()]
    cands = []
    for name, k, p, v in CANDIDATES:
        why = KERNELS[k].can_implement(p, dev.smem_optin)
        if why:
            log("candidate rejected", name, why)
        else:
            cands.append(Cand(name, KERNELS[k], p, v))
    return registered, cands


def profile_mode():
    """Launch cuBLAS and the PROFILE configs once each at 4096^3 NN (under ncu)."""
    dev = sgdev.info(0)
    _, cands = make_cands(dev)
    stream = cp.cuda.Stream(non_blocking=True)
    s = 4096
    rng = np.random.default_rng(3)
    with stream:
        X = cp.asarray(rng.standard_normal((s, s)), dtype=cp.float32)
        Y = cp.asarray(rng.standard_normal((s, s)), dtype=cp.float32)
        Z = cp.empty((s, s), dtype=cp.float32)
        cp.matmul(X, Y, out=Z)
        prob = Problem(m=s, n=s, k=s, ta=False, tb=False, a=X.data.ptr, lda=s, b=Y.data.ptr,
                       ldb=s, c=Z.data.ptr, ldc=s)
        for c in cands:
            if c.name in PROFILE:
                c.run(prob, dev, stream)
        stream.synchronize()


def ncu_summary(path):
    """Condense ncu's raw CSV to the numbers that say where the cycles go."""
    import csv
    rows = list(csv.reader(open(path)))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    names = rows[head]
    keep = []
    for i, n in enumerate(names):
        if "issue_stalled" in n or n.startswith(("sm__inst_executed_pipe_fma", "sm__pipe_fma")) or n in (
                "Kernel Name", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
                "smsp__issue_active.avg.pct_of_peak_sustained_active",
                "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
                "smsp__inst_executed.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
                "launch__registers_per_thread", "launch__occupancy_limit_registers",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                "launch__grid_size", "launch__block_size"):
            keep.append(i)
    out = []
    for r in rows[head + 2:]:
        if len(r) == len(names):
            out.append({names[i]: r[i] for i in keep})
    return out


# ---- --edges: rung 9 on edge-heavy and unaligned shapes ------------------------------
EDGE_SHAPES = ["1000 1000 1000", "1023 1025 1021", "1023 1025 1021 T N", "2000 2000 2000",
               "4097 4095 4093", "4096 4096 4096"]
# 32x256 tile, 4x8 per thread (the tile of the tuner's rung-9 pick for
# 1023x1025x1021, there with split-K): 264 blocks = two per SM on 1025 x 1023.
# Registered as rung 9 "wide" after the 2026-11-22 run (label kept: t32x256).
T32x256 = T(BM=32, BN=256, BK=32, WM=32, WN=32, TM=4, TN=8, threads=256)
# (label, config name or params, split_k, floor slices)
EDGE_CANDS = [("small", "small", 1, False), ("medium", "medium", 1, False),
              ("large", "large", 1, False), ("large:s2", "large", 2, False),
              ("large:s4", "large", 4, False), ("t32x256", T32x256, 1, False),
              ("t32x256:s2", T32x256, 2, False)]
EDGE_FLOOR = [("small:s2f", "small", 2, True), ("medium:s2f", "medium", 2, True),
              ("large:s2f", "large", 2, True), ("large:s3f", "large", 3, True),
              ("large:s4f", "large", 4, True), ("t32x256:s2f", T32x256, 2, True)]
EDGE_FLOOR_MAX_FLOPS = 2e10     # floor-split variants only where splitting can pay


def _arg(name, default=None):
    return next((a.split("=", 1)[1] for a in sys.argv if a.startswith(name + "=")), default)


def time_fn(enqueue, stream, reps=15, target_ms=0.5, warmup=3):
    """Median ms per call: CUDA events around batches of ~target_ms of calls
    (sgemm.tune.batch_times, the tuner's own timing)."""
    from sgemm.tune import batch_times
    ts, n = batch_times(enqueue, stream, reps, target_ms, warmup)
    return {"median_ms": ts[len(ts) // 2], "min_ms": ts[0], "max_ms": ts[-1], "batch": n}


def edges_mode(label):
    import sgemm
    from sgemm import dispatch, tune
    from sgemm.bench.sizes import parse_shapes
    from sgemm.kernels import schemes
    reps = int(_arg("--reps", "15"))
    dev = sgdev.info(0)
    spec = KERNELS["double_buffer"]
    log(f"edges {label}: sgemm from {os.path.dirname(sgemm.__file__)} | {dev.name} | {smi()}")
    std_split = schemes.split_slices
    planmod = importlib.import_module("sgemm.plan")   # sgemm.plan is also a function

    def floor_split(k, split_k, bk):   # see the docstring
        kc = k // (4 * split_k) * 4
        if kc == 0:
            return std_split(k, split_k, bk)
        return kc, split_k, k - split_k * kc

    def params(cfg, split):
        return (spec.configs[cfg] if isinstance(cfg, str) else cfg).replace(split_k=split)

    # compile everything first, in parallel (both alignments: slices may break it)
    shapes = parse_shapes("\n".join(EDGE_SHAPES))
    jobs = set()
    for sh in shapes:
        prob = tune.canonical(sh)
        for _, cfg, _, _ in EDGE_CANDS + EDGE_FLOOR:
            for al in (False, True):
                jobs.add((spec.source, spec.name_expression(params(cfg, 1), prob.ta, prob.tb, al),
                          dev.arch))
    t0 = time.time()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 4), mp_context=ctx) as ex:
        comp = {j[1]: (r, e) for j, r, e in ex.map(_compile, sorted(jobs))}
    log(f"compiled {len(jobs)} instantiations in {time.time() - t0:.1f}s")

    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    for sh in shapes:
        problems, keep = tune._gpu_problems(sh, dev)
        a, b, c = keep
        ref = cp.empty_like(c)
        prob = problems[0]
        with stream:
            def blas():
                cp.matmul(a, b, out=ref)
            cub = [time_fn(blas, stream, reps)]
            stream.synchronize()
            res = {"shape": sh.key, "canonical": [prob.m, prob.n, prob.k, prob.transposes],
                   "aligned": prob.aligned, "flops": sh.flops, "cands": []}
            cands = [("auto", None, None)]
            more = EDGE_FLOOR if sh.flops <= EDGE_FLOOR_MAX_FLOPS else []
            for name, cfg, split, floor in EDGE_CANDS + more:
                cands.append((name, params(cfg, split), floor))
            for name, p, floor in cands:
                r = {"name": name}
                try:
                    if floor:
                        geo = floor_split(prob.k, p.split_k, p.BK)
                        if geo == std_split(prob.k, p.split_k, p.BK):
                            continue   # the standard split is the same
                        schemes.split_slices = floor_split
                        r["slices"] = geo
                    if p is None:
                        sp, pp, scheme, ls = planmod.prepare(problems, dev, "auto")
                        r.update(kernel=sp.name, params=pp.as_dict(), scheme=scheme)
                    else:
                        ls = tune.launches_for(spec, p, problems, dev)
                        r.update(kernel=spec.name, params=p.as_dict(),
                                 scheme=dispatch.scheme_for(spec, p, prob))
                    r["launches"] = len(ls)

                    def ours(ls=ls):
                        for l in ls:
                            launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr,
                                            l.args)
                    c.fill(float("nan"))
                    ours()
                    stream.synchronize()
                    e = rel_err(c.astype(cp.float64), ref.astype(cp.float64))
                    r["err_vs_cublas"] = e
                    if not e < 1e-4:
                        r["error"] = f"wrong result: {e}"
                    else:
                        r.update(time_fn(ours, stream, reps))
                        r["tflops"] = sh.flops / r["median_ms"] / 1e9
                except Exception as ex:  # noqa: BLE001
                    r["error"] = f"{type(ex).__name__}: {ex}"[:300]
                finally:
                    schemes.split_slices = std_split
                res["cands"].append(r)
                log(f"  {sh.key:22s} {name:12s} " + (f"{r['median_ms'] * 1e3:8.1f} us"
                    if "median_ms" in r else r.get("error", "?")))
            cub.append(time_fn(blas, stream, reps))
            stream.synchronize()
        res["cublas_runs"] = cub
        res["cublas_ms"] = sorted(x["median_ms"] for x in cub)[0]
        res["cublas_tflops"] = sh.flops / res["cublas_ms"] / 1e9
        for r in res["cands"]:
            if "median_ms" in r:
                r["ratio"] = res["cublas_ms"] / r["median_ms"]
        log(f"  {sh.key:22s} cublas       {res['cublas_ms'] * 1e3:8.1f} us "
            f"({cub[0]['median_ms'] * 1e3:.1f} before, {cub[1]['median_ms'] * 1e3:.1f} after)")
        rows.append(res)
        del problems, keep, a, b, c, ref
    out = {"label": label, "device": dev.name, "smi": smi(), "reps": reps,
           "compile": {k: {"resources": r, "error": e} for k, (r, e) in comp.items()},
           "shapes": rows}
    os.makedirs(OUT, exist_ok=True)
    json.dump(out, open(os.path.join(OUT, f"edges-{label}.json"), "w"), indent=1)


def edges_table(old_path, new_path, out_path=None):
    """Old/new side by side: us and ratio (cuBLAS time / ours) per shape."""
    old, new = json.load(open(old_path)), json.load(open(new_path))
    joined = {"old": old, "new": new}
    if out_path:
        json.dump(joined, open(out_path, "w"), indent=1)
    by = {r["shape"]: r for r in old["shapes"]}
    for rn in new["shapes"]:
        ro = by.get(rn["shape"], {"cands": [], "cublas_ms": float("nan")})
        log(f"\n{rn['shape']} (canonical {rn['canonical']}, aligned={rn['aligned']}): "
            f"cuBLAS {ro['cublas_ms'] * 1e3:.1f} (old run) / {rn['cublas_ms'] * 1e3:.1f} us "
            f"(new run)")
        olds = {r["name"]: r for r in ro["cands"]}
        for r in rn["cands"]:
            o = olds.get(r["name"], {})
            def cell(x):
                return (f"{x['median_ms'] * 1e3:7.1f} us {x['ratio']:5.2f}x"
                        if "median_ms" in x else f"{x.get('error', '-')[:18]:>18}")
            kern = f"{r.get('kernel', '')}:{r.get('scheme', '')}" if r["name"] == "auto" else ""
            log(f"  {r['name']:11s} old {cell(o)}   new {cell(r)}  {kern}")


def main():
    if _arg("--edges"):
        return edges_mode(_arg("--edges"))
    if "--edges-table" in sys.argv:
        i = sys.argv.index("--edges-table")
        return edges_table(*sys.argv[i + 1:i + 4])
    if "--profile" in sys.argv:
        return profile_mode()
    if "--ncu-summary" in sys.argv:
        res = ncu_summary(sys.argv[sys.argv.index("--ncu-summary") + 1])
        json.dump(res, open(os.path.join(OUT, "ncu_summary.json"), "w"), indent=1)
        for r in res:
            name = r.get("Kernel Name", "")[:60]
            stalls = []
            for k, v in r.items():
                if "issue_stalled" in k and "not_issued" not in k:
                    try:
                        stalls.append((k.replace("smsp__", "").replace("average_", "").replace(
                            "warp_latency_", "").replace("warps_", ""), float(v.replace(",", ""))))
                    except ValueError:
                        pass
            stalls = sorted(stalls, key=lambda x: -x[1])[:9]
            fma = {k: v for k, v in r.items() if "fma" in k}
            log(f"{name}\n   t={r.get('gpu__time_duration.sum')} issue={r.get('smsp__issue_active.avg.pct_of_peak_sustained_active')}"
                f" fma={fma}"
                f" regs={r.get('launch__registers_per_thread')} bankld={r.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum')}"
                f" bankst={r.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum')}\n   "
                + " ".join(f"{k}={v:.1f}" for k, v in stalls))
        return
    os.makedirs(OUT, exist_ok=True)
    dev = sgdev.info(0)
    log(f"device {dev.name} cc={dev.cc} sms={dev.sm_count} clock={dev.clock_khz} kHz "
        f"peak={dev.fp32_peak_tflops():.1f} TFLOPS | {smi()}")
    stream = cp.cuda.Stream(non_blocking=True)
    registered, cands = make_cands(dev)
    if ONLY:
        cands = [c for c in cands if c.name in ONLY or c.name == "cublas"]

    combos_all = [(ta, tb, al) for ta, tb in ALL4 for al in (False, True)]
    items = [(c, combos_all) for c in registered]
    items += [(c, combos_all) for c in cands if c.name in FULLCHECK]
    items += [(c, [(ta, tb, True) for ta, tb in ALL4]) for c in cands]
    comp = precompile(items, dev.arch)
    result = {"device": dev.name, "sm_count": dev.sm_count, "clock_khz": dev.clock_khz,
              "smi_before": smi(), "compile": comp}
    bad = {c.name for c in cands for ta, tb in ALL4
           if (comp.get(c.expr(ta, tb, True)) or {}).get("error")}
    cands = [c for c in cands if c.name not in bad]

    with stream:
        try:
            seen = {(c.spec.name, c.p, c.variant) for c in registered}
            full = registered + [c for c in cands if c.name in FULLCHECK
                                 and (c.spec.name, c.p, c.variant) not in seen]
            rep = correctness(full, cands, stream, dev)
        except Exception:  # noqa: BLE001
            rep = {"crash": traceback.format_exc()}
            log(rep["crash"])
        result["correctness"] = rep
        log(f"correctness: {rep.get('checked')} runs, {len(rep.get('failures', []))} failures "
            f"({rep.get('seconds', 0):.0f}s)")
        for f in rep.get("failures", [])[:40]:
            log("  FAIL", *f)
        json.dump(result, open(os.path.join(OUT, "ffma_tuning.json"), "w"), indent=1)

        rows = timing(cands, stream, dev, SIZES if not QUICK else [4096])
        result["timing"] = rows
        json.dump(result, open(os.path.join(OUT, "ffma_tuning.json"), "w"), indent=1)
        # other transposes / unaligned: the registered large configs + the 3 best
        best = sorted((r for r in rows if r["name"] != "cublas" and r["size"] == 4096),
                      key=lambda r: -r["tflops"])[:3]
        extra = [Cand(f"{n}:large", KERNELS[n], KERNELS[n].configs["large"]) for n in RUNGS]
        by = {c.name: c for c in cands}
        extra += [by[r["name"]] for r in best]
        result["timing_transposes"] = timing(extra, stream, dev, [4096],
                                             transposes=tuple(ALL4))
        result["timing_unaligned"] = timing(extra[:4], stream, dev, [4096], aligned=False)
    result["smi_after"] = smi()
    json.dump(result, open(os.path.join(OUT, "ffma_tuning.json"), "w"), indent=1)

    # ---- short table last -------------------------------------------------------
    log("\n=== resources (sm_90a) of the registered configs: regs/spill-bytes ===")
    for c in registered:
        regs = []
        for ta, tb in ALL4:
            for al in (False, True):
                r = (comp.get(c.expr(ta, tb, al)) or {}).get("resources") or {}
                regs.append(f"{r.get('registers')}/{r.get('spill_stores')}")
        log(f"{c.name:22s} {' '.join(regs)}")
    log("\n=== TFLOPS, canonical NN aligned (median of 25) ===")
    table = {}
    for r in result["timing"]:
        table.setdefault(r["name"], {})[r["size"]] = r["tflops"]
    cub = table.get("cublas", {})
    log(f"{'config':28s} " + " ".join(f"{s:>14d}" for s in SIZES))
    for name, d in table.items():
        cells = []
        for s in SIZES:
            if s in d:
                pct = f"{100 * d[s] / cub[s]:.0f}%" if s in cub and name != "cublas" else ""
                cells.append(f"{d[s]:7.2f} {pct:>5s}")
            else:
                cells.append(" " * 14)
        log(f"{name:28s} " + " ".join(f"{c:>14s}" for c in cells))
    log("\n=== 4096^3 transposes (canonical op(A)op(B)) / unaligned ===")
    for r in result["timing_transposes"] + result["timing_unaligned"]:
        log(f"{r['name']:28s} {'NT'[r['ta']]}{'NT'[r['tb']]} al={int(r['aligned'])} "
            f"{r['tflops']:6.2f}")
    nf = len(result["correctness"].get("failures", []))
    log(f"\ncorrectness failures: {nf}   smi after: {result['smi_after']}")


if __name__ == "__main__":
    main()
