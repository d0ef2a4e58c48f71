"""Backward formulas, written once for both autograd paths.

Each takes the GEMM it should use (``mm``/``bmm`` with the operators'
signature ``(a, b, precision)``): the registered operators
(``torch.ops.sgemm.*``, traceable by torch.compile and differentiable again)
or the eager implementations (_impl.py, used by functional.py's fast path).
Transposes are views; sgemm reads them in place.

    dA = dC @ B^T        dB = A^T @ dC        dbias = sum of dC over rows

With a fused activation y = act(z), dC = dy * act'(z) first
(``activation_backward``): relu from y itself, the others from z.
"""
from __future__ import annotations

import math


def mm_grads(mm, a, b, g, precision, needs):
    da = mm(g, b.t(), precision) if needs[0] else None
    db = mm(a.t(), g, precision) if needs[1] else None
    return da, db


def bmm_grads(bmm, a, b, g, precision, needs):
    da = bmm(g, b.transpose(1, 2), precision) if needs[0] else None
    db = bmm(a.transpose(1, 2), g, precision) if needs[1] else None
    return da, db


def addmm_grads(mm, input_shape, a, b, g, beta, alpha, precision, needs):
    """out = beta * input + alpha * a @ b, input broadcast to out's shape."""
    di = None
    if needs[0]:
        gi = g if beta == 1.0 else g * beta
        di = gi.sum_to_size(input_shape)
    da, db = mm_grads(mm, a, b, g, precision, needs[1:3])
    if alpha != 1.0:
        da = da * alpha if da is not None else None
        db = db * alpha if db is not None else None
    return di, da, db


def linear_grads(mm, x, w, g, precision, needs):
    """y = x @ w^T + bias, x of shape (..., in); returns (dx, dw, dbias)."""
    n_out, n_in = w.shape
    rows = math.prod(x.shape[:-1])
    g2 = g.reshape(rows, n_out)
    dx = mm(g2, w, precision).view(x.shape) if needs[0] else None
    dw = mm(g2.t(), x.reshape(rows, n_in), precision) if needs[1] else None
    db = g2.sum(0) if len(needs) > 2 and needs[2] else None
    return dx, dw, db


def activation_backward(g, activation, z=None, y=None):
    """dL/dz from dL/dy for y = activation(z), by ATen's own backward
    kernels (traceable, the same formulas as torch's activations): relu
    needs only y (z > 0 where y > 0), gelu/gelu_tanh/silu need z."""
    import torch
    aten = torch.ops.aten
    if activation is None:
        return g
    if activation == "relu":
        return aten.threshold_backward(g, y, 0)
    if activation == "gelu":
        return aten.gelu_backward(g, z, approximate="none")
    if activation == "gelu_tanh":
        return aten.gelu_backward(g, z, approximate="tanh")
    if activation == "silu":
        return aten.silu_backward(g, z)
    raise ValueError(f"activation={activation!r}")
