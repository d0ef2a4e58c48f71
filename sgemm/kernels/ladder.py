"""The seed kernel ladder: one spec per rung, in rung order.

Rung 0 is cuBLAS (the reference, not registered here).  Each rung's CUDA file
opens with a header saying what it adds over the previous rung, which seed it
comes from and what it measured; its spec below says how it is parametrized.
Keep entries in rung order: the id is the rung number everywhere (CLI, plots,
README table, tests).
"""
from __future__ import annotations

from .params import TileParams, divides, need
from .spec import KernelSpec

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
# @@rung-9@@
# @@rung-10@@
# @@rung-11@@
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

LADDER = [s for s in [
    NAIVE,
    COALESCED,
    # @@ladder-list@@
    SMEM_TILING,
    BLOCKTILE_1D,
    BLOCKTILE_2D,
    VECTORIZED,
    CONFLICT_FREE,
    VOLKOV,
] if s is not None]
