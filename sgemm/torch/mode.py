"""``SgemmMode``: an opt-in ``TorchFunctionMode`` that routes float32 CUDA
matrix products through sgemm.

    with sgemm.torch.SgemmMode(precision="tf32x3"):
        y = model(x)            # its matmul / mm / bmm / addmm / F.linear / @ run on sgemm

Routed: ``torch.matmul``, ``torch.mm``, ``torch.bmm``, ``torch.addmm``,
``F.linear`` and the Tensor methods ``matmul``, ``mm``, ``bmm``, ``addmm``,
``__matmul__``, when every tensor argument is a plain ``torch.Tensor`` or
``nn.Parameter`` of dtype float32 on one CUDA device, no ``out=`` is given,
and the shapes are ones sgemm's operators take: matmul of 2-D by 2-D, N-D by
2-D (flattened to one mm), and N-D by N-D with equal batch dimensions (one
bmm); F.linear with a 1-D bias or none; addmm with alpha/beta real numbers.
Everything else -- other dtypes, CPU tensors, 1-D operands, broadcast batch
dimensions, tensor subclasses, any call under CUDA autocast -- is passed to
PyTorch unchanged.  Gradients
flow through sgemm too (sgemm.torch.functional).  Only code that calls
these functions through Python is seen: PyTorch modules that call the ATen
kernels from C++ (``nn.MultiheadAttention``'s fast path, for instance) are not.
"""
from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from . import functional as fn
from .ops import DEFAULT_PRECISION, check_precision

_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _ok(*ts) -> bool:
    """Every tensor plain, float32, on one CUDA device."""
    dev = None
    for t in ts:
        if type(t) not in _PLAIN or t.dtype != torch.float32 or not t.is_cuda:
            return False
        if dev is None:
            dev = t.device
        elif t.device != dev:
            return False
    return True


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


# Each handler binds the arguments as the torch function names them and
# returns a thunk that computes the result, or None: not ours, torch runs it.
# (Binding errors are TypeErrors and mean "not ours"; errors of the thunk
# itself are real and propagate.)
def _matmul(p, input, other):
    a, b = input, other
    if not _ok(a, b) or a.dim() < 2 or b.dim() < 2 or a.shape[-1] != b.shape[-2]:
        return None
    if b.dim() == 2:
        if a.dim() == 2:
            return lambda: fn.mm(a, b, precision=p)
        lead, n = a.shape[:-1], b.shape[-1]
        rows = math.prod(lead)
        return lambda: fn.mm(a.reshape(rows, a.shape[-1]), b, precision=p).view(*lead, n)
    if a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2]:
        return None                       # broadcast batch dimensions: torch's
    if a.dim() == 3:
        return lambda: fn.bmm(a, b, precision=p)
    shape, nb = (*a.shape[:-1], b.shape[-1]), math.prod(a.shape[:-2])
    return lambda: fn.bmm(a.reshape(nb, *a.shape[-2:]), b.reshape(nb, *b.shape[-2:]),
                          precision=p).view(shape)


def _mm(p, input, mat2):
    a, b = input, mat2
    if not _ok(a, b) or a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return None
    return lambda: fn.mm(a, b, precision=p)


def _bmm(p, input, mat2):
    a, b = input, mat2
    if (not _ok(a, b) or a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]
            or a.shape[2] != b.shape[1]):
        return None
    return lambda: fn.bmm(a, b, precision=p)


def _addmm(p, input, mat1, mat2, *, beta=1, alpha=1):
    a, b = mat1, mat2
    if (not _ok(input, a, b) or a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]
            or not _real(beta) or not _real(alpha) or input.dim() > 2):
        return None
    shape = (a.shape[0], b.shape[1])
    if any(n != 1 and n != m for n, m in zip(reversed(input.shape), reversed(shape))):
        return None
    return lambda: fn.addmm(input, a, b, beta=beta, alpha=alpha, precision=p)


def _linear(p, input, weight, bias=None):
    x = input
    ts = (x, weight) if bias is None else (x, weight, bias)
    if (not _ok(*ts) or x.dim() < 1 or weight.dim() != 2 or x.shape[-1] != weight.shape[1]
            or (bias is not None and tuple(bias.shape) != (weight.shape[0],))):
        return None
    return lambda: fn.linear(x, weight, bias, precision=p)


_HANDLERS = {
    torch.matmul: _matmul, torch.Tensor.matmul: _matmul, torch.Tensor.__matmul__: _matmul,
    torch.mm: _mm, torch.Tensor.mm: _mm,
    torch.bmm: _bmm, torch.Tensor.bmm: _bmm,
    torch.addmm: _addmm, torch.Tensor.addmm: _addmm,
    F.linear: _linear,
}


class SgemmMode(TorchFunctionMode):
    """Route float32 CUDA matmul/mm/bmm/addmm/F.linear through sgemm while
    active (see the module docstring for exactly what is routed)."""

    def __init__(self, precision: str = DEFAULT_PRECISION):
        super().__init__()
        self.precision = check_precision(precision)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        h = _HANDLERS.get(func)
        if h is not None and "out" not in kwargs and not torch.is_autocast_enabled("cuda"):
            try:
                run = h(self.precision, *args, **kwargs)
            except TypeError:             # an argument form the handler does not bind
                run = None
            if run is not None:
                return run()
        return func(*args, **kwargs)
