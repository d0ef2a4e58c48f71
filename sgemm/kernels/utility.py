"""Kernels that are not GEMMs: C <- beta*C for netlib's alpha == 0 / k == 0 case,
and the pack copy of unaligned operands (sgemm/packing.py)."""
from __future__ import annotations

import math

import numpy as np

from .params import TileParams
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

UTILITY = [SCALE, PACK]
