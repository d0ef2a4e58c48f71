"""The CUDA implementations behind the operators: plain tensors in, a fresh
torch tensor out, the GEMM through sgemm's plan cache.

Every output is allocated here with ``torch.empty`` (torch's caching
allocator, so a CUDA graph capture owns it) and handed to sgemm as ``c``.
A bias vector (linear's; addmm's 1-D input) and the activation go to the
kernels' fused epilogue (sgemm.gemm's bias= and activation=); any other
``beta * input`` is copied into c first and read back through sgemm's
``beta``.  Nothing here synchronizes the host.  sgemm launches on the
caller's current torch stream.

mm, bmm and a 2-D linear go through sgemm's plan cache with a new output
(``api._torch_new``): a repeated call reads the operands, allocates the
output and launches, and nothing else; the checks, layout fixes
(``_ready``) and the full Plan run on the first call of a shape (and on
every call the cache does not take).  A hit implies those checks passed for
the same shapes, strides, dtypes, precision and activation.

Only ``_api`` touches sgemm (``gemm``/``gemm_batched`` in ``gemm_into``,
``_torch_new``/``_new_uncached`` on the cached route): the CPU tests replace
it with a torch emulation to run everything else here on CPU tensors.
"""
from __future__ import annotations

import math

import torch

from .. import api as _api

DEFAULT_PRECISION = "tf32x3"       # the operators' (ops.py); sgemm.gemm's is "ieee"
_PLAIN = torch.Tensor
_PARAM = torch.nn.Parameter
_F32 = torch.float32
# torch's own activations, for the k == 0 case only (no GEMM to fuse into)
_TORCH_ACT = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
              "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
              "silu": torch.nn.functional.silu}


def _ready(x: torch.Tensor) -> torch.Tensor:
    """x as sgemm takes it: a ``torch.Tensor`` or ``nn.Parameter`` (the types
    the plan cache takes; any other subclass is detached to a plain tensor)
    whose last two dimensions have one unit stride and a leading dimension
    that does not overlap (a transposed view is used in place; anything else,
    e.g. an expanded gradient, is copied).  A Parameter is no longer detached:
    that view cost about 1 us a call (docs/notes/torch.md)."""
    t = type(x)
    if t is not _PLAIN and t is not _PARAM:
        x = x.detach()
    sh, st = x.shape, x.stride()
    if (st[-1] == 1 and st[-2] >= sh[-1]) or (st[-2] == 1 and st[-1] >= sh[-2]):
        return x
    return x.contiguous()


CAPTURE_HINT = (
    "sgemm failed while a CUDA graph was being captured. The first call of a "
    "shape builds its plan (compiles kernels, may allocate a split-K workspace "
    "through CuPy and wait for it), which cannot happen during capture: run the "
    "same step once before capturing, on the stream you capture on "
    "(torch.cuda.graph(g, stream=s) with the warm-up under torch.cuda.stream(s)). "
    "See docs/torch.md, 'CUDA graphs'.")


def _vector(x: torch.Tensor) -> torch.Tensor:
    """A bias as sgemm takes it: a plain tensor or Parameter, contiguous."""
    t = type(x)
    if t is not _PLAIN and t is not _PARAM:
        x = x.detach()
    return x if x.stride(0) == 1 or x.shape[0] <= 1 else x.contiguous()


def gemm_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, precision: str,
              alpha: float = 1.0, beta: float = 0.0, bias: torch.Tensor | None = None,
              activation: str | None = None, trans_b: bool = False) -> torch.Tensor:
    """out = activation(alpha * a @ op(b) + beta * out + bias), 2-D or
    batched 3-D, op(b) = b.T when trans_b; a and b may be transposed views,
    bias (one entry per column of out) and the activation are fused into the
    GEMM.  Returns out."""
    if out.numel() == 0:
        return out
    if bias is not None:
        bias = _vector(bias)
    if a.shape[-1] == 0:               # an empty sum: activation(beta * out + bias) is left
        out.mul_(beta) if beta != 0.0 else out.zero_()
        if bias is not None:
            out.add_(bias)
        if activation is not None:
            out.copy_(_TORCH_ACT[activation](out))
        return out
    a, b = _ready(a), _ready(b)
    run = _api.gemm if out.dim() == 2 else _api.gemm_batched
    try:
        if bias is None and activation is None:   # the plain call: its plan-cache key
            run(a, b, out, alpha=alpha, beta=beta, trans_b=trans_b, precision=precision)
        else:
            run(a, b, out, alpha=alpha, beta=beta, trans_b=trans_b, precision=precision,
                bias=bias, activation=activation)
    except Exception as e:
        _reraise(e)
    return out


def _reraise(e: Exception):
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError(CAPTURE_HINT) from e
    raise e


def _new_slow(a, b, precision, trans_b=False, bias=None, activation=None):
    """The cached route's miss: (plan or None, out) for
    activation(a @ op(b) + bias) into a new tensor, the caller's checks done.
    The plan is returned (and cached) only when sgemm ran on a, b and bias
    themselves: a copy made by _ready/_vector has other strides than the
    tensors the cache key was made of."""
    cols = b.shape[-2] if trans_b else b.shape[-1]
    ra, rb = _ready(a), _ready(b)
    rz = bias if bias is None else _vector(bias)
    if ra is a and rb is b and rz is bias and a.shape[-2] and cols and a.shape[-1]:
        try:
            return _api._new_uncached(a, b, precision, trans_b, bias, activation, a.dim() == 3)
        except Exception as e:
            _reraise(e)
    out = torch.empty((*a.shape[:-1], cols), dtype=_F32, device=a.device)
    return None, gemm_into(ra, rb, out, precision, bias=rz, activation=activation,
                           trans_b=trans_b)


def _mm_slow(a, b, precision):
    _shapes("mm", a, b, 2)
    return _new_slow(a, b, precision)


def _bmm_slow(a, b, precision):
    _shapes("bmm", a, b, 3)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"sgemm.bmm: batch sizes differ: a {tuple(a.shape)}, "
                         f"b {tuple(b.shape)}")
    return _new_slow(a, b, precision)


def _shapes(what, a, b, nd):
    """The checks sgemm cannot word in terms of these operators."""
    if a.dim() != nd or b.dim() != nd:
        raise ValueError(f"sgemm.{what}: a and b must be {nd}-D, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"sgemm.{what}: inner dimensions differ: a {tuple(a.shape)}, "
                         f"b {tuple(b.shape)}")


def _f32(what, name, x):
    if x.dtype is not _F32:
        raise TypeError(f"sgemm.{what}: {name} has dtype {x.dtype}; sgemm computes in float32")


# mm, bmm, addmm and linear are the operators' CUDA kernels themselves
# (ops.py), so they carry the schemas' defaults.
def mm(a: torch.Tensor, b: torch.Tensor, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
    """a @ b for 2-D float32 CUDA tensors."""
    return _api._torch_new("torch.mm", a, b, precision, _mm_slow, (a, b, precision))


def bmm(a: torch.Tensor, b: torch.Tensor, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
    """Batched a @ b for 3-D float32 CUDA tensors of one batch size."""
    return _api._torch_new("torch.bmm", a, b, precision, _bmm_slow, (a, b, precision))


def addmm(input: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float = 1.0,
          alpha: float = 1.0, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
    """beta * input + alpha * a @ b, input broadcast to the product's shape."""
    _shapes("addmm", a, b, 2)
    _f32("addmm", "input", input)
    out = torch.empty((a.shape[0], b.shape[1]), dtype=_F32, device=a.device)
    if beta == 0.0:                    # beta == 0 ignores input (NaN included), as torch does
        return gemm_into(a, b, out, precision, alpha, 0.0)
    if input.dim() == 1 and input.shape[0] == out.shape[1] and out.shape[1] > 1:
        # a row vector (nn.Linear's bias): the fused epilogue, no copy into out
        return gemm_into(a, b, out, precision, alpha, 0.0,
                         bias=input if beta == 1.0 else input * beta)
    out.copy_(input)                   # broadcasts (and raises where it cannot)
    return gemm_into(a, b, out, precision, alpha, beta)


def _check_linear(x, weight, bias, activation):
    if weight.dim() != 2 or x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"sgemm.linear: x of shape {tuple(x.shape)} and weight of shape "
                         f"{tuple(weight.shape)} do not match (weight is (out, in), x is "
                         f"(..., in))")
    n_out = weight.shape[0]
    if bias is not None:
        _f32("linear", "bias", bias)
        if bias.dim() != 1 or bias.shape[0] != n_out:
            raise ValueError(f"sgemm.linear: bias must have shape ({n_out},), got "
                             f"{tuple(bias.shape)}")
    if activation is not None and activation not in _TORCH_ACT:
        names = ", ".join(repr(k) for k in (None, *_TORCH_ACT))
        raise ValueError(f"activation={activation!r}: choose one of {names}")


def _linear2_slow(x, weight, bias, precision, activation):
    _check_linear(x, weight, bias, activation)
    return _new_slow(x, weight, precision, True, bias, activation)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           precision: str = DEFAULT_PRECISION, activation: str | None = None) -> torch.Tensor:
    """activation(x @ weight.T + bias) (``torch.nn.functional.linear``, then
    the activation: None, "relu", "gelu" (erf), "gelu_tanh" or "silu"), bias
    and activation fused into the GEMM; x of shape (..., in).  The
    activation's name is checked on a plan-cache miss (a hit implies a name
    that passed)."""
    # weight goes in as it is with trans_b (the same canonical problem as the
    # weight.t() view, without building that view), and a 2-D x needs no
    # reshape of x or view of out: each view is about 1 us of host time
    if x.dim() == 2:
        return _api._torch_new("torch.linear", x, weight, (precision, activation),
                               _linear2_slow, (x, weight, bias, precision, activation), bias)
    _check_linear(x, weight, bias, activation)
    n_out = weight.shape[0]
    out = torch.empty((*x.shape[:-1], n_out), dtype=_F32, device=x.device)
    rows = math.prod(x.shape[:-1])
    gemm_into(x.reshape(rows, x.shape[-1]), weight, out.view(rows, n_out), precision, 1.0,
              0.0, bias=bias, activation=activation, trans_b=True)
    return out
