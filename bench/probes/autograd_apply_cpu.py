"""Probe (CPU): the C entry of autograd.Function.apply as the operators'
node calls it (ops.apply: functorch checks on every argument, the entry
bound per call, five arguments: spec, keyset, a, b, precision) against a
Function with the spec bound (three arguments, the checks on the two
tensors, the entry bound once).  How much the second form would save a
`torch.ops.sgemm.mm` call with gradients (docs/notes/torch.md, 2026-11-27
fifth session).  Not part of the package.

    python bench/probes/autograd_apply_cpu.py
"""
import timeit

import torch

_c_apply = torch._C._FunctionBase.__dict__["apply"]


class Five(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, keyset, a, b, p):
        ctx.save_for_backward(a, b)
        ctx.precision = p
        return a.new_empty((1,))

    @staticmethod
    def backward(ctx, g):
        return None, None, g, g, None


class Three(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, p):
        ctx.save_for_backward(a, b)
        ctx.precision = p
        return a.new_empty((1,))

    @staticmethod
    def backward(ctx, g):
        return g, g, None


def main() -> None:
    a, b = (torch.randn(4, 4, requires_grad=True) for _ in range(2))
    ks = torch._C._dispatch_keys(a)
    active = torch._C._are_functorch_transforms_active
    wrapped = torch._C._functorch.is_functorch_wrapped_tensor
    three = _c_apply.__get__(None, Three)

    def now():          # ops.apply as it is
        if active():
            return None
        for t in (None, ks, a, b, "ieee"):
            if isinstance(t, torch.Tensor) and wrapped(t):
                return None
        return _c_apply.__get__(None, Five)(None, ks, a, b, "ieee")

    def bound():        # the spec bound, checks on the tensors only
        if active() or wrapped(a) or wrapped(b):
            return None
        return three(a, b, "ieee")

    for name, f in (("ops.apply as is", now), ("spec bound", bound)):
        for _ in range(1000):
            f()
        us = min(timeit.repeat(f, number=20000, repeat=7)) / 20000 * 1e6
        print(f"{name:16s} {us:.2f} us a call (min of 7 x 20000, torch {torch.__version__})")


if __name__ == "__main__":
    main()
