"""Autotuner: search kernel parameters per shape class and write the tuned table.

    sgemm tune --shapes bench/shapes/public.txt     # time candidates, write the table
    sgemm tune --show                               # print this GPU's table(s)
    sgemm tune --shapes FILE --dry-run --device h100   # candidates only, no GPU
    sgemm.tune.autotune(plan)                        # one plan, re-prepared with the winner

Per shape the search is:
  1. *space*: for every FP32 spec worth tuning (schemes, specs with an
     ``extra["auto"]`` priority, the fast rungs 8-11), the product of values of the
     fields it is parametrized by (``template_fields`` plus BM/BN/BK/threads,
     which its rules and grid read), its named configs, and for
     single-launch tile kernels split_k in {2..64} when K is deep;
  2. *prune before compiling*: ``spec.can_implement(params, smem_optin)`` (its
     reasons are counted), grid limits, and a cost model (waves, tile
     efficiency) that keeps the best few per spec;
  3. *compile* survivors (in parallel processes), reject ptxas spills/stack;
  4. *verify* each against the first candidate's result, then *time* it with
     CUDA events (warm-up, batches sized to ~0.5 ms, median; problems up to
     512^3 inside CUDA graphs, so launch gaps do not decide);
  5. write the winner under the problem's shape class to
     ``cache_dir()/tuned/<gpu-key>.json`` (``dispatch.user_table_path``).
Nothing is tuned at call time unless asked.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import dispatch
from .bench.sizes import Shape, parse_shapes, read_shapes  # noqa: F401  (re-exported)
from .kernels import registry
from .kernels import schemes as S
from .kernels.params import TileParams
from .kernels.spec import KernelSpec
from .packing import wants_pack
from .problem import Problem
from .runtime.device import DeviceInfo

FIELD_VALUES = {
    "BM": (16, 32, 64, 128, 256), "BN": (16, 32, 64, 128, 256), "BK": (8, 16, 32),
    "WM": (16, 32, 64, 128), "WN": (16, 32, 64, 128), "TM": (1, 4, 8, 16), "TN": (1, 4, 8, 16),
    "threads": (32, 64, 128, 256, 512), "stages": (2, 3, 4), "swizzle": (1, 4, 8),
}
GEMV_VALUES = {"BM": (1, 2, 4, 8, 16, 32, 64, 128), "BN": (1, 2, 4, 8, 16, 32, 64, 128),
               "BK": (256, 512, 1024, 2048), "threads": (256, 512, 1024)}
SPLITS = (2, 4, 8, 16, 32, 64, 128, 256)   # 256: 128x128x131072 on 128x128 tiles, 2 blocks/SM
REGS_PER_SM = 65536          # every arch from sm_50 to sm_90
SPACE_CAP = 400_000          # products larger than this are sampled

# Device models for --dry-run and CPU tests (numbers from the datasheets).
DEVICE_MODELS = {
    "h100": DeviceInfo(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 232448, 233472, 52428800,
                       1980000, 2619000, 5120, 85 << 30),
    "h200": DeviceInfo(0, "NVIDIA H200", (9, 0), 132, 232448, 233472, 62914560,
                       1980000, 3201000, 6144, 141 << 30),
    "a100": DeviceInfo(0, "NVIDIA A100-SXM4-80GB", (8, 0), 108, 166912, 167936, 41943040,
                       1410000, 1593000, 5120, 80 << 30),
}


# ---- shapes files: the bench's format and parser (sgemm.bench.sizes) -------------------
def canonical(shape: Shape, aligned: bool = True) -> Problem:
    """The canonical problem of row-major (C-order) operands of this shape, as
    layout.normalize makes it: C^T = op(B)^T op(A)^T, pointers are dummies."""
    from .layout import Mat, normalize
    m, n, k = shape.m, shape.n, shape.k
    a_rows, a_cols = (k, m) if shape.ta else (m, k)
    b_rows, b_cols = (n, k) if shape.tb else (k, n)
    base = 1 << 20
    A = Mat(base, a_rows, a_cols, a_cols, 1)
    B = Mat(base * 2, b_rows, b_cols, b_cols, 1)
    C = Mat(base * 3, m, n, n, 1)
    p = normalize(A, B, C, shape.ta, shape.tb, 1.0, 0.0, shape.batch,
                  (a_rows * a_cols, b_rows * b_cols, m * n))
    if not aligned:
        p = Problem(**{**p.__dict__, "a": p.a + 4})
    return p


# ---- the search space -------------------------------------------------------------------
def tunable_specs(precision: str = "ieee", dev: DeviceInfo | None = None,
                  names=None) -> list[KernelSpec]:
    out = []
    for s in registry.KERNELS.values():
        if s.precision != precision or s.plain or s.id < 1:
            continue
        if dev is not None and dev.cc_int < s.min_cc:
            continue
        if names:
            if s.name in names or str(s.id) in names:
                out.append(s)
            continue
        if "scheme" in s.extra or "auto" in s.extra or 8 <= s.id <= 11:
            out.append(s)
    return out


def _fields(spec: KernelSpec) -> tuple[str, ...]:
    f = list(spec.template_fields)
    for extra in ("BM", "BN", "BK", "threads"):
        if extra not in f:
            f.append(extra)
    return tuple(f)


_space_cache: dict[tuple, tuple[list[TileParams], Counter]] = {}


def param_space(spec: KernelSpec, smem_limit: int | None = None
                ) -> tuple[list[TileParams], Counter]:
    """Every parameter combination the spec's fields allow that passes
    ``can_implement`` (problem-independent), and a count of rejection reasons."""
    key = (spec.name, smem_limit)
    if key in _space_cache:
        return _space_cache[key]
    values = dict(FIELD_VALUES)
    if spec.extra.get("scheme") == "gemv":
        values.update(GEMV_VALUES)
    space = spec.extra.get("space", {})
    fields = _fields(spec)
    base = next(iter(spec.configs.values()))
    if callable(space):          # the spec enumerates its own space
        gen = [tuple(getattr(p, f) for f in fields) for p in space()]
        combos, total = iter(gen), len(gen)
    else:
        values.update(space)
        lists = [values.get(f, (getattr(base, f),)) for f in fields]
        total = math.prod(len(v) for v in lists)
        combos = itertools.product(*lists)
        if total > SPACE_CAP:
            import random
            rng = random.Random(1234)
            combos = (tuple(rng.choice(v) for v in lists) for _ in range(SPACE_CAP))
    seen, out, why = set(), [], Counter()
    for cfg in list(spec.configs.values()):
        if not spec.can_implement(cfg, smem_limit):
            seen.add(cfg)
            out.append(cfg)
    for combo in combos:
        # split_k is a template field only where it is the cluster size
        p = base.replace(**{"split_k": 1, **dict(zip(fields, combo))})
        if p in seen:
            continue
        seen.add(p)
        reasons = spec.can_implement(p, smem_limit)
        if reasons:
            why[_reason_kind(reasons[0])] += 1
            continue
        out.append(p)
    _space_cache[key] = (out, why)
    return out, why


def _reason_kind(reason: str) -> str:
    """Group a reason by its text before the first number (for reports)."""
    import re
    return re.split(r"[=\d]", reason, maxsplit=1)[0].strip() or reason[:40]


def _blocks(spec: KernelSpec, prob: Problem, p: TileParams) -> int:
    gx, gy, gz = spec.grid(prob, p.replace(split_k=1))
    return gx * gy * gz * max(p.split_k, 1)


def blocks_per_sm(spec: KernelSpec, p: TileParams, dev: DeviceInfo) -> int:
    """Resident blocks per SM, before compiling: threads, shared memory and an
    estimate of registers (the TM*TN accumulators plus ~40 for fragments and
    addresses; rung 9's 256x128 tile with 16x8 per thread holds one block)."""
    smem = spec.static_smem(p) + spec.dynamic_smem(p)
    regs = min(255, max(p.TM * p.TN, 1) + 40)
    by_regs = REGS_PER_SM // (max(p.threads, 32) * ((regs + 7) // 8 * 8))
    return max(1, min(2048 // max(p.threads, 32), 32, by_regs,
                      dev.smem_per_sm // smem if smem else 32))


def predicted_time(spec: KernelSpec, prob: Problem, p: TileParams, dev: DeviceInfo) -> float:
    """A rough cost model (seconds, only for ranking candidates of one spec
    before compiling).  Compute: the busiest SM runs ceil(blocks/SMs) blocks
    of 2*BM*BN*K' flops at the FFMA peak times a tile efficiency (arithmetic
    intensity BM*BN/(BM+BN) against 32) times an occupancy factor (resident
    warps against 16).  Latency floor: ~150 ns per k-tile, shortened by the
    pipeline depth, plus the launch(es).  Split-K adds its workspace traffic;
    gemv is memory-bound (the big operand once, at ~3 TB/s)."""
    sm = dev.sm_count
    peak_sm = dev.fp32_peak_tflops() * 1e12 / sm
    if spec.extra.get("scheme") == "gemv":
        small = min(prob.m, prob.n)
        s = p.BM if p.BM <= 16 else p.BN
        rb = p.BN if p.BM <= 16 else p.BM
        strips = math.ceil(max(prob.m, prob.n) / rb) * math.ceil(small / s) * prob.batch
        fill = min(1.0, strips / sm) * min(1.0, p.threads / 256)
        bytes_ = 4.0 * max(prob.m, prob.n) * prob.k * prob.batch * math.ceil(small / s)
        flops = 2.0 * s * math.ceil(small / s) * max(prob.m, prob.n) * prob.k * prob.batch
        return max(bytes_ / 3e12, flops / (peak_sm * sm * 0.5)) / max(fill, 0.02) + 3e-6
    split = max(p.split_k, 1)
    gx, gy, gz = spec.grid(prob, p.replace(split_k=1))
    blocks = gx * gy * gz * split
    per_sm = blocks_per_sm(spec, p, dev)
    per_sm_used = min(per_sm, math.ceil(blocks / sm))
    occ = min(1.0, per_sm_used * p.threads / 32 / 16)
    inten = (p.BM * p.BN) / (p.BM + p.BN)
    eff = min(1.0, inten / 32.0) * (0.85 if p.TM * p.TN >= 32 else 0.65)
    kslice = math.ceil(prob.k / split)
    work = 2.0 * p.BM * p.BN * kslice
    t = math.ceil(blocks / sm) * work / (peak_sm * eff * max(occ, 0.05))
    nk = math.ceil(kslice / max(p.BK, 1))
    t = max(t, nk * 150e-9 / max(p.stages - 1, 1) * math.ceil(blocks / (sm * per_sm)))
    t += 3e-6
    if split > 1:
        t += 2 * 4.0 * split * prob.m * prob.n / 3e12 + 3e-6
    return t


@dataclass
class Candidate:
    spec: KernelSpec
    params: TileParams
    predicted: float = 0.0
    time_ms: float | None = None
    reject: str | None = None
    source: str = "space"

    @property
    def scheme(self) -> str:
        return dispatch.scheme_for(self.spec, self.params)

    def describe(self) -> dict:
        return {"kernel": self.spec.name, "params": self.params.as_dict(),
                "scheme": self.scheme, "predicted": self.predicted, "time_ms": self.time_ms,
                "reject": self.reject, "source": self.source}


def _relevant(spec: KernelSpec, prob: Problem, p: TileParams) -> str | None:
    """Problem-dependent reasons to skip a combination (before compiling)."""
    scheme = spec.extra.get("scheme", "direct")
    if scheme == "gemv":
        if not S.gemv_applies(prob):
            return "gemv needs m or n <= 16"
        small_m = p.BM <= 16
        if small_m != (prob.m <= prob.n):
            return "gemv orientation does not match the small side"
        s = p.BM if small_m else p.BN
        small = min(prob.m, prob.n)
        if s < small and s != 16:
            return "gemv S below the small side"
        if s >= 2 * small and s > 1:
            return "gemv S more than twice the small side"
    gx, gy, gz = spec.grid(prob, p.replace(split_k=1))
    if gz > 65535 * 64:
        return "grid z beyond limits"
    if p.split_k > 1 and prob.k // p.split_k < 64:
        return "split_k slices under 64 deep"
    if scheme == "small" and not S.is_small(prob):
        return "small path is for problems <= 512^3"
    return None


def _wave_splits(spec: KernelSpec, prob: Problem, cfg: TileParams, dev: DeviceInfo,
                 keep: int = 1) -> list[TileParams]:
    """Split-K variants of a large named config (>= 128x128) for a grid that
    leaves SMs idle: the split whose block count comes closest to whole waves
    (blocks per SM as the tile's shared memory and threads allow), slices
    >= 128 deep (1000^3: rung 9 large in 4 slices of 248, 0.90x cuBLAS).
    Small named tiles already have many blocks; their split variants would
    only crowd the candidate cap.  The
    cost model ranked the hand-tuned tiles' split variants out, so deep-K
    shapes ran 64x64 slices at ~0.8x cuBLAS (256x256x65536 took 32 slices of
    128x64 where rung 9's 256x128 tile with 64 slices is one full wave)."""
    if prob.batch != 1 or prob.k < 512 or cfg.BM * cfg.BN < 128 * 128:
        return []
    base = _blocks(spec, prob, cfg.replace(split_k=1))
    wave = blocks_per_sm(spec, cfg, dev) * dev.sm_count
    if base >= wave:
        return []
    scored = []
    for sk in SPLITS:
        q = cfg.replace(split_k=sk)
        if prob.k // sk < 128 or _relevant(spec, prob, q):
            continue
        waves = base * sk / wave
        fill = waves / math.ceil(waves)            # busy fraction of the last wave
        scored.append((-fill, waves > 2, sk, q))
    scored.sort(key=lambda x: (x[1], x[0], x[2]))
    return [q for *_, q in scored[:keep]]


def _cluster_fits(spec: KernelSpec, prob: Problem, cfg: TileParams,
                  dev: DeviceInfo) -> list[TileParams]:
    """A cluster scheme's named tile with each k-group count and the two
    largest cluster sizes whose tiles x blocks fit one wave of one block per
    SM (db_cluster is built for exactly that; the cost model, blind to
    clusters, ranked these out).  Clusters that cannot all run at once on
    this GPU (dispatch.cluster_capacity) do not count as fitting."""
    if spec.name != "db_cluster":
        return []
    cs = S.db_cluster_split(prob, cfg, dev.sm_count, dispatch.cluster_capacity(dev))
    if cs < 1:
        return []
    gt = S.db_group_threads(cfg)
    out = []
    for kg in S.DB_KGROUPS:
        for c in sorted({cs, max(1, cs - 1)}, reverse=True):
            q = cfg.replace(threads=kg * gt, split_k=c)
            if not spec.can_implement(q, dev.smem_optin) and not _relevant(spec, prob, q):
                out.append(q)
    return out


def candidates(prob: Problem, dev: DeviceInfo, precision: str = "ieee", per_spec: int = 4,
               names=None, report: dict | None = None) -> list[Candidate]:
    """Pruned, ranked candidates for one problem: the heuristic's choice first,
    then every spec's named configs that apply, then the specs' best by the
    cost model taken round-robin (each spec's first, then each one's second,
    ...), at most ``per_spec`` per spec, split-K variants included.  Duplicates (the same template and
    parameters under two scheme names) are dropped."""
    out: list[Candidate] = []
    seen = set()
    try:
        hs, hp = dispatch.heuristic(prob, dev, precision)
        out.append(Candidate(hs, hp, predicted_time(hs, prob, hp, dev), source="heuristic"))
        seen.add((hs.source, hs.function, hp))
    except Exception:  # noqa: BLE001 -- no heuristic choice: still search
        pass
    # The incumbent: what the tables already hold for this shape class, so a
    # retune never loses a winner that fell out of the candidate cap
    # (64x16384x4096 went 231 -> 278 us when the named split variants pushed
    # the old winner, swizzle 256x64 split 2, past the 40th place).
    try:
        inc = dispatch.lookup(prob, dev, precision)
    except Exception:  # noqa: BLE001
        inc = None
    if inc is not None and (inc[0].source, inc[0].function, inc[1]) not in seen:
        out.append(Candidate(inc[0], inc[1], predicted_time(inc[0], prob, inc[1], dev),
                             source="table"))
        seen.add((inc[0].source, inc[0].function, inc[1]))
    deep = prob.batch == 1 and prob.k >= max(prob.m, prob.n) and prob.k >= 512
    per: list[list[Candidate]] = []
    named: list[Candidate] = []
    for spec in tunable_specs(precision, dev, names):
        space, why = param_space(spec, dev.smem_optin)
        if report is not None:
            report.setdefault(spec.name, {"space": len(space), "rejected": dict(why)})
        ranked = []
        single = spec.extra.get("scheme", "direct") in ("direct", "splitk", "gemv")
        # The specs' named configs are the hand-tuned points (rung 9 "large"
        # is the fastest FFMA kernel at >= 2048^3): always time them.  The cost
        # model alone ranked them out for 6144^3 and 2048^3 x 8 (suite of
        # 2026-11-21: 0.80 and 0.78 against ~0.95 for the named config).
        for cfg in spec.configs.values():
            if spec.can_implement(cfg, dev.smem_optin) or _relevant(spec, prob, cfg):
                continue
            key = (spec.source, spec.function, cfg)
            if key not in seen:
                seen.add(key)
                named.append(Candidate(spec, cfg, predicted_time(spec, prob, cfg, dev),
                                       source="config"))
            fits = _wave_splits(spec, prob, cfg, dev) if single and not spec.plain else []
            for q in fits + _cluster_fits(spec, prob, cfg, dev):
                    key = (spec.source, spec.function, q)
                    if key not in seen:
                        seen.add(key)
                        named.append(Candidate(spec, q, predicted_time(spec, prob, q, dev),
                                               source="config"))
        # Split-K also where the grid does not fill the GPU twice over (tall-
        # skinny 16384x64x4096 runs 128 blocks of K = 4096 on 132 SMs).
        for p in space:
            if _relevant(spec, prob, p):
                continue
            ranked.append((predicted_time(spec, prob, p, dev), p))
            thin = prob.batch == 1 and prob.k >= 512 and _blocks(spec, prob, p) < 2 * dev.sm_count
            if (deep or thin) and single and not spec.plain:
                for sk in SPLITS:
                    q = p.replace(split_k=sk)
                    if _relevant(spec, prob, q):
                        continue
                    ranked.append((predicted_time(spec, prob, q, dev), q))
        ranked.sort(key=lambda x: x[0])
        mine = []
        for t, p in ranked:
            if len(mine) >= per_spec:
                break
            key = (spec.source, spec.function, p)
            if key in seen:
                continue
            seen.add(key)
            mine.append(Candidate(spec, p, t, source="model"))
        per.append(mine)
    named.sort(key=lambda c: c.predicted)
    out.extend(named)
    for i in range(per_spec):
        for mine in per:
            if i < len(mine):
                out.append(mine[i])
    # Unaligned operands: each candidate runs behind the pack scheme's copies
    # (what auto does by default) and, as a twin with pack=0, without them:
    # at 1023x1025x1021 the copies cost more than the float4 loads gain.
    if wants_pack(prob, precision):
        twins = []
        for c in out:
            twins.append(c)
            if wants_pack(prob, precision, c.spec, c.params):
                twins.append(Candidate(c.spec, c.params.replace(pack=0), c.predicted,
                                       source=c.source))
        out = twins
    return out


# ---- compiling --------------------------------------------------------------------------
def _instantiation(spec: KernelSpec, p: TileParams, prob: Problem):
    return spec.source, spec.name_expression(p, prob.ta, prob.tb, spec.aligned_for(prob))


def _compile_one(args):
    source, expr, arch = args
    from .runtime.compiler import compile_kernel
    try:
        r = compile_kernel(source, expr, arch).resources()
    except Exception as e:  # noqa: BLE001 -- report, do not abort the search
        return (source, expr, arch), f"compile failed: {str(e).splitlines()[0][:200]}"
    if r.get("spill_stores") or r.get("spill_loads") or r.get("stack"):
        return (source, expr, arch), (f"ptxas: {r['spill_stores']} B spill stores, "
                                      f"{r['stack']} B stack")
    return (source, expr, arch), None


def compile_all(items: list[tuple[str, str, str]], jobs: int | None = None) -> dict:
    """Compile (into the disk cache) in parallel processes; {item: reject reason or None}."""
    items = sorted(set(items))
    jobs = jobs or min(16, os.cpu_count() or 1)
    if jobs <= 1 or len(items) <= 1:
        return dict(_compile_one(i) for i in items)
    import multiprocessing as mp
    ctx = mp.get_context("spawn")      # the parent may hold a CUDA context: never fork it
    with ctx.Pool(min(jobs, len(items))) as pool:
        return dict(pool.map(_compile_one, items, chunksize=1))


# ---- timing ---------------------------------------------------------------------------------
def launches_for(spec: KernelSpec, params: TileParams, problems: list[Problem],
                 dev: DeviceInfo) -> list:
    """What plan.prepare would launch for these params under kernel="auto"
    (direct, split-K, either behind the pack scheme's copies, and for the
    main block of the peel scheme, whose strips follow)."""
    from .peeling import peel_launches, wants_peel
    from .plan import prepare, recipe
    if len(problems) == 1 and wants_peel(problems[0], dev, spec.precision):
        return peel_launches(problems[0], dev, spec.precision, prepare,
                             lambda main: launches_for(spec, params, [main], dev))[3]
    return recipe(problems, dev, spec, params, spec.precision)[3]


GRAPH_TUNE_FLOPS = 2 * 512 ** 3     # at most this: time candidates inside CUDA graphs


def time_launches(launches: list, stream, reps: int = 5, target_ms: float = 0.5,
                  warmup: int = 2, graph: bool = False) -> float:
    """Median ms per execution of the launch list on a CuPy stream, CUDA
    events around batches of executions sized to about target_ms.  graph:
    capture 10 executions in a CUDA graph and replay it (small problems,
    where launch gaps would otherwise rank the candidates)."""
    import cupy
    from .runtime import launcher
    handle = stream.ptr

    def enqueue():
        for l in launches:
            launcher.launch(l.kernel, l.grid, l.block, l.smem, handle, l.args)

    if graph:
        per = 10
        enqueue()
        stream.synchronize()
        stream.begin_capture()
        for _ in range(per):
            enqueue()
        g = stream.end_capture()

        def run_once():
            g.launch(stream)
    else:
        per = 1
        run_once = enqueue

    times, _ = batch_times(run_once, stream, reps, target_ms, warmup, per)
    return times[len(times) // 2]


def batch_times(run_once, stream, reps: int = 5, target_ms: float = 0.5, warmup: int = 2,
                per: int = 1) -> tuple[list[float], int]:
    """Sorted ms per call of run_once (which makes ``per`` calls) on a CuPy
    stream: warm-up, then CUDA events around ``reps`` batches sized to about
    target_ms.  Returns (times, calls of run_once per batch)."""
    import cupy
    for _ in range(warmup):
        run_once()
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record(stream)
    run_once()
    e1.record(stream)
    e1.synchronize()
    one = max(cupy.cuda.get_elapsed_time(e0, e1), 1e-3)
    n = int(min(max(1, math.ceil(target_ms / one)), 500))
    times = []
    for _ in range(reps):
        e0.record(stream)
        for _ in range(n):
            run_once()
        e1.record(stream)
        e1.synchronize()
        times.append(cupy.cuda.get_elapsed_time(e0, e1) / (n * per))
    times.sort()
    return times, n


def scratch_problems(problems: list[Problem], device_id: int):
    """Copies of the problems whose C is a scratch buffer of the same extent
    (tuning must not modify the caller's C).  Returns (problems, keep-alive)."""
    import cupy
    out, keep = [], []
    for p in problems:
        extent = p.ldc * (p.n - 1) + p.m + p.stride_c * (p.batch - 1) + 4
        with cupy.cuda.Device(device_id):
            buf = cupy.zeros(extent, dtype=cupy.float32)
        keep.append(buf)
        off = (p.c % 16)
        out.append(Problem(**{**p.__dict__, "c": int(buf.data.ptr) + off}))
    return out, keep


def tune_problems(problems: list[Problem], dev: DeviceInfo, precision: str = "ieee",
                  per_spec: int = 4, names=None, reps: int = 5, log=None,
                  max_candidates: int = 40) -> list[Candidate]:
    """Compile and time the candidates for canonical problems of one shape;
    returns them sorted, fastest first (rejected ones last)."""
    import cupy
    if len(problems) == 1 and wants_pack(problems[0], precision):
        max_candidates *= 2              # each candidate packed and not (candidates())
    cands = candidates(problems[0], dev, precision, per_spec, names)[:max_candidates]
    items = {}
    for c in cands:
        items[id(c)] = (*_instantiation(c.spec, c.params, problems[0]),
                        dev.arch)
    verdict = compile_all(list(items.values()))
    scratch, keep = scratch_problems(problems, dev.id)
    with cupy.cuda.Device(dev.id):
        stream = cupy.cuda.Stream(non_blocking=True)
    ref = None
    for c in cands:
        why = verdict.get(items[id(c)])
        if why:
            c.reject = why
            continue
        try:
            ls = launches_for(c.spec, c.params, scratch, dev)
            # verify first: from a zeroed C, the result must match the first
            # candidate that ran (the heuristic's, normally) and hold no NaN
            with stream:
                for buf in keep:
                    buf.fill(0)
            from .runtime import launcher
            for l in ls:
                launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
            stream.synchronize()
            if ref is None:
                ref = [buf.copy() for buf in keep]
            else:
                bad = _mismatch(cupy, keep, ref)
                if bad:
                    c.reject = bad
                    continue
            small = problems[0].flops <= GRAPH_TUNE_FLOPS and len(problems) == 1
            c.time_ms = time_launches(ls, stream, reps=reps, graph=small)
        except Exception as e:  # noqa: BLE001
            c.reject = f"launch failed: {str(e).splitlines()[0][:200]}"
        if log:
            log(f"    {c.spec.name:>14} {_short(c.params)} "
                f"{'%.4f ms' % c.time_ms if c.time_ms else c.reject}")
    stream.synchronize()
    del keep
    return sorted(cands, key=lambda c: (c.time_ms is None, c.time_ms or 0.0))


def _mismatch(cupy, outs, refs, tol: float = 1e-4) -> str | None:
    for o, r in zip(outs, refs):
        if bool(cupy.isnan(o).any()):
            return "wrong result: NaN in C"
        num = float(cupy.linalg.norm(o - r))
        den = float(cupy.linalg.norm(r)) or 1.0
        if num / den > tol:
            return f"wrong result: differs from the first candidate by {num / den:.1e}"
    return None


def _short(p: TileParams) -> str:
    d = p.as_dict()
    base = TileParams().as_dict()
    return ",".join(f"{k}={v}" for k, v in d.items() if v != base[k] or k in ("BM", "BN", "BK"))


def record(table: dispatch.TunedTable, prob: Problem, best: Candidate,
           heuristic_ms: float | None, shape_label: str = "") -> None:
    table.put(dispatch.shape_class(prob), best.spec, best.params,
              scheme=best.scheme, time_ms=round(best.time_ms, 6),
              tflops=round(prob.flops / (best.time_ms * 1e-3) / 1e12, 3),
              heuristic_ms=round(heuristic_ms, 6) if heuristic_ms else None,
              shape=[prob.m, prob.n, prob.k, prob.batch, prob.transposes, shape_label],
              tuned=time.strftime("%Y-%m-%d"))


def autotune(plan, save: bool = False, per_spec: int = 4, kernels=None, reps: int = 5):
    """Search candidates for this plan's shape (on scratch C; a and b are only
    read), remember the winner for its shape class (this process; also the
    user's table file with save=True) and re-prepare the plan with it.
    Returns the plan."""
    from .plan import prepare
    if not plan.problems or plan.kernel is None:
        return plan
    dev = plan.device
    precision = plan.kernel.precision
    ranked = tune_problems(plan.problems, dev, precision, per_spec, kernels, reps)
    timed = [c for c in ranked if c.time_ms is not None]
    if not timed:
        return plan
    best = timed[0]
    h = next((c.time_ms for c in ranked if c.source == "heuristic"), None)
    record(dispatch.session_table(dev), plan.problems[0], best, h)
    dispatch.forget_tables()
    if save:
        path = dispatch.user_table_path(dev)
        table = dispatch.TunedTable.load(path) if path.exists() else None
        table = table or dispatch.TunedTable.empty(dispatch.gpu_key(dev), path)
        record(table, plan.problems[0], best, h)
        table.save(path)
        dispatch.forget_tables()
    (plan.kernel, plan.params, plan.scheme,
     plan.launches) = prepare(plan.problems, dev, "auto", precision)
    return plan


# ---- CLI ------------------------------------------------------------------------------------
def _device(args) -> DeviceInfo:
    if args.device:
        return DEVICE_MODELS[args.device]
    from .runtime import device as devmod
    return devmod.info(args.gpu)


def _show(args) -> int:
    dev = _device(args)
    paths = [Path(args.table)] if args.table else [dispatch.user_table_path(dev),
                                                  dispatch.shipped_table_path(dev)]
    found = False
    for path in paths:
        t = dispatch.TunedTable.load(path) if path.exists() else None
        if t is None:
            print(f"{path}: no table")
            continue
        found = True
        print(f"{path}  ({t.gpu}, {len(t.entries)} shape classes)")
        print(f"  {'shape class':<34} {'kernel':>8} {'scheme':>7} {'ms':>9} {'TFLOP/s':>8} "
              f"{'vs heur':>7}  params")
        for key, e in sorted(t.entries.items()):
            h = e.get("heuristic_ms")
            gain = f"{h / e['time_ms']:.2f}x" if h and e.get("time_ms") else "-"
            p = dispatch.entry_params(e)
            print(f"  {key:<34} {e['kernel']:>8} {e.get('scheme', '-'):>7} "
                  f"{e.get('time_ms', 0):9.4f} {e.get('tflops', 0):8.2f} {gain:>7}  {_short(p)}")
    return 0 if found else 1


def _gpu_problems(shape: Shape, dev: DeviceInfo):
    """Random operands of this shape (C-order, like the suite) and their
    canonical problems (layout only: nothing is compiled here); returns
    (problems, keep-alive)."""
    import cupy
    import numpy as np

    from .arrays import describe
    from .plan import Plan
    with cupy.cuda.Device(dev.id):
        rs = cupy.random.RandomState(7)
        a_shape = (shape.k, shape.m) if shape.ta else (shape.m, shape.k)
        b_shape = (shape.n, shape.k) if shape.tb else (shape.k, shape.n)
        lead = (shape.batch,) if shape.batch > 1 else ()
        a = rs.standard_normal(lead + a_shape, dtype=cupy.float32)
        b = rs.standard_normal(lead + b_shape, dtype=cupy.float32)
        a = a.swapaxes(-1, -2) if shape.ta else a
        b = b.swapaxes(-1, -2) if shape.tb else b
        c = cupy.empty(lead + (shape.m, shape.n), dtype=cupy.float32)
    A, B, C = describe(a, "a"), describe(b, "b"), describe(c, "c")
    out_batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    problems = Plan._problems(A, B, C, False, False, 1.0, 0.0, out_batch)
    return problems, (a, b, c)


def _tune(args) -> int:
    dev = _device(args)
    shapes = read_shapes(args.shapes)
    names = args.kernels.split(",") if args.kernels else None
    if args.dry_run:
        report: dict = {}
        for sh in shapes:
            prob = canonical(sh)
            cs = candidates(prob, dev, args.precision, args.per_spec, names, report)
            print(f"{sh.key:>22} class {dispatch.shape_class(prob)}: {len(cs)} candidates")
            for c in cs[: args.show_candidates]:
                print(f"    {c.source:>9} {c.spec.name:>12} {c.scheme:>7} {_short(c.params)}")
        print("\nparameter spaces after can_implement (problem-independent):")
        for name, r in report.items():
            top = ", ".join(f"{k!r}: {v}" for k, v in Counter(r["rejected"]).most_common(4))
            print(f"  {name:>14}: {r['space']} valid; rejected by {top}")
        return 0
    path = Path(args.out) if args.out else dispatch.user_table_path(dev)
    table = (dispatch.TunedTable.load(path) if path.exists() and not args.fresh else None) \
        or dispatch.TunedTable.empty(dispatch.gpu_key(dev), path)
    log = (lambda s: print(s, flush=True)) if args.verbose else None
    results = []
    t_start = time.time()
    # compile everything first, all shapes at once (parallel)
    prepared = []
    for sh in shapes:
        problems, keep = _gpu_problems(sh, dev)
        cs = candidates(problems[0], dev, args.precision, args.per_spec, names)
        cs = cs[: args.max_candidates]
        prepared.append((sh, problems, keep, cs))
    items = [(*_instantiation(c.spec, c.params, pr[0]), dev.arch)
             for _, pr, _, cs in prepared for c in cs]
    t0 = time.time()
    compile_all(items, args.jobs)
    print(f"compiled {len(set(items))} instantiations in {time.time() - t0:.1f} s", flush=True)
    for sh, problems, keep, _ in prepared:
        if args.budget_s and time.time() - t_start > args.budget_s:
            print(f"time budget {args.budget_s} s reached; stopping before {sh.key}")
            break
        if log:
            log(f"{sh.key}  ({dispatch.shape_class(problems[0])})")
        ranked = tune_problems(problems, dev, args.precision, args.per_spec, names,
                               args.reps, log, args.max_candidates)
        timed = [c for c in ranked if c.time_ms is not None]
        if not timed:
            print(f"{sh.key}: no candidate ran")
            continue
        best = timed[0]
        h = next((c.time_ms for c in ranked if c.source == "heuristic"), None)
        record(table, problems[0], best, h, sh.key)
        results.append({"shape": sh.key, "class": dispatch.shape_class(problems[0]),
                        "best": best.describe(), "heuristic_ms": h,
                        "candidates": [c.describe() for c in ranked]})
        gain = f"{h / best.time_ms:.2f}x over heuristic" if h else ""
        print(f"{sh.key:>22}: {best.spec.name} {_short(best.params)} "
              f"{best.time_ms:.4f} ms {gain}", flush=True)
        table.save(path)
        dispatch.forget_tables()
    table.save(path)
    dispatch.forget_tables()
    if args.log:
        Path(args.log).write_text(json.dumps(results, indent=1))
    print(f"wrote {path} ({len(table.entries)} shape classes)")
    return 0


def _precompile(args) -> int:
    names = args.kernels.split(",") if args.kernels else None
    arch = args.arch or _device(args).arch
    items = []
    for spec in tunable_specs(args.precision, None, names):
        if arch not in spec.archs:
            continue
        for _, p, ta, tb, al in spec.instantiations():
            items.append((spec.source, spec.name_expression(p, ta, tb, al), arch))
    from .kernels import schemes as S2
    for spec in S2.UTILITY_SPECS:
        items.append((spec.source, spec.name_expression(spec.configs["default"], False, False),
                      arch))
    t0 = time.time()
    bad = {k: v for k, v in compile_all(items, args.jobs).items() if v}
    print(f"precompiled {len(set(items))} instantiations for {arch} in "
          f"{time.time() - t0:.1f} s; {len(bad)} rejected")
    for k, v in bad.items():
        print(f"  {k[1]}: {v}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="sgemm tune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", help="shapes file: 'M N K [transA transB] [batch]' per line")
    ap.add_argument("--show", action="store_true", help="print the tuned table(s) for this GPU")
    ap.add_argument("--out", help="table to write (default: the user table for this GPU)")
    ap.add_argument("--table", help="with --show: this table file")
    ap.add_argument("--fresh", action="store_true", help="start a new table, not merge")
    ap.add_argument("--kernels", help="comma-separated kernel names to search (default: all "
                    "schemes, prioritized specs and rungs 8-11)")
    ap.add_argument("--precision", default="ieee", choices=("ieee", "tf32x3", "tf32"))
    ap.add_argument("--per-spec", type=int, default=4, help="candidates kept per kernel")
    ap.add_argument("--max-candidates", type=int, default=40)
    ap.add_argument("--reps", type=int, default=5, help="timed batches per candidate")
    ap.add_argument("--jobs", type=int, default=None, help="parallel compile processes")
    ap.add_argument("--budget-s", type=float, default=0, help="stop after this many seconds")
    ap.add_argument("--dry-run", action="store_true", help="list candidates; no GPU needed")
    ap.add_argument("--precompile", action="store_true", help="compile every named-config "
                    "instantiation of the tunable kernels (or --kernels) for --arch, in "
                    "parallel, into the kernel cache; no GPU needed")
    ap.add_argument("--arch", default=None, help="with --precompile (default: the GPU's)")
    ap.add_argument("--device", choices=sorted(DEVICE_MODELS), help="a device model instead "
                    "of the GPU (with --dry-run or --show)")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--show-candidates", type=int, default=6)
    ap.add_argument("--log", help="write every candidate's timing here (JSON)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.show:
        return _show(args)
    if args.precompile:
        return _precompile(args)
    if not args.shapes:
        ap.error("--shapes FILE (or --show)")
    return _tune(args)


if __name__ == "__main__":
    sys.exit(main())
