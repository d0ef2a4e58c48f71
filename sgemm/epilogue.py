"""The fused epilogue: C = act(alpha * op(A) @ op(B) + beta * C + bias).

``bias`` is a 1-D float32 vector with one entry per column of the user's
m x n C (bias[j] is added to column j: ``torch.nn.Linear``'s convention for
y = x @ W.T + b).  ``activation`` is None, "relu", "gelu" (the exact erf
form, ``torch.nn.functional.gelu``'s default approximate="none"),
"gelu_tanh" (approximate="tanh") or "silu".

The kernels take both as two runtime arguments after SGEMM_PARAMS
(kernels/cuda/common.cuh): the bias pointer and one int, ``epi``, holding the
activation code in its low three bits and the canonical axis the bias runs
along.  A row-major C is computed transposed (layout.py), so the user's
columns are the canonical rows there: ``code`` picks BIAS_M or BIAS_N from
the storage of C.  Sub-problems (column blocks of a large grid, the peel
scheme's strips) move the bias pointer with their first row or column.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import ArgumentError

# The numbers of common.cuh (EPI_*): keep the two equal.
ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
ACT_MASK = 7
BIAS_M = 8         # bias[i]: along the canonical rows
BIAS_N = 16        # bias[j]: along the canonical columns


def activation_code(activation) -> int:
    """The activation's code; ArgumentError naming the argument otherwise."""
    if isinstance(activation, str) or activation is None:
        code = ACTIVATIONS.get(activation)
        if code is not None:
            return code
    names = ", ".join(repr(k) for k in ACTIVATIONS)
    raise ArgumentError(f"activation={activation!r}: choose one of {names}")


def code(activation: int, has_bias: bool, c_row_major: bool) -> int:
    """``epi`` for the canonical problem: the user's columns are the
    canonical rows when C is row-major (computed transposed)."""
    if not has_bias:
        return activation
    return activation | (BIAS_M if c_row_major else BIAS_N)


def shift(epi: int, bias: int, rows: int, cols: int) -> int:
    """The bias pointer of a sub-problem starting ``rows`` canonical rows and
    ``cols`` columns into its parent."""
    if epi & BIAS_M:
        return bias + 4 * rows
    if epi & BIAS_N:
        return bias + 4 * cols
    return bias


def name_of(act_code: int):
    return next(k for k, v in ACTIVATIONS.items() if v == act_code & ACT_MASK)


def activate(x: np.ndarray, activation) -> np.ndarray:
    """NumPy model of the activations (float64), for tests and references."""
    x = np.asarray(x, dtype=np.float64)
    if activation is None:
        return x
    if activation == "relu":
        return np.where(x < 0, 0.0, x)
    if activation == "gelu":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    if activation == "gelu_tanh":
        u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1.0 + np.tanh(u))
    if activation == "silu":
        with np.errstate(over="ignore"):
            return x / (1.0 + np.exp(-x))
    raise ArgumentError(f"activation={activation!r}")
