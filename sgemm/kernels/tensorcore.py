"""Tensor-core families: FP32 GEMM through TF32 tensor cores.

precision="tf32x3": each FP32 operand is split into big = tf32(x) and
small = tf32(x - big) and C = sum(big*big + big*small + small*big) with FP32
accumulation (CUTLASS 3xTF32; Ootomo & Yokota 2022): FP32-level accuracy.
precision="tf32": big*big only (cuBLAS FAST_TF32 accuracy, ~1e-3 relative).

ids 20/21: mma.sync.m16n8k8 with a cp.async pipeline (sm_80 and sm_90a).
ids 22/23: wgmma.mma_async (sm_90a only), warp-specialized: one producer
warpgroup loads, splits and stores K-major 128B-swizzled tiles, one or two
consumer warpgroups issue the wgmmas.
id 24: 3xTF32 wgmma with A from registers (RS): A is copied raw (cp.async)
and split by the consumers, only B goes through split smem tiles; the
automatic tf32x3 kernel on sm_90.  See the CUDA headers for details and
docs/notes/tensorcore.md for measurements.
"""
from __future__ import annotations

from .params import TileParams, divides, need
from .spec import KernelSpec

F32 = 4


# ---- mma.sync family (20_tf32x3_mma.cu) -------------------------------------
def _tile_floats(rows: int, bk: int) -> int:
    return max(rows * (bk + 4), bk * (rows + 8))


def _mma_smem(p: TileParams) -> int:
    return p.stages * (_tile_floats(p.BM, p.BK) + _tile_floats(p.BN, p.BK)) * F32


def _mma_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.WM > 0 and p.WN > 0, "WM and WN (the warp tile) must be set", why)
    if why:
        return why
    need(divides(p.WM, p.BM) and divides(p.WN, p.BN),
         f"warp tile {p.WM}x{p.WN} must divide the block tile {p.BM}x{p.BN}", why)
    need(p.WM % 16 == 0 and p.WN % 8 == 0,
         f"warp tile {p.WM}x{p.WN} must be a multiple of the 16x8 MMA tile", why)
    need(p.BK % 8 == 0, f"BK={p.BK} must be a multiple of 8", why)
    need(p.BM % 4 == 0 and p.BN % 4 == 0, "BM and BN must be multiples of 4", why)
    need(p.stages >= 2, f"stages={p.stages}: the cp.async pipeline needs at least 2", why)
    if divides(p.WM, p.BM) and divides(p.WN, p.BN):
        t = (p.BM // p.WM) * (p.BN // p.WN) * 32
        need(p.threads == t, f"threads={p.threads} must be 32*(BM/WM)*(BN/WN)={t}", why)
    return why


_MMA_SMALL = TileParams(BM=64, BN=64, BK=32, WM=32, WN=32, threads=128, stages=3)
# 128 x 256 with 64 x 64 warp tiles measured 52.6 (tf32x3) and 137.9 (tf32)
# TFLOPS at 4096^3 on an H200 against 45.6 and 109.3 for 128 x 128 / 64 x 32,
# but it needs 255 registers and the device's NVRTC spilled it: not used.
_MMA_LARGE = TileParams(BM=128, BN=128, BK=32, WM=64, WN=32, threads=256, stages=3)


def _mma_spec(id_: int, name: str, function: str, precision: str, title: str,
              large: TileParams) -> KernelSpec:
    return KernelSpec(
        id=id_, name=name, source="20_tf32x3_mma.cu", function=function, title=title,
        seed="CUTLASS 3xTF32 (sm80 tensorop); Ootomo & Yokota 2022",
        template_fields=("BM", "BN", "BK", "WM", "WN", "stages"),
        configs={"small": _MMA_SMALL, "large": large}, rules=_mma_rules, vector_loads=True,
        dynamic_smem=_mma_smem, precision=precision, archs=("sm_80", "sm_90a"), min_cc=80,
    )


TF32X3_MMA = _mma_spec(20, "tf32x3_mma", "sgemm_tf32x3_mma", "tf32x3",
                       "3xTF32 mma.sync m16n8k8, cp.async 3-stage pipeline", _MMA_LARGE)
TF32_MMA = _mma_spec(21, "tf32_mma", "sgemm_tf32_mma", "tf32",
                     "1xTF32 mma.sync m16n8k8, cp.async 3-stage pipeline", _MMA_LARGE)


# ---- wgmma family (21_tf32x3_wgmma.cu) ----------------------------------------
WG_BK = 32  # one 128-byte swizzle row of TF32 per tile row


def _wg_stage_bytes(p: TileParams, x3: bool) -> int:
    return (p.BM + p.BN) * WG_BK * F32 * (2 if x3 else 1)


def _wg_rules(p: TileParams, x3: bool = False) -> list[str]:
    why: list[str] = []
    need(p.BM in (64, 128), f"BM={p.BM}: one or two consumer warpgroups of 64 rows", why)
    need(p.BN in (64, 128, 256), f"BN={p.BN}: wgmma n must be 64, 128 or 256 here", why)
    if x3:
        need(p.BN <= 128, f"BN={p.BN}: tf32x3 keeps two accumulator sets, BN <= 128", why)
        need(1 <= p.TM < p.stages,
             f"TM={p.TM} (k-tiles per promotion) must be >= 1 and < stages={p.stages}", why)
    need(p.BK == WG_BK, f"BK={p.BK}: must be {WG_BK} (one 128B swizzle row)", why)
    need(p.stages >= 2, f"stages={p.stages}: needs at least 2", why)
    if x3:
        # threads = 128 * (consumer + producer warpgroups); two producer
        # warpgroups (one per operand, setmaxnreg) only with BM = 128.
        ok = (128 * (p.BM // 64 + 1),) + ((128 * 4,) if p.BM == 128 else ())
        need(p.threads in ok, f"threads={p.threads} must be one of {ok} (BM={p.BM})", why)
    else:
        need(p.threads == 128 * (p.BM // 64 + 1),
             f"threads={p.threads} must be 128*(BM/64 + 1) = {128 * (p.BM // 64 + 1)}", why)
    return why


def _wg_spec(id_: int, name: str, function: str, x3: bool, configs: dict, title: str,
             extra: dict | None = None):
    # tf32x3 takes one more template argument, PROMO (TileParams.TM here): the
    # k-tiles summed on the tensor cores between two FP32 promotions.  PROMO=2
    # measured slower (78.1 vs 81.5 TFLOPS, 4096^3 NN, H200) and less accurate
    # (3.7e-7 vs 1.3e-7 at K=64): both configs use 1.
    # It also takes `threads` (one or two producer warpgroups) and `swizzle`
    # (m-tiles per raster group of the block order; 1 = plain).
    fields = ("BM", "BN", "stages", "TM", "threads", "swizzle") if x3 else ("BM", "BN", "stages")
    return KernelSpec(
        id=id_, name=name, source="21_tf32x3_wgmma.cu", function=function, title=title,
        seed="CUTLASS 3xTF32 + Hopper warp-specialized mainloop; Ootomo & Yokota 2022",
        template_fields=fields, configs=configs,
        rules=lambda p, x3=x3: _wg_rules(p, x3),
        vector_loads=True,
        dynamic_smem=lambda p, x3=x3: p.stages * _wg_stage_bytes(p, x3) + 1024,
        precision="tf32x3" if x3 else "tf32", archs=("sm_90a",), min_cc=90,
        extra=extra or {},
    )


TF32X3_WGMMA = _wg_spec(
    22, "tf32x3_wgmma", "sgemm_tf32x3_wgmma", True,
    {"small": TileParams(BM=64, BN=128, BK=32, threads=256, stages=4, TM=1),
     # 512 threads: two producer warpgroups (A, B); swizzle 8: raster groups
     # of 8 m-tiles.  H200, 4096^3 NN: 102.3-106.0 TFLOPS against 89.5 with
     # one producer and 97.8 (94.9-97.4 in run 2) with plain raster; 8192^3:
     # 92.9-95.2 (docs/notes/tensorcore.md).
     "large": TileParams(BM=128, BN=128, BK=32, threads=512, stages=3, TM=1, swizzle=8)},
    "3xTF32 wgmma m64nNk8, producer warpgroup splits into swizzled smem",
    # precision="tf32x3" on sm_90: dispatch.auto_spec takes the highest "auto"
    extra={"auto": 1})
TF32_WGMMA = _wg_spec(
    23, "tf32_wgmma", "sgemm_tf32_wgmma", False,
    {"small": TileParams(BM=128, BN=128, BK=32, threads=384, stages=4),
     "large": TileParams(BM=128, BN=256, BK=32, threads=384, stages=4)},
    "1xTF32 wgmma m64nNk8, producer warpgroup rounds into swizzled smem")



# ---- wgmma with A from registers (22_tf32x3_wgmma_rs.cu) -----------------------
def _rs_stage_bytes(p: TileParams) -> int:
    # [A raw: BM x 32 floats][B big][B small: BN x 32 TF32 each]
    return (p.BM + 2 * p.BN) * WG_BK * F32


def _rs_rules(p: TileParams) -> list[str]:
    why: list[str] = []
    need(p.BM in (64, 128), f"BM={p.BM}: one or two consumer warpgroups of 64 rows", why)
    need(p.BN in (64, 128), f"BN={p.BN}: acc + partial acc need BN <= 128 registers", why)
    need(p.BK == WG_BK, f"BK={p.BK}: must be {WG_BK} (one 128B swizzle row)", why)
    need(p.stages >= 2, f"stages={p.stages}: needs at least 2", why)
    need(p.TM == 1, f"TM={p.TM}: A fragments in registers are rewritten every k-tile, "
                    "so the promotion group (PROMO) is 1", why)
    need(p.TN in (1, 2, 3, 4), f"TN={p.TN}: the consumer schedule PIPE must be 1..4", why)
    want = 128 * (2 + p.BM // 64)
    need(p.threads == want, f"threads={p.threads} must be 128*(2 + BM/64) = {want} "
                            "(A producer, B producer, consumers)", why)
    return why


TF32X3_WGMMA_RS = KernelSpec(
    id=24, name="tf32x3_wgmma_rs", source="22_tf32x3_wgmma_rs.cu",
    function="sgemm_tf32x3_wgmma_rs",
    title="3xTF32 wgmma, A split in registers (RS), B split in swizzled smem",
    seed="CUTLASS 3xTF32 + Hopper warp-specialized mainloop; Ootomo & Yokota 2022",
    # TN carries the consumer schedule PIPE (22_tf32x3_wgmma_rs.cu, consume):
    # 1 split all then issue, 2 split each k8 step just before its first
    # wgmma, 3 = 2 + the next tile's A loaded while the wgmmas run, 4 = 1 +
    # that early load.
    template_fields=("BM", "BN", "stages", "TN", "threads", "swizzle"),
    # H200, NN, same process as cuBLAS FP32 (python scripts/tc_check.py; three
    # runs in docs/notes/tensorcore.md): the GPU is
    # at its 700 W cap in every tf32x3 loop, so the sustained 2.5-3 s loops
    # decide.  large PIPE 2 sustained 102.7 / 103.4 TFLOPS at 4096^3 (2.00x /
    # 2.02x) and 104.5 / 104.7 at 8192^3 (2.04x / 2.05x), 1-2 % above PIPE 1,
    # 3 and 4.  3 stages (PIPE 1): 6 % slower in the short 4096^3 loops, within
    # 1 % sustained; 4 kept.  small (PIPE 3) was measured as registered.
    # n64 / small_n64: BN = 64 for outputs whose n is a few dozen (ML layers
    # of 16-64 tokens, deep K with one small side), where a 128-wide tile
    # computes up to 8x the useful columns.
    configs={"small": TileParams(BM=64, BN=128, BK=32, threads=384, stages=4, TN=3),
             "large": TileParams(BM=128, BN=128, BK=32, threads=512, stages=4, TN=2,
                                 swizzle=8),
             "n64": TileParams(BM=128, BN=64, BK=32, threads=512, stages=4, TN=2, swizzle=8),
             "small_n64": TileParams(BM=64, BN=64, BK=32, threads=384, stages=4, TN=3)},
    rules=_rs_rules, vector_loads=True,
    dynamic_smem=lambda p: p.stages * _rs_stage_bytes(p) + 1024,
    precision="tf32x3", archs=("sm_90a",), min_cc=90,
    # the automatic choice for precision="tf32x3" on sm_90 (tf32x3_wgmma has
    # "auto": 1): in runs 1-3 its large config beat tf32x3_wgmma's in all 26
    # (size, layout, run) timings, its small config in 24 of 26 (the two
    # others within 3 %: 1024^3 TN in run 2, 4096^3 TT in run 1).
    # A is copied raw by 16-byte cp.async when ALIGNED; a partial last chunk
    # would name bytes past the operand (memcheck, padded case, 2026-11-22),
    # and 4-byte copies for it spill the 24-register A producer.  So the
    # float4 instantiation only when A's contiguous extent (k if TA, else m)
    # is whole chunks.
    extra={"auto": 2, "aligned_ok": lambda prob: (prob.k if prob.ta else prob.m) % 4 == 0},
)

SPECS = [TF32X3_MMA, TF32_MMA, TF32X3_WGMMA, TF32_WGMMA, TF32X3_WGMMA_RS]
