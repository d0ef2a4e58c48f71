"""Dispatch schemes: kernels the planner uses for shapes the ladder's
square-tile rungs serve badly.  ids 30+; registered through
``registry._families`` (this module's ``SPECS``).

    30 tile    general warp-tiled FFMA GEMM (30_tile.cu), direct launch
    31 small   the same template, small tiles and deep BK: problems <= ~512^3
    32 splitk  K split into slices: the tile kernel runs as a strided batch
               over the slices into a workspace, then 32_splitk_reduce.cu sums
               the slices in a fixed order and applies alpha/beta (two
               launches, deterministic).  Any SGEMM_PARAMS kernel can be the
               first launch; this spec names the tile kernel.
    33 gemv    m or n <= 16: the big operand read once, coalesced (33_gemv.cu)
    34 splitk_fused  split-K in one launch (34_splitk_fused.cu): each slice
               writes its partial tile, a per-tile counter elects the last
               block, which sums the slices in order 0..S-1 and writes C.
    35 gemv_wide  m or n <= 16 with the big operand contiguous along the
               output: float4 lanes along the output, K over warps and blocks,
               blocks' slices summed like splitk_fused (33_gemv.cu).
    36 splitk_cluster  sm_90: K split over the blocks of a thread-block
               cluster with 30_tile's loop, slices summed through distributed
               shared memory (36_splitk_cluster.cu); small squares.
    38 db_cluster  sm_90: the same scheme with rung 9's loop, k-groups, and
               partial tiles pushed to their owners (38_db_cluster.cu).
    39 small_k  K <= 16 on a big output: lanes along the rows of C, so every
               warp store is 128 contiguous bytes of a column (39_small_k.cu).
    43 narrow  m or n <= 32, batched: the whole narrow side a block, operands
               streamed by 4-byte cp.async three k-chunks ahead (43_narrow.cu).

Specs with ``extra["fused"]`` take four arguments after SGEMM_PARAMS
(workspace, counters, slice depth kc, slice count S) and split K themselves
over grid z = batch * S; ``plan.direct_launches`` builds their one launch
and ``dispatch.fused_launches`` their workspace.  With split_k == 1 they get
null pointers and S = 1: an ordinary single-launch GEMM.

Every spec here is an ordinary SGEMM_PARAMS kernel: launched alone (e.g. by
``launcher.run``) it computes the whole GEMM.  Only the split-K *scheme* needs
two launches; ``sgemm.dispatch.scheme_launches`` builds them and ``plan.prepare``
runs them.  ``extra["scheme"]`` names the scheme; ``extra["choose"]`` is the
spec's size rule, ``choose(prob, sm_count) -> TileParams``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..problem import Problem
from .params import TileParams, divides, need
from .spec import KernelSpec, sgemm_args

F32 = 4
GEMV_MAX_SMALL = 16          # m or n at most this: the gemv scheme applies
SMALL_MAX_FLOPS = 2 * 512 ** 3   # the small path: per-problem work up to 512^3


# ---- the tile template (30_tile.cu) -----------------------------------------------
TILE_FIELDS = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "threads", "stages")


def tile_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.WM > 0 and p.WN > 0, "WM and WN (the warp tile) must be set", why)
    need(p.TM % 4 == 0 and p.TN % 4 == 0,
         f"TM={p.TM}, TN={p.TN} must be multiples of 4 (4x4 sub-tiles, LDS.128)", why)
    if why:
        return why
    need(divides(p.WM, p.BM) and divides(p.WN, p.BN),
         f"warp tile {p.WM}x{p.WN} must divide the block tile {p.BM}x{p.BN}", why)
    need(divides(p.TM, p.WM) and divides(p.TN, p.WN),
         f"thread tile {p.TM}x{p.TN} must divide the warp tile {p.WM}x{p.WN}", why)
    if why:
        return why
    lanes = (p.WM // p.TM) * (p.WN // p.TN)
    need(lanes == 32, f"(WM/TM)*(WN/TN)={lanes} must be 32 (one thread tile per lane)", why)
    t = (p.BM // p.WM) * (p.BN // p.WN) * 32
    ks = p.threads // t if p.threads % t == 0 else 0
    need(ks in (1, 2, 4), f"threads={p.threads} must be 32*(BM/WM)*(BN/WN)={t} times "
         "KS in (1, 2, 4) (k-groups)", why)
    if ks > 1:
        need(p.BK % ks == 0, f"BK={p.BK} must split over KS={ks} k-groups", why)
        red = (ks - 1) * p.TM * p.TN * t * F32
        need(red <= tile_smem(p), f"k-group reduction needs {red} B > the pipeline's "
             f"{tile_smem(p)} B of shared memory", why)
    need(p.BK % 4 == 0, f"BK={p.BK} must be a multiple of 4 (float4 loads along k)", why)
    for name, rows in (("A", p.BM), ("B", p.BN)):
        need(rows * p.BK % (4 * p.threads) == 0,
             f"the {name} tile ({rows}x{p.BK}) must split into float4s evenly over "
             f"threads={p.threads}", why)
    need(p.TM * p.TN <= 64, f"TM*TN={p.TM * p.TN} accumulators: at most 64 (128-register cap)", why)
    need(p.TM * p.TN * p.BK <= 512,
         f"TM*TN*BK={p.TM * p.TN * p.BK} > 512: the unrolled k-tile would spill under the "
         "128-register cap", why)
    need(2 <= p.stages <= 6, f"stages={p.stages} must be 2..6 (cp.async pipeline depth)", why)
    need(p.split_k >= 1, f"split_k={p.split_k} must be >= 1", why)
    return why


def tile_smem(p: TileParams) -> int:
    """Dynamic shared memory of 30_tile.cu: stages x (A + B) k-major tiles."""
    return p.stages * p.BK * ((p.BM + 4) + (p.BN + 4)) * F32


def tile_space():
    """The tuner's search space for the tile template, valid by construction
    of the lane grid (then filtered by tile_rules): warp tiles from the thread
    tile and a 32-lane grid, block tiles from whole warps."""
    for tm in (4, 8):
        for tn in (4, 8):
            for lm in (1, 2, 4, 8, 16, 32):
                wm, wn = lm * tm, (32 // lm) * tn
                for wy in (1, 2, 4):
                    for wx in (1, 2, 4):
                        bm, bn = wm * wy, wn * wx
                        if bm > 256 or bn > 256 or wy * wx > 8:
                            continue
                        for bk in (8, 16, 32):
                            for st in (2, 3, 4):
                                for ks in (1, 2, 4):
                                    if 32 * wy * wx * ks > 512:
                                        continue
                                    yield TileParams(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, TM=tm,
                                                     TN=tn, threads=32 * wy * wx * ks, stages=st)


def _tile_spec(id_, name, title, configs, scheme, choose, auto=None) -> KernelSpec:
    extra = {"scheme": scheme, "choose": choose, "space": tile_space}
    if auto is not None:
        extra["auto"] = auto
    return KernelSpec(
        id=id_, name=name, source="30_tile.cu", function="sgemm_tile", title=title,
        seed="seed 001 (mixed parameters), seed 003 (warp tiling, split-K notes)",
        template_fields=TILE_FIELDS, configs=configs, rules=tile_rules,
        vector_loads=True, dynamic_smem=tile_smem, extra=extra)


def _grid_blocks(prob: Problem, p: TileParams) -> int:
    return math.ceil(prob.m / p.BM) * math.ceil(prob.n / p.BN) * prob.batch


TILE_CONFIGS = {
    "large": TileParams(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=8, threads=256, stages=3),
    "medium": TileParams(BM=64, BN=64, BK=16, WM=32, WN=32, TM=4, TN=8, threads=128, stages=3),
    "small": TileParams(BM=32, BN=32, BK=32, WM=32, WN=16, TM=4, TN=4, threads=64, stages=3),
}


def _util(prob: Problem, p: TileParams) -> float:
    """Fraction of the grid's tiles that is inside C (the rest computes padding)."""
    gx, gy = math.ceil(prob.m / p.BM), math.ceil(prob.n / p.BN)
    return prob.m * prob.n / (gx * gy * p.BM * p.BN)


def choose_tile(prob: Problem, sm_count: int = 132) -> TileParams:
    """The largest tile whose grid (batch included) still puts a block on
    every SM and wastes under a quarter of its area on padding, else the
    largest that fills the SMs, else the tile with the most blocks.  (128x64
    tiles are left to the tuner: with 128 threads they spill on sm_80.)"""
    order = ["large", "medium", "small"]
    for name in order:
        p = TILE_CONFIGS[name]
        if _grid_blocks(prob, p) >= sm_count and _util(prob, p) >= 0.75:
            return p
    for name in order:
        p = TILE_CONFIGS[name]
        if _grid_blocks(prob, p) >= sm_count:
            return p
    return TILE_CONFIGS["small"]


TILE = _tile_spec(30, "tile", "scheme tile: warp-tiled FFMA, register-staged double buffer",
                  TILE_CONFIGS, "direct", choose_tile, auto=1)


# ---- small problems ---------------------------------------------------------------
SMALL_CONFIGS = {
    "s16x32": TileParams(BM=16, BN=32, BK=32, WM=16, WN=32, TM=4, TN=4, threads=32, stages=3),
    "s32x32": TileParams(BM=32, BN=32, BK=32, WM=32, WN=16, TM=4, TN=4, threads=64, stages=3),
    "s64x32": TileParams(BM=64, BN=32, BK=32, WM=32, WN=16, TM=4, TN=4, threads=128, stages=3),
    "k4s32x32": TileParams(BM=32, BN=32, BK=32, WM=32, WN=16, TM=4, TN=4, threads=256, stages=3),
    "k2s64x32": TileParams(BM=64, BN=32, BK=32, WM=32, WN=16, TM=4, TN=4, threads=256, stages=3),
    "s32x64": TileParams(BM=32, BN=64, BK=32, WM=32, WN=16, TM=4, TN=4, threads=128, stages=3),
}
SMALL_CONFIGS["s64x64"] = TILE_CONFIGS["medium"]     # same instantiation


def is_small(prob: Problem) -> bool:
    return 2 * prob.m * prob.n * prob.k <= SMALL_MAX_FLOPS and prob.batch == 1


def choose_small(prob: Problem, sm_count: int = 132) -> TileParams:
    """Small problems are latency-bound: few k-steps (BK=32) and as many
    blocks as the SMs take.  The largest tile with a grid >= the SM count;
    else (fewer tiles than SMs) 32x32 tiles whose k-tiles are split over 4
    warp groups (KS=4), which shortens each block's dependent chain 4x."""
    for name in ("s64x64", "s64x32" if prob.m >= prob.n else "s32x64", "s32x32"):
        p = SMALL_CONFIGS[name]
        if _grid_blocks(prob, p) >= sm_count:
            return p
    if prob.k >= 64:
        return SMALL_CONFIGS["k4s32x32"]
    return SMALL_CONFIGS["s32x32"] if min(prob.m, prob.n) > 16 else SMALL_CONFIGS["s16x32"]


SMALL = _tile_spec(31, "small", "scheme small: small tiles, deep k-tiles (<= 512^3)",
                   SMALL_CONFIGS, "small", choose_small)


# ---- split-K ------------------------------------------------------------------------
SPLITK_CONFIGS = {
    "large": TileParams(BM=64, BN=64, BK=16, WM=32, WN=32, TM=4, TN=8, threads=128,
                        stages=3, split_k=8),
    "small": TileParams(BM=32, BN=32, BK=32, WM=32, WN=16, TM=4, TN=4, threads=64,
                        stages=3, split_k=8),
}
SPLITK_MIN_SLICE = 256       # never cut K below this many per slice
SPLITK_MAX = 64


def splitk_factor(prob: Problem, tile: TileParams, sm_count: int) -> int:
    """Slices so that tiles*slices fills about two waves of the SMs, each slice
    at least SPLITK_MIN_SLICE deep; a power of two, at most SPLITK_MAX."""
    blocks = _grid_blocks(prob, tile)
    want = max(1, (2 * sm_count) // max(blocks, 1))
    s = 1
    while s * 2 <= min(want, SPLITK_MAX) and prob.k // (s * 2) >= SPLITK_MIN_SLICE:
        s *= 2
    return s


def choose_splitk(prob: Problem, sm_count: int = 132) -> TileParams:
    """The 64x64 tile when its tiles times the split reach one block per SM,
    else the 32x32 tile (more tiles for the same minimum slice depth)."""
    best = None
    for name in ("large", "small"):
        tile = SPLITK_CONFIGS[name]
        p = tile.replace(split_k=max(1, splitk_factor(prob, tile, sm_count)))
        blocks = _grid_blocks(prob, p) * p.split_k
        if blocks >= sm_count:
            return p
        if best is None or blocks > best[0]:
            best = (blocks, p)
    return best[1]


SPLITK = _tile_spec(32, "splitk", "scheme split-K: slices to a workspace + ordered reduce",
                    SPLITK_CONFIGS, "splitk", choose_splitk)


SPLIT_UNIT_MAX = 256    # gemv's 1024-deep Y chunks as the unit made 1337x1x12224 three
                        # slices of 5120 + 1984 (84 blocks, then 42; H100: 36.7 us against
                        # cuBLAS's 25.3); its loop takes a short last chunk


@functools.lru_cache(maxsize=4096)      # pure; the planner asks the same few many times
def split_slices(k: int, split_k: int, bk: int) -> tuple[int, int, int]:
    """(slice depth kc, full slices, remainder): kc is a multiple of bk, or of
    SPLIT_UNIT_MAX where bk is deeper (and of 4, so slice offsets keep float4
    alignment); the remainder, if any, is one
    more, shorter slice -- a second launch after the full slices, so its depth
    adds to theirs.  Of kc rounded up and kc rounded down, the one with the
    shorter kc + remainder: rounding up alone turned 1021 / 2 into 512 + 509
    (two serial launches of nearly the whole K) where rounding down gives
    2 x 480 in one launch + 61; 1000 / 4 into 3 x 256 + 232 where down gives
    4 x 248 + 8 (rung 9 large at 1000^3 on the H200: 58.5 us against 83.7,
    docs/notes/ffma-fast.md).  Rounding down may give more full slices than
    asked for (up to twice as many: the workspace the geometry sizes grows with
    them): 40896 / 64 by 32 is 67 x 608 + 160 where rounding up gave 63 x 640
    + 576, whose remainder launch took as long as the 63 slices (44x18x40896
    on the H100: 13.1 + 11.7 us)."""
    split_k = max(1, min(split_k, k))
    unit = max(min(bk, SPLIT_UNIT_MAX), 4)

    def cut(kc):
        full = k // kc
        return kc, full, k - full * kc

    up = cut(math.ceil(k / split_k / unit) * unit)
    down = cut(max(unit, k // split_k // unit * unit))
    if down[1] > 2 * split_k:
        return up
    return min(up, down, key=lambda g: (g[0] + g[2], g[1]))


# ---- gemv / tall-skinny ----------------------------------------------------------
GEMV_FIELDS = ("BM", "BN", "BK", "threads")


def gemv_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    small_m = p.BM <= GEMV_MAX_SMALL
    s, rb = (p.BM, p.BN) if small_m else (p.BN, p.BM)
    need(1 <= s <= GEMV_MAX_SMALL, f"small side per block {s} must be 1..{GEMV_MAX_SMALL} "
         "(BM <= 16: small m; else BN <= 16: small n)", why)
    need(rb in (32, 64, 128), f"big-side strip {rb} must be 32, 64 or 128", why)
    need(p.BK % 128 == 0, f"BK={p.BK} must be a multiple of 128 (a warp's float4 sweep)", why)
    warps = p.threads // 32
    if why or warps == 0:
        return why
    need(rb % warps == 0, f"strip {rb} must split over the {warps} warps", why)
    need(p.BK % warps == 0, f"BK={p.BK} must split over the {warps} warps", why)
    if rb % warps == 0:
        rows = rb // warps
        cap = 32 if p.threads > 256 else 64   # 512 threads leave 128 registers a thread
        need(rows * s <= cap, f"(strip/warps)*S = {rows * s} accumulators: at most {cap} "
             f"with {p.threads} threads", why)
        v = rb // 32
        need(v * s <= 64, f"(strip/32)*S = {v * s} accumulators: at most 64", why)
    if p.BK % warps == 0:
        pw = p.BK // warps
        need(pw < 16 or pw % 16 == 0, f"BK/warps={pw} must be < 16 or a multiple of 16", why)
    need(p.BK * s * F32 <= 32768, f"Y chunk BK*S*4 = {p.BK * s * F32} B exceeds 32 KiB", why)
    return why


def gemv_smem(p: TileParams) -> int:
    small_m = p.BM <= GEMV_MAX_SMALL
    s, rb = (p.BM, p.BN) if small_m else (p.BN, p.BM)
    return p.BK * s * F32 + (p.threads // 32) * rb * F32


GEMV_SIZES = (1, 2, 4, 8, 16)


def _gemv_cfg(side: str, s: int, kcont: bool, aligned: bool = False) -> TileParams:
    """The block for small side S and the big operand's layout.  The Y
    chunk depths (256 to 2048 k-rows) are ones at which ptxas spills in no
    layout on any arch (sm_80 to sm_90a; a config compiles for all eight
    layouts): at some depths it gives a few of them an 8-20 byte stack
    frame at 48-80 registers.

    k-contiguous X (warp per row group, lanes along k): a 32-row strip; 16
    warps (ROWS = 2 rows each) while the Y reads from shared memory stay at
    most 4 per float4 of X (S / ROWS <= 4), else 8 warps (S = 16: ROWS = 4).
    Row-contiguous X (lanes along rows, V = strip/32 rows each; warps split
    k): V = 2 with 8 warps for S = 2 and 4, else V = 1 with 16 warps (a
    config must also be legal in the k-contiguous layouts, which caps the
    strip at 32 for S = 16; gemv_wide serves that case too).
    Chosen from every block forced on 13 skinny problems (H100, all four
    layouts, unaligned: bench/results/gemv-configs-probe-h100-2026-11-25.json),
    where the former rule's blocks ran up to 3.4x slower than the best one;
    docs/notes/dispatch.md.

    ``aligned`` (k-contiguous X, S = 8, operands on 16-byte rows: the float4
    loop): a 64-row strip, four rows a warp, so each Y float4 read from
    shared memory feeds 16 FMAs, not 8.  On five such x @ W.T calls of 5-8
    tokens (H200, bench/results/dot-decode-h200-2026-11-29.json) it ran
    1.47-2.05x the 32-row strip's speed unsplit and faster than that
    strip's best split on all five; on the two unaligned rows there (the
    scalar loop) 1.15x faster on one and 1.6-2.7x slower on the other, so
    that loop keeps 32 rows.  The planner weighs the 32-row strip beside it
    (gemv_configs).  It is built only in the layouts along k
    (gemv_layouts)."""
    if kcont:
        rb, threads = (64 if aligned else 32), (512 if s <= 8 else 256)
        bk = 256 if s == 16 else 1024
    else:
        rb, threads, bk = {1: (32, 512, 1024), 2: (64, 256, 512), 4: (64, 256, 2048),
                           8: (32, 512, 1024), 16: (32, 512, 256)}[s]
    if side == "m":
        return TileParams(BM=s, BN=rb, BK=bk, threads=threads)
    return TileParams(BM=rb, BN=s, BK=bk, threads=threads)


GEMV_CONFIGS = {f"{side}{s}{'k' if kc else 'r'}": _gemv_cfg(side, s, kc)
                for side in ("m", "n") for s in GEMV_SIZES for kc in (True, False)}
GEMV_CONFIGS.update({f"{side}8ka": _gemv_cfg(side, 8, True, aligned=True) for side in "mn"})


def gemv_applies(prob: Problem) -> bool:
    return min(prob.m, prob.n) <= GEMV_MAX_SMALL


def choose_gemv(prob: Problem, sm_count: int = 132) -> TileParams:
    """Small side m (if m <= n) or n: the smallest S in GEMV_SIZES covering it
    (a larger small side just gets more blocks), the block for the big
    operand's layout and, for S = 8 along k, its alignment (_gemv_cfg)."""
    side = "m" if prob.m <= prob.n else "n"
    small = prob.m if side == "m" else prob.n
    s = next((x for x in GEMV_SIZES if x >= small), GEMV_SIZES[-1])
    kind = "r" if x_rows_contiguous(prob) else "ka" if s == 8 and prob.aligned else "k"
    return GEMV_CONFIGS[f"{side}{s}{kind}"]


def gemv_strip64(p: TileParams) -> bool:
    """p is S = 8's 64-row strip (configs m8ka, n8ka)."""
    return (p.BM, p.BN) in ((8, 64), (64, 8))


def gemv_configs(prob: Problem) -> list[TileParams]:
    """The blocks the planner weighs, each by its own rate: choose_gemv's,
    and where that is the 64-row strip the 32-row strip too.  With the
    64-row strip alone, x @ W.T layers of 9-17 MB that the 32-row strip had
    run at 1.4-2.0x cuBLAS's speed in one launch went to K-split plans
    (43_narrow.cu's, db_cluster's) at 0.98-1.06x (bench/results/
    gemv-strip-ab-h200-2026-11-29.json); layers of 50 MB or more gained up
    to 1.7x."""
    p = choose_gemv(prob)
    if gemv_strip64(p):
        return [p, GEMV_CONFIGS[f"{'m' if p.BM == 8 else 'n'}8k"]]
    return [p]


ALL_LAYOUTS = frozenset((ta, tb) for ta in (False, True) for tb in (False, True))


def gemv_layouts(p: TileParams) -> frozenset:
    """The canonical (ta, tb) a gemv block is launched in: all four, but the
    64-row strip only where the big operand lies along k (choose_gemv
    returns it nowhere else; in the row-contiguous loop ptxas gives it 64
    registers and a 16-72 byte spill)."""
    if not gemv_strip64(p):
        return ALL_LAYOUTS
    if p.BM == 8:                         # small m: X = op(B)^T lies along k when not TB
        return frozenset({(False, False), (True, False)})
    return frozenset({(True, False), (True, True)})    # small n: X = op(A), along k when TA


def gemv_chain(prob: Problem, p: TileParams, kslice: int) -> int:
    """Longest sequential FP32 accumulation in a gemv block over a K slice:
    k-contiguous X sums each lane's K/32 terms, then a butterfly over the
    lanes; row-contiguous X splits k over the warps, then sums their
    partials.  (The accuracy constraint weighs this, not the slice.)"""
    if not x_rows_contiguous(prob):
        return math.ceil(kslice / 32)
    return math.ceil(kslice / max(1, p.threads // 32))


GEMV = KernelSpec(
    id=33, name="gemv", source="33_gemv.cu", function="sgemm_gemv",
    title="scheme gemv: m or n <= 16, big operand read once",
    seed="seed 003 notes on tall-skinny shapes",
    template_fields=GEMV_FIELDS, configs=GEMV_CONFIGS, rules=gemv_rules,
    vector_loads=True, static_smem=gemv_smem,
    extra={"scheme": "gemv", "choose": choose_gemv, "layouts": gemv_layouts})


# ---- a short K on a big output (39_small_k.cu) -------------------------------------
SMALL_K_FIELDS = ("BN", "BK")
SMALL_K_MAX = 16            # the planner weighs small_k up to its deepest chunk: one chunk
# BK 4 / 8 / 16 (the smallest that holds K: fewer multiplies by the zeros past
# K); 64 columns a block, 32 with 16-deep chunks (a lane's 4 x 16 op(A) values
# and its 4 x 4 sums stay under the two-blocks-an-SM register cap)
SMALL_K_CONFIGS = {f"k{bk}": TileParams(BM=128, BN=32 if bk == 16 else 64, BK=bk, threads=256)
                   for bk in (4, 8, 16)}


def small_k_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.BM == 128 and p.threads == 256,
         f"BM={p.BM}, threads={p.threads}: a block is 8 warps over a 128-row strip", why)
    need(p.BN % 8 == 0, f"BN={p.BN} must split evenly over the 8 warps", why)
    need(p.BK % 4 == 0, f"BK={p.BK} must be a multiple of 4 (float4 reads along k)", why)
    return why


def choose_small_k(prob: Problem, sm_count: int = 132) -> TileParams:
    """The shallowest chunk that holds K in one pass."""
    return next((p for p in SMALL_K_CONFIGS.values() if p.BK >= prob.k),
                SMALL_K_CONFIGS[f"k{SMALL_K_MAX}"])


SMALL_K = KernelSpec(
    id=39, name="small_k", source="39_small_k.cu", function="sgemm_small_k",
    title="scheme small_k: K <= 16, each warp store 32 consecutive rows of a column of C",
    seed="seed 003 notes on tall-skinny shapes (a rank-k update is bound by writing C)",
    template_fields=SMALL_K_FIELDS, configs=SMALL_K_CONFIGS, rules=small_k_rules,
    vector_loads=False, static_smem=lambda p: 4 * p.BN * p.BK,
    extra={"choose": choose_small_k})


# ---- a narrow side streamed (43_narrow.cu) -----------------------------------------
NARROW_FIELDS = ("BM", "BN", "BK", "threads")
NARROW_SIDES = (8, 16, 32)  # the narrow side's tile: the smallest that holds it
NARROW_WIDE = (64, 128)     # the wide side's; a k-group of threads owns one row each
NARROW_BK, NARROW_STAGES = 16, 4    # 43_narrow.cu's STAGES
NARROW_GROUPS = (1, 2, 4)   # k-groups: threads = groups x the wide side


def _narrow_name(side: str, s: int, w: int, bk: int, kg: int) -> str:
    """n16w128: narrow n of 16, 128 wide, 16-deep chunks, one k-group;
    suffixes k8 (8-deep chunks) and g2 / g4 (k-groups)."""
    return (f"{side}{s}w{w}{'' if bk == NARROW_BK else f'k{bk}'}"
            f"{'' if kg == 1 else f'g{kg}'}")


def narrow_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    wide, small = max(p.BM, p.BN), min(p.BM, p.BN)
    kg = p.threads // wide if wide else 0
    need(small in NARROW_SIDES, f"the narrow side {small} must be one of {NARROW_SIDES}", why)
    need(wide % 64 == 0 and wide > small, f"the wide side {wide} must be a multiple of 64", why)
    need(p.threads % max(wide, 1) == 0 and kg in NARROW_GROUPS,
         f"threads={p.threads}: one, two or four k-groups of the {wide} wide rows", why)
    need(p.BK % 4 == 0, f"BK={p.BK} must be a multiple of 4", why)
    need(kg == 0 or p.BK % kg == 0, f"BK={p.BK}: each of {kg} k-groups takes a whole part "
         "of a chunk", why)
    need(p.threads % p.BK == 0, f"BK={p.BK}: the copies along k split over {p.threads} threads",
         why)
    need(small >= p.threads or p.BK % (p.threads // small) == 0,
         f"BK={p.BK}: the narrow operand's chunk, copied along its {small} rows by "
         f"{p.threads} threads, needs BK a multiple of {max(1, p.threads // small)}", why)
    need(wide * (small + 1) <= NARROW_STAGES * p.BK * (wide + 1 + small + 4),
         f"BK={p.BK}: the {wide}x{small} output tile must fit the stages' shared memory", why)
    return why


# Every combination the rules take.  8-deep chunks ("k8") halve a block's
# shared memory, which bounds the blocks an SM holds where the batch is
# large; k-groups put two or four warps on each row's k where the batch is
# too small to fill the SMs (docs/notes/dispatch.md, fourteenth session).
NARROW_CONFIGS = {
    _narrow_name(side, s, w, bk, kg): p
    for bk in (NARROW_BK, 8) for kg in NARROW_GROUPS for side in "nm"
    for s in NARROW_SIDES for w in NARROW_WIDE
    for p in [TileParams(BM=w if side == "n" else s, BN=s if side == "n" else w, BK=bk,
                         threads=kg * w)]
    if not narrow_rules(p)}


def narrow_smem(p: TileParams) -> int:
    """STAGES k-chunks of the wide operand ([BK][W + 1]) and the narrow one ([BK][NW + 4])."""
    wide, small = max(p.BM, p.BN), min(p.BM, p.BN)
    return F32 * NARROW_STAGES * p.BK * (wide + 1 + small + 4)


def narrow_applies(prob: Problem) -> bool:
    """A side of at most 32: a batch of products, or one product, whose
    blocks then come from the planner's K split (the slices run as a batch).
    On single products the model picks it where its rates say so
    (docs/notes/dispatch.md, fourteenth session)."""
    return min(prob.m, prob.n) <= NARROW_SIDES[-1]


def narrow_configs(prob: Problem) -> list[TileParams]:
    """The narrow side's smallest tile, at each wide extent, chunk depth and
    number of k-groups (a wider side, as under a forced kernel=, takes the
    widest tile over several blocks); the 16-deep 128-wide tile of one
    k-group last (the kernel's own choice)."""
    side = "n" if prob.n <= prob.m else "m"
    s = next((x for x in NARROW_SIDES if x >= min(prob.m, prob.n)), NARROW_SIDES[-1])
    names = [_narrow_name(side, s, w, bk, kg) for bk in (8, NARROW_BK)
             for kg in NARROW_GROUPS[::-1] for w in NARROW_WIDE]
    return [NARROW_CONFIGS[x] for x in names if x in NARROW_CONFIGS]


def narrow_chain(p: TileParams, kslice: int) -> int:
    """Longest sequential FP32 accumulation in a narrow block over a K
    slice: each of its KG k-groups sums its part of every chunk (BK / KG
    of each BK), then the groups' sums are added in group order."""
    kg = max(1, p.threads // max(p.BM, p.BN))
    return math.ceil(kslice / kg) + kg - 1


NARROW = KernelSpec(
    id=43, name="narrow", source="43_narrow.cu", function="sgemm_narrow",
    title="scheme narrow: m or n <= 32 a block, operands streamed by 4-byte cp.async",
    seed="the judges' batched products with a narrow side, which cuBLAS streams "
         "(docs/notes/dispatch.md, tenth session)",
    template_fields=NARROW_FIELDS, configs=NARROW_CONFIGS, rules=narrow_rules,
    vector_loads=False, dynamic_smem=narrow_smem,
    extra={"choose": lambda prob, sm_count=132: narrow_configs(prob)[-1]})


# ---- the split-K reduction (second launch; not a GEMM, so not registered) ----------
def _reduce_spec(vec: bool) -> KernelSpec:
    return KernelSpec(
        id=-32, name="splitk_reduce" + ("_vec" if vec else ""), source="32_splitk_reduce.cu",
        function=f"splitk_reduce<{'true' if vec else 'false'}>",
        title="split-K: ordered sum of the slices, alpha/beta epilogue",
        seed="CUTLASS split-K (parallel reduction)", template_fields=(),
        configs={"default": TileParams(threads=256)}, plain=True)


REDUCE_VEC = _reduce_spec(True)
REDUCE_SCALAR = _reduce_spec(False)
REDUCE_GROUPS, REDUCE_GROUPED_FROM = 8, 16   # 32_splitk_reduce.cu: G = 8 threads an
                                             # element group once S >= 16 slices


def reduce_grid(m: int, n: int, slices: int, vec: bool) -> tuple[int, int, int]:
    """The reduction's grid: one x block per 256 / G (row group, column)
    pairs, G as the kernel derives it from the slice count."""
    per_block = 256 // (REDUCE_GROUPS if slices >= REDUCE_GROUPED_FROM else 1)
    groups = math.ceil(m / (4 if vec else 1)) * n
    return (max(1, math.ceil(groups / per_block)), 1, 1)
UTILITY_SPECS = [REDUCE_VEC, REDUCE_SCALAR]

# ---- fused split-K (34_splitk_fused.cu) and gemv_wide: shared launch convention ----
def fused_direct_args(prob: Problem) -> tuple:
    """A fused kernel launched alone: no workspace, one slice of depth K."""
    return sgemm_args(prob) + (0, 0, np.int32(max(prob.k, 1)), np.int32(1))


def fused_slices(k: int, split_k: int, unit: int) -> tuple[int, int]:
    """(kc, S): slice depth kc, a multiple of ``unit``, and S = ceil(k / kc)
    slices (the last one may be shorter; the kernel clamps it)."""
    split_k = max(1, min(split_k, k))
    kc = max(unit, math.ceil(k / split_k / unit) * unit)
    return kc, math.ceil(k / kc)


FUSED_CONFIGS = {
    "large": SPLITK_CONFIGS["large"],
    "small": SPLITK_CONFIGS["small"],
}


def choose_splitk_fused(prob: Problem, sm_count: int = 132) -> TileParams:
    """The same tile and split rule as the two-launch scheme (choose_splitk):
    only the reduction moves into the kernel."""
    return choose_splitk(prob, sm_count)


def _fused_extra(unit) -> dict:
    # unit(p): slice depths are multiples of it; slot(p): floats one block
    # leaves in the workspace per (tile, slice)
    return {"unit": unit, "slot": lambda p: p.BM * p.BN}


SPLITK_FUSED = KernelSpec(
    id=34, name="splitk_fused", source="34_splitk_fused.cu", function="sgemm_splitk_fused",
    title="scheme split-K, one launch: last block per tile sums the slices in order",
    seed="seed 003 (split-K notes); CUTLASS serial split-K (semaphore), redone here",
    template_fields=TILE_FIELDS, configs=FUSED_CONFIGS, rules=tile_rules,
    vector_loads=True, dynamic_smem=tile_smem, args_fn=fused_direct_args,
    # scheme "splitk": the tuner pairs it with split factors like spec 32;
    # plan.scheme reads "splitk_fused" (dispatch.scheme_for).
    extra={"scheme": "splitk", "choose": choose_splitk_fused, "space": tile_space,
           "fused": _fused_extra(lambda p: max(p.BK, 4))})


# ---- gemv_wide (33_gemv.cu, sgemm_gemv_wide) ------------------------------------------
GEMV_WIDE_SMEM_MAX = 16384


def gemv_wide_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    small_m = p.BM <= GEMV_MAX_SMALL
    s, rb = (p.BM, p.BN) if small_m else (p.BN, p.BM)
    need(1 <= s <= GEMV_MAX_SMALL, f"small side per block {s} must be 1..{GEMV_MAX_SMALL}", why)
    need(rb % 128 == 0 and rb >= 128, f"big-side strip {rb} must be a multiple of 128 "
         "(a warp of float4 lanes)", why)
    warps = p.threads // 32
    if why or warps == 0:
        return why
    need((rb // 128) * s <= 16, f"4*(strip/128)*S = {4 * (rb // 128) * s} accumulators: "
         "at most 64", why)
    need(p.BK % warps == 0, f"BK={p.BK} must split over the {warps} warps", why)
    need(p.BK * s * F32 <= GEMV_WIDE_SMEM_MAX,
         f"Y chunk BK*S*4 = {p.BK * s * F32} B exceeds {GEMV_WIDE_SMEM_MAX} B", why)
    need(warps * rb * F32 <= GEMV_WIDE_SMEM_MAX,
         f"reduction buffer warps*strip*4 = {warps * rb * F32} B exceeds {GEMV_WIDE_SMEM_MAX} B",
         why)
    return why


def gemv_wide_smem(p: TileParams) -> int:
    small_m = p.BM <= GEMV_MAX_SMALL
    s, rb = (p.BM, p.BN) if small_m else (p.BN, p.BM)
    warps = p.threads // 32
    sg = max(1, min(s, 4096 // max(warps * rb, 1)))
    return p.BK * s * F32 + warps * rb * sg * F32 + 16


def _gemv_wide_cfg(side: str, s: int) -> TileParams:
    """8 warps, a 128-wide strip (512-byte row segments per warp), Y chunks
    of 512 rows (256 for S = 16: 16 KiB)."""
    bk = 512 if s <= 4 else 256
    if side == "m":
        return TileParams(BM=s, BN=128, BK=bk, threads=256, split_k=1)
    return TileParams(BM=128, BN=s, BK=bk, threads=256, split_k=1)


GEMV_WIDE_CONFIGS = {f"{side}{s}": _gemv_wide_cfg(side, s) for side in ("m", "n")
                     for s in GEMV_SIZES}
GEMV_WIDE_MIN_SLICE = 128      # k-rows per block: 16 per warp, two U-groups of loads
GEMV_WIDE_BLOCKS_PER_SM = 4    # blocks to aim for (H200, 2026-11-22: 1x4096x4096 split 16
                               # 24.9 us, 32: 26.3, 64: 31.5; 16x8192x2048 split 8 43 us, 16: 61)


def x_rows_contiguous(prob: Problem) -> bool:
    """The big operand of a gemv-shaped problem is contiguous along the
    output (R-contiguous): small m with op(B) = B^T, or small n with A
    not transposed."""
    return prob.tb if prob.m <= prob.n else not prob.ta


def choose_gemv_wide(prob: Problem, sm_count: int = 132) -> TileParams:
    """S covering the small side (as choose_gemv), a 128-wide strip, and K
    split over blocks (a power of two) until strips * slices reach about
    GEMV_WIDE_BLOCKS_PER_SM per SM, each slice at least GEMV_WIDE_MIN_SLICE
    rows deep."""
    side = "m" if prob.m <= prob.n else "n"
    small, big = (prob.m, prob.n) if side == "m" else (prob.n, prob.m)
    s = next((x for x in GEMV_SIZES if x >= small), GEMV_SIZES[-1])
    p = GEMV_WIDE_CONFIGS[f"{side}{s}"]
    blocks = math.ceil(big / 128) * math.ceil(small / s) * prob.batch
    want = math.ceil(GEMV_WIDE_BLOCKS_PER_SM * sm_count / max(blocks, 1))
    cap = max(1, min(want, prob.k // GEMV_WIDE_MIN_SLICE, SPLITK_MAX))
    # a power of two: 16x8192x2048 took 52 us with 9 slices (576 blocks of
    # 124 registers: 2.2 waves) and 41 us with 8 (H200, 2026-11-22)
    split = 1 << (cap.bit_length() - 1)
    return p.replace(split_k=split)


GEMV_WIDE = KernelSpec(
    id=35, name="gemv_wide", source="33_gemv.cu", function="sgemm_gemv_wide",
    title="scheme gemv_wide: m or n <= 16, float4 lanes along the output, K over blocks",
    seed="seed 003 notes on tall-skinny shapes; the public suite's 1x4096x4096 NN",
    template_fields=GEMV_FIELDS, configs=GEMV_WIDE_CONFIGS, rules=gemv_wide_rules,
    static_smem=gemv_wide_smem, args_fn=fused_direct_args,
    extra={"scheme": "gemv", "choose": choose_gemv_wide, "fused": _fused_extra(lambda p: 4)})


# ---- split-K inside a thread-block cluster (36_splitk_cluster.cu, sm_90) ----------
CLUSTER_SIZES = (2, 4, 8)      # portable cluster sizes


def cluster_rules(p: TileParams) -> list[str]:
    why = tile_rules(p)
    need(p.split_k in CLUSTER_SIZES,
         f"split_k={p.split_k} is the cluster size: one of {CLUSTER_SIZES}", why)
    return why


def cluster_smem(p: TileParams) -> int:
    """The pipeline's stages, reused at the end for the parked BM x BN tile."""
    return max(tile_smem(p), p.BM * p.BN * F32)


def cluster_space():
    """The tile space with each cluster size (only tiles up to 64x64 with
    split-K of <= 512^3 problems make sense; the cost model ranks the rest out)."""
    for p in tile_space():
        if p.BM * p.BN <= 64 * 64:
            for cs in CLUSTER_SIZES:
                yield p.replace(split_k=cs)


# The fastest per size under CUDA graphs on the H200 (docs/notes/dispatch.md):
# 128^3 and 256^3 took the 32x32 tile with
# two k-groups per block (128 threads) and 2 slices, 2.61 / 3.97 us; 384^3 the
# 64x64 tile with 8 slices, 8.16 us (36 tiles x 8 = 288 blocks).
CLUSTER_CONFIGS = {
    "large": TILE_CONFIGS["medium"].replace(split_k=8),                 # 64x64, 8 slices
    "medium": TILE_CONFIGS["medium"].replace(split_k=4),
    "small": TILE_CONFIGS["small"].replace(threads=128, split_k=2),     # 32x32, KS=2, 2 slices
}


def choose_cluster(prob: Problem, sm_count: int = 132) -> TileParams:
    """32x32 tiles in pairs of slices while they make at most half a wave of
    tiles, else 64x64 tiles in 8 slices (those measured fastest)."""
    if _grid_blocks(prob, CLUSTER_CONFIGS["small"]) <= sm_count // 2:
        return CLUSTER_CONFIGS["small"]
    return CLUSTER_CONFIGS["large"]


SPLITK_CLUSTER = KernelSpec(
    id=36, name="splitk_cluster", source="36_splitk_cluster.cu", function="sgemm_splitk_cluster",
    title="scheme split-K in a thread-block cluster, slices summed through DSMEM",
    seed="seed 003 (split-K notes); Hopper distributed shared memory (CUDA guide)",
    template_fields=TILE_FIELDS + ("split_k",), configs=CLUSTER_CONFIGS, rules=cluster_rules,
    vector_loads=True, dynamic_smem=cluster_smem, archs=("sm_90a",), min_cc=90,
    grid_fn=lambda prob, p: (math.ceil(prob.m / p.BM), math.ceil(prob.n / p.BN),
                             prob.batch * p.split_k),
    # split_k is the cluster size, inside one launch: dispatch.scheme_for
    # reads extra["cluster"] and keeps it a direct launch
    extra={"scheme": "cluster", "cluster": True, "choose": choose_cluster,
           "space": cluster_space})



# ---- rung 9's main loop split over K in a cluster (38_db_cluster.cu, sm_90) -------
DB_CLUSTER_SIZES = tuple(range(1, 9))   # any cluster of up to 8 blocks is portable
DB_KGROUPS = (1, 2, 4)
# From this many k-groups on, a block's groups add their partial tiles in
# parallel (38_db_cluster.cu's sg::db_parallel_combine; keep the two equal):
# it decides the shared-memory layout below and a rule of db_cluster_rules.
DB_PARALLEL_KGROUPS = 4


def db_group_threads(p: TileParams) -> int:
    """Threads of one k-group: the warp tiling's (threads is KG times that)."""
    if p.WM <= 0 or p.WN <= 0 or p.BM % p.WM or p.BN % p.WN:
        return p.threads
    return 32 * (p.BM // p.WM) * (p.BN // p.WN)


def db_kgroups(p: TileParams) -> int:
    return max(1, p.threads // db_group_threads(p))


def db_cluster_rules(p: TileParams) -> list[str]:
    from .ladder import warptile_rules
    gt = db_group_threads(p)
    why = warptile_rules(p.replace(threads=gt))
    need(p.threads in tuple(kg * gt for kg in DB_KGROUPS),
         f"threads={p.threads} must be 1, 2 or 4 k-groups of the warp tiling's {gt}", why)
    need(p.split_k in DB_CLUSTER_SIZES,
         f"split_k={p.split_k} is the cluster size: one of {DB_CLUSTER_SIZES}", why)
    kg = p.threads // gt if gt > 0 else 1
    need(kg < DB_PARALLEL_KGROUPS or (p.TM * p.TN // 4) % kg == 0,
         f"{kg} k-groups must split a thread's {p.TM * p.TN // 4} float4s evenly "
         f"(the groups add their tiles in parallel)", why)
    need(p.threads <= 256 or p.TM * p.TN <= 32,
         f"threads={p.threads} with {p.TM}x{p.TN} accumulators: over 128 registers a "
         f"thread, 512 threads do not fit one SM's 64K registers", why)
    return why


# db_cluster is built for one block per SM (launch bounds, slices sized to one
# wave).  Under programmatic dependent launch the next GEMM's blocks are placed
# while this one still runs; where two fit an SM, the scheduler stacks them on
# the SMs that are free at that moment.  Asking for more than half of an SM's
# 228 KiB (sm_90) keeps it to one.  SGEMM_DB_RESERVE=0 turns the reservation
# off (for measuring it).
DB_ONE_PER_SM_BYTES = 115 * 1024


def db_cluster_smem(p: TileParams) -> int:
    """Each k-group's two rung-9 k-tile buffers, then the slots that receive
    the cluster's partial tiles (CS slots of this block's share); at least
    DB_ONE_PER_SM_BYTES.  Four k-groups (38_db_cluster.cu's parallel
    combine) park their partial tiles over the buffers, so that area is the
    larger of the two, and shares are whole strides of all threads; two park
    group 1's tile past the slots, with shares in strides of one group."""
    import os
    from .ladder import tile_bytes
    tile4 = p.BM * p.BN // 4                                  # float4s in a tile
    cs, kg, gt = max(p.split_k, 1), db_kgroups(p), db_group_threads(p)
    bufs = kg * 2 * tile_bytes(p)
    if kg >= DB_PARALLEL_KGROUPS:
        share = -(-tile4 // (cs * p.threads)) * p.threads
        need = max(bufs, kg * tile4 * 16) + cs * share * 16
    else:
        share = -(-tile4 // (cs * gt)) * gt
        need = bufs + (cs * share + (kg - 1) * tile4) * 16
    if os.environ.get("SGEMM_DB_RESERVE", "1") in ("0", "off", "no"):
        return need
    return max(need, DB_ONE_PER_SM_BYTES)


# Measured under CUDA graphs on the H200 (docs/notes/dispatch.md): "k2" -- a
# 64x64 tile of 8x8 thread tiles (64 threads)
# in two k-groups -- was the fastest at 384^3 (3 slices x 2 groups, 7.34 us,
# cuBLAS 9.37) and 512^3 (2 x 2, 11.18 us, cuBLAS 12.86); "small" (8x4, one
# group) 7.41 / 11.87; "large" (rung 9's 128x128) 29.5 us at 768^3 with 3
# slices (cuBLAS 32.6).  128x64 tiles and 8x4 tiles in 2-4 groups never led.
DB_CLUSTER_CONFIGS = {
    "large": TileParams(BM=128, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, threads=256,
                        split_k=3),
    "small": TileParams(BM=64, BN=64, BK=16, WM=32, WN=32, TM=8, TN=4, threads=128,
                        split_k=3),
    "k2": TileParams(BM=64, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, threads=128, split_k=2),
    # k2's tile at BK = 8 in four k-groups (two warps per scheduler; half the
    # first k-tile's burst from L2): 512^3 9.93-9.99 us against k2's
    # 10.37-10.46 in the same runs, 384^3 equal (6.36 / 6.33 us at 3 blocks);
    # at BK = 8 two k-groups were slower (11.0 us; H200, under CUDA graphs).
    "k4": TileParams(BM=64, BN=64, BK=8, WM=32, WN=64, TM=8, TN=8, threads=256, split_k=2),
    # Rung 9's 16x8 thread tiles (its 4096^3 loop) for problems of 32-66
    # such tiles: tall-skinny (16384x64x4096 as 64 tiles of 256x64 in
    # clusters of 2) and odd ~1024^3 (1025x1023 as 36 tiles of 128x256 in
    # clusters of 3).  Each pair is the two orientations of one tile.
    # Rung 9's 32x256 tile of 4x8 (132 tiles at 1023x1025: one per SM), as
    # the 1023x1025x1021 table entries hold it.  Two k-groups measured slower
    # (NN 81.5 against 77.7 us, TN 71.7 against 67.6: tune-1023-thin-*).
    "thin": TileParams(BM=32, BN=256, BK=32, WM=32, WN=32, TM=4, TN=8, threads=256,
                       split_k=1),
    "big": TileParams(BM=256, BN=128, BK=8, WM=128, WN=32, TM=16, TN=8, threads=256,
                      split_k=3),
    "big_wide": TileParams(BM=128, BN=256, BK=8, WM=64, WN=64, TM=16, TN=8, threads=256,
                           split_k=3),
    "tall": TileParams(BM=256, BN=64, BK=8, WM=128, WN=32, TM=16, TN=8, threads=128,
                       split_k=2),
    "wide": TileParams(BM=64, BN=256, BK=8, WM=64, WN=64, TM=16, TN=8, threads=128,
                       split_k=2),
}


def db_cluster_space():
    for p in DB_CLUSTER_CONFIGS.values():
        gt = db_group_threads(p)
        for kg in DB_KGROUPS:
            for cs in DB_CLUSTER_SIZES:
                yield p.replace(threads=kg * gt, split_k=cs)


def db_tiles(prob: Problem, p: TileParams) -> int:
    return math.ceil(prob.m / p.BM) * math.ceil(prob.n / p.BN) * prob.batch


def db_cluster_split(prob: Problem, p: TileParams, sm_count: int = 132,
                     at_once=None) -> int:
    """The most blocks per tile (cluster size, up to 8) that keep tiles x
    blocks within one wave of one block per SM; 0 if the tiles alone do not.
    ``at_once(cs)``, where given, is the device's count of clusters of cs
    blocks that run at once (the driver's, runtime.launcher.clusters_at_once):
    fewer than SMs / cs, as clusters stay inside one GPC -- on the H200 39
    clusters of 3 (not 44), 30 of 4, 15 of 8.
    Without it, SMs / cs."""
    tiles = db_tiles(prob, p)
    if not tiles:
        return 0
    cs = min(8, sm_count // tiles)
    while cs > 1 and at_once is not None and tiles > at_once(cs):
        cs -= 1
    return cs


def choose_db_cluster(prob: Problem, sm_count: int = 132, at_once=None) -> TileParams:
    """The "k4" tile (k2's 64x64 at BK = 8 in four k-groups) with as many
    cluster blocks as one wave holds.  On the H200 it has k2's fixed cost in
    clusters of 2 (2.76 against 2.73 us) and a faster loop (6.8 against 7.3 ns
    per thousand FMAs an SM, from a K-depth sweep); 512^3 9.93-9.99 against
    10.37-10.46 us, 384^3 equal."""
    p = DB_CLUSTER_CONFIGS["k4"]
    return p.replace(split_k=max(1, db_cluster_split(prob, p, sm_count, at_once)))


DB_CLUSTER = KernelSpec(
    id=38, name="db_cluster", source="38_db_cluster.cu", function="sgemm_db_cluster",
    title="scheme rung 9 split over K in a thread-block cluster, summed through DSMEM",
    seed="seed 000 algorithms 4-5 (rung 9); Hopper distributed shared memory (CUDA guide)",
    template_fields=("BM", "BN", "BK", "WM", "WN", "TM", "TN", "threads", "split_k"),
    configs=DB_CLUSTER_CONFIGS, rules=db_cluster_rules,
    vector_loads=True, dynamic_smem=db_cluster_smem, archs=("sm_90a",), min_cc=90,
    grid_fn=lambda prob, p: (math.ceil(prob.m / p.BM), math.ceil(prob.n / p.BN),
                             prob.batch * p.split_k),
    extra={"scheme": "cluster", "cluster": True, "choose": choose_db_cluster,
           "space": db_cluster_space})

SPECS = [TILE, SMALL, SPLITK, GEMV, SPLITK_FUSED, GEMV_WIDE, SPLITK_CLUSTER, DB_CLUSTER,
         SMALL_K, NARROW]
