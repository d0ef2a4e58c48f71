"""sgemm for PyTorch: operators, drop-in modules and a routing mode.

    import sgemm.torch as st
    y = st.linear(x, w, b, precision="tf32x3", activation="relu")  # autograd, torch.compile
    model = st.convert(model, precision="tf32x3")     # nn.Linear -> st.Linear, same parameters
    with st.SgemmMode(precision="tf32x3"):            # float32 CUDA matmul/mm/bmm/linear
        loss = model(x).sum()

Importing this registers ``torch.ops.sgemm.{mm,bmm,addmm,linear}`` (ops.py).
``import sgemm`` does not import it, and works without PyTorch.  precision:
"ieee" (FP32 FMA), "tf32x3" (tensor cores, FP32-level accuracy; the default
here) or "tf32".  Guide: docs/torch.md.
"""
from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as e:        # pragma: no cover - exercised where torch is absent
    raise ImportError("sgemm.torch needs PyTorch (pip install torch); the rest of sgemm "
                      "does not") from e

from . import ops
from .functional import ACTIVATIONS, addmm, bmm, linear, mm
from .mode import SgemmMode
from .nn import Linear, convert
from .ops import DEFAULT_PRECISION, PRECISIONS

__all__ = ["mm", "bmm", "addmm", "linear", "Linear", "convert", "SgemmMode", "ops",
           "PRECISIONS", "DEFAULT_PRECISION", "ACTIVATIONS"]
