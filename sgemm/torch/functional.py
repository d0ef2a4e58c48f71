"""The functions most code should call: ``sgemm.torch.mm``, ``bmm``,
``addmm``, ``linear`` (with an optional activation).

Each goes one of two ways, with the same results and gradients:

* eager fast path -- not compiling, every tensor a plain ``torch.Tensor`` or
  ``nn.Parameter`` on a CUDA device: the implementation is called directly
  (no gradient needed) or through a ``torch.autograd.Function`` whose
  backward uses the same formulas (_grads.py).  This skips the dispatcher
  hops of a ``torch.library.custom_op`` call, which cost more than the GEMM
  launch itself on small problems.
* operator -- under ``torch.compile``, for tensor subclasses (FakeTensor,
  FunctionalTensor, ...) and meta tensors: ``torch.ops.sgemm.*`` (ops.py).

A plain CPU tensor raises a ``ValueError`` that says so: sgemm runs on the
GPU only.  ``linear``'s bias is always fused into the GEMM's store; its
activation is too when no gradient is needed.  When one is, the activation
runs as PyTorch's own op on the GEMM's output (the pre-activation, which
its backward needs: keeping it costs one elementwise kernel, recomputing it
a GEMM); docs/torch.md, "Fused bias and activation".
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _grads, _impl, ops
from .ops import DEFAULT_PRECISION, check_precision

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_T, _P = _PLAIN
_compiling = torch.compiler.is_compiling
_grad_on = torch.is_grad_enabled
_apply = ops.apply          # Function.apply without its Python layer where that is safe

ACTIVATIONS = {
    None: None,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
    "silu": F.silu,
}


def check_activation(activation):
    if activation not in ACTIVATIONS:
        names = ", ".join(repr(k) for k in ACTIVATIONS)
        raise ValueError(f"activation={activation!r}: choose one of {names}")
    return activation


assert tuple(ACTIVATIONS) == ops.ACTIVATION_NAMES


def _eager(what: str, *ts) -> bool:
    """True: take the eager fast path.  Raises for a plain CPU tensor."""
    if _compiling():
        return False
    for t in ts:
        if t is None:
            continue
        if type(t) not in _PLAIN:
            return False
        if not t.is_cuda:
            if t.device.type == "cpu":
                raise ValueError(f"sgemm.torch.{what}: got a CPU tensor; sgemm runs on CUDA "
                                 f"float32 tensors only (use torch.{what} on the CPU)")
            return False
    return True


def _grad(*ts) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts)


def _gemms():
    """(mm, bmm) for a backward pass: the implementations, or the operators
    when the backward itself is differentiated (create_graph=True)."""
    return (ops.mm, ops.bmm) if torch.is_grad_enabled() else (_impl.mm, _impl.bmm)


def _product_fn(impl, grads, which: int):
    """The autograd.Function of mm (which=0) or bmm (which=1)."""
    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, precision):
            ctx.save_for_backward(a, b)
            ctx.precision = precision
            return impl(a, b, precision)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            gemm = _gemms()[which]
            return (*grads(gemm, a, b, g, ctx.precision, ctx.needs_input_grad), None)
    return Product


_MM = _product_fn(_impl.mm, _grads.mm_grads, 0)
_BMM = _product_fn(_impl.bmm, _grads.bmm_grads, 1)


class _AddMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, a, b, beta, alpha, precision):
        ctx.save_for_backward(a, b)
        ctx.input_shape = input.shape
        ctx.beta, ctx.alpha, ctx.precision = beta, alpha, precision
        return _impl.addmm(input, a, b, beta, alpha, precision)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        di, da, db = _grads.addmm_grads(_gemms()[0], ctx.input_shape, a, b, g, ctx.beta,
                                        ctx.alpha, ctx.precision, ctx.needs_input_grad)
        return di, da, db, None, None, None


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, precision):
        ctx.save_for_backward(x, weight)
        ctx.precision = precision
        return _impl.linear(x, weight, bias, precision)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return (*_grads.linear_grads(_gemms()[0], x, w, g, ctx.precision,
                                     ctx.needs_input_grad), None)


def _product(what, fn, impl, op, a, b, precision):
    check_precision(precision)
    # the common eager call first, in one expression (what _eager and _grad
    # decide, without their loops: ~1 us a call less); every other case
    # goes through them below
    ta, tb = type(a), type(b)
    if ((ta is _T or ta is _P) and (tb is _T or tb is _P) and a.is_cuda and b.is_cuda
            and not _compiling()):
        if _grad_on() and (a.requires_grad or b.requires_grad):
            return _apply(fn, a, b, precision)
        return impl(a, b, precision)
    if not _eager(what, a, b):
        return op(a, b, precision)
    if _grad(a, b):
        return _apply(fn, a, b, precision)
    return impl(a, b, precision)


def mm(a, b, *, precision=DEFAULT_PRECISION):
    """a @ b for 2-D float32 CUDA tensors (``torch.mm``)."""
    return _product("mm", _MM, _impl.mm, ops.mm, a, b, precision)


def bmm(a, b, *, precision=DEFAULT_PRECISION):
    """Batched a @ b for 3-D float32 CUDA tensors (``torch.bmm``)."""
    return _product("bmm", _BMM, _impl.bmm, ops.bmm, a, b, precision)


def addmm(input, a, b, *, beta=1.0, alpha=1.0, precision=DEFAULT_PRECISION):
    """beta * input + alpha * a @ b (``torch.addmm``); input broadcasts to the
    product's shape and is not read when beta == 0."""
    check_precision(precision)
    beta, alpha = float(beta), float(alpha)
    if not _eager("addmm", input, a, b):
        return ops.addmm(input, a, b, beta, alpha, precision)
    if _grad(input, a, b):
        return _apply(_AddMM, input, a, b, beta, alpha, precision)
    return _impl.addmm(input, a, b, beta, alpha, precision)


def linear(x, weight, bias=None, *, precision=DEFAULT_PRECISION, activation=None):
    """activation(x @ weight.T + bias) (``torch.nn.functional.linear``, then the
    activation: None, "relu", "gelu" (erf, F.gelu's default), "gelu_tanh"
    (F.gelu(approximate="tanh")) or "silu").  bias[j] is added to output
    feature j; bias and activation are fused into the GEMM, except that with
    gradients the activation is PyTorch's, on the fused x @ weight.T + bias
    (its backward needs that pre-activation)."""
    check_precision(precision)
    act = ACTIVATIONS[check_activation(activation)]
    tx, tw = type(x), type(weight)
    if ((tx is _T or tx is _P) and (tw is _T or tw is _P) and x.is_cuda and weight.is_cuda
            and (bias is None or (type(bias) is _T or type(bias) is _P) and bias.is_cuda)
            and not _compiling()):           # the common eager call, as in _product
        if not (_grad_on() and (x.requires_grad or weight.requires_grad
                                or bias is not None and bias.requires_grad)):
            return _impl.linear(x, weight, bias, precision, activation)
    grad = _grad(x, weight, bias)
    if not _eager("linear", x, weight, bias):
        if act is not None and grad:
            return act(ops.linear(x, weight, bias, precision))
        return ops.linear(x, weight, bias, precision, activation)
    if grad:
        y = _apply(_Linear, x, weight, bias, precision)
        return y if act is None else act(y)
    return _impl.linear(x, weight, bias, precision, activation)
