"""Hostile input, CPU side: a table of every rejection the front ends make.

Each row calls ``gemm``/``gemm_batched``/``matmul``/``plan`` or
``blas.sgemm`` with one bad argument and asserts

* the exception type and a message that names the argument (regex),
* that it is raised *before the GPU is touched*: ``device.require_gpu`` is
  replaced by a sentinel that raises ``GpuTouched``, so a check that only
  runs after the GPU requirement shows up as GpuTouched instead of its error
  (such rows are marked xfail with the reason; they are bugs to fix in
  plan.py/dispatch.py, see docs/reliability.md),
* that C (and every other operand) is bit-for-bit unchanged,
* that the process is still usable: a correct call afterwards passes
  validation and reaches the GPU step.

``test_rejections_without_gpu`` repeats the table with the real
``require_gpu`` on a machine with no GPU (skipped where one is visible): the
same errors must come out.  The GPU variants (CuPy arrays, a real launch
afterwards) are in tests/gpu/test_hostile_gpu.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable
from unittest import mock

import numpy as np
import pytest

import sgemm
from sgemm import blas
from sgemm.errors import ArgumentError, ArgumentTypeError, DeviceError, SgemmError
from sgemm.runtime import device as devmod


class GpuTouched(Exception):
    """Raised by the patched require_gpu: validation is over, the GPU is next."""


def _boom():
    raise GpuTouched()


f32 = np.float32


def rnd(*shape, order="C", seed=0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape), f32, order=order)


class FakeDeviceArray:
    """Something that looks like a CuPy array on device ``dev`` (never
    dereferenced: every row using it must be rejected before the GPU)."""
    __module__ = "cupy._fake"

    def __init__(self, shape, dev=0, dtype="<f4"):
        self.shape = shape
        self.device = SimpleNamespace(id=dev)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": dtype,
                                         "data": (0x7F00_0000_0000 + 0x1000 * dev, False),
                                         "strides": None, "version": 3}


@dataclass
class Case:
    id: str
    call: Callable[[dict], object]       # gets the operands dict, makes the bad call
    exc: type | tuple
    match: str                           # regex on the message (re.search)
    ops: Callable[[], dict] = None       # operands (default: a 4x3, b 3x5, c 4x5)
    late: str = ""                       # non-empty: known to be checked after the GPU step


def default_ops():
    return {"a": rnd(4, 3, seed=1), "b": rnd(3, 5, seed=2), "c": rnd(4, 5, seed=3)}


def _overlap_ops():
    buf = rnd(64, seed=4)
    return {"a": buf[:12].reshape(4, 3), "b": rnd(3, 5, seed=2),
            "c": buf[8:28].reshape(4, 5), "buf": buf}


def _overlap_b_ops():
    buf = rnd(64, seed=5)
    return {"a": rnd(4, 3, seed=1), "b": buf[30:45].reshape(3, 5),
            "c": buf[40:60].reshape(4, 5), "buf": buf}


def _readonly_ops():
    d = default_ops()
    d["c"].flags.writeable = False
    return d


def _strided(x, strides_elems, shape):
    return np.lib.stride_tricks.as_strided(x, shape, tuple(4 * s for s in strides_elems))


def _self_overlap_ops():
    d = default_ops()
    d["cbuf"] = rnd(32, seed=6)
    d["c"] = _strided(d["cbuf"], (0, 1), (4, 5))     # every row is the same memory
    return d


def _batched_ops(c_zero_stride=False):
    d = {"a": rnd(2, 4, 3, seed=1), "b": rnd(2, 3, 5, seed=2), "c": rnd(2, 4, 5, seed=3)}
    if c_zero_stride:
        d["cbuf"] = rnd(40, seed=7)
        d["c"] = _strided(d["cbuf"], (0, 5, 1), (2, 4, 5))
    return d


def _byte_stride_ops():
    d = default_ops()
    raw = np.zeros(200, np.uint8)
    d["a"] = np.lib.stride_tricks.as_strided(raw[:4].view(f32), (4, 3), (6, 24))
    return d


# -- BLAS operands: flat column-major buffers ---------------------------------------
def blas_ops():
    return {"A": rnd(4 * 3, seed=11), "B": rnd(3 * 5, seed=12), "C": rnd(4 * 5, seed=13),
            "c": None}


def _blas_overlap_ops():
    buf = rnd(64, seed=14)
    return {"A": buf[:12], "B": rnd(15, seed=12), "C": buf[10:30], "buf": buf, "c": None}


def _blas_ro_ops():
    d = blas_ops()
    d["C"].flags.writeable = False
    return d


def S(o, **kw):
    """Netlib call on the default 4x5x3 problem with keyword overrides."""
    args = dict(transa="N", transb="N", m=4, n=5, k=3, alpha=1.0, A=o["A"], lda=4, B=o["B"],
                ldb=3, beta=0.5, C=o["C"], ldc=4)
    args.update(kw)
    return blas.sgemm(*args.values())


G = sgemm.gemm
CASES: list[Case] = [
    # dtype / type
    Case("a-float64", lambda o: G(o["a"].astype(np.float64), o["b"], o["c"]),
         ArgumentTypeError, r"^a has dtype float64; sgemm computes in float32"),
    Case("b-float16", lambda o: G(o["a"], o["b"].astype(np.float16), o["c"]),
         ArgumentTypeError, r"^b has dtype float16"),
    Case("c-int32", lambda o: G(o["a"], o["b"], o["c"].astype(np.int32)),
         ArgumentTypeError, r"^c has dtype int32"),
    Case("a-complex64", lambda o: G(o["a"].astype(np.complex64), o["b"], o["c"]),
         ArgumentTypeError, r"^a has dtype complex64"),
    Case("a-list", lambda o: G(o["a"].tolist(), o["b"], o["c"]),
         ArgumentTypeError, r"^a must be an array .*got list"),
    Case("b-none", lambda o: G(o["a"], None, o["c"]),
         ArgumentTypeError, r"^b must be an array .*got NoneType"),
    Case("a-byte-stride", lambda o: G(o["a"], o["b"], o["c"]), ArgumentError,
         r"^a has a byte stride of 6, not a multiple", ops=_byte_stride_ops),
    # dimensions
    Case("a-1d", lambda o: G(o["a"][:, 0], o["b"], o["c"]),
         ArgumentError, r"^a has 1 dimension\(s\) \(shape \(4,\)\); gemm needs 2"),
    Case("b-3d", lambda o: G(o["a"], o["b"][None], o["c"]),
         ArgumentError, r"^b has 3 dimension\(s\).*gemm needs 2"),
    Case("c-1d", lambda o: G(o["a"], o["b"], o["c"].ravel()),
         ArgumentError, r"^c has 1 dimension\(s\)"),
    Case("c-3d", lambda o: G(o["a"], o["b"], o["c"][None]),
         ArgumentError, r"^c has 3 dimension\(s\)"),
    Case("batched-a-2d", lambda o: sgemm.gemm_batched(o["a"][0], o["b"], o["c"]),
         ArgumentError, r"^a has 2 dimension\(s\).*gemm_batched needs 3", ops=_batched_ops),
    Case("matmul-0d", lambda o: sgemm.matmul(np.array(2.0, f32), o["b"]),
         ArgumentError, r"^matmul: a and b must have at least 1 dimension"),
    # shapes
    Case("inner-mismatch", lambda o: G(o["a"], o["b"][:2], None),
         ArgumentError, r"^shapes do not match: .*inner dimensions 3 and 2 differ"),
    Case("inner-mismatch-trans", lambda o: G(o["a"], o["b"], None, trans_a=True),
         ArgumentError, r"^shapes do not match: op\(a\) = a\.T is 3x4"),
    Case("c-shape", lambda o: G(o["a"], o["b"], o["c"][:, :4]),
         ArgumentError, r"^c has shape \(4, 4\) but op\(a\)@op\(b\) has shape \(4, 5\)"),
    Case("c-shape-transposed", lambda o: G(o["a"], o["b"], o["c"].T),
         ArgumentError, r"^c has shape \(5, 4\)"),
    Case("batch-no-broadcast",
         lambda o: sgemm.gemm_batched(o["a"], np.concatenate([o["b"]] * 3)[:3], None),
         ArgumentError, r"^batch dimensions of a \(2,\) and b \(3,\) do not broadcast",
         ops=_batched_ops),
    # aliasing
    Case("c-overlaps-a", lambda o: G(o["a"], o["b"], o["c"], beta=1.0),
         ArgumentError, r"^c overlaps a in memory", ops=_overlap_ops),
    Case("c-overlaps-b", lambda o: G(o["a"], o["b"], o["c"]),
         ArgumentError, r"^c overlaps b in memory", ops=_overlap_b_ops),
    Case("c-is-a", lambda o: G(o["c"], np.eye(5, dtype=f32), o["c"]),
         ArgumentError, r"^c overlaps a in memory"),
    Case("c-self-overlap", lambda o: G(o["a"], o["b"], o["c"]),
         ArgumentError, r"^c has strides \(0, 1\) elements, so its elements overlap",
         ops=_self_overlap_ops),
    Case("c-zero-batch-stride", lambda o: sgemm.gemm_batched(o["a"], o["b"], o["c"]),
         ArgumentError, r"^c has a zero batch stride",
         ops=lambda: _batched_ops(c_zero_stride=True)),
    Case("c-read-only", lambda o: G(o["a"], o["b"], o["c"]),
         ArgumentError, r"^c is read-only", ops=_readonly_ops),
    # placement
    Case("host-and-device", lambda o: G(o["a"], FakeDeviceArray((3, 5), 0), o["c"]),
         DeviceError, r"^a is on host but b is on cuda:0; all arrays must be on the same"),
    Case("two-devices", lambda o: G(FakeDeviceArray((4, 3), 0), FakeDeviceArray((3, 5), 1)),
         DeviceError, r"^a is on cuda:0 but b is on cuda:1"),
    Case("c-on-other-device", lambda o: G(FakeDeviceArray((4, 3), 1), FakeDeviceArray((3, 5), 1),
                                          FakeDeviceArray((4, 5), 0)),
         DeviceError, r"^a is on cuda:1 but c is on cuda:0"),
    # scalars
    Case("alpha-nan", lambda o: G(o["a"], o["b"], o["c"], alpha=float("nan")),
         ArgumentError, r"^alpha=nan is not finite"),
    Case("beta-inf", lambda o: G(o["a"], o["b"], o["c"], beta=float("inf")),
         ArgumentError, r"^beta=inf is not finite"),
    Case("alpha-minus-inf", lambda o: G(o["a"], o["b"], o["c"], alpha=-np.inf),
         ArgumentError, r"^alpha=-inf is not finite"),
    Case("beta-np-nan", lambda o: G(o["a"], o["b"], o["c"], beta=np.float32("nan")),
         ArgumentError, r"^beta=nan is not finite"),
    Case("alpha-overflows-f32", lambda o: G(o["a"], o["b"], o["c"], alpha=1e39),
         ArgumentError, r"^alpha=1e\+39 overflows float32"),
    Case("alpha-complex", lambda o: G(o["a"], o["b"], o["c"], alpha=1j),
         ArgumentTypeError, r"^alpha=1j is complex"),
    Case("beta-str", lambda o: G(o["a"], o["b"], o["c"], beta="1"),
         ArgumentTypeError, r"^beta must be a real number, got str"),
    Case("alpha-none", lambda o: G(o["a"], o["b"], o["c"], alpha=None),
         ArgumentTypeError, r"^alpha must be a real number, got NoneType"),
    Case("alpha-bool", lambda o: G(o["a"], o["b"], o["c"], alpha=True),
         ArgumentTypeError, r"^alpha must be a real number, got bool"),
    Case("beta-without-c", lambda o: G(o["a"], o["b"], None, beta=0.5),
         ArgumentError, r"^beta=0.5 needs c"),
    # flags and names
    Case("trans_a-int", lambda o: G(o["a"], o["b"], o["c"], trans_a=1),
         ArgumentTypeError, r"^trans_a must be True or False, got 1"),
    Case("trans_b-str", lambda o: G(o["a"], o["b"], o["c"], trans_b="T"),
         ArgumentTypeError, r"^trans_b must be True or False, got 'T'"),
    Case("trans_a-none", lambda o: G(o["a"], o["b"], o["c"], trans_a=None),
         ArgumentTypeError, r"^trans_a must be True or False, got None"),
    Case("precision-bad", lambda o: G(o["a"], o["b"], o["c"], precision="fp16"),
         ArgumentError, r"^precision='fp16': choose one of ieee, tf32x3, tf32"),
    Case("precision-case", lambda o: G(o["a"], o["b"], o["c"], precision="IEEE"),
         ArgumentError, r"^precision='IEEE'"),
    Case("kernel-bad-name", lambda o: G(o["a"], o["b"], o["c"], kernel="nosuchkernel"),
         ValueError, r"^kernel='nosuchkernel' is not registered"),
    Case("kernel-bad-id", lambda o: G(o["a"], o["b"], o["c"], kernel=999),
         ValueError, r"^kernel=999 is not registered"),
    Case("kernel-precision-clash",
         lambda o: G(o["a"], o["b"], o["c"], kernel="naive", precision="tf32"),
         ArgumentError, r"^kernel='naive' computes with precision='ieee'"),
    # strides
    Case("a-no-unit-stride", lambda o: G(o["a"][::2, ::2], o["b"][:2], o["c"]),
         ArgumentError, r"^a has strides \(6, 2\) elements: one dimension must have unit"),
    Case("b-no-unit-stride", lambda o: G(o["a"][:, :2], o["b"][::2, ::2], None),
         ArgumentError, r"^b has strides \(10, 2\) elements"),
    Case("c-no-unit-stride", lambda o: G(o["a"][::2], o["b"][:, :3], o["c"][::2, ::2]),
         ArgumentError, r"^c has strides \(10, 2\) elements: one dimension must have unit"),
    Case("a-negative-stride", lambda o: G(o["a"][::-1], o["b"], o["c"]),
         ArgumentError, r"^a has a negative stride \(-3, 1\)"),
    Case("b-negative-stride", lambda o: G(o["a"], o["b"][:, ::-1], o["c"]),
         ArgumentError, r"^b has a negative stride \(5, -1\)"),
    Case("c-negative-stride", lambda o: G(o["a"], o["b"], o["c"][::-1]),
         ArgumentError, r"^c has a negative stride"),
    # BLAS (netlib argument order, xerbla-style messages)
    Case("blas-transa", lambda o: S(o, transa="X"), ArgumentError,
         r"^sgemm: parameter 1 \(transa\) = 'X' is not one of", ops=blas_ops),
    Case("blas-transb-int", lambda o: S(o, transb=1), ArgumentError,
         r"^sgemm: parameter 2 \(transb\) = 1", ops=blas_ops),
    Case("blas-m-negative", lambda o: S(o, m=-1), ArgumentError,
         r"^sgemm: parameter 3 \(m\) = -1 must be >= 0", ops=blas_ops),
    Case("blas-n-negative", lambda o: S(o, n=-5), ArgumentError,
         r"^sgemm: parameter 4 \(n\) = -5", ops=blas_ops),
    Case("blas-k-negative", lambda o: S(o, k=-1), ArgumentError,
         r"^sgemm: parameter 5 \(k\) = -1", ops=blas_ops),
    Case("blas-m-float", lambda o: S(o, m=2.5), ArgumentError,
         r"^sgemm: parameter 3 \(m\) must be an integer, got 2.5", ops=blas_ops),
    Case("blas-k-bool", lambda o: S(o, k=True), ArgumentError,
         r"^sgemm: parameter 5 \(k\) must be an integer", ops=blas_ops),
    Case("blas-lda-small", lambda o: S(o, lda=3), ArgumentError,
         r"^sgemm: parameter 8 \(lda\) = 3 must be >= max\(1, m\) = 4", ops=blas_ops),
    Case("blas-lda-small-trans", lambda o: S(o, transa="T", lda=2), ArgumentError,
         r"^sgemm: parameter 8 \(lda\) = 2 must be >= max\(1, k\) = 3", ops=blas_ops),
    Case("blas-ldb-small", lambda o: S(o, ldb=0), ArgumentError,
         r"^sgemm: parameter 10 \(ldb\) = 0 must be >= max\(1, k\) = 3", ops=blas_ops),
    Case("blas-ldc-small", lambda o: S(o, ldc=-4), ArgumentError,
         r"^sgemm: parameter 13 \(ldc\) = -4", ops=blas_ops),
    Case("blas-absurd-m", lambda o: S(o, m=2**40, lda=2**40, ldc=2**40), ArgumentError,
         r"^sgemm: parameter 7 \(A\) holds 12 elements but a 1099511627776x3 matrix",
         ops=blas_ops),
    Case("blas-absurd-n", lambda o: S(o, n=2**33), ArgumentError,
         r"^sgemm: parameter 9 \(B\) holds 15 elements", ops=blas_ops),
    Case("blas-absurd-k", lambda o: S(o, k=2**31, ldb=2**31), ArgumentError,
         r"^sgemm: parameter 7 \(A\) holds 12 elements", ops=blas_ops),
    Case("blas-C-too-small", lambda o: S(o, C=o["C"][:19]), ArgumentError,
         r"^sgemm: parameter 12 \(C\) holds 19 elements but a 4x5 matrix", ops=blas_ops),
    Case("blas-alpha-nan", lambda o: S(o, alpha=float("nan")), ArgumentError,
         r"^alpha=nan is not finite", ops=blas_ops),
    Case("blas-beta-inf", lambda o: S(o, beta=float("-inf")), ArgumentError,
         r"^beta=-inf is not finite", ops=blas_ops),
    Case("blas-A-float64", lambda o: S(o, A=o["A"].astype(np.float64)), ArgumentTypeError,
         r"^A has dtype float64", ops=blas_ops),
    Case("blas-C-overlaps-A", lambda o: S(o), ArgumentError,
         r"^sgemm: C overlaps A in memory", ops=_blas_overlap_ops),
    Case("blas-C-read-only", lambda o: S(o), ArgumentError, r"^C is read-only",
         ops=_blas_ro_ops),
    Case("blas-B-2d-strided", lambda o: S(o, B=np.zeros((5, 6), f32)[:, ::2]), ArgumentError,
         r"^sgemm: B must be a contiguous buffer", ops=blas_ops),
    Case("blas-mixed-places", lambda o: S(o, B=FakeDeviceArray((15,), 0)), DeviceError,
         r"^A is on host but B is on cuda:0", ops=blas_ops),
]


def _param(c: Case, late_exc):
    marks = []
    if c.late:
        marks.append(pytest.mark.xfail(raises=late_exc, strict=False,
                                       reason="checked after the GPU step: " + c.late))
    return pytest.param(c, id=c.id, marks=marks)


def _snapshot(ops: dict) -> dict:
    return {k: v.tobytes() for k, v in ops.items() if isinstance(v, np.ndarray)}


def _good_call():
    """A correct call: must pass validation (and reach the GPU step)."""
    a, b, c = rnd(4, 3), rnd(3, 5), rnd(4, 5)
    return sgemm.gemm(a, b, c, alpha=2.0, beta=-1.0)


def _check_case(case: Case, gpu_exc):
    ops = (case.ops or default_ops)()
    before = _snapshot(ops)
    with pytest.raises(BaseException) as info:
        case.call(ops)
    e = info.value
    if isinstance(e, gpu_exc) and case.late:
        # Not rejected by validation: the xfail mark (raises=gpu_exc) records it.
        raise e
    assert isinstance(e, case.exc), f"{type(e).__name__}: {e}"
    assert isinstance(e, (SgemmError, ValueError, TypeError))
    assert re.search(case.match, str(e)), f"message {str(e)!r} !~ {case.match!r}"
    # C and every operand untouched, bit for bit.
    assert _snapshot(ops) == before
    return e


@pytest.mark.parametrize("case", [_param(c, GpuTouched) for c in CASES])
def test_rejection_before_gpu(case):
    with mock.patch.object(devmod, "require_gpu", _boom):
        _check_case(case, GpuTouched)
        # The process is still usable: a correct call gets through validation.
        with pytest.raises(GpuTouched):
            _good_call()


@pytest.mark.parametrize("case", [_param(c, DeviceError) for c in CASES
                                  if not c.id.startswith(("host-and", "two-dev", "c-on-other",
                                                          "blas-mixed"))])
def test_rejections_without_gpu(case):
    """The real require_gpu on a GPU-less machine: the same errors (not
    DeviceError 'no CUDA GPU') must come out."""
    if devmod.has_gpu():
        pytest.skip("a GPU is visible; tests/gpu/test_hostile_gpu.py covers this")
    e = _check_case(case, DeviceError)
    assert "no CUDA GPU" not in str(e)


def test_every_error_class_is_catchable_as_builtin():
    assert issubclass(ArgumentError, ValueError) and issubclass(ArgumentTypeError, TypeError)
    assert issubclass(DeviceError, RuntimeError)
    assert issubclass(sgemm.OutOfMemoryError, MemoryError)


def test_table_covers_every_argument():
    """Every argument of gemm and blas.sgemm appears in some rejection."""
    names = " ".join(c.id for c in CASES)
    for arg in ("a-", "b-", "c-", "alpha", "beta", "trans_a", "trans_b", "precision", "kernel",
                "blas-transa", "blas-transb", "blas-m", "blas-n", "blas-k", "blas-lda",
                "blas-ldb", "blas-ldc", "blas-A", "blas-B", "blas-C"):
        assert arg in names, arg
    assert len(CASES) >= 60


def test_blas_quick_return_needs_no_gpu():
    """m == 0 / n == 0 / (alpha == 0 and beta == 1) return C untouched
    without touching the GPU (netlib quick return)."""
    with mock.patch.object(devmod, "require_gpu", _boom):
        o = blas_ops()
        c0 = o["C"].copy()
        assert S(o, m=0) is o["C"]
        assert S(o, n=0) is o["C"]
        assert S(o, alpha=0.0, beta=1.0) is o["C"]
        assert S(o, k=0, beta=1.0) is o["C"]
        assert o["C"].tobytes() == c0.tobytes()
