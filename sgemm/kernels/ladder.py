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
# @@rung-5@@
# @@rung-6@@
# @@rung-7@@
# @@rung-8@@
# @@rung-9@@
# @@rung-10@@
# @@rung-11@@
# @@rung-12@@

LADDER = [s for s in [
    NAIVE,
    # @@ladder-list@@
    SMEM_TILING,
] if s is not None]
