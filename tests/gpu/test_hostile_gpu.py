"""Hostile input on the GPU: the rejection table with device arrays.

Each row makes one bad call with CuPy (or PyTorch) operands and asserts the
exception type, a message naming the argument, that C (and every operand) is
bit-for-bit unchanged, that no GPU fault happened (a device synchronize
succeeds) and that the process is still usable (a correct call right after
gives the right answer).  Rows the CPU table (tests/test_hostile.py) cannot
express live here: host/device mixes with real device arrays, arrays on two
GPUs (skipped with one GPU), read-only device arrays (through
``__cuda_array_interface__``), PyTorch CPU tensors, checks that run after the
GPU step (kernel names), and netlib calls on device buffers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import sgemm
from sgemm import blas
from sgemm.errors import ArgumentError, ArgumentTypeError, DeviceError

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


def rnd(*shape, seed=0):
    return cp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


class ReadOnly:
    """A device array exposed read-only through __cuda_array_interface__."""

    def __init__(self, x):
        self._x = x
        cai = dict(x.__cuda_array_interface__)
        cai["data"] = (cai["data"][0], True)
        self.__cuda_array_interface__ = cai


def default_ops():
    return {"a": rnd(4, 3, seed=1), "b": rnd(3, 5, seed=2), "c": rnd(4, 5, seed=3)}


def overlap_ops():
    buf = rnd(64, seed=4)
    return {"a": buf[:12].reshape(4, 3), "b": rnd(3, 5, seed=2), "c": buf[8:28].reshape(4, 5),
            "buf": buf}


def self_overlap_ops():
    d = default_ops()
    d["cbuf"] = rnd(32, seed=6)
    d["c"] = cp.lib.stride_tricks.as_strided(d["cbuf"], (4, 5), (0, 4))
    return d


def blas_ops():
    return {"A": rnd(12, seed=11), "B": rnd(15, seed=12), "C": rnd(20, seed=13)}


def blas_overlap_ops():
    buf = rnd(64, seed=14)
    return {"A": buf[:12], "B": rnd(15, seed=12), "C": buf[10:30], "buf": buf}


G = sgemm.gemm


def S(o, **kw):
    args = dict(transa="N", transb="N", m=4, n=5, k=3, alpha=1.0, A=o["A"], lda=4, B=o["B"],
                ldb=3, beta=0.5, C=o["C"], ldc=4)
    args.update(kw)
    return blas.sgemm(*args.values())


@dataclass
class Case:
    id: str
    call: Callable[[dict], object]
    exc: type | tuple
    match: str
    ops: Callable[[], dict] = default_ops


CASES = [
    Case("a-float64", lambda o: G(o["a"].astype(cp.float64), o["b"], o["c"]),
         ArgumentTypeError, r"^a has dtype float64"),
    Case("c-int32", lambda o: G(o["a"], o["b"], o["c"].astype(cp.int32)),
         ArgumentTypeError, r"^c has dtype int32"),
    Case("a-1d", lambda o: G(o["a"][:, 0], o["b"], o["c"]),
         ArgumentError, r"^a has 1 dimension"),
    Case("b-3d", lambda o: G(o["a"], o["b"][None], o["c"]),
         ArgumentError, r"^b has 3 dimension"),
    Case("inner-mismatch", lambda o: G(o["a"], o["b"][:2], o["c"]),
         ArgumentError, r"inner dimensions 3 and 2 differ"),
    Case("c-shape", lambda o: G(o["a"], o["b"], o["c"][:3]),
         ArgumentError, r"^c has shape \(3, 5\)"),
    Case("c-overlaps-a", lambda o: G(o["a"], o["b"], o["c"]),
         ArgumentError, r"^c overlaps a in memory", overlap_ops),
    Case("c-overlaps-b", lambda o: G(o["a"], o["c"][:3], o["c"]),
         ArgumentError, r"^c overlaps b in memory"),
    Case("c-self-overlap", lambda o: G(o["a"], o["b"], o["c"]),
         ArgumentError, r"^c has strides \(0, 1\)", self_overlap_ops),
    Case("c-read-only", lambda o: G(o["a"], o["b"], ReadOnly(o["c"])),
         ArgumentError, r"^c is read-only"),
    Case("host-a-device-b", lambda o: G(cp.asnumpy(o["a"]), o["b"], o["c"]),
         DeviceError, r"^a is on host but b is on cuda:0"),
    Case("device-a-host-c", lambda o: G(o["a"], o["b"], cp.asnumpy(o["c"])),
         DeviceError, r"^a is on cuda:0 but c is on host"),
    Case("alpha-nan", lambda o: G(o["a"], o["b"], o["c"], alpha=float("nan")),
         ArgumentError, r"^alpha=nan is not finite"),
    Case("beta-inf", lambda o: G(o["a"], o["b"], o["c"], beta=np.inf),
         ArgumentError, r"^beta=inf is not finite"),
    Case("trans_a-int", lambda o: G(o["a"], o["b"], o["c"], trans_a=0),
         ArgumentTypeError, r"^trans_a must be True or False"),
    Case("precision-bad", lambda o: G(o["a"], o["b"], o["c"], precision="half"),
         ArgumentError, r"^precision='half'"),
    Case("kernel-bad-name", lambda o: G(o["a"], o["b"], o["c"], kernel="turbo"),
         ValueError, r"^kernel='turbo' is not registered"),
    Case("kernel-bad-id", lambda o: G(o["a"], o["b"], o["c"], kernel=-7),
         ValueError, r"^kernel=-7 is not registered"),
    Case("kernel-precision-clash",
         lambda o: G(o["a"], o["b"], o["c"], kernel="naive", precision="tf32"),
         ArgumentError, r"^kernel='naive' computes with precision='ieee'"),
    Case("a-no-unit-stride", lambda o: G(rnd(8, 6)[::2, ::2], o["b"], o["c"]),
         ArgumentError, r"^a has strides \(12, 2\) elements"),
    Case("b-negative-stride", lambda o: G(o["a"], o["b"][::-1], o["c"]),
         ArgumentError, r"^b has a negative stride"),
    Case("blas-lda", lambda o: S(o, lda=2), ArgumentError,
         r"^sgemm: parameter 8 \(lda\) = 2", blas_ops),
    Case("blas-C-too-small", lambda o: S(o, C=o["C"][:19]), ArgumentError,
         r"^sgemm: parameter 12 \(C\) holds 19 elements", blas_ops),
    Case("blas-overlap", lambda o: S(o), ArgumentError, r"^sgemm: C overlaps A", blas_overlap_ops),
    Case("blas-host-device", lambda o: S(o, B=cp.asnumpy(o["B"])), DeviceError,
         r"^A is on cuda:0 but B is on host", blas_ops),
]


def _snapshot(ops):
    return {k: cp.asnumpy(v).tobytes() for k, v in ops.items() if isinstance(v, cp.ndarray)}


def _still_usable():
    cp.cuda.Device().synchronize()            # raises if a kernel faulted
    a, b, c = rnd(70, 33, seed=9), rnd(33, 45, seed=10), rnd(70, 45, seed=11)
    ref = 2.0 * (a.astype(cp.float64) @ b.astype(cp.float64)) - c.astype(cp.float64)
    sgemm.gemm(a, b, c, alpha=2.0, beta=-1.0)
    cp.cuda.Device().synchronize()
    assert float(cp.abs(c - ref).max()) < 1e-3


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rejection_on_device(case):
    ops = case.ops()
    cp.cuda.Device().synchronize()
    before = _snapshot(ops)
    with pytest.raises(case.exc) as e:
        case.call(ops)
    assert re.search(case.match, str(e.value)), str(e.value)
    cp.cuda.Device().synchronize()
    assert _snapshot(ops) == before, "an operand changed"
    _still_usable()


def test_two_devices():
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU: host/device mixes above stand in")
    a = rnd(4, 3)
    with cp.cuda.Device(1):
        b = rnd(3, 5)
        c = rnd(4, 5)
    c0 = cp.asnumpy(c)
    with pytest.raises(DeviceError, match=r"^a is on cuda:0 but b is on cuda:1"):
        G(a, b, c)
    assert (cp.asnumpy(c) == c0).all()
    _still_usable()


@pytest.fixture
def torch():
    t = pytest.importorskip("torch")
    if not t.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return t


def test_torch_cpu_tensor_rejected(torch):
    a = torch.randn(4, 3, device="cuda")
    b = torch.randn(3, 5)
    with pytest.raises(ArgumentError, match=r"^b is a PyTorch tensor on cpu"):
        G(a, b)
    _still_usable()


def test_torch_float64_rejected(torch):
    a = torch.randn(4, 3, device="cuda", dtype=torch.float64)
    b = torch.randn(3, 5, device="cuda")
    with pytest.raises(ArgumentTypeError, match=r"^a has dtype torch.float64"):
        G(a, b)
    _still_usable()


def test_torch_overlap_rejected(torch):
    b = torch.randn(3, 5, device="cuda")
    c = torch.randn(4, 5, device="cuda")
    c0 = c.clone()
    with pytest.raises(ArgumentError, match=r"^c overlaps a"):
        G(c[:, :3], b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, c0)
    _still_usable()


def test_torch_correct_after_rejections(torch):
    a = torch.randn(4, 3, device="cuda")
    b = torch.randn(3, 5, device="cuda")
    out = G(a, b)
    torch.cuda.synchronize()
    assert isinstance(out, torch.Tensor) and out.is_cuda
    assert float((out.double() - a.double() @ b.double()).abs().max()) < 1e-4


# Was an xfail (blas.sgemm used to write as if the stride were 1); fixed in
# c3490b6, and both GPU runs of 2026-11-22 passed it, so it is a plain test now.
def test_blas_strided_1d_device_buffer():
    """C = buf[::2] (a strided 1-D view): either rejected with an error
    naming C, or computed into exactly C's elements."""
    o = blas_ops()
    buf = rnd(60, seed=20)
    C = buf[::2][:20]
    keep = cp.asnumpy(buf[1::2])
    c0 = cp.asnumpy(C).astype(np.float64)
    try:
        S(o, C=C)
    except ArgumentError as e:
        assert "C" in str(e)
        return
    finally:
        cp.cuda.Device().synchronize()
    A = cp.asnumpy(o["A"]).reshape(3, 4).T.astype(np.float64)
    B = cp.asnumpy(o["B"]).reshape(5, 3).T.astype(np.float64)
    ref = (A @ B + 0.5 * c0.reshape(5, 4).T).T.ravel()
    assert (cp.asnumpy(buf[1::2]) == keep).all(), "elements between C's were overwritten"
    assert np.abs(cp.asnumpy(C) - ref).max() < 1e-4


# Was an xfail (negative strides were read forward); fixed in c3490b6.
def test_blas_negative_stride_1d_device_buffer():
    o = blas_ops()
    big = rnd(100, seed=21)                    # A lives inside: reads stay in the allocation
    A = big[20:32][::-1]
    try:
        out = S(o, A=A, beta=0.0)
    except ArgumentError as e:
        assert "A" in str(e)
        return
    cp.cuda.Device().synchronize()
    Ah = cp.asnumpy(A).reshape(3, 4).T.astype(np.float64)
    B = cp.asnumpy(o["B"]).reshape(5, 3).T.astype(np.float64)
    assert np.abs(cp.asnumpy(out) - (Ah @ B).T.ravel()).max() < 1e-4
