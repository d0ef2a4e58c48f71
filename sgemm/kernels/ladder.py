"""The seed kernel ladder: one spec per rung, in rung order.

Rung 0 is cuBLAS (the reference, not registered here).  Each rung's CUDA file
opens with a header saying what it adds over the previous rung, which seed it
comes from and what it measured; its spec below says how it is parametrized.
Keep entries in rung order: the id is the rung number everywhere (CLI, plots,
README table, tests).
"""
from __future__ import annotations

from .params import TileParams, divides, need
from .spec import STATIC_SMEM_LIMIT, KernelSpec, ragged_args

F32 = 4  # bytes per float


# ---- rung 1: naive ----------------------------------------------------------
def _naive_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.BM * p.BN == p.threads, f"threads={p.threads} must equal BM*BN={p.BM * p.BN} "
         "(one thread per element of the C tile)", why)
    return why


NAIVE = KernelSpec(
    id=1, name="naive", source="01_naive.cu", function="sgemm_naive",
    title="naive: one thread per C element",
    seed="seed 003 kernel 1; seed 002 'Naive'",
    template_fields=("BM", "BN"),
    configs={"small": TileParams(BM=8, BN=8, threads=64),
             "large": TileParams(BM=16, BN=16, threads=256)},
    rules=_naive_rules,
)

# @@rung-2@@
# ---- rung 2: naive, coalesced ---------------------------------------------------
def _coalesced_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.BM * p.BN == p.threads, f"threads={p.threads} must equal BM*BN={p.BM * p.BN} "
         "(one thread per element of the C tile)", why)
    need(p.BM % 32 == 0, f"BM={p.BM} must be a multiple of 32 so that a warp covers "
         "consecutive rows of one column (the coalesced direction)", why)
    return why


COALESCED = KernelSpec(
    id=2, name="coalesced", source="02_coalesced.cu", function="sgemm_coalesced",
    title="naive, consecutive threads on consecutive rows (coalesced)",
    seed="seed 002 'Naive-Coalesced'",
    template_fields=("BM", "BN"),
    configs={"small": TileParams(BM=32, BN=4, threads=128),
             "large": TileParams(BM=32, BN=8, threads=256)},
    rules=_coalesced_rules,
)

# ---- rung 3: shared-memory tiling ---------------------------------------------
def _smem_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.BM == p.BN == p.BK, f"square tiles only: BM={p.BM}, BN={p.BN}, BK={p.BK}", why)
    need(p.threads == p.BM * p.BN, f"threads={p.threads} must equal BM*BN={p.BM * p.BN}", why)
    return why


SMEM_TILING = KernelSpec(
    id=3, name="smem", source="03_smem_tiling.cu", function="sgemm_smem",
    title="shared-memory tiling, square tiles",
    seed="seed 002 'Shared Memory'; seed 003 kernel 2; seed 001",
    template_fields=("BM",),
    configs={"small": TileParams(BM=16, BN=16, BK=16, threads=256),
             "large": TileParams(BM=32, BN=32, BK=32, threads=1024)},
    rules=_smem_rules,
    static_smem=lambda p: 2 * p.BM * p.BK * F32,
)

# @@rung-4@@

# ---- rung 4: 1-D block tiling -------------------------------------------------
def _tile_load_reasons(p: TileParams, why: list[str], vec: int = 1) -> None:
    """Every thread copies the same whole number of elements (or float4s) of
    each tile: BM*BK and BN*BK must split evenly over the threads."""
    unit = "float4s" if vec == 4 else "elements"
    for name, rows in (("A", p.BM), ("B", p.BN)):
        n = rows * p.BK // vec
        need(rows * p.BK % vec == 0 and n % p.threads == 0,
             f"the {name} tile ({rows}x{p.BK} = {n} {unit}) does not split evenly "
             f"over threads={p.threads}", why)


def _tile1d_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(divides(p.TM, p.BM), f"TM={p.TM} must divide BM={p.BM}", why)
    if why:
        return why
    need(p.threads == p.BM // p.TM * p.BN,
         f"threads={p.threads} must equal (BM/TM)*BN={p.BM // p.TM * p.BN}", why)
    need(p.TN == 1, f"TN={p.TN}: 1-D tiling computes one column per thread (TN=1)", why)
    _tile_load_reasons(p, why)
    return why


BLOCKTILE_1D = KernelSpec(
    id=4, name="tile1d", source="04_blocktile_1d.cu", function="sgemm_blocktile_1d",
    title="1-D block tiling: TM rows of one column per thread",
    seed="seed 002 '1D BlockTiling'; seed 003 kernel 5",
    template_fields=("BM", "BN", "BK", "TM"),
    configs={"small": TileParams(BM=32, BN=32, BK=32, TM=4, threads=256),
             "large": TileParams(BM=64, BN=64, BK=8, TM=8, threads=512)},
    rules=_tile1d_rules,
    static_smem=lambda p: (p.BM + p.BN) * p.BK * F32,
)
# @@rung-5@@

# ---- rung 5: 2-D register blocking ----------------------------------------------
def _tile2d_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(divides(p.TM, p.BM), f"TM={p.TM} must divide BM={p.BM}", why)
    need(divides(p.TN, p.BN), f"TN={p.TN} must divide BN={p.BN}", why)
    if why:
        return why
    t = (p.BM // p.TM) * (p.BN // p.TN)
    need(p.threads == t, f"threads={p.threads} must equal (BM/TM)*(BN/TN)={t}", why)
    _tile_load_reasons(p, why)
    return why


BLOCKTILE_2D = KernelSpec(
    id=5, name="tile2d", source="05_blocktile_2d.cu", function="sgemm_blocktile_2d",
    title="2-D register blocking: TMxTN outer products per thread",
    seed="seed 001 Algorithm 1; seed 003 kernels 7-8; seed 002 '2D Block Tiling'",
    template_fields=("BM", "BN", "BK", "TM", "TN"),
    configs={"small": TileParams(BM=64, BN=64, BK=16, TM=4, TN=4, threads=256),
             "large": TileParams(BM=128, BN=128, BK=8, TM=8, TN=8, threads=256)},
    rules=_tile2d_rules,
    static_smem=lambda p: (p.BM + p.BN) * p.BK * F32,
)
# @@rung-6@@

# ---- rung 6: float4 loads -------------------------------------------------------
def _vec_rules(p: TileParams) -> list[str]:
    why = _tile2d_rules(p)
    if why:
        return why
    need(p.TM % 4 == 0 and p.TN % 4 == 0,
         f"TM={p.TM}, TN={p.TN} must be multiples of 4 (float4 fragments)", why)
    need(p.BK % 4 == 0, f"BK={p.BK} must be a multiple of 4 (float4 loads along k)", why)
    _tile_load_reasons(p, why, vec=4)
    return why


VECTORIZED = KernelSpec(
    id=6, name="vectorized", source="06_vectorized.cu", function="sgemm_vectorized",
    title="float4 global and shared loads, A k-major in shared memory",
    seed="seed 000 method 3; seed 003 kernel 6; seed 002 kernel 7",
    template_fields=("BM", "BN", "BK", "TM", "TN"),
    configs={"small": TileParams(BM=64, BN=64, BK=8, TM=8, TN=4, threads=128),
             "large": TileParams(BM=128, BN=128, BK=8, TM=8, TN=8, threads=256)},
    rules=_vec_rules,
    vector_loads=True,
    static_smem=lambda p: (p.BM + p.BN) * p.BK * F32,
)
# @@rung-7@@

# ---- rung 7: padded shared rows, no bank conflicts -------------------------------
def _padded(rows: int, bk: int) -> int:
    """Row length of a k-major tile in 07_conflict_free.cu: smallest LD >= rows
    with LD / W odd, W = 32 / BK."""
    w = 32 // bk
    return rows + ((w - rows % (2 * w)) + 2 * w) % (2 * w)


def _nobank_rules(p: TileParams) -> list[str]:
    why = _vec_rules(p)
    if why:
        return why
    need(p.BK in (4, 8), f"BK={p.BK}: a pad that separates the banks of the transposed "
         "stores keeps the float4 rows 16-byte aligned only for BK in (4, 8); a deeper "
         "tile needs a swizzle", why)
    need(p.BM % 32 == 0 and p.BN % 32 == 0,
         f"BM={p.BM}, BN={p.BN} must be multiples of 32 (a warp's store covers one tile row)", why)
    return why


CONFLICT_FREE = KernelSpec(
    id=7, name="conflict_free", source="07_conflict_free.cu", function="sgemm_conflict_free",
    title="rung 6 with padded shared rows: no bank conflicts",
    seed="seed 003 kernel 4; seed 004 section 4.4; seed 002 kernel 6",
    template_fields=("BM", "BN", "BK", "TM", "TN"),
    configs={"small": TileParams(BM=64, BN=64, BK=8, TM=8, TN=4, threads=128),
             "large": TileParams(BM=128, BN=128, BK=8, TM=8, TN=8, threads=256)},
    rules=_nobank_rules,
    vector_loads=True,
    static_smem=lambda p: ((_padded(p.BM, p.BK) + _padded(p.BN, p.BK)) * p.BK * F32
                           if p.BK in (4, 8) else (p.BM + p.BN) * p.BK * F32),
)
# @@rung-8@@
# ---- rungs 8-11: warp tiling, double buffer, cp.async pipeline, swizzle --------
# The four share tile_loaders.cuh; their parameter rules are one function.
def _map_reasons(name: str, rows: int, bk: int, threads: int, mode: int,
                 why: list[str]) -> None:
    """Mirror of TileMap in tile_loaders.cuh: mode 0 float4 along r, 1 float4
    along k, 2 scalar along r, 3 scalar 8-wide along k."""
    wr, wk = (4 if mode == 0 else 1), (4 if mode == 1 else 1)
    klanes = {1: 2, 3: 8}.get(mode, 1)
    if mode in (0, 2):
        tru = min(rows // wr, threads)
    else:
        tru = min(rows, threads // klanes)
    if tru <= 0 or threads % tru:
        why.append(f"{name}: threads={threads} do not tile the {rows} rows of a k-slice")
        return
    rstep, kstep = tru * wr, (threads // tru) * wk
    if rows % rstep or bk % kstep:
        kind = ("float4 along m/n", "float4 along k", "scalar along m/n",
                "scalar along k")[mode]
        why.append(f"{name}: the {rows}x{bk} tile does not split over threads={threads} "
                   f"with {kind} loads (thread grid {tru * wr} rows x {kstep} k)")


def warptile_rules(p: TileParams, modes=(0, 1, 2, 3)) -> list[str]:
    why: list[str] = []
    need(p.TM % 4 == 0 and p.TN % 4 == 0,
         f"TM={p.TM}, TN={p.TN} must be multiples of 4 (4x4 sub-tiles, LDS.128)", why)
    need(p.WM > 0 and p.WN > 0, f"WM={p.WM}, WN={p.WN}: warp tile must be set", why)
    if why:
        return why
    need(divides(p.TM, p.WM) and divides(p.TN, p.WN),
         f"TM={p.TM} must divide WM={p.WM} and TN={p.TN} must divide WN={p.WN}", why)
    need(divides(p.WM, p.BM) and divides(p.WN, p.BN),
         f"WM={p.WM} must divide BM={p.BM} and WN={p.WN} must divide BN={p.BN}", why)
    if why:
        return why
    lanes = (p.WM // p.TM) * (p.WN // p.TN)
    need(lanes == 32, f"a {p.WM}x{p.WN} warp tile of {p.TM}x{p.TN} thread tiles has "
         f"{lanes} threads, not 32", why)
    warps = (p.BM // p.WM) * (p.BN // p.WN)
    need(warps * 32 == p.threads, f"threads={p.threads} must equal 32 x "
         f"(BM/WM)*(BN/WN) = {warps * 32}", why)
    need(p.BM % 32 == 0 and p.BN % 32 == 0,
         f"BM={p.BM}, BN={p.BN} must be multiples of 32", why)
    need(p.BK % 8 == 0, f"BK={p.BK} must be a multiple of 8", why)
    if why:
        return why
    for name, rows in (("A", p.BM), ("B", p.BN)):
        for mode in modes:
            _map_reasons(name, rows, p.BK, p.threads, mode, why)
    return why


def _async_rules(p: TileParams) -> list[str]:
    why = warptile_rules(p, modes=(0, 2, 3))
    need(p.stages >= 2, f"stages={p.stages}: a cp.async pipeline needs at least 2", why)
    return why


def _swizzle_rules(p: TileParams) -> list[str]:
    why = _async_rules(p)
    need(p.swizzle >= 1, f"swizzle={p.swizzle} must be >= 1", why)
    return why


def tile_bytes(p: TileParams) -> int:
    """One k-tile of A and B, k-major with rows padded by 4 floats."""
    return p.BK * (p.BM + 4 + p.BN + 4) * F32


_WT_FIELDS = ("BM", "BN", "BK", "WM", "WN", "TM", "TN", "threads")
# 128x128 block, 8 warps of 64x32, 8x8 per thread: 64 FFMA per 4 LDS.128,
# <= 128 registers so two blocks share an SM.
_WT_LARGE = TileParams(BM=128, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, threads=256)
# 256x128 block (the block shape cuBLAS picks on H200), 8 warps of 128x32,
# 16x8 per thread: 128 FFMA per 6 LDS.128, one block per SM with up to 255
# registers.  Warps of 64x64 with 8x16 per thread measured 4-10% slower.
_WT_HUGE = TileParams(BM=256, BN=128, BK=8, WM=128, WN=32, TM=16, TN=8, threads=256)
# 64x64 block, 4 warps of 32x32, 8x4 per thread: more blocks for small problems.
_WT_SMALL = TileParams(BM=64, BN=64, BK=16, WM=32, WN=32, TM=8, TN=4, threads=128)

WARPTILE = KernelSpec(
    id=8, name="warptile", source="08_warptile.cu", function="sgemm_warptile",
    title="warp tiling: block -> warp -> 8x8 thread tiles, LDS.128",
    seed="seed 002 kernels 7-8; seed 003 kernels 8-9",
    template_fields=_WT_FIELDS,
    configs={"small": _WT_SMALL, "large": _WT_LARGE},
    rules=warptile_rules,
    vector_loads=True,
    static_smem=tile_bytes,
)

# @@rung-9@@
# ---- rung 9: rung 8 + double buffer, register prefetch ------------------------
# 32x256 block, 8 warps of 32x32, 4x8 per thread (75 KB of shared memory, two
# blocks per SM): 33 x 8 = 264 blocks, two per SM, on 1025 x 1023.  It ran
# 1023x1025x1021 NN / TN at 0.81 / 0.82 of cuBLAS on the H200, where the other
# configs stayed under 0.72 (docs/notes/ffma-fast.md).
_DB_WIDE = TileParams(BM=32, BN=256, BK=32, WM=32, WN=32, TM=4, TN=8, threads=256)
# Tiles along a small n (a row-major product with few rows: decode-sized
# layers, x @ W^T for 1..64 tokens), split along K by the planner.  128x32
# (4 warps of 32x32, 8x4 per thread) and 256x64 (4 warps of 128x32, 16x8).
# Forced on 14 decode-sized layers (H100, bench/results/skinny-probe-*.json)
# 128x32 beat every plan the planner had on 9 of them (4x3072x1024 NT: 15.0
# us against 36.0; 32x50257x5120 NT: 597 against 1110), 256x64 on the two
# with 64 rows (64x8192x32768: 756 us against 1163).
_DB_TALL = TileParams(BM=128, BN=32, BK=32, WM=32, WN=32, TM=8, TN=4, threads=128)
_DB_TALL64 = TileParams(BM=256, BN=64, BK=8, WM=128, WN=32, TM=16, TN=8, threads=128)
# 128x64 and 64x128 blocks, 4 warps of 32x64 (64x32), 8x8 per thread: the
# 128x128 tile's thread tile at half its width, so m or n of a few hundred
# waste less of the last tile than with 128- or 256-wide blocks, at a
# better FFMA:LDS ratio than the 64x64 tile's 8x4.  Forced on 18 problems
# (H100, bench/results/deepk-tiles-h100-2026-11-26.json): 128x64 took
# 512x768x3072 in 64.5 us against 76.8 for the best plan the planner had
# (cuBLAS 65.8), 154x2048x6144 in 118 against 131, 102x712x26291 NT in 165
# against 191; it lost where a 32-wide tile fits the small side.
_DB_RECT = TileParams(BM=128, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, threads=128)
_DB_RECT_T = TileParams(BM=64, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, threads=128)

DOUBLE_BUFFER = KernelSpec(
    id=9, name="double_buffer", source="09_double_buffer.cu", function="sgemm_double_buffer",
    title="rung 8 + double-buffered shared memory, register prefetch",
    seed="seed 000 algorithms 4-5; seed 003 kernels 10-11",
    template_fields=_WT_FIELDS,
    configs={"small": _WT_SMALL, "medium": _WT_LARGE, "large": _WT_HUGE, "wide": _DB_WIDE,
             "tall": _DB_TALL, "tall64": _DB_TALL64, "rect": _DB_RECT, "rect_t": _DB_RECT_T},
    rules=warptile_rules,
    vector_loads=True,
    # 09_double_buffer.cu: static up to 48 KB, dynamic above (256x128x16)
    static_smem=lambda p: 2 * tile_bytes(p) if 2 * tile_bytes(p) <= STATIC_SMEM_LIMIT else 0,
    dynamic_smem=lambda p: 2 * tile_bytes(p) if 2 * tile_bytes(p) > STATIC_SMEM_LIMIT else 0,
    # split-K's shorter last slice rides in the launch of the full ones
    args_fn=ragged_args, extra={"ragged": True},
)

# @@rung-10@@
# ---- rung 10: cp.async pipeline ------------------------------------------------
ASYNC_PIPELINE = KernelSpec(
    id=10, name="async", source="10_async_pipeline.cu", function="sgemm_async",
    title="cp.async multi-stage pipeline in dynamic shared memory",
    seed="seed 002 kernel 9; PTX cp.async",
    template_fields=_WT_FIELDS + ("stages",),
    configs={"small": _WT_SMALL.replace(stages=3),
             "medium": _WT_LARGE.replace(stages=2),
             "large": _WT_HUGE.replace(BK=16, stages=3)},
    rules=_async_rules,
    vector_loads=True,
    dynamic_smem=lambda p: p.stages * tile_bytes(p),
)

# @@rung-11@@
# ---- rung 11: rung 10 + thread-block swizzle -----------------------------------
def _swizzle_grid(prob, p: TileParams) -> tuple[int, int, int]:
    """One-dimensional grid: 11_swizzle.cu maps blockIdx.x to a C tile."""
    tiles = -(-prob.m // p.BM) * -(-prob.n // p.BN)
    return (tiles, 1, prob.batch)


SWIZZLE = KernelSpec(
    id=11, name="swizzle", source="11_swizzle.cu", function="sgemm_swizzle",
    title="rung 10 + thread-block swizzle (grouped tile order) for L2 reuse",
    seed="seed 002 kernel 8 (thread-group swizzling)",
    template_fields=_WT_FIELDS + ("stages", "swizzle"),
    configs={"small": _WT_SMALL.replace(stages=3, swizzle=8),
             "medium": _WT_LARGE.replace(stages=3, swizzle=8),
             "large": _WT_HUGE.replace(BK=16, stages=3, swizzle=8)},
    rules=_swizzle_rules,
    vector_loads=True,
    dynamic_smem=lambda p: p.stages * tile_bytes(p),
    grid_fn=_swizzle_grid,
)
# @@rung-12@@

# ---- rung 12: Volkov-Demmel ----------------------------------------------------
def _volkov_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.threads == p.BM, f"threads={p.threads} must equal BM={p.BM} "
         "(one thread per row of the C block)", why)
    need(p.TM == 1 and p.TN == p.BN, f"TM={p.TM}, TN={p.TN}: each thread owns one 1xBN "
         f"row strip, so TM=1 and TN=BN={p.BN}", why)
    need(p.BN % 4 == 0, f"BN={p.BN} must be a multiple of 4 (float4 reads of a B row)", why)
    need(p.BM % 4 == 0, f"BM={p.BM} must be a multiple of 4 (TA staging copy)", why)
    need(p.BK % 8 == 0, f"BK={p.BK} must be a multiple of 8 (k copied in 8-float chunks)", why)
    need(p.BN * p.BK % p.threads == 0, f"the B tile ({p.BK}x{p.BN}) does not split evenly "
         f"over threads={p.threads}", why)
    return why


def _pad8(rows: int) -> int:
    """Row length with LD % 8 == 4 (12_volkov.cu)."""
    return rows + ((4 - rows % 8) + 8) % 8


VOLKOV = KernelSpec(
    id=12, name="volkov", source="12_volkov.cu", function="sgemm_volkov",
    title="Volkov-Demmel: B in shared memory, A column in registers, 1x16 strips",
    seed="seed 004 (Chien on Volkov-Demmel 2008), sections 2.1, 7, 8",
    template_fields=("BM", "BN", "BK"),
    configs={"small": TileParams(BM=32, BN=16, BK=16, TM=1, TN=16, threads=32),
             "large": TileParams(BM=64, BN=16, BK=16, TM=1, TN=16, threads=64)},
    rules=_volkov_rules,
    # upper bound: the A staging buffer is only allocated for TA
    static_smem=lambda p: (_pad8(p.BN) + _pad8(p.BM)) * p.BK * F32,
)

# ---- rung 13: operands copied as they lie (k-major tiles for k-contiguous ones) --
def kmajor_smem(p: TileParams) -> int:
    """Dynamic shared memory of 13_kmajor.cu: STAGES tiles, each operand in
    the larger of its two layouts (the layout depends on the transpose)."""
    per = max(p.BM * (p.BK + 4), p.BK * (p.BM + 4)) + max(p.BN * (p.BK + 4), p.BK * (p.BN + 4))
    return p.stages * per * F32


def _kmajor_rules(p: TileParams) -> list[str]:
    why = warptile_rules(p, modes=())
    if why:
        return why
    need(p.stages >= 2, f"stages={p.stages}: a cp.async pipeline needs at least 2", why)
    pow2 = lambda x: x & (x - 1) == 0  # noqa: E731
    need(all(pow2(x) for x in (p.BM, p.BN, p.BK, p.threads)),
         f"BM={p.BM}, BN={p.BN}, BK={p.BK}, threads={p.threads}: the copies' thread grid "
         "needs powers of two", why)
    for name, rows in (("A", p.BM), ("B", p.BN)):
        # Copy<> in 13_kmajor.cu: 16-byte copies must split evenly over the threads
        need(divides(4 * p.threads, rows * p.BK),
             f"{name}: the {rows}x{p.BK} tile has {rows * p.BK // 4} 16-byte copies, not a "
             f"multiple of threads={p.threads}", why)
    return why


# 128x64 and 64x128 blocks of four warps at 8x8 a thread and the 64x64 block
# at 8x4: rung 9's rect, rect_t and small tiles, so the two rungs compare
# tile for tile (bench/probes/kmajor_ab.py).  A twin of rung 9's medium tile
# (eight warps, 128x128) at 255 registers held one block an SM and ran
# 0.71-0.78x rung 9's on large products (kmajor-ab-h100-2026-11-27.json).
_KM_FIELDS = _WT_FIELDS + ("stages",)
KMAJOR = KernelSpec(
    id=13, name="kmajor", source="13_kmajor.cu", function="sgemm_kmajor",
    title="operands copied as they lie: k-major tiles, cp.async, 4-step fragments",
    seed="cuBLAS's SIMT kernels as ncu shows them (bench/results/cublas-kernels-*)",
    template_fields=_KM_FIELDS,
    configs={"k128x64": _DB_RECT.replace(WM=64, WN=32, stages=3),
             "k64x128": _DB_RECT_T.replace(WM=32, WN=64, stages=3),
             "k64x64": _WT_SMALL.replace(stages=3)},
    rules=_kmajor_rules,
    vector_loads=True,
    dynamic_smem=kmajor_smem,
    args_fn=ragged_args, extra={"ragged": True},
)

LADDER = [s for s in [
    NAIVE,
    COALESCED,
    # @@ladder-list@@
    SMEM_TILING,
    BLOCKTILE_1D,
    BLOCKTILE_2D,
    VECTORIZED,
    CONFLICT_FREE,
    WARPTILE,
    DOUBLE_BUFFER,
    ASYNC_PIPELINE,
    SWIZZLE,
    VOLKOV,
    KMAJOR,
] if s is not None]
