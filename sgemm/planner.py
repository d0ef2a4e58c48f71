"""Kernel choice by cost model: every candidate plan for a problem, each
with its predicted time (cost.py); ``choose`` takes the fastest.

A candidate is a kernel spec, its tile parameters and a K split:

* FP32 FFMA families: rung 9's tiles (``double_buffer``: 256x128, 128x128,
  128x64, 64x128, 64x64, 32x256, and 128x32, 256x64 along a small n), rung
  13's (``kmajor``: 128x64, 64x128, 64x64, operands copied as they lie), the
  tile template's (``tile``: 128x128, 64x64, 32x32) and
  its small-problem tiles (``small``), each with K split S ways through a
  workspace and an ordered reduction (deterministic); the gemv kernels for
  m or n <= 16 (gemv's K split the same way where its row strips give
  few blocks: cost.py caps what few SMs stream); on sm_90, K split inside
  thread-block clusters
  (``db_cluster``, ``splitk_cluster``).  Unaligned operands may also be
  copied to aligned ones first (the pack scheme) where that is predicted
  faster.
* ``precision="tf32x3"``: the 3xTF32 tensor-core kernels with the same K
  splits, *and* every FFMA candidate.  tf32x3 promises FP32-level accuracy,
  not an instruction: where FFMA is predicted faster (small, skinny and
  GEMV-like problems), it runs FFMA.
* ``precision="tf32"``: the TF32 kernels only (their accuracy is the point).

Accuracy is a constraint, not a cost: FP32 rounding error grows with the
length of each accumulation chain (measured relative error ~1.8e-8 x
sqrt(K slice) on N(0,1) data, H100), so candidates whose K slice is longer
than ``acc_slice`` are dropped whenever a split candidate within the
workspace cap exists.  The bar is FP32 GEMM as users get it: cuBLAS splits K
itself where its tiles do not fill the GPU (its error on 288x26x189045 was
2.5x below ours at 3700-deep slices; on 32x16384x4096, 128 tiles of 128x128,
2.6x below ours in one 4096-deep chain), so where the output has fewer
128x128 tiles than SMs slices stay <= 1024; on larger outputs <= 2560, where
the error of N(0,1) products is 1.8e-8 sqrt(slice) within a few percent on
long slices (the H100 judges of 2026-11-28: 1.02-1.32e-6 at slices of
3232-5456, 2.28x cuBLAS's 4.6e-7 on 394x5120x20480 at 3408), so 2560 keeps
it near 9.1e-7, under twice cuBLAS's error on that row.  Tensor-core kernels
(tf32x3, tf32) keep 4096 there: they round once per k-step of 8, and tf32x3
ran 2.2-2.7e-7 at slices of 3000-4096 (bench/probes/chain_error.py).  The limit is the candidate's kernel's, so
an FFMA plan under precision="tf32x3" has the FFMA one.  On
outputs with 64 or fewer rows or columns cuBLAS's GEMV-like kernels keep
its error about twice below a chain of the same K (H100 judge, 2026-11-26:
8x32000x8192 NT ran one 4096-deep slice at 1.15e-6 against cuBLAS's 5.4e-7;
8x128256x1024 NT one 1024 chain at 5.7e-7 against 2.9e-7), and splitting
there costs little (the partial slices are a small output's), so slices
stay <= 1024 there too (512 measured 0.4-0.5x cuBLAS on skinny deep-K
problems whose fastest plans slice 544 deep: docs/notes/dispatch.md).  Splits keep slices >= ``MIN_SLICE`` deep.

Only configs the calibration knows are considered (an uncalibrated config
has no rate to predict with); the precision's own kernel is always there.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from . import cost
from .kernels import registry
from .launches import splitk_geometry
from .kernels import schemes as S
from .kernels.params import TileParams
from .errors import ArgumentError
from .kernels.spec import KernelSpec
from .problem import Problem
from .runtime.device import DeviceInfo

# Coarse on purpose: every count to 12 and steps of a sixth above moved 38 of
# 300 picks, which then measured 0.91x (docs/notes/dispatch.md, 2026-11-27):
# between close counts the model's differences are smaller than its error.
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SMALL_FLOPS = 2 * 1024 ** 3   # per batch entry: the small-problem tiles are weighed up to 1024^3
MIN_SLICE = 128          # shallower slices cost more in reduction than they add in blocks
ACC_SLICE = 2560         # longest FP32 FFMA accumulation chain (error ~1.8e-8 sqrt(slice) ~ 9.1e-7)
ACC_SLICE_TC = 4096      # ... on tensor cores, which round once per k-step of 8 (tf32x3 at
                         # 3000-4096: 2.2-2.7e-7, 0.06-0.51x cuBLAS's, H100 judges of 2026-11-28)
ACC_SLICE_SMALL = 1024   # ... where the output has fewer 128x128 tiles than SMs
ACC_SLICE_SKINNY = 1024  # ... where the output has 64 or fewer rows or columns
FFMA_TILES = {"double_buffer": ("large", "medium", "small", "wide", "tall", "tall64", "rect",
                                 "rect_t"),
              "kmajor": ("k128x64", "k64x128", "k64x64"),
              "tile": ("large", "medium", "small")}
TC_TILES = {"tf32x3": {"tf32x3_wgmma_rs": ("large", "small", "n64", "small_n64"),
                       "tf32x3_mma": ("large", "small")},
            "tf32": {"tf32_wgmma": ("large", "small"), "tf32_mma": ("large", "small")}}


# ---- the kernels a precision may run, and the families' own size rules ----------------
def specs_for(precision: str, dev: DeviceInfo) -> list[KernelSpec]:
    return [s for s in registry.KERNELS.values()
            if s.precision == precision and dev.cc_int >= s.min_cc and s.id >= 1]


def scheme_name(spec: KernelSpec) -> str:
    return spec.extra.get("scheme", "direct")


def auto_spec(precision: str, dev: DeviceInfo) -> KernelSpec:
    """The best direct (single-launch, general-shape) kernel by declared
    priority ``extra["auto"]``; without priorities, the highest rung <= 11."""
    cands = specs_for(precision, dev)
    if not cands:
        raise ArgumentError(f"precision={precision!r}: no registered kernel runs on "
                            f"{dev.name} (sm_{dev.cc_int})")
    direct = [s for s in cands if scheme_name(s) == "direct"] or cands
    ranked = [s for s in direct if "auto" in s.extra]
    if ranked:
        return max(ranked, key=lambda s: (s.extra["auto"], s.id))
    ladder = [s for s in direct if s.id <= 11] or direct
    return max(ladder, key=lambda s: s.id)


def spec_params(spec: KernelSpec, prob: Problem, dev: DeviceInfo) -> TileParams:
    """A spec's own size rule: ``extra["choose"]`` if it has one, else the
    generic large/small rule of KernelSpec.choose."""
    fn = spec.extra.get("choose")
    if fn is not None:
        return fn(prob, dev.sm_count)
    return spec.choose(prob, dev.sm_count)


def _named_spec(name: str, dev: DeviceInfo) -> KernelSpec | None:
    s = registry.KERNELS.get(name)
    return s if s is not None and dev.cc_int >= s.min_cc else None


# Per-SM rates of db_cluster's tiles at one block per SM, relative to the
# 16x8 "wide"/"tall" tile in two k-groups (~308 GFLOP/s per SM on the H200:
# 16384x64x4096 in 218 us on 128 SMs): the 64x64 "k2" tile 274 with two
# k-groups, 285 with four (kdepth-sweep-*: 0.955 / 1.84 us per k-tile step).
DB_TALL_RATES = {"wide": 1.0, "k2x2": 274 / 308, "k2x4": 285 / 308}


def db_tall_config(prob: Problem, dev: DeviceInfo) -> TileParams | None:
    """Tall-skinny outputs (the small side 33 .. 64) with 16 .. SMs/2
    tiles of 64 x 256 along the long side.  Three db_cluster plans, whichever
    a wave model says ends first (whole waves of blocks, at one block per SM,
    each taking its tile x K-slice work at DB_TALL_RATES): the 16x8 tile 64
    wide along the small side ("wide" for small m, else "tall") in two
    k-groups with as many cluster blocks per tile as one wave holds; the 64x64
    "k2" tile in two k-groups and clusters of 2; "k2" in four k-groups alone.
    Each k-group's slice >= 256 deep.  Measured (H200, `sgemm tune` on the
    three plans): 16384x64x4096 218 us on "wide" x 2 (k2 x 2: 245);
    12288x64x4096 187 us on k2 x 2 ("wide" x 2, 96 blocks: 216);
    8192x64x8192 233 us on k2 in four groups ("wide" x 3: 289).  None where
    the rule does not apply."""
    from .kernels import schemes as S
    small = min(prob.m, prob.n)
    if prob.batch != 1 or not 32 < small <= 64:
        return None
    base = S.DB_CLUSTER_CONFIGS["wide" if prob.m <= prob.n else "tall"]
    wide = base.replace(threads=2 * S.db_group_threads(base))
    if not 16 <= S.db_tiles(prob, wide) <= dev.sm_count // 2:
        return None
    at_once = cluster_capacity(dev)
    k2 = S.DB_CLUSTER_CONFIGS["k2"]
    plans = [(wide, S.db_cluster_split(prob, wide, dev.sm_count, at_once), "wide"),
             (k2.replace(threads=2 * S.db_group_threads(k2)), 2, "k2x2"),
             (k2.replace(threads=4 * S.db_group_threads(k2)), 1, "k2x4")]
    best = None
    for p, cs, rate in plans:
        if cs < 1 or prob.k < 256 * S.db_kgroups(p) * cs:
            continue
        per_wave = (at_once(cs) * cs if at_once is not None and cs > 1 else dev.sm_count)
        waves = math.ceil(S.db_tiles(prob, p) * cs / per_wave)
        t = waves * p.BM * p.BN * math.ceil(prob.k / cs) / DB_TALL_RATES[rate]
        if best is None or t < best[0]:
            best = (t, p.replace(split_k=cs))
    return None if best is None else best[1]


def cluster_capacity(dev: DeviceInfo):
    """``cs -> clusters of cs blocks at once`` for the GPU that ``dev``
    describes (the driver's count, see schemes.db_cluster_split), or None
    where ``dev`` is not this machine's device (a described one, as in the
    CPU tests; the split then assumes SMs / cs)."""
    from .runtime import device
    try:
        if not device.has_gpu() or device.info(dev.id) != dev:
            return None
    except Exception:  # noqa: BLE001 -- no driver, no such device: no query
        return None
    from .runtime.launcher import clusters_at_once
    return lambda cs: clusters_at_once(dev, cs)


@dataclass(frozen=True, eq=False)     # never compared: no __eq__ or __hash__ to compile at import
class Candidate:
    spec: KernelSpec
    params: TileParams
    pack: bool = False
    predicted: float = 0.0
    parts: tuple = ()

    def describe(self) -> dict:
        return {"kernel": self.spec.name, "params": self.params.as_dict(), "pack": self.pack,
                "predicted_us": round(self.predicted * 1e6, 2), **dict(self.parts)}


def _ok(spec: KernelSpec | None, dev: DeviceInfo) -> bool:
    """The spec runs on dev.  ``archs`` are compile targets: a kernel built
    for arch-specific ones only (sm_90a: wgmma, clusters) runs on those; any
    other on every GPU its min_cc allows (sm_86 and sm_89 included, which
    had no candidate at all when this asked for the arch in the list)."""
    if spec is None or dev.cc_int < spec.min_cc:
        return False
    return dev.arch in spec.archs or not all(a.endswith("a") for a in spec.archs)


def _splits(prob: Problem, p: TileParams, dev: DeviceInfo, engine: str = "ieee") -> list[int]:
    """K splits worth weighing for tile p: slices >= MIN_SLICE, the workspace
    within its cap, and no more blocks than four waves would need."""
    if prob.batch != 1:
        return [1]
    tiles = math.ceil(prob.m / p.BM) * math.ceil(prob.n / p.BN)
    acc = acc_slice(prob, dev, engine)
    out = []
    for s in SPLITS:
        if s > 1 and (prob.k < s * MIN_SLICE or 4 * splitk_geometry(
                prob, p.replace(split_k=s))["floats"] > cost.WORKSPACE_MAX_BYTES):
            continue
        # past 8 waves of blocks only the first split that is accurate enough
        if tiles * s > 8 * dev.sm_count and out and math.ceil(prob.k / out[-1]) <= acc:
            break
        out.append(s)
    return out


def acc_slice(prob: Problem, dev: DeviceInfo, engine: str = "ieee") -> int:
    """The longest K slice a plan on ``engine`` (its kernel's precision:
    "ieee" for FFMA kernels, whichever precision called) may run."""
    if min(prob.m, prob.n) <= 64:
        return ACC_SLICE_SKINNY
    tiles128 = math.ceil(prob.m / 128) * math.ceil(prob.n / 128) * prob.batch
    if tiles128 < dev.sm_count:
        return ACC_SLICE_SMALL
    return ACC_SLICE if engine == "ieee" else ACC_SLICE_TC


def _base(prob: Problem, precision: str, dev: DeviceInfo) -> list[tuple[KernelSpec, TileParams]]:
    K = registry.KERNELS
    out: list[tuple[KernelSpec, TileParams]] = []
    ffma = precision in ("ieee", "tf32x3")
    if ffma:
        for name, configs in FFMA_TILES.items():
            spec = K.get(name)
            if _ok(spec, dev):
                pool = S.TILE_CONFIGS if name == "tile" else spec.configs
                out += [(spec, pool[c]) for c in configs if c in pool]
        small = K.get("small")
        if _ok(small, dev) and prob.flops <= SMALL_FLOPS * max(1, prob.batch):
            out += [(small, p) for n, p in S.SMALL_CONFIGS.items() if n != "s64x64"]
        sk = K.get("small_k")
        if _ok(sk, dev) and prob.k <= S.SMALL_K_MAX:
            out.append((sk, S.choose_small_k(prob, dev.sm_count)))
        nw = K.get("narrow")
        if _ok(nw, dev) and S.narrow_applies(prob):
            out += [(nw, p) for p in S.narrow_configs(prob)]
        if S.gemv_applies(prob):
            for name in ("gemv", "gemv_wide"):
                spec = K.get(name)
                if _ok(spec, dev) and name == "gemv":
                    out += [(spec, q) for q in S.gemv_configs(prob)]
                elif _ok(spec, dev) and S.x_rows_contiguous(prob):
                    out.append((spec, spec.extra["choose"](prob, dev.sm_count)))
        if prob.batch == 1:
            db = K.get("db_cluster")
            if _ok(db, dev):
                p = S.choose_db_cluster(prob, dev.sm_count, cluster_capacity(dev))
                out.append((db, p))
                tall = db_tall_config(prob, dev)
                if tall is not None:
                    out.append((db, tall))
            cl = K.get("splitk_cluster")
            if _ok(cl, dev):
                out.append((cl, S.choose_cluster(prob, dev.sm_count)))
    for name, configs in TC_TILES.get(precision, {}).items():
        spec = K.get(name)
        if _ok(spec, dev):
            out += [(spec, spec.configs[c]) for c in configs if c in spec.configs]
    return out


_recent: dict = {}      # candidates' last answers: key -> (calibration, tuple of candidates)


def candidates(prob: Problem, dev: DeviceInfo, precision: str = "ieee",
               cal: cost.Calibration | None = None, everything: bool = False
               ) -> list[Candidate]:
    """Every candidate with its prediction, fastest first.  ``everything``
    (calibration runs): uncalibrated configs too, no accuracy filter.

    The answer is remembered per problem (a first call asks twice: the
    measured choice's shortlist, then the choice itself where nothing was
    measured; each asking is a few hundred predictions, 3-9 ms on the CPU
    machine), for as long as the calibration object and the pack switch
    are the same."""
    cal = cal or cost.calibration(dev)
    key = (prob, dev, precision, everything, os.environ.get("SGEMM_PACK"))
    hit = _recent.get(key)
    if hit is not None and hit[0] is cal:
        return list(hit[1])
    out = _candidates(prob, dev, precision, cal, everything)
    if len(_recent) >= 256:
        _recent.clear()
    _recent[key] = (cal, tuple(out))
    return out


def _candidates(prob: Problem, dev: DeviceInfo, precision: str, cal: cost.Calibration,
                everything: bool) -> list[Candidate]:
    from . import packing
    own = None
    if precision != "ieee":
        own = auto_spec(precision, dev)
    out: list[Candidate] = []
    # the pack scheme (copies to aligned operands) is an FP32-FFMA scheme
    packed = _aligned_copy(prob) if precision == "ieee" and packing.wants_pack(prob) else None
    weighed = []
    for spec, p in _base(prob, precision, dev):
        if cost.config_key(spec, p, prob) not in cal.rates and spec is not own and not everything:
            continue
        if spec.can_implement(p, dev.smem_optin):
            continue
        if spec.extra.get("cluster") and (math.ceil(prob.m / p.BM) * math.ceil(prob.n / p.BN)
                                          >= dev.sm_count):
            continue        # K split in clusters exists to fill a wave that tiles cannot
        two = cost.two_launch_split(spec, p.replace(split_k=2))
        weighed += [(spec, p.replace(split_k=s)) for s in _splits(prob, p, dev, spec.precision)
                    ] if two else [(spec, p)]
    if not everything:
        weighed = _accurate(weighed, prob, dev)
    for spec, q in weighed:
        d = cost.predict(spec, q, prob, dev, cal)
        out.append(Candidate(spec, q.replace(pack=0) if packed else q, False, d["total"],
                             tuple(d.items())))
        if packed is not None and spec.vector_loads and spec.extra.get("scheme") not in (
                "gemv", "cluster"):
            d = cost.predict(spec, q, packed, dev, cal)
            extra = packing.extra_bytes(prob) / (cal.machine.bw_frac
                                                 * dev.dram_bandwidth_gbs() * 1e9)
            host = cal.machine.host_per_launch * 3
            t = max(d["gpu"] + extra + 3 * cal.machine.launch_gap, d["host"] + host)
            out.append(Candidate(spec, q.replace(pack=1), True, t,
                                 tuple(dict(d, total=t, pack_copies=extra).items())))
    if everything:
        return out
    if packed is not None and os.environ.get("SGEMM_PACK") == "always":
        out = [c for c in out if c.pack] or out      # forced, for tests and A/B runs
    # host-bound problems predict the same total for many plans: then the
    # one with the least GPU time (it leaves the GPU free soonest)
    return sorted(out, key=lambda c: (c.predicted, dict(c.parts)["gpu"]))


def _accurate(weighed: list, prob: Problem, dev: DeviceInfo) -> list:
    """The (spec, params) whose longest FP32 accumulation chain is within
    their kernel's limit (acc_slice), where any is; decided before
    predicting, as it reads only the slicing.  Where no candidate's slices
    are that short (K past 256 slices of the limit), half again the shortest
    any candidate reaches is the limit (slices round to each tile's BK):
    dropping the constraint instead let 968x31x169699 run 5280-deep slices
    at 0.41x cuBLAS's speed under a 512 limit (H100 judge, 2026-11-26),
    where 663-deep ones were there."""
    chains = [_chain(spec, q, prob) for spec, q in weighed]
    floor = 1.5 * min(chains, default=0)
    keep = [w for w, ch in zip(weighed, chains)
            if ch <= max(acc_slice(prob, dev, w[0].precision), floor)]
    return keep if keep else weighed


def _chain(spec: KernelSpec, q: TileParams, prob: Problem) -> int:
    """The longest FP32 accumulation chain the plan runs: its K slice
    (cost.slicing), shortened where the kernel sums a slice in parallel
    parts (gemv, narrow's k-groups)."""
    kslice = cost.slicing(spec, q, prob.k)[0]
    if spec.extra.get("scheme") == "gemv":
        return S.gemv_chain(prob, q, kslice)
    if spec is S.NARROW:
        return S.narrow_chain(q, kslice)
    return kslice


def _aligned_copy(prob: Problem) -> Problem:
    """The problem as the pack scheme hands it to the kernel: aligned."""
    r4 = lambda x: -(-x // 4) * 4  # noqa: E731
    return Problem(**{**prob.__dict__, "a": prob.a - prob.a % 16, "b": prob.b - prob.b % 16,
                      "c": prob.c - prob.c % 16, "lda": r4(prob.lda), "ldb": r4(prob.ldb),
                      "ldc": r4(prob.ldc)})


def choose(prob: Problem, dev: DeviceInfo, precision: str = "ieee"
           ) -> tuple[KernelSpec, TileParams] | None:
    cands = candidates(prob, dev, precision)
    if not cands:
        return None
    return cands[0].spec, cands[0].params


def best_time(prob: Problem, dev: DeviceInfo, precision: str = "ieee") -> float | None:
    cands = candidates(prob, dev, precision)
    return cands[0].predicted if cands else None
