"""The one-call functions.  Each goes through the plan cache (plan_cache.py),
whose first call of a shape, and every unusual call, builds a Plan (all
checks, layout and kernel choice happen there, before any launch) and
executes it once; later calls relaunch the stored launches."""
from __future__ import annotations

from . import _call_began, plan_cache
from .arrays import describe
from .errors import ArgumentError
from .plan import Plan

_gemm_like = plan_cache._gemm_like
_gemm_uncached = plan_cache.gemm_uncached
_batched_uncached = plan_cache._batched_uncached
_plain, _call, _call_torch2 = plan_cache.plain, plan_cache.call, plan_cache.call_torch2


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
         kernel="auto", precision=None, stream=None, bias=None, activation=None):
    """activation(alpha * op(a) @ op(b) + beta * c + bias) in FP32, op(x) = x.T
    when trans_x; without bias and activation, the plain GEMM.

    a, b, c: 2-D float32 arrays, all NumPy (copied to GPU 0; a NumPy array
    comes back) or all on one GPU (CuPy, PyTorch, anything with
    ``__cuda_array_interface__``/DLPack; the result comes back in a's
    package for CuPy and PyTorch, as a CuPy array for other CUDA arrays).  Any strides with one unit stride are used in place, without a
    copy: C- or F-order, transposed views, a row pitch larger than the row.
    Other strides are rejected.  When c is given it is updated in place and
    returned; it must not overlap a or b.  beta == 0 overwrites c without
    reading it (NaN already in c does not survive).

    kernel: "auto" or a registered kernel name or id (see ``sgemm.kernels``).
    precision: "ieee" (default; FP32 FMA arithmetic), "tf32x3" (tensor
    cores, FP32-level accuracy) or "tf32" (tensor cores, 10-bit mantissa
    inputs: faster, less accurate, like cuBLAS's FAST_TF32).
    stream: where to launch; default the caller's current stream (CuPy's or
    PyTorch's).

    bias: optional 1-D float32 vector of n entries (contiguous, from the
    operands' package and device, not overlapping c): bias[j] is added to
    column j of the m x n result, as ``torch.nn.Linear`` adds its bias to
    each row of x @ W.T.  activation: None, "relu", "gelu" (exact, with erf:
    ``torch.nn.functional.gelu``'s default approximate="none"), "gelu_tanh"
    (approximate="tanh") or "silu".  Both are fused into the kernels' store
    of C, in every scheme and precision; split-K applies them once, to the
    sum of its slices.  With alpha == 0 or k == 0, C = activation(beta * c +
    bias).
    """
    # Repeated calls on the same shapes reuse their launches (plan_cache.py);
    # anything it does not cache takes the full Plan path below it.  Straight
    # to the cache's positional entry: one keyword-argument hop less a call.
    return _gemm_like("gemm", _gemm_uncached, (a, b, c, alpha, beta, trans_a, trans_b, kernel,
                                               precision, stream, bias, activation))


def plan(a, b, c=None, **kwargs) -> Plan:
    """Validate, choose and compile once; ``.execute()`` runs it.  Same
    arguments as ``gemm``."""
    with plan_cache.workspace_for(a):
        return Plan(a, b, c, **kwargs)


def gemm_batched(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
                 kernel="auto", precision=None, stream=None, bias=None, activation=None):
    """Strided-batched gemm on 3-D arrays (batch, rows, cols), one launch for
    the whole batch.  A batch extent of 1 in a or b is broadcast.  bias (one
    1-D vector of n entries, shared by every batch entry) and activation as
    in ``gemm``."""
    return _gemm_like("gemm_batched", _batched_uncached, (a, b, c, alpha, beta, trans_a,
                                                          trans_b, kernel, precision, stream,
                                                          bias, activation))


def matmul(a, b, *, kernel="auto", precision=None, stream=None, bias=None, activation=None):
    """NumPy ``matmul`` semantics for float32: 1-D operands are promoted (and
    the added dimension removed from the result), stacked batch dimensions
    broadcast.  The batch runs in one launch where the operands' batch strides
    allow it, otherwise in one launch per non-collapsible outer index.
    bias and activation as in ``gemm``: bias has one entry per column of
    the result's matrices (1 when b is 1-D), shared by every batch entry."""
    args = (a, b, kernel, precision, stream, bias, activation)
    if not (type(kernel) is str and precision is None and activation is None
            or _plain(kernel, precision, activation)):
        return _matmul_uncached(*args)[1]
    if stream is None and type(a) is plan_cache._TT:
        return _call_torch2("matmul", a, b, (kernel, precision, activation), _matmul_uncached,
                            args, bias)
    return _call("matmul", (a, b), (kernel, precision, activation), stream,
                 _matmul_uncached, args, bias=bias)


def _matmul_uncached(a, b, kernel, precision, stream, bias=None, activation=None):
    """matmul's full path: (plan, result)."""
    since = _call_began()
    A, B = describe(a, "a"), describe(b, "b")
    if A.ndim == 0 or B.ndim == 0:
        raise ArgumentError("matmul: a and b must have at least 1 dimension "
                            f"(got shapes {A.shape} and {B.shape}); use * for scalars")
    a2 = a[None, :] if A.ndim == 1 else a
    b2 = b[:, None] if B.ndim == 1 else b
    nd = max(A.ndim, B.ndim, 2)
    with plan_cache.workspace_for(a):
        p = Plan(a2, b2, None, kernel=kernel, precision=precision, stream=stream, bias=bias,
                 activation=activation, _ndims=tuple(range(2, nd + 1)), _what="matmul",
                 _since=since)
    out = p.execute()
    if A.ndim == 1 and B.ndim == 1:
        return p, out[..., 0, 0]
    if A.ndim == 1:
        return p, out[..., 0, :]
    if B.ndim == 1:
        return p, out[..., :, 0]
    return p, out


# -- the PyTorch operators' route (sgemm/torch/_impl.py) ---------------------------------
def _torch_new(tag, a, b, extra, slow, args, bias=None):
    """A product into a new tensor through the plan cache, keyed on ``tag``
    and ``extra``: a hit reads a and b (and bias), allocates the output with
    torch.empty and launches; anything else runs ``slow(*args)``, which does
    the operator's own checks and returns (plan or None, out): the plan is
    cached only when it was built on a and b themselves.  Through
    call_torch2 (the same key and entries, its steps written out for two
    2-D tensors and a 1-D bias; anything else goes on to call)."""
    return plan_cache.call_torch2(tag, a, b, extra, slow, args, bias)


def _new_uncached(a, b, precision, trans_b=False, bias=None, activation=None, batched=False):
    """(plan, out): sgemm's full path, the output allocated by the plan in
    a's package, on the caller's current stream."""
    return _gemm_uncached(a, b, None, 1.0, 0.0, False, trans_b, "auto", precision, None, bias,
                          activation, (3,) if batched else (2,),
                          "gemm_batched" if batched else "gemm")
