"""The operators ``torch.ops.sgemm.{mm,bmm,addmm,linear}``, registered with
``torch.library.custom_op`` when ``sgemm.torch`` is imported.

    torch.ops.sgemm.mm(a, b, precision="tf32x3")                  # a @ b
    torch.ops.sgemm.bmm(a, b, precision="tf32x3")                 # batched a @ b
    torch.ops.sgemm.addmm(input, a, b, beta=1., alpha=1., precision="tf32x3")
    torch.ops.sgemm.linear(x, weight, bias=None, precision="tf32x3",
                           activation=None)     # activation(x @ weight.T + bias), fused

Each has a CUDA implementation only (float32 CUDA tensors; a CPU tensor
raises torch's "Could not run 'sgemm::mm' with arguments from the 'CPU'
backend"), a fake implementation (shapes and dtype, for FakeTensor, meta
tensors and torch.compile) and an autograd formula whose GEMMs are these
operators again, in the same precision.  Outputs are new contiguous float32
tensors from torch's allocator; nothing synchronizes the host.
"""
from __future__ import annotations

import torch

from . import _grads, _impl

NAMESPACE = "sgemm"
PRECISIONS = ("ieee", "tf32x3", "tf32")
DEFAULT_PRECISION = "tf32x3"


def check_precision(precision) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: choose one of {', '.join(PRECISIONS)}")
    return precision


def _check_f32(name, x):
    torch._check(x.dtype == torch.float32,
                 lambda: f"sgemm: {name} has dtype {x.dtype}; sgemm computes in float32")


def _check_device(*named):
    d = named[0][1].device
    for name, x in named[1:]:
        torch._check(x.device == d, lambda: f"sgemm: {named[0][0]} is on {d} but {name} is "
                                            f"on {x.device}")


def _check_inner(what, ka, kb):
    torch._check(ka == kb, lambda: f"sgemm.{what}: inner dimensions differ ({ka} and {kb})")


def _check_ndim(what, name, x, n):
    torch._check(x.dim() == n, lambda: f"sgemm.{what}: {name} must be {n}-D, got shape "
                                       f"{tuple(x.shape)}")


# -- mm, bmm ---------------------------------------------------------------------------
def _mm_setup(ctx, inputs, output):
    a, b, precision = inputs
    ctx.save_for_backward(a, b)
    ctx.precision = precision


def _product(name: str, nd: int, impl, grads, doc: str):
    """Register ``sgemm::<name>(a, b, precision)``: a @ b of nd-D operands."""
    def run(a: torch.Tensor, b: torch.Tensor,
            precision: str = DEFAULT_PRECISION) -> torch.Tensor:
        return impl(a, b, precision)
    run.__doc__ = doc
    op = torch.library.custom_op(f"{NAMESPACE}::{name}", run, mutates_args=(),
                                 device_types="cuda")

    @op.register_fake
    def _fake(a, b, precision=DEFAULT_PRECISION):
        check_precision(precision)
        _check_ndim(name, "a", a, nd)
        _check_ndim(name, "b", b, nd)
        _check_f32("a", a)
        _check_f32("b", b)
        _check_device(("a", a), ("b", b))
        if nd == 3:
            torch._check(a.shape[0] == b.shape[0], lambda: f"sgemm.{name}: batch sizes "
                                                           f"differ ({a.shape[0]} and {b.shape[0]})")
        _check_inner(name, a.shape[-1], b.shape[-2])
        return a.new_empty((*a.shape[:-1], b.shape[-1]))

    def _backward(ctx, g):
        a, b = ctx.saved_tensors
        return (*grads(op, a, b, g, ctx.precision, ctx.needs_input_grad), None)

    op.register_autograd(_backward, setup_context=_mm_setup)
    return op


mm = _product("mm", 2, _impl.mm, _grads.mm_grads, "a @ b for 2-D float32 CUDA tensors.")
bmm = _product("bmm", 3, _impl.bmm, _grads.bmm_grads,
               "Batched a @ b for 3-D float32 CUDA tensors of one batch size.")


# -- addmm ----------------------------------------------------------------------------
@torch.library.custom_op(f"{NAMESPACE}::addmm", mutates_args=(), device_types="cuda")
def addmm(input: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float = 1.0,
          alpha: float = 1.0, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
    """beta * input + alpha * a @ b, input broadcast to the product's shape."""
    return _impl.addmm(input, a, b, beta, alpha, precision)


@addmm.register_fake
def _addmm_fake(input, a, b, beta=1.0, alpha=1.0, precision=DEFAULT_PRECISION):
    check_precision(precision)
    _check_ndim("addmm", "a", a, 2)
    _check_ndim("addmm", "b", b, 2)
    for name, x in (("input", input), ("a", a), ("b", b)):
        _check_f32(name, x)
    _check_device(("a", a), ("b", b), ("input", input))
    _check_inner("addmm", a.shape[1], b.shape[0])
    shape = (a.shape[0], b.shape[1])
    torch._check(input.dim() <= 2, lambda: f"sgemm.addmm: input of shape "
                                           f"{tuple(input.shape)} does not broadcast to {shape}")
    for n, m in zip(reversed(input.shape), reversed(shape)):
        torch._check(n == 1 or n == m, lambda: f"sgemm.addmm: input of shape "
                                               f"{tuple(input.shape)} does not broadcast to {shape}")
    return a.new_empty(shape)


def _addmm_setup(ctx, inputs, output):
    input, a, b, beta, alpha, precision = inputs
    ctx.save_for_backward(a, b)
    ctx.input_shape = input.shape
    ctx.beta, ctx.alpha, ctx.precision = beta, alpha, precision


def _addmm_backward(ctx, g):
    a, b = ctx.saved_tensors
    di, da, db = _grads.addmm_grads(mm, ctx.input_shape, a, b, g, ctx.beta, ctx.alpha,
                                    ctx.precision, ctx.needs_input_grad)
    return di, da, db, None, None, None


addmm.register_autograd(_addmm_backward, setup_context=_addmm_setup)


# -- linear ---------------------------------------------------------------------------
ACTIVATION_NAMES = (None, "relu", "gelu", "gelu_tanh", "silu")


def check_activation(activation):
    if activation not in ACTIVATION_NAMES:
        names = ", ".join(repr(k) for k in ACTIVATION_NAMES)
        raise ValueError(f"activation={activation!r}: choose one of {names}")
    return activation


@torch.library.custom_op(f"{NAMESPACE}::linear", mutates_args=(), device_types="cuda")
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           precision: str = DEFAULT_PRECISION, activation: str | None = None) -> torch.Tensor:
    """activation(x @ weight.T + bias) (``torch.nn.functional.linear``, then
    the activation: None, "relu", "gelu" (erf), "gelu_tanh" or "silu"), bias
    and activation fused into the GEMM; x of shape (..., in)."""
    return _impl.linear(x, weight, bias, precision, check_activation(activation))


@linear.register_fake
def _linear_fake(x, weight, bias=None, precision=DEFAULT_PRECISION, activation=None):
    check_precision(precision)
    check_activation(activation)
    torch._check(x.dim() >= 1, lambda: "sgemm.linear: x must have at least 1 dimension")
    _check_ndim("linear", "weight", weight, 2)
    _check_f32("x", x)
    _check_f32("weight", weight)
    named = [("x", x), ("weight", weight)]
    if bias is not None:
        _check_f32("bias", bias)
        torch._check(bias.dim() == 1 and bias.shape[0] == weight.shape[0],
                     lambda: f"sgemm.linear: bias must have shape ({weight.shape[0]},), got "
                             f"{tuple(bias.shape)}")
        named.append(("bias", bias))
    _check_device(*named)
    _check_inner("linear", x.shape[-1], weight.shape[1])
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, precision, activation = inputs
    # relu's derivative comes from the output; the others' from the
    # pre-activation, recomputed in the backward (one more GEMM, no memory
    # held).  sgemm.torch.linear itself keeps the pre-activation instead when
    # it trains (functional.py): this path serves direct calls of the op.
    keep_y = output if activation == "relu" else None
    keep_b = bias if activation not in (None, "relu") else None
    ctx.save_for_backward(x, weight, keep_b, keep_y)
    ctx.precision, ctx.activation = precision, activation
    ctx.has_bias = bias is not None


def _linear_backward(ctx, g):
    x, w, b, y = ctx.saved_tensors
    if ctx.activation is not None:
        z = None
        if ctx.activation != "relu":
            z = linear(x, w, b if ctx.has_bias else None, ctx.precision)
        g = _grads.activation_backward(g, ctx.activation, z=z, y=y)
    dx, dw, db = _grads.linear_grads(mm, x, w, g, ctx.precision, ctx.needs_input_grad)
    return dx, dw, db, None, None


linear.register_autograd(_linear_backward, setup_context=_linear_setup)
