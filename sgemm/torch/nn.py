"""Drop-in modules: ``Linear`` (an ``nn.Linear`` with the same parameters and
state_dict) and ``convert``, which swaps a model's ``nn.Linear`` layers.

    model = sgemm.torch.convert(model, precision="tf32x3")   # in place; returns model
    layer = sgemm.torch.Linear(4096, 4096, precision="tf32x3", activation="relu")
"""
from __future__ import annotations

import torch
from torch import nn

from . import functional
from .functional import check_activation
from .ops import DEFAULT_PRECISION, check_precision


class Linear(nn.Linear):
    """``nn.Linear`` computed by sgemm: ``activation(x @ weight.T + bias)``.

    Parameters, initialization and state_dict are nn.Linear's, so a
    checkpoint loads into either.  ``precision`` and ``activation`` are plain
    attributes (not in the state_dict).  Inputs sgemm does not take -- CPU
    tensors, dtypes other than float32 -- and any call under CUDA autocast go
    to ``F.linear`` (and then the activation) unchanged, so a converted model
    still runs on the CPU and under mixed precision.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None, *, precision: str = DEFAULT_PRECISION,
                 activation: str | None = None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.precision = check_precision(precision)
        self.activation = check_activation(activation)

    @classmethod
    def from_linear(cls, linear: nn.Linear, *, precision: str = DEFAULT_PRECISION,
                    activation: str | None = None) -> "Linear":
        """A Linear sharing ``linear``'s parameter objects (an optimizer built
        on the old module keeps working); hooks on the old module are not
        carried over."""
        new = cls(linear.in_features, linear.out_features, bias=linear.bias is not None,
                  device="meta", precision=precision, activation=activation)
        new.weight = linear.weight
        new.bias = linear.bias
        new.train(linear.training)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if (x.is_cuda and w.is_cuda and x.dtype == torch.float32
                and w.dtype == torch.float32 and not torch.is_autocast_enabled("cuda")):
            return functional.linear(x, w, self.bias, precision=self.precision,
                                     activation=self.activation)
        y = nn.functional.linear(x, w, self.bias)
        act = functional.ACTIVATIONS[self.activation]
        return y if act is None else act(y)

    def extra_repr(self) -> str:
        s = super().extra_repr() + f", precision={self.precision!r}"
        return s + (f", activation={self.activation!r}" if self.activation else "")


def convert(model: nn.Module, *, precision: str = DEFAULT_PRECISION) -> nn.Module:
    """Replace every ``nn.Linear`` in ``model`` (exactly that class: subclasses
    such as ``nn.MultiheadAttention``'s out_proj, which that module does not
    call as a module, are left alone) by a ``Linear`` sharing its parameters;
    an sgemm ``Linear`` already there gets ``precision``.  Changes ``model``
    in place and returns it -- or the new module, when ``model`` itself is an
    ``nn.Linear``.  A layer reached twice stays one module."""
    check_precision(precision)
    return _convert(model, precision, {})


def _convert(m: nn.Module, precision: str, memo: dict) -> nn.Module:
    if id(m) in memo:
        return memo[id(m)]
    if type(m) is nn.Linear:
        new = Linear.from_linear(m, precision=precision)
    else:
        if isinstance(m, Linear):
            m.precision = precision
        # _modules, not named_children(): that skips a module's second occurrence
        for name, child in list(m._modules.items()):
            if child is None:
                continue
            c = _convert(child, precision, memo)
            if c is not child:
                setattr(m, name, c)
        new = m
    memo[id(m)] = new
    return new
