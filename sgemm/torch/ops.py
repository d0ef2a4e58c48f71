"""The operators ``torch.ops.sgemm.{mm,bmm,addmm,linear}``, registered with
``torch.library`` when ``sgemm.torch`` is imported.

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

Registration: ``Library.define`` with the schemas ``custom_op`` inferred
(pt2_compliant tag included), the CUDA kernel, ``register_fake``, and an
Autograd-key kernel of our own (``_autograd_kernel``).  ``custom_op`` wraps
every call in two generic Python layers -- its autograd kernel (a Metadata
dataclass, ``fill_defaults``, a redispatch under AutoDispatchBelowAutograd)
and its backend wrapper (an aliasing check of the result) -- which cost
about 7 us of the 10 us a trivial custom_op call took on the CPU machine
(torch 2.13, against 3.4 us for a Library kernel at the Autograd key; the
H100 run measured torch.ops.sgemm.mm at 2.6-3.8x torch.matmul).  Ours does
what torch's opcheck documents for an Autograd-key kernel: an
``autograd.Function`` when an input needs a gradient, else a redispatch
below autograd; and when the keys below ADInplaceOrView are the CUDA
backend's alone (plain CUDA tensors: no FakeTensor, functionalization,
meta, negative or zero views, no Python mode), it calls the CUDA kernel
itself instead of redispatching, which is what the dispatcher would run.
"""
from __future__ import annotations

import torch

from . import _grads, _impl

NAMESPACE = "sgemm"
PRECISIONS = ("ieee", "tf32x3", "tf32")
DEFAULT_PRECISION = _impl.DEFAULT_PRECISION

_lib = torch.library.Library(NAMESPACE, "DEF")
_grad_on = torch.is_grad_enabled
_any_requires_grad = torch._C._any_requires_grad
_AFTER_AUTOGRAD = torch._C._after_autograd_keyset
# keys below ADInplaceOrView; absent in some torch version: always redispatch then
_BELOW_VIEW = getattr(torch._C, "_after_ADInplaceOrView_keyset", None)
_DIRECT_KEY = torch._C.DispatchKey.CUDA     # the CPU tests set CPU to run the direct route


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


# -- registration -----------------------------------------------------------------------
def _direct_slow(keyset) -> bool:
    d = _direct_memo[keyset.raw_repr()] = (
        _BELOW_VIEW is not None
        and (keyset & _BELOW_VIEW).highestPriorityTypeId() == _DIRECT_KEY)
    return d


# raw_repr() -> _direct: a keyset decides it alone, and a process sees few
# keysets.  One call and a dict probe instead of building the masked keyset
# and asking its highest key (three pybind calls and an object).
_direct_memo: dict = {}


def _direct(keyset) -> bool:
    """Nothing between autograd and the CUDA kernel for this keyset."""
    d = _direct_memo.get(keyset.raw_repr())
    return _direct_slow(keyset) if d is None else d


def _redispatch(op, keyset, args):
    """What custom_op's autograd kernel does for every call: run the op
    below autograd (the fake, meta, functionalization, Python-mode or CUDA
    kernel, whichever comes next)."""
    with torch._C._AutoDispatchBelowAutograd():
        return op.redispatch(keyset & _AFTER_AUTOGRAD, *args)


class _Spec:
    """One operator: the OpOverload, its CUDA kernel, its defaults (the
    dispatcher drops trailing arguments equal to their defaults) and its
    autograd formula (setup_context / backward, as register_autograd takes)."""
    __slots__ = ("op", "impl", "defaults", "setup", "backward")

    def __init__(self, op, impl, defaults, setup, backward):
        self.op, self.impl, self.defaults = op, impl, defaults
        self.setup, self.backward = setup, backward

    def full(self, args):
        n = len(args)
        return args if n == len(self.defaults) else args + self.defaults[n:]


# autograd.Function.apply without its Python layer.  Function.apply (torch
# 2.4-2.13) binds default arguments when setup_context is defined (ours is
# not), unwraps dead functorch wrappers, and calls _C._FunctionBase.apply
# when no functorch transform is active; custom_function_call otherwise.
# The Python layer cost more than the node itself on the CPU machine (a
# scratch timing of a trivial Function: 37 us against 18 us for the C
# call, both cores busy; docs/notes/torch.md).  apply() calls the C entry
# only where Function.apply would, for inputs that are no functorch wrapper
# at all (a dead one is unwrapped there); anything else, or a torch without
# these names, takes Function.apply itself.
_c_apply = getattr(getattr(torch._C, "_FunctionBase", None), "__dict__", {}).get("apply")
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", None)
_wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None)
_Tensor = torch.Tensor


def _apply_py(fn, *args):
    return fn.apply(*args)


def _apply_c(fn, *args):
    if _functorch_active():
        return fn.apply(*args)
    for t in args:
        if isinstance(t, _Tensor) and _wrapped(t):
            return fn.apply(*args)
    return _c_apply.__get__(None, fn)(*args)


def _tested(version: str, newest=(2, 13)) -> bool:
    """A torch whose Function.apply this mirrors was read (2.4 to ``newest``):
    a later one may have changed it, so it keeps Function.apply."""
    try:
        major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    except ValueError:
        return False
    return (2, 4) <= (major, minor) <= newest


apply = (_apply_c if _c_apply is not None and _functorch_active is not None
         and _wrapped is not None and _tested(torch.__version__) else _apply_py)


class _OpFunction(torch.autograd.Function):
    """The operators' autograd node: forward through the CUDA kernel (or
    below autograd), backward by the operator's formula."""

    @staticmethod
    def forward(ctx, spec, keyset, *args):
        out = spec.impl(*args) if _direct(keyset) else _redispatch(spec.op, keyset, args)
        ctx.spec = spec
        spec.setup(ctx, args, out)
        return out

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad
        ctx.needs_input_grad = needs[2:]        # the formulas index the op's own inputs
        try:
            grads = ctx.spec.backward(ctx, g)
        finally:
            ctx.needs_input_grad = needs
        return (None, None, *grads)


def _direct_node(name, impl, setup, backward):
    """The autograd node of one operator's calls on plain CUDA tensors
    (``_direct``): its CUDA kernel and formula bound in, so the C apply takes
    the operator's own inputs, not _OpFunction's spec and keyset as well,
    and the functorch checks look at its tensors only.  On the CPU machine
    that entry took 5.11 us against 6.34 (bench/probes/autograd_apply_cpu.py)."""
    def forward(ctx, *args):
        out = impl(*args)
        setup(ctx, args, out)
        return out

    return type(f"_{name}_node", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def _register(name, schema, impl, defaults, fake, setup, backward):
    """Define ``sgemm::<name>`` with its CUDA, fake and Autograd kernels;
    returns the OpOverload (callable with the schema's arguments)."""
    _lib.define(f"{name}{schema}", tags=(torch.Tag.pt2_compliant_tag,))
    op = getattr(getattr(torch.ops, NAMESPACE), name).default
    _lib.impl(name, impl, "CUDA")
    torch.library.register_fake(f"{NAMESPACE}::{name}", fake, lib=_lib)
    spec = _Spec(op, impl, defaults, setup, backward)
    node = _direct_node(name, impl, setup, backward)
    # the C entry bound once to this operator's node; None: _OpFunction's route
    node_apply = _c_apply.__get__(None, node) if apply is _apply_c else None
    ntensors = next(i for i, d in enumerate(defaults) if d is not None)   # leading Tensor inputs

    def _autograd_kernel(keyset, *args):
        d = _direct_memo.get(keyset.raw_repr())        # _direct, inlined
        if d is None:
            d = _direct_slow(keyset)
        if _grad_on() and _any_requires_grad(*args):
            if d and node_apply is not None and not _functorch_active():
                for t in args[:ntensors]:
                    if t is not None and _wrapped(t):
                        break
                else:
                    return node_apply(*spec.full(args))
            return apply(_OpFunction, spec, keyset, *spec.full(args))
        if d:
            return impl(*args)
        return _redispatch(op, keyset, args)

    _lib.impl(name, _autograd_kernel, "Autograd", with_keyset=True)
    return op


# -- mm, bmm ---------------------------------------------------------------------------
def _mm_setup(ctx, inputs, output):
    a, b, precision = inputs
    ctx.save_for_backward(a, b)
    ctx.precision = precision


def _product(name: str, nd: int, impl, grads):
    """Register ``sgemm::<name>(a, b, precision)``: a @ b of nd-D operands."""
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

    op = _register(name, f'(Tensor a, Tensor b, str precision="{DEFAULT_PRECISION}") -> Tensor',
                   impl, (None, None, DEFAULT_PRECISION), _fake, _mm_setup, _backward)
    return op


# the CUDA kernels are _impl's functions themselves (defaults included: the
# dispatcher drops trailing arguments equal to them): no wrapper frame a call
mm = _product("mm", 2, _impl.mm, _grads.mm_grads)           # a @ b, 2-D
bmm = _product("bmm", 3, _impl.bmm, _grads.bmm_grads)       # batched a @ b, 3-D, one batch size


# -- addmm ----------------------------------------------------------------------------
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


addmm = _register("addmm", "(Tensor input, Tensor a, Tensor b, float beta=1., float alpha=1., "
                           f'str precision="{DEFAULT_PRECISION}") -> Tensor', _impl.addmm,
                  (None, None, None, 1.0, 1.0, DEFAULT_PRECISION), _addmm_fake, _addmm_setup,
                  _addmm_backward)


# -- linear ---------------------------------------------------------------------------
ACTIVATION_NAMES = (None, "relu", "gelu", "gelu_tanh", "silu")


def check_activation(activation):
    if activation not in ACTIVATION_NAMES:
        names = ", ".join(repr(k) for k in ACTIVATION_NAMES)
        raise ValueError(f"activation={activation!r}: choose one of {names}")
    return activation


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


linear = _register("linear", f'(Tensor x, Tensor weight, Tensor? bias=None, str precision='
                             f'"{DEFAULT_PRECISION}", str? activation=None) -> Tensor',
                   _impl.linear, (None, None, None, DEFAULT_PRECISION, None), _linear_fake,
                   _linear_setup, _linear_backward)
