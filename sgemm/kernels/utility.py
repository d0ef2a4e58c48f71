"""Kernels outside the FP32 ladder: C <- beta*C for netlib's alpha == 0 / k == 0
case, the pack copy of unaligned operands (sgemm/packing.py), and the integer
engine's kernels (sgemm/int8x/): conversion, reconstruction and the INT8 GEMM
over residue planes."""
from __future__ import annotations

import math

import numpy as np

from .params import TileParams, need
from .spec import KernelSpec

SCALE = KernelSpec(
    id=-1, name="scale", source="00_scale.cu", function="scale_c",
    title="C <- beta*C (alpha == 0 or k == 0)", seed="netlib sgemm quick paths",
    template_fields=(), configs={"default": TileParams(threads=256)},
    grid_fn=lambda prob, p: (math.ceil(prob.m / 256), prob.n, prob.batch),
    args_fn=lambda prob: (np.int32(prob.m), np.int32(prob.n), np.float32(prob.beta),
                          prob.c, prob.ldc, prob.stride_c),
    plain=True,
)


PACK = KernelSpec(
    id=-37, name="pack", source="37_pack.cu", function="pack_operands",
    title="copy A/B into 16-byte-aligned zero-padded panels (pack scheme)",
    seed="BLAS packing (GotoBLAS), applied only to unaligned operands",
    template_fields=(), configs={"default": TileParams(threads=256)}, plain=True,
)


def _int8x(name: str, function: str, title: str) -> KernelSpec:
    """The integer engine's conversion and reconstruction kernels
    (40_int8x.cu); launched by sgemm/int8x/device.py."""
    return KernelSpec(id=-40, name=name, source="40_int8x.cu", function=function,
                      title=title, seed="Ozaki scheme II (arXiv 2504.08009)",
                      template_fields=(), configs={"default": TileParams(threads=256)},
                      plain=True)


# The moduli counts the kernels are built for: 8 for precision="int8x", 7
# where precision="fp32"'s scaling check holds with one fewer (sgemm/int8x/
# route.py).  The kernels that depend on the count are one spec per count.
INT8X_MODULI = 8
INT8X_FEWER_MODULI = 7
INT8X_COUNTS = (INT8X_FEWER_MODULI, INT8X_MODULI)


def _per_count(name: str, title: str) -> dict[int, KernelSpec]:
    return {n: _int8x(name if n == INT8X_MODULI else f"{name}_{n}", f"{name}<{n}>",
                      f"{title} ({n} moduli)") for n in INT8X_COUNTS}


INT8X_CONVERT_BY_N = _per_count("int8x_convert_rows", "rows to int8 residue planes in one "
                                "read: exponent from the norm bound, scaling, residues")
INT8X_ROWMAX = _int8x("int8x_rowmax", "int8x_rowmax",
                      "row maxima of a column-strided operand and a non-finite flag")
INT8X_ROWNORM = _int8x("int8x_rownorm", "int8x_rownorm",
                       "row norm bounds of a column-strided operand, scaled by its row maxima")
INT8X_RESIDUES_BY_N = _per_count("int8x_residues", "scaled integers to int8 residue planes, "
                                 "one per modulus, from row maxima and norm bounds")
INT8X_ROW_STATS = _int8x("int8x_row_stats", "int8x_row_stats",
                         "per-row scaling statistics into an operand's summary (tiles route)")
INT8X_GARNER_BY_N = _per_count("int8x_garner", "residues of C' to FP32 (Garner), unscaled, "
                               "alpha/beta")
INT8X_CONVERT = INT8X_CONVERT_BY_N[INT8X_MODULI]
INT8X_RESIDUES = INT8X_RESIDUES_BY_N[INT8X_MODULI]
INT8X_GARNER = INT8X_GARNER_BY_N[INT8X_MODULI]


# ---- the INT8 GEMM over residue planes (41_int8_mma.cu) ----
INT8_K_ALIGN = 16          # residue rows are zero-padded to this many bytes (16-byte cp.async)
INT8_MAX_PRODUCT = 128 * 128      # |residue product|: only p = 256 reaches -128


def int8_fold_tiles(bk: int) -> int:
    """k-tiles of BK bytes the kernel sums before reducing its accumulators
    modulo p (41_int8_mma.cu, FOLD_TILES): a folded remainder (< 256) plus
    that many tiles of worst-case products stays inside INT32."""
    return (2 ** 31 - 1 - 256) // (INT8_MAX_PRODUCT * bk)


def int8_gemm_rules(p: TileParams) -> list[str]:
    """Why 41_int8_mma.cu cannot be instantiated with p (empty: it can)."""
    why: list[str] = []
    need(p.BK in (32, 64, 128), f"BK={p.BK}: the k-tile must be 32, 64 or 128 bytes (one or "
         "more k32 MMA steps, 2-8 swizzled 16-byte chunks a row)", why)
    need(p.WM > 0 and p.WM % 16 == 0, f"WM={p.WM}: warp rows must be a multiple of 16 "
         "(the MMA's m16)", why)
    need(p.WN > 0 and p.WN % 16 == 0, f"WN={p.WN}: warp columns must be a multiple of 16 "
         "(one ldmatrix.x4 loads two n8 tiles)", why)
    if why:
        return why
    need(p.BM % p.WM == 0, f"BM={p.BM} is not a multiple of WM={p.WM}", why)
    need(p.BN % p.WN == 0, f"BN={p.BN} is not a multiple of WN={p.WN}", why)
    if why:
        return why
    warps = (p.BM // p.WM) * (p.BN // p.WN)
    need(p.threads == 32 * warps, f"threads={p.threads}: a {p.BM}x{p.BN} tile of "
         f"{p.WM}x{p.WN} warp tiles has {warps} warps = {32 * warps} threads", why)
    chunks = p.BK // 16
    for side, rows in (("A", p.BM), ("B", p.BN)):
        need(rows * chunks % p.threads == 0, f"{side} tile: {rows * chunks} 16-byte chunks do "
             f"not split evenly over {p.threads} threads", why)
    need(p.stages >= 2, f"stages={p.stages}: the cp.async pipeline needs at least 2", why)
    acc = p.WM * p.WN // 32
    need(acc <= 128, f"a {p.WM}x{p.WN} warp tile holds {acc} INT32 accumulators a thread; "
         "more than 128 leaves too few of 255 registers for fragments and addresses", why)
    need(p.split_k == 1, f"split_k={p.split_k}: the INT8 GEMM does not split K (it folds "
         "deep K modulo p instead)", why)
    return why


def int8_gemm_smem(p: TileParams) -> int:
    """Dynamic shared memory: STAGES tiles of A (BM x BK bytes) and B (BN x BK)."""
    return p.stages * (p.BM + p.BN) * p.BK


class Int8GemmSpec(KernelSpec):
    """A plain (no TA/TB) spec whose template arguments come from the config
    (int8_mma<BM, BN, BK, WM, WN, STAGES>, int8_wgmma<BM, BN, STAGES>); the
    raster group width (TileParams.swizzle) is a run-time argument."""

    __slots__ = ()

    def name_expression(self, p: TileParams, ta: bool = False, tb: bool = False,
                        aligned: bool = False) -> str:
        args = ", ".join(str(getattr(p, f)) for f in self.template_fields)
        return f"{self.function}<{args}>"

    def grid_for(self, m: int, n: int, planes: int, p: TileParams) -> tuple[int, int, int]:
        """One block per BM x BN tile (x, in grouped raster order), one z per modulus."""
        return (math.ceil(m / p.BM) * math.ceil(n / p.BN), 1, planes)


def _int8_gemm(configs: dict[str, TileParams]) -> Int8GemmSpec:
    for name, p in configs.items():
        why = int8_gemm_rules(p)
        if why:
            raise ValueError(f"int8_mma config {name!r} ({p}) is invalid: " + "; ".join(why))
    return Int8GemmSpec(
        id=-41, name="int8_mma", source="41_int8_mma.cu", function="int8_mma",
        title="INT8 x INT8 -> INT32 GEMM over residue planes (mma.sync m16n8k32, several "
              "moduli a launch)",
        seed="Ozaki scheme II (arXiv 2504.08009); CUTLASS-style multistage int8 mma.sync",
        template_fields=("BM", "BN", "BK", "WM", "WN", "stages"), configs=configs,
        rules=int8_gemm_rules, dynamic_smem=int8_gemm_smem,
        archs=("sm_80", "sm_86", "sm_89", "sm_90a"), plain=True)


# default: 2 blocks an SM on sm_80/sm_90 (128 registers, 64 KiB each);
# large: the 64x64 warp tile halves shared-memory traffic per MMA, one block
# an SM (about 235 registers).  H100: default 600-653 TOPS, large 505-619
# (bench/results/int8-gemm-probe-h100-2026-11-26.json).
INT8X_GEMM = _int8_gemm({
    "default": TileParams(BM=128, BN=128, BK=64, WM=64, WN=32, threads=256, stages=4,
                          swizzle=8),
    "large": TileParams(BM=128, BN=256, BK=64, WM=64, WN=64, threads=256, stages=3,
                        swizzle=8),
})


# ---- the INT8 GEMM with wgmma on sm_90a (42_int8_wgmma.cu) ----
INT8_WGMMA_BK = 128        # bytes of k per stage: one 128-byte swizzled row per m/n index


def int8_wgmma_rules(p: TileParams) -> list[str]:
    """Why 42_int8_wgmma.cu cannot be instantiated with p (empty: it can)."""
    why: list[str] = []
    need(p.BK == INT8_WGMMA_BK, f"BK={p.BK}: the k-tile must be {INT8_WGMMA_BK} bytes (one "
         "128-byte row per m/n index: wgmma's 128B swizzle, four k32 steps)", why)
    need(p.BM in (64, 128, 192, 256), f"BM={p.BM}: one warpgroup per 64 rows (wgmma's m64), "
         "1 to 4 of them", why)
    need(p.BN in (64, 128, 256), f"BN={p.BN}: the wgmma n must be 64, 128 or 256 (the "
         "instantiated m64nNk32 forms)", why)
    if why:
        return why
    need(p.WM == 64 and p.WN == p.BN, f"WM={p.WM}, WN={p.WN}: each warpgroup computes one "
         f"64 x BN slice with one wgmma per k32 step, so WM=64 and WN=BN={p.BN}", why)
    want = 128 * (p.BM // 64)
    need(p.threads == want, f"threads={p.threads}: a {p.BM}-row tile has {p.BM // 64} "
         f"warpgroups = {want} threads", why)
    need(p.BN % (p.BM // 4) == 0, f"B tile: {p.BN} rows do not split over the {p.BM // 4} "
         "rows a copy iteration covers", why)
    need(p.stages >= 3, f"stages={p.stages}: loads run stages-2 k-tiles ahead of the wgmma "
         "group in flight, so at least 3", why)
    need(p.split_k == 1, f"split_k={p.split_k}: the INT8 GEMM does not split K (it folds "
         "deep K modulo p instead)", why)
    return why


def int8_wgmma_smem(p: TileParams) -> int:
    """Dynamic shared memory: STAGES tiles of A and B (128-byte rows), plus
    1024 bytes to align the swizzle atoms."""
    return p.stages * (p.BM + p.BN) * INT8_WGMMA_BK + 1024


def _int8_wgmma(configs: dict[str, TileParams]) -> Int8GemmSpec:
    for name, p in configs.items():
        why = int8_wgmma_rules(p)
        if why:
            raise ValueError(f"int8_wgmma config {name!r} ({p}) is invalid: " + "; ".join(why))
    return Int8GemmSpec(
        id=-42, name="int8_wgmma", source="42_int8_wgmma.cu", function="int8_wgmma",
        title="INT8 x INT8 -> INT32 GEMM over residue planes (wgmma m64nNk32 s8, several "
              "moduli a launch)",
        seed="Ozaki scheme II (arXiv 2504.08009); Hopper wgmma with a cp.async multistage "
             "pipeline",
        template_fields=("BM", "BN", "stages"), configs=configs,
        rules=int8_wgmma_rules, dynamic_smem=int8_wgmma_smem,
        archs=("sm_90a",), min_cc=90, plain=True)


# default: 128 x 256, one block an SM (128 accumulators a thread, 4 x 48 KiB
# stages); narrow: 128 x 128, two blocks an SM (3 x 32 KiB stages each, 128
# registers).  H100, 8 moduli a launch (bench/results/int8-gemm-probe-h100-
# 2026-11-26.json): default 1324 / 1565 / 1474 TOPS at 4096^3 / 8192^3 /
# 16384^3, narrow 1029 / 1086 / 1002.
INT8X_WGMMA = _int8_wgmma({
    "default": TileParams(BM=128, BN=256, BK=128, WM=64, WN=256, threads=256, stages=4,
                          swizzle=8),
    "narrow": TileParams(BM=128, BN=128, BK=128, WM=64, WN=128, threads=256, stages=3,
                         swizzle=8),
})


def int8_gemm_spec(arch: str, kernel: str = "auto") -> Int8GemmSpec:
    """The INT8 GEMM for an NVRTC arch: kernel "wgmma" (42, sm_90a only),
    "mma" (41, sm_80 and later) or "auto" (wgmma on sm_90a, else mma)."""
    if kernel not in ("auto", "mma", "wgmma"):
        raise ValueError(f"int8 gemm: kernel={kernel!r} must be 'auto', 'mma' or 'wgmma'")
    if kernel == "auto":
        kernel = "wgmma" if arch == "sm_90a" else "mma"
    if kernel == "wgmma" and arch != "sm_90a":
        raise ValueError(f"int8 gemm: kernel='wgmma' needs sm_90a (wgmma), this GPU is {arch}")
    return INT8X_WGMMA if kernel == "wgmma" else INT8X_GEMM


UTILITY = [SCALE, PACK, *INT8X_CONVERT_BY_N.values(), INT8X_ROWMAX, INT8X_ROWNORM,
           *INT8X_RESIDUES_BY_N.values(), INT8X_ROW_STATS, *INT8X_GARNER_BY_N.values(),
           INT8X_GEMM, INT8X_WGMMA]
