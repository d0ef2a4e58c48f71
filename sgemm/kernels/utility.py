"""Kernels that are not GEMMs: C <- beta*C for netlib's alpha == 0 / k == 0 case,
the pack copy of unaligned operands (sgemm/packing.py), and the integer
engine's conversion and reconstruction (sgemm/int8x/)."""
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


def _int8x(name: str, function: str, title: str) -> KernelSpec:
    """The integer engine's conversion and reconstruction kernels
    (40_int8x.cu), for the default 8 moduli; launched by sgemm/int8x/device.py."""
    return KernelSpec(id=-40, name=name, source="40_int8x.cu", function=function,
                      title=title, seed="Ozaki scheme II (arXiv 2504.08009)",
                      template_fields=(), configs={"default": TileParams(threads=256)},
                      plain=True)


INT8X_MODULI = 8
INT8X_EXPONENTS = _int8x("int8x_exponents", "int8x_exponents",
                         "per-row power-of-two exponents and a non-finite flag")
INT8X_RESIDUES = _int8x("int8x_residues", f"int8x_residues<{INT8X_MODULI}>",
                        "scaled integers to int8 residue planes, one per modulus")
INT8X_GARNER = _int8x("int8x_garner", f"int8x_garner<{INT8X_MODULI}>",
                      "residues of C' to FP32 (Garner), unscaled, alpha/beta")

UTILITY = [SCALE, PACK, INT8X_EXPONENTS, INT8X_RESIDUES, INT8X_GARNER]
