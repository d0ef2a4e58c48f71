"""A small Triton FP32 matmul: a second, independent reference next to cuBLAS.

``tl.dot(..., input_precision="ieee")`` makes Triton compute with FP32 FMAs
(its default for float32 is TF32, which would not be a fair comparison for
the FP32 ladder); "tf32x3" and "tf32" give the tensor-core variants.  The
kernel is the textbook one (Triton's 03-matrix-multiplication): BM x BN tile
per program, grouped launch order for L2 reuse, masked edges, strides for
transposed operands, grid axis 1 for the batch.  Autotuned over four tiles
per (M, N, K, precision); the winner is recorded in the results.

Imported only when Triton is installed.  Operands are CuPy arrays; Triton is
handed zero-copy PyTorch views where PyTorch is importable (the form Triton
expects), else minimal objects with ``data_ptr()``.
"""
from __future__ import annotations

import contextlib

import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_warps=8, num_stages=3),
    triton.Config({"BM": 128, "BN": 64, "BK": 32}, num_warps=4, num_stages=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_warps=4, num_stages=4),
    triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K", "PREC"])
@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K,
            s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn,
            PREC: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            GROUP: tl.constexpr = 8):
    # grouped program order: GROUP rows of tiles share B columns in L2
    pid = tl.program_id(0)
    bz = tl.program_id(1)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    in_group = GROUP * num_n
    first_m = (pid // in_group) * GROUP
    gsz = min(num_m - first_m, GROUP)
    pm = first_m + (pid % in_group) % gsz
    pn = (pid % in_group) // gsz

    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + bz * s_ab + rm[:, None] * s_am + rk[None, :] * s_ak
    b = b_ptr + bz * s_bb + rk[:, None] * s_bk + rn[None, :] * s_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kin = (rk + k0) < K
        x = tl.load(a, mask=(rm[:, None] < M) & kin[None, :], other=0.0)
        y = tl.load(b, mask=kin[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision=PREC)
        a += BK * s_ak
        b += BK * s_bk
    c = c_ptr + bz * s_cb + rm[:, None] * s_cm + rn[None, :] * s_cn
    tl.store(c, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class _Ptr:
    """What Triton needs of a tensor argument when PyTorch is absent."""

    def __init__(self, arr):
        self._p = int(arr.data.ptr)
        self.dtype = "float32"

    def data_ptr(self):
        return self._p


def _tensor(arr):
    try:
        import torch
        return torch.as_tensor(arr, device="cuda")  # zero-copy via __cuda_array_interface__
    except ImportError:
        return _Ptr(arr)


def _strides3(x):
    """(batch, row, col) strides in elements; batch stride 0 for 2-D."""
    st = [s // x.itemsize for s in x.strides]
    return (0, *st) if x.ndim == 2 else tuple(st)


def bind(a, b, c, precision: str):
    """A zero-argument callable computing c = a @ b (a, b may be transposed views)."""
    M, K = a.shape[-2:]
    N = b.shape[-1]
    batch = c.shape[0] if c.ndim == 3 else 1
    ta, tb, tc = _tensor(a), _tensor(b), _tensor(c)
    sa, sb, sc = _strides3(a), _strides3(b), _strides3(c)

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]), batch)

    def run():
        _matmul[grid](ta, tb, tc, M, N, K, *sa, *sb, *sc, PREC=precision)
    return run


def best_config() -> str | None:
    cfg = getattr(_matmul, "best_config", None)
    return str(cfg) if cfg is not None else None


@contextlib.contextmanager
def on_stream(stream):
    """Make ``stream`` (a CuPy stream) current for Triton's launcher, which asks
    PyTorch for the current stream when PyTorch is installed."""
    try:
        import torch
    except ImportError:
        yield
        return
    ext = _ext_streams.get(stream.ptr)
    if ext is None:
        ext = _ext_streams[stream.ptr] = torch.cuda.ExternalStream(stream.ptr)
    with torch.cuda.stream(ext):
        yield


_ext_streams: dict = {}
