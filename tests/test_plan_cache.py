"""The plan cache on a CPU: keys, relocation, overlap checks and the routing
of every entry point, with CuPy, PyTorch and the GPU faked in host memory.

The fake keeps the real front end (Plan's checks and layout, blas.sgemm's
checks) and replaces what needs a GPU: ``prepare`` returns launches of a
host "kernel" that computes the canonical problem through its pointers
(two launches per problem, the second one pointing into the middle of B and
C, as a grid split does), and the launcher runs them.  A relocated launch
that still pointed at the first call's arrays would compute the wrong
result, so every result is compared with a float64 reference.
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib
import itertools
import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

import sgemm
from sgemm import api, blas, plan_cache
from sgemm.errors import ArgumentError
from sgemm.runtime import device as devmod
from sgemm.runtime import launcher

plan_mod = importlib.import_module("sgemm.plan")   # sgemm.plan is also a function

F32 = np.float32
_state = {"device": 0, "stream": 0}
_keep: list = []            # fake device memory stays alive for the whole test


# -- fake device memory ------------------------------------------------------------
def _alloc(shape, align_off=0):
    """A float32 C-order host array whose address is 64-aligned plus align_off bytes."""
    n = int(np.prod(shape)) if shape else 1
    raw = np.zeros(4 * n + 128, np.uint8)
    _keep.append(raw)
    start = (-raw.ctypes.data) % 64 + align_off
    return raw[start:start + 4 * n].view(F32).reshape(shape)


class _Mem:
    """CuPy's MemoryPointer: ptr, device_id and mem (the allocation it points into)."""
    __slots__ = ("ptr", "device_id", "mem")

    def __init__(self, ptr, dev, mem=None):
        self.ptr, self.device_id = ptr, dev
        self.mem = object() if mem is None else mem


class FakeCupyArray:
    """The few ndarray attributes the library reads (no NumPy subclass: the
    library must take it for a CUDA array, not a host one)."""

    def __init__(self, shape, dtype=F32, *, _a=None, _dev=None, _base=None):
        self._a = _alloc(tuple(shape)) if _a is None else _a
        self._dev = _state["device"] if _dev is None else _dev
        # a view holds its base and shares its allocation, as CuPy's do
        self.base = _base
        self.data = _Mem(self._a.ctypes.data, self._dev, _base.data.mem if _base else None)

    def _view(self, a):
        return FakeCupyArray(None, _a=a, _dev=self._dev, _base=self.base or self)

    dtype = property(lambda self: self._a.dtype)
    strides = property(lambda self: self._a.strides)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    T = property(lambda self: self._view(self._a.T))
    device = property(lambda self: types.SimpleNamespace(id=self._dev))

    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, new):              # CuPy reshapes in place without a copy
        self._a = self._a.reshape(new)

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": a.strides, "version": 3}

    def __getitem__(self, idx):
        return self._view(self._a[idx])

    def get(self):
        return np.array(self._a, copy=True)

    def ravel(self):
        return self._view(self._a.reshape(-1))


FakeCupyArray.__module__ = "cupy"


def cparr(x, align_off=0):
    x = np.asarray(x, F32)
    a = _alloc(x.shape, align_off)
    a[...] = x
    return FakeCupyArray(None, _a=a)


class _Device:
    def __init__(self, i):
        self.id = int(i)

    def __enter__(self):
        self._prev = _state["device"]
        _state["device"] = self.id

    def __exit__(self, *exc):
        _state["device"] = self._prev


def _fake_cupy():
    cp = types.ModuleType("cupy")
    cp.ndarray = FakeCupyArray
    cp.asarray = lambda x: x if isinstance(x, FakeCupyArray) else cparr(x)
    cp.empty = lambda shape, dtype=F32: FakeCupyArray(shape)
    cp.cuda = types.SimpleNamespace(
        Device=_Device,
        runtime=types.SimpleNamespace(getDevice=lambda: _state["device"]),
        get_current_stream=lambda: types.SimpleNamespace(ptr=_state["stream"]))
    return cp


class FakeTensor:
    def __init__(self, a, dev=0):
        self._a, self._dev = a, dev

    dtype = property(lambda self: _torch_mod.float32 if self._a.dtype == F32 else self._a.dtype)
    layout = property(lambda self: _torch_mod.strided)
    shape = property(lambda self: tuple(self._a.shape))
    is_cuda = True
    device = property(lambda self: types.SimpleNamespace(index=self._dev, type="cuda"))

    def get_device(self):
        return self._dev

    def data_ptr(self):
        return self._a.ctypes.data

    def stride(self):
        return tuple(s // 4 for s in self._a.strides)

    def __getitem__(self, idx):
        return FakeTensor(self._a[idx], self._dev)

    def numpy(self):
        return np.array(self._a, copy=True)


FakeTensor.__module__ = "torch"


def tarr(x):
    x = np.asarray(x, F32)
    a = _alloc(x.shape)
    a[...] = x
    return FakeTensor(a)


_torch_mod = types.ModuleType("torch")
_torch_mod.Tensor = FakeTensor
_torch_mod.float32 = object()
_torch_mod.strided = object()
_torch_mod.empty = lambda shape, dtype=None, device=None: FakeTensor(
    _alloc(tuple(shape)), getattr(device, "index", 0) or 0)
_torch_mod.device = lambda kind, i=0: types.SimpleNamespace(type=kind, index=i)
_made = {"empty_like": 0}


def _empty_strided(shape, strides, dtype=None, device=None):
    n = 1 + sum((d - 1) * s for d, s in zip(shape, strides))
    _made["strided_n"] = n
    base = _alloc((n,))
    return FakeTensor(np.lib.stride_tricks.as_strided(base, tuple(shape),
                                                      tuple(4 * s for s in strides)),
                      getattr(device, "index", 0) or 0)


def _empty_like(t):
    """torch.empty_like's preserve_format: a dense tensor's strides, else contiguous."""
    _made["empty_like"] += 1
    a = t._a
    dense = all(s > 0 for s in a.strides) and a.flags.c_contiguous
    assert not dense, "the plan cache's templates have zero strides"
    return FakeTensor(_alloc(a.shape), t._dev)


_torch_mod.empty_strided = _empty_strided
_torch_mod.empty_like = _empty_like
_torch_mod.cuda = types.SimpleNamespace(
    current_stream=lambda dev=None: types.SimpleNamespace(cuda_stream=1000 + _state["stream"]))


# -- the fake GPU: a host kernel on the canonical problem ------------------------------
def _view(ptr, shape, estrides):
    count = sum((n - 1) * s for n, s in zip(shape, estrides)) + 1
    buf = np.ctypeslib.as_array((ctypes.c_float * count).from_address(ptr))
    return np.lib.stride_tricks.as_strided(buf, shape, tuple(4 * s for s in estrides))


def host_kernel(m, n, k, ta, tb, a, lda, b, ldb, c, ldc, alpha, beta, batch, sa, sb, sc,
                bias=0, epi=0):
    """C = act(alpha op(A) op(B) + beta C + bias), column-major, as common.cuh
    defines it."""
    from sgemm import epilogue
    for z in range(batch):
        A = _view(a + 4 * z * sa, (m, k), (lda, 1) if ta else (1, lda)).astype(np.float64)
        B = _view(b + 4 * z * sb, (k, n), (ldb, 1) if tb else (1, ldb)).astype(np.float64)
        C = _view(c + 4 * z * sc, (m, n), (1, ldc))
        r = float(alpha) * (A @ B)
        if float(beta) != 0.0:
            r = r + float(beta) * C.astype(np.float64)
        if epi & epilogue.BIAS_M:
            r = r + _view(bias, (m, 1), (1, 1)).astype(np.float64)
        elif epi & epilogue.BIAS_N:
            r = r + _view(bias, (1, n), (1, 1)).astype(np.float64)
        C[...] = epilogue.activate(r, epilogue.name_of(epi)).astype(F32)


@dataclass(frozen=True)
class FakeLaunch:
    kernel: object
    grid: tuple
    block: int
    smem: int
    args: tuple
    role: str = "gemm"
    workspace: object = None


calls = {"prepare": 0, "launch": 0, "streams": []}
WORKSPACE = [False]


def fake_prepare(problems, dev, kernel="auto", precision=None, stream=None, since=None):
    calls["prepare"] += 1
    out = []
    ws = object() if WORKSPACE[0] else None
    for p in problems:
        # two launches: columns [0, h) and [h, n), the second one with pointers
        # into the middle of B and C (what _split_for_grid does)
        h = max(1, p.n // 2)
        for j0, nj in ((0, h), (h, p.n - h)):
            if nj <= 0:
                continue
            b_off = j0 if p.tb else j0 * p.ldb
            args = (p.m, nj, p.k, int(p.ta), int(p.tb), p.a, p.lda, p.b + 4 * b_off, p.ldb,
                    p.c + 4 * j0 * p.ldc, p.ldc, F32(p.alpha), F32(p.beta), p.batch,
                    p.stride_a, p.stride_b, p.stride_c,
                    p.bias + (4 * j0 if p.epi & 16 else 0), np.int32(p.epi))
            out.append(FakeLaunch(host_kernel, (1, 1, 1), 32, 0, args, workspace=ws))
    return None, None, "fake", out


def fake_launch(kernel, grid, block, smem, stream, args):
    calls["launch"] += 1
    calls["streams"].append(launcher.stream_handle(stream))
    kernel(*args)


@pytest.fixture(autouse=True)
def fake_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setitem(sys.modules, "torch", _torch_mod)
    for name in ("_cp", "_ndarray", "_getdev", "_cur_stream", "_TT", "_T32", "_TSTRIDED",
                 "_tcur", "_tempty", "_tempty_like"):
        monkeypatch.setattr(plan_cache, name, None)
    monkeypatch.setattr(plan_cache, "_tdevs", {})
    monkeypatch.setattr(plan_cache, "_KIND", {})      # bound again to this test's fakes
    monkeypatch.setattr(plan_cache, "_ON", True)
    monkeypatch.setattr(launcher, "DRIVER_LAUNCH", False)
    monkeypatch.setattr(launcher, "launch", fake_launch)
    monkeypatch.setattr(launcher, "as_stream", lambda s: types.SimpleNamespace(sync=lambda: None))
    monkeypatch.setattr(devmod, "require_gpu", lambda: None)
    monkeypatch.setattr(devmod, "info", lambda i=0: types.SimpleNamespace(id=i))
    monkeypatch.setattr(devmod, "make_current", lambda i: None)
    monkeypatch.setattr(plan_mod, "prepare", fake_prepare)
    _state.update(device=0, stream=0)
    calls.update(prepare=0, launch=0, streams=[])
    WORKSPACE[0] = False
    plan_cache.clear()
    plan_cache._ON = True
    yield
    plan_cache.clear()
    _keep.clear()


def rnd(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def ref(a, b, c=None, alpha=1.0, beta=0.0, ta=False, tb=False):
    A = np.asarray(a, np.float64)
    B = np.asarray(b, np.float64)
    A = np.swapaxes(A, -1, -2) if ta else A
    B = np.swapaxes(B, -1, -2) if tb else B
    r = alpha * np.matmul(A, B)
    if beta:
        r = r + beta * np.asarray(c, np.float64)
    return r


def host(x):
    if isinstance(x, FakeCupyArray):
        return x.get()
    if isinstance(x, FakeTensor):
        return x.numpy()
    return np.asarray(x)


def close(x, r):
    np.testing.assert_allclose(host(x).astype(np.float64), r, rtol=1e-5, atol=1e-5)


def misses():
    return calls["prepare"]


# -- routing and relocation --------------------------------------------------------------
def test_gemm_hits_relocate_to_fresh_arrays():
    for i in range(4):
        a, b = cparr(rnd((6, 5), i)), cparr(rnd((5, 7), 10 + i))
        c = cparr(np.full((6, 7), np.nan, F32))
        assert sgemm.gemm(a, b, c) is c
        close(c, ref(a.get(), b.get()))
        close(sgemm.gemm(a, b), ref(a.get(), b.get()))          # allocating form
    assert misses() == 2                                   # one per form
    assert plan_cache.stats["hits"] == 6


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_flags_and_scalars(ta, tb):
    for i in range(3):
        a = cparr(rnd((5, 6) if ta else (6, 5), i))
        b = cparr(rnd((7, 5) if tb else (5, 7), 20 + i))
        c0 = rnd((6, 7), 30 + i)
        c = cparr(c0)
        sgemm.gemm(a, b, c, alpha=0.5, beta=-2.0, trans_a=ta, trans_b=tb)
        close(c, ref(a.get(), b.get(), c0, 0.5, -2.0, ta, tb))
    assert misses() == 1


def test_key_changes_take_a_new_plan():
    a, b, c = cparr(rnd((8, 8), 1)), cparr(rnd((8, 8), 2)), cparr(rnd((8, 8), 3))
    sgemm.gemm(a, b, c)
    sgemm.gemm(cparr(rnd((8, 8), 4)), cparr(rnd((8, 8), 5)), cparr(rnd((8, 8), 6)))
    assert misses() == 1                                     # same key: relocated hit
    n = 1
    for kw in ({"alpha": 2.0}, {"beta": 0.5}, {"trans_a": True}, {"trans_b": True},
               {"precision": "ieee"}, {"kernel": "tile"}, {"kernel": 8}):
        sgemm.gemm(a, b, c, **kw)
        n += 1
        assert misses() == n, kw
        sgemm.gemm(a, b, c, **kw)                                # and it is cached itself
        assert misses() == n, kw
    big = cparr(rnd((8, 9), 7))
    sgemm.gemm(a, big, cparr(rnd((8, 9), 8)))                   # shape
    assert misses() == n + 1
    sgemm.gemm(a.T, b, c)                                        # strides
    assert misses() == n + 2
    pad = FakeCupyArray(None, _a=_alloc((8, 12))[:, :8])          # padded pitch
    pad._a[...] = rnd((8, 8), 9)
    sgemm.gemm(pad, b, c)
    assert misses() == n + 3
    sgemm.gemm(cparr(rnd((8, 8), 1), align_off=4), b, c)         # address mod 16
    assert misses() == n + 4
    sgemm.gemm(cparr(rnd((8, 8), 1), align_off=64), b, c)        # same alignment: a hit
    assert misses() == n + 4


def test_key_parts_are_what_change():
    """The key itself: equal for a call on other arrays of the same layout,
    unequal when one of shape, strides, alignment, flags, scalars, precision,
    kernel or the output's presence changes."""
    seen = []
    real = plan_cache._store

    def spy(key, *rest):
        seen.append(key)
        return real(key, *rest)

    plan_cache._store = spy
    try:
        a, b, c = cparr(rnd((4, 4), 1)), cparr(rnd((4, 4), 2)), cparr(rnd((4, 4), 3))
        sgemm.gemm(a, b, c)
        plan_cache.clear()
        plan_cache._ON = True
        sgemm.gemm(cparr(rnd((4, 4), 4)), cparr(rnd((4, 4), 5)), cparr(rnd((4, 4), 6)))
        sgemm.gemm(a, b)
        sgemm.gemm(a, b, c, alpha=3.0)
        sgemm.gemm(a, b, c, precision="tf32x3")
    finally:
        plan_cache._store = real
    assert seen[0] == seen[1]
    assert len(set(seen[1:])) == 4


def test_overlap_on_a_hit_raises_like_the_uncached_path(monkeypatch):
    buf = cparr(rnd((16, 8), 1))
    a, c_bad = buf[:8], buf[4:12]                     # c overlaps a by four rows
    b = cparr(rnd((8, 8), 2))
    sgemm.gemm(cparr(rnd((8, 8), 3)), b, cparr(rnd((8, 8), 4)))     # the entry
    before = c_bad.get()
    with pytest.raises(ArgumentError) as cached:
        sgemm.gemm(a, b, c_bad)
    np.testing.assert_array_equal(c_bad.get(), before)              # C as it was
    monkeypatch.setattr(plan_cache, "_ON", False)
    with pytest.raises(ArgumentError) as uncached:
        sgemm.gemm(a, b, c_bad)
    assert str(cached.value) == str(uncached.value)
    assert "overlaps" in str(cached.value)
    assert calls["launch"] == 2                        # the entry's two launches only


def test_errors_are_the_uncached_ones():
    a = cparr(rnd((4, 3), 1))
    sgemm.gemm(a, cparr(rnd((3, 5), 2)))
    for bad in (lambda: sgemm.gemm(a, cparr(rnd((4, 5), 2))),
                lambda: sgemm.gemm(a, cparr(rnd((3, 5), 2)), alpha=float("nan")),
                lambda: sgemm.gemm(a, cparr(rnd((3, 5), 2)), beta=1.0),
                lambda: sgemm.gemm(a, cparr(rnd((3, 5), 2)), trans_a=1),
                lambda: sgemm.gemm(a, cparr(rnd((3, 5), 2)), precision=["ieee"]),
                lambda: sgemm.gemm(a, cparr(rnd((3, 5), 2)), kernel="nope")):
        with pytest.raises((ArgumentError, TypeError)) as cached:
            bad()
        plan_cache._ON = False
        with pytest.raises(type(cached.value)) as uncached:
            bad()
        plan_cache._ON = True
        assert str(cached.value) == str(uncached.value)


def test_a_and_b_overlapping_relocate_together():
    for i in range(3):
        x = cparr(rnd((6, 6), i))
        close(sgemm.matmul(x, x), ref(x.get(), x.get()))
        close(sgemm.gemm(x, x, trans_b=True), ref(x.get(), x.get(), tb=True))
        buf = cparr(rnd((10, 6), 50 + i))
        close(sgemm.gemm(buf[:6], buf[4:10]), ref(buf.get()[:6], buf.get()[4:10]))
    assert misses() == 3
    assert plan_cache.stats["hits"] == 6


def test_other_device_or_current_device_bypasses():
    a, b = cparr(rnd((4, 4), 1)), cparr(rnd((4, 4), 2))
    sgemm.gemm(a, b)
    _state["device"] = 1                                # current device is not a's
    close(sgemm.gemm(a, b), ref(a.get(), b.get()))
    _state["device"] = 0
    assert plan_cache.stats["bypass"] == 1


def test_gemm_batched_and_batch_broadcast():
    for i in range(3):
        a, b = cparr(rnd((4, 5, 3), i)), cparr(rnd((1, 3, 6), 10 + i))
        c = cparr(np.full((4, 5, 6), np.nan, F32))
        assert sgemm.gemm_batched(a, b, c) is c
        close(c, ref(a.get(), b.get()))
        close(sgemm.gemm_batched(a, b), ref(a.get(), b.get()))
        at = cparr(rnd((4, 3, 5), 20 + i))       # stored transposed, the flag transposes
        close(sgemm.gemm_batched(at, b, trans_a=True, precision="ieee"),
              ref(at.get(), b.get(), ta=True))
    assert misses() == 3
    with pytest.raises(ArgumentError, match="gemm_batched needs 3"):
        sgemm.gemm_batched(cparr(rnd((5, 3), 1)), cparr(rnd((3, 6), 1)))


@pytest.mark.parametrize("sa,sb", [((6, 5), (5, 7)), ((5,), (5, 7)), ((6, 5), (5,)),
                                   ((5,), (5,)), ((3, 1, 6, 5), (2, 5, 7)),
                                   ((2, 6, 5), (5, 7)), ((5,), (3, 5, 2))])
def test_matmul_shapes(sa, sb):
    for i in range(3):
        a, b = cparr(rnd(sa, i)), cparr(rnd(sb, 10 + i))
        out = sgemm.matmul(a, b)
        r = np.matmul(a.get().astype(np.float64), b.get().astype(np.float64))
        assert out.shape == r.shape
        close(out, r)
    assert misses() == 1
    assert plan_cache.stats["hits"] == 2


def test_matmul_non_collapsible_batch_relocates_every_launch():
    # a's batch dimensions do not collapse (a sliced batch): several problems
    base = cparr(rnd((3, 4, 6, 5), 1))
    for i in range(3):
        base = cparr(rnd((3, 4, 6, 5), i))
        a = base[:, :3]
        b = cparr(rnd((3, 3, 5, 2), 10 + i))
        close(sgemm.matmul(a, b), ref(a.get(), b.get()))
    assert misses() == 1


def test_blas_padded_leading_dimensions():
    m, n, k, lda, ldb, ldc = 5, 6, 4, 8, 7, 9
    for i in range(3):
        for ta, tb in (("N", "N"), ("T", "N"), ("N", "T"), ("c", "t")):
            ra, ca = (k, m) if ta in "Tc" else (m, k)
            rb, cb = (n, k) if tb in "Tt" else (k, n)
            A = cparr(rnd(lda * ca, i))
            B = cparr(rnd(ldb * cb, 5 + i))
            C0 = rnd(ldc * n, 9 + i)
            C = cparr(C0)
            assert blas.sgemm(ta, tb, m, n, k, 0.5, A, lda, B, ldb, 2.0, C, ldc) is C
            Am = A.get().reshape(ca, lda).T[:ra, :]
            Bm = B.get().reshape(cb, ldb).T[:rb, :]
            Cm = C0.reshape(n, ldc).T[:m, :]
            r = 0.5 * ((Am.T if ta in "Tc" else Am).astype(np.float64)
                       @ (Bm.T if tb in "Tt" else Bm).astype(np.float64)) + 2.0 * Cm
            got = C.get().reshape(n, ldc).T
            close(got[:m, :], r)
            np.testing.assert_array_equal(got[m:, :], C0.reshape(n, ldc).T[m:, :])  # padding
    assert misses() == 4
    assert plan_cache.stats["hits"] == 8


def test_blas_overlap_and_errors():
    A, B = cparr(rnd(16, 1)), cparr(rnd(16, 2))
    C = cparr(rnd(16, 3))
    blas.sgemm("N", "N", 4, 4, 4, 1.0, A, 4, B, 4, 0.0, C, 4)
    buf = cparr(rnd(40, 4))
    # C's addressed part overlaps A's: the uncached error; with alpha == 0 allowed
    with pytest.raises(ArgumentError, match="C overlaps A"):
        blas.sgemm("N", "N", 4, 4, 4, 1.0, buf[:16], 4, B, 4, 0.0, buf[10:26], 4)
    blas.sgemm("N", "N", 4, 4, 4, 0.0, buf[:16], 4, B, 4, 0.5, buf[10:26], 4)
    # the same buffers with disjoint addressed parts are fine (and cached)
    for off in (0, 1):
        A2, C2 = buf[off:off + 16], buf[off + 20:off + 36]
        expect = ref(A2.get().reshape(4, 4).T, B.get().reshape(4, 4).T)
        blas.sgemm("N", "N", 4, 4, 4, 1.0, A2, 4, B, 4, 0.0, C2, 4)
        close(C2.get().reshape(4, 4).T, expect)
    with pytest.raises(ArgumentError, match=r"parameter 8 \(lda\)"):
        blas.sgemm("N", "N", 4, 4, 4, 1.0, A, 3, B, 4, 0.0, C, 4)
    with pytest.raises(ArgumentError, match=r"parameter 1 \(transa\)"):
        blas.sgemm(["N"], "N", 4, 4, 4, 1.0, A, 4, B, 4, 0.0, C, 4)


def test_blas_judge_call_hits():
    a, b, c = cparr(rnd((8, 8), 1)), cparr(rnd((8, 8), 2)), cparr(np.zeros((8, 8), F32))
    for _ in range(3):
        blas.sgemm("N", "N", 8, 8, 8, 1.0, a.ravel(), 8, b.ravel(), 8, 0.0, c.ravel(), 8)
    # column-major on row-major storage: C^T = A^T B^T
    close(c.get().T, ref(a.get().T, b.get().T))
    assert misses() == 1 and plan_cache.stats["hits"] == 2


def test_blas_hit_path_takes_only_what_its_key_covers():
    """blas.sgemm's written-out path (plan_cache.call_blas) after an entry
    exists: a buffer too small for its leading dimension, a reversed one, a
    2-D one, a float64 one and one on another device each get the uncached
    path's error and leave C as it was; fresh good buffers hit."""
    def bufs(i, na=16):
        return cparr(rnd(na, i)), cparr(rnd(16, 10 + i)), cparr(rnd(16, 20 + i))
    A, B, C = bufs(0)
    blas.sgemm("N", "N", 4, 4, 4, 1.0, A, 4, B, 4, 0.0, C, 4)
    for i in (1, 2):
        A, B, C = bufs(i)
        blas.sgemm("N", "N", 4, 4, 4, 1.0, A, 4, B, 4, 0.0, C, 4)
        close(C.get().reshape(4, 4).T, ref(A.get().reshape(4, 4).T, B.get().reshape(4, 4).T))
    assert misses() == 1 and plan_cache.stats["hits"] == 2
    A, B, C = bufs(3)
    small = cparr(rnd(15, 3))
    rev = FakeCupyArray(None, _a=A._a[::-1])
    two_d = cparr(rnd((4, 4), 3))
    f64 = FakeCupyArray(None, _a=np.zeros(16, np.float64))
    other = FakeCupyArray(None, _a=_alloc((16,)), _dev=1)
    for bad, what in ((small, "holds 15 elements"), (rev, "contiguous"), (f64, "float64"),
                      (other, "device")):
        before = C.get()
        with pytest.raises(Exception, match=what):
            blas.sgemm("N", "N", 4, 4, 4, 1.0, bad, 4, B, 4, 0.0, C, 4)
        np.testing.assert_array_equal(C.get(), before)
    # a 2-D buffer is accepted (contiguous) by the full path; it is keyed apart
    blas.sgemm("N", "N", 4, 4, 4, 1.0, two_d, 4, B, 4, 0.0, C, 4)
    close(C.get().reshape(4, 4).T, ref(two_d.get().reshape(4, 4).T, B.get().reshape(4, 4).T))


def test_torch_tensors():
    for i in range(3):
        a, b = tarr(rnd((6, 5), i)), tarr(rnd((5, 7), 10 + i))
        out = sgemm.matmul(a, b)
        assert isinstance(out, FakeTensor)
        close(out, ref(a.numpy(), b.numpy()))
        c = tarr(np.full((6, 7), np.nan, F32))
        assert sgemm.gemm(a, b, c, alpha=2.0) is c
        close(c, ref(a.numpy(), b.numpy(), alpha=2.0))
        a3, b3 = tarr(rnd((2, 6, 5), i)), tarr(rnd((2, 5, 7), i))
        close(sgemm.gemm_batched(a3, b3), ref(a3.numpy(), b3.numpy()))
    assert misses() == 3
    assert plan_cache.stats["hits"] == 6
    assert set(calls["streams"]) == {1000}           # torch's current stream


@contextlib.contextmanager
def tags_through_call():
    """The tag of every plan_cache.call() made inside, in order."""
    seen, real = [], plan_cache.call
    plan_cache.call = lambda *x, **kw: (seen.append(x[0]), real(*x, **kw))[1]
    try:
        yield seen
    finally:
        plan_cache.call = real


def test_torch_matrices_written_out_path_shares_call_keys():
    """sgemm.matmul on two 2-D tensors takes plan_cache.call_torch2 once torch
    is bound: the same key as call() (a hit on call()'s entry), a new plan
    for other strides or for a @ a, the uncached errors for tensors on two
    devices, and 1-D or subclassed operands still served by call()."""
    a, b = tarr(rnd((6, 5), 1)), tarr(rnd((5, 7), 2))
    sgemm.matmul(a, b)                                   # call(): binds torch, the entry
    with tags_through_call() as seen:
        for i in range(3):
            a, b = tarr(rnd((6, 5), 10 + i)), tarr(rnd((5, 7), 20 + i))
            close(sgemm.matmul(a, b), ref(a.numpy(), b.numpy()))
        assert seen == [] and misses() == 1                 # hits on call()'s entry
        at = FakeTensor(_alloc((5, 6)).T)                   # column-major: other strides
        at._a[...] = rnd((6, 5), 3)
        close(sgemm.matmul(at, b), ref(at.numpy(), b.numpy()))
        assert misses() == 2
        x = tarr(rnd((5, 5), 4))
        close(sgemm.matmul(x, x), ref(x.numpy(), x.numpy()))
        close(sgemm.matmul(x, x), ref(x.numpy(), x.numpy()))
        assert misses() == 3
        b1 = FakeTensor(b._a, dev=1)
        with pytest.raises(sgemm.DeviceError, match="cuda:1"):
            sgemm.matmul(a, b1)
        v = tarr(rnd((5,), 5))
        close(sgemm.matmul(a, v), ref(a.numpy(), v.numpy()))
        assert seen == ["matmul"] and misses() == 4          # 1-D: handed to call()
        p = FakeParameter(a._a)                 # (api.matmul hands it to call() itself)
        close(sgemm.matmul(p, b), ref(a.numpy(), b.numpy()))
        assert misses() == 4                                # call()'s hit on the same entry


def test_torch_written_out_path_takes_a_bias_and_shares_call_keys():
    """sgemm.matmul(a, b, bias=) on 2-D tensors (and sgemm.torch.linear's
    route) goes through call_torch2 with the bias as a fourth relocated
    operand: the same entry as call()'s, hits relocated to each call's bias,
    Parameters as well as tensors; a bias that is not 1-D goes to call() (and
    on to the argument checks), one overlapping an operand to the uncached
    path, as call() sends them."""
    a, b = tarr(rnd((6, 5), 1)), tarr(rnd((5, 7), 2))
    z = tarr(rnd((7,), 3))
    plan_cache.call("matmul", (a, b), ("auto", None, None), None, sgemm.api._matmul_uncached,
                    (a, b, "auto", None, None, z, None), bias=z)   # call(): the entry
    with tags_through_call() as seen:
        for i in range(3):
            a, b = tarr(rnd((6, 5), 10 + i)), tarr(rnd((5, 7), 20 + i))
            z = (tarr if i < 2 else lambda x: FakeParameter(tarr(x)._a))(rnd((7,), 30 + i))
            close(sgemm.matmul(a, b, bias=z), ref(a.numpy(), b.numpy()) + z.numpy()[None, :])
        assert seen == [] and misses() == 1 and plan_cache.stats["bypass"] == 0
        z2 = tarr(rnd((1, 7), 4))                   # 2-D: call() hands it to the checks
        with pytest.raises(sgemm.ArgumentError, match="bias has 2 dimension"):
            sgemm.matmul(a, b, bias=z2)
        assert seen == ["matmul"]
        inside = FakeTensor(b._a.reshape(-1)[:7])              # the bias is b's first row
        close(sgemm.matmul(a, b, bias=inside),
              ref(a.numpy(), b.numpy()) + b.numpy()[0][None, :])
        assert plan_cache.stats["bypass"] == 1


class FakeParameter(FakeTensor):
    """nn.Parameter's place in the fake torch: a subclass the cache takes."""


class FakeSubclass(FakeTensor):
    """Any other tensor subclass (FakeTensor, DTensor, ...): never cached."""


FakeParameter.__module__ = FakeSubclass.__module__ = "torch"
_torch_mod.nn = types.SimpleNamespace(Parameter=FakeParameter)


def test_parameters_mix_with_tensors_and_hit():
    """sgemm.torch hands weights over as nn.Parameter (no detached view per
    call): they must hit like plain tensors, relocated to each call's data."""
    for i in range(3):
        x = tarr(rnd((6, 5), i))
        w = FakeParameter(tarr(rnd((7, 5), 10 + i))._a)
        bias = FakeParameter(tarr(rnd((7,), 20 + i))._a)
        c = tarr(np.full((6, 7), np.nan, F32))
        assert sgemm.gemm(x, w, c, trans_b=True, bias=bias) is c
        close(c, ref(x.numpy(), w.numpy(), tb=True) + bias.numpy()[None, :].astype(np.float64))
    assert misses() == 1 and plan_cache.stats["hits"] == 2
    assert plan_cache.stats["bypass"] == 0


def test_other_tensor_subclasses_bypass():
    a, b = tarr(rnd((4, 3), 1)), FakeSubclass(tarr(rnd((3, 5), 2))._a)
    for _ in range(2):
        close(sgemm.gemm(a, b), ref(a.numpy(), b.numpy()))
    assert plan_cache.stats["bypass"] == 2 and plan_cache.stats["hits"] == 0


def test_bad_parameter_raises_naming_it_and_leaves_c():
    """A Parameter of the wrong dtype is read as not cacheable; the uncached
    path names it, and C is not written (on a hit's key as on a first call)."""
    x, w = tarr(rnd((6, 5), 1)), FakeParameter(tarr(rnd((7, 5), 2))._a)
    c = tarr(np.full((6, 7), 3.0, F32))
    sgemm.gemm(x, w, c, trans_b=True)                   # the entry exists
    c._a[...] = 3.0
    w64 = FakeParameter(np.asarray(rnd((7, 5), 2), np.float64))
    with pytest.raises(sgemm.ArgumentTypeError, match=r"^b has dtype"):
        sgemm.gemm(x, w64, c, trans_b=True)
    with pytest.raises(ArgumentError, match=r"op\(b\) = b\.T is 4x7.*inner dimensions"):
        sgemm.gemm(x, FakeParameter(tarr(rnd((7, 4), 3))._a), c, trans_b=True)
    assert (c.numpy() == 3.0).all()


def test_torch_programs_never_probe_cupy():
    """Binding torch's types first: a PyTorch-only program's first call must
    not import CuPy (0.6-1.4 s where it is installed) to learn that a tensor
    is not a CuPy array."""
    a, b = tarr(rnd((4, 3), 1)), tarr(rnd((3, 5), 2))
    sgemm.gemm(a, b)
    sgemm.gemm(a, b)
    assert plan_cache._cp is None and plan_cache.stats["hits"] == 1


def test_mixed_packages_bypass():
    a, b = tarr(rnd((4, 4), 1)), cparr(rnd((4, 4), 2))
    out = sgemm.gemm(a, b)
    close(out, ref(a.numpy(), b.get()))
    assert plan_cache.stats["bypass"] == 1 and plan_cache.stats["hits"] == 0


def test_numpy_inputs_cache_the_gpu_plan():
    for i in range(3):
        a, b = rnd((6, 5), i), rnd((5, 7), 10 + i)
        out = sgemm.gemm(a, b)
        assert type(out) is np.ndarray
        close(out, ref(a, b))
        c0 = rnd((6, 7), 20 + i)
        c = c0.copy()
        assert sgemm.gemm(a, b, c, beta=1.0) is c
        close(c, ref(a, b, c0, beta=1.0))
        v = sgemm.matmul(rnd((5,), i), b)
        assert type(v) is np.ndarray and v.shape == (7,)
        C = np.zeros(6 * 7, F32)
        blas.sgemm("N", "N", 6, 7, 5, 1.0, a.T.ravel(), 6, b.T.ravel(), 5, 0.0, C, 6)
        close(C.reshape(7, 6).T, ref(a, b))
    assert misses() == 4
    assert plan_cache.stats["hits"] == 8


def test_numpy_readonly_and_overlapping_c_raise():
    a, b = rnd((4, 4), 1), rnd((4, 4), 2)
    c = np.zeros((4, 4), F32)
    sgemm.gemm(a, b, c)
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only"):
        sgemm.gemm(a, b, c)
    buf = rnd((8, 4), 3)
    with pytest.raises(ArgumentError, match="overlaps"):
        sgemm.gemm(buf[:4], b, buf[2:6])


def test_workspace_plans_are_keyed_per_stream():
    WORKSPACE[0] = True
    a, b = cparr(rnd((4, 4), 1)), cparr(rnd((4, 4), 2))
    sgemm.gemm(a, b)
    sgemm.gemm(a, b)
    assert misses() == 1
    _state["stream"] = 7
    sgemm.gemm(a, b)                                        # another stream: its own entry
    assert misses() == 2
    sgemm.gemm(a, b, stream=7)
    _state["stream"] = 0
    sgemm.gemm(a, b)
    assert misses() == 2
    assert plan_cache.stats["hits"] == 3
    assert calls["streams"][-2:] == [0, 0]


def test_every_entry_point_routes_through_the_cache():
    a, b, c = cparr(rnd((8, 8), 1)), cparr(rnd((8, 8), 2)), cparr(rnd((8, 8), 3))
    a3, b3, c3 = cparr(rnd((2, 8, 8), 1)), cparr(rnd((2, 8, 8), 2)), cparr(rnd((2, 8, 8), 3))
    fns = [lambda: sgemm.gemm(a, b, c), lambda: sgemm.gemm(a, b), lambda: sgemm.matmul(a, b),
           lambda: sgemm.gemm_batched(a3, b3, c3), lambda: sgemm.matmul(a3, b3),
           lambda: sgemm.blas.sgemm("N", "N", 8, 8, 8, 1.0, a.ravel(), 8, b.ravel(), 8, 0.0,
                                    c.ravel(), 8)]
    for f in fns:
        n = misses()
        f()
        assert misses() == n + 1
        h = plan_cache.stats["hits"]
        f()
        f()
        assert misses() == n + 1 and plan_cache.stats["hits"] == h + 2


def test_cache_off_builds_every_time():
    plan_cache._ON = False
    a, b = cparr(rnd((4, 4), 1)), cparr(rnd((4, 4), 2))
    for _ in range(3):
        close(sgemm.matmul(a, b), ref(a.get(), b.get()))
    assert misses() == 3 and plan_cache.stats["hits"] == 0


def test_eviction_keeps_working(monkeypatch):
    monkeypatch.setattr(plan_cache, "MAX_ENTRIES", 8)
    a = cparr(rnd((4, 4), 1))
    for n, _ in itertools.product(range(1, 20), range(2)):
        b = cparr(rnd((4, n), n))
        close(sgemm.gemm(a, b), ref(a.get(), b.get()))
    assert len(plan_cache._entries) <= 8
    assert plan_cache.stats["hits"] == 19


def test_no_driver_takes_the_uncached_path(monkeypatch):
    """CuPy installed on a machine without a driver: asking for the current
    device raises; the call must still reach the uncached path, which checks
    the arguments first (so a bad argument gets its ArgumentError)."""
    import numpy as np
    from sgemm import plan_cache

    def broken():
        raise RuntimeError("cudaErrorInsufficientDriver")
    calls = []
    monkeypatch.setattr(plan_cache, "_cp", object())
    monkeypatch.setattr(plan_cache, "_getdev", broken)
    a = np.ones((4, 4), np.float32)
    out = plan_cache.call("gemm", (a, a), (), None,
                          lambda *x: (calls.append(x), (None, "uncached"))[1], (1,))
    assert out == "uncached" and calls == [(1,)]


# -- the fused epilogue's bias: a fourth relocated operand ----------------------------
def _ref_epi(r, bias, act):
    from sgemm import epilogue
    return epilogue.activate(r + np.asarray(bias, np.float64)[None, :], act)


@pytest.mark.parametrize("order", ["C", "F"])
def test_bias_relocates_and_activation_is_keyed(order):
    for i in range(3):
        a, b = cparr(rnd((6, 5), i)), cparr(rnd((5, 7), 10 + i))
        bias = cparr(rnd((7,), 30 + i))
        c = (cparr(np.full((7, 6), np.nan, F32)).T if order == "F"    # column-major
             else cparr(np.full((6, 7), np.nan, F32)))
        assert sgemm.gemm(a, b, c, bias=bias, activation="gelu") is c
        close(c, _ref_epi(ref(a.get(), b.get()), bias.get(), "gelu"))
        sgemm.gemm(a, b, c, bias=bias, activation="relu")      # another key
        close(c, _ref_epi(ref(a.get(), b.get()), bias.get(), "relu"))
        sgemm.gemm(a, b, c)                                     # and the plain call
        close(c, ref(a.get(), b.get()))
    assert misses() == 3
    assert plan_cache.stats["hits"] == 6


def test_bias_overlapping_c_raises_on_a_hit():
    a, b = cparr(rnd((6, 5), 1)), cparr(rnd((5, 7), 2))
    c, bias = cparr(np.zeros((6, 7), F32)), cparr(rnd((7,), 3))
    sgemm.gemm(a, b, c, bias=bias)
    with pytest.raises(ArgumentError, match="c overlaps bias"):
        sgemm.gemm(a, b, c, bias=c[0])


# -- the PyTorch operators' route (api._torch_new) and their workspaces ------------------
def test_torch_route_hits_and_never_caches_a_copied_operand():
    """sgemm.torch's mm: the first call of a shape runs the operator's own
    slow path (its checks, then the Plan); later calls hit without it.  A
    slow path that could not use the operands as they are returns no plan:
    nothing is stored and every call runs it again."""
    from sgemm import api
    ran = []

    def slow(a, b):
        ran.append(1)
        return api._new_uncached(a, b, "ieee")
    for i in range(3):
        a, b = tarr(rnd((6, 5), i)), tarr(rnd((5, 7), 10 + i))
        out = api._torch_new("torch.mm", a, b, "ieee", slow, (a, b))
        assert isinstance(out, FakeTensor)
        close(out, ref(a.numpy(), b.numpy()))
    assert len(ran) == 1 and plan_cache.stats["hits"] == 2

    ran.clear()
    copied = lambda a, b: (ran.append(1), (None, api._new_uncached(a, b, "ieee")[1]))[1]
    for i in range(2):
        a, b = tarr(rnd((3, 2), i)), tarr(rnd((2, 4), i))
        close(api._torch_new("torch.mm", a, b, "ieee", copied, (a, b)), ref(a.numpy(), b.numpy()))
    assert len(ran) == 2


def test_torch_operands_take_torch_workspaces(monkeypatch):
    """Plans built for torch tensors allocate split-K / pack workspaces from
    torch's allocator (no CuPy import, no second pool); CuPy arrays keep CuPy's."""
    from sgemm import launches
    got = []
    monkeypatch.setattr(launches, "_torch_workspace",
                        lambda n, dev, zero, nbytes: (got.append((n, dev, zero)), (object(), 1 << 40))[1])
    monkeypatch.setitem(sys.modules, "cupy", None)        # importing CuPy would raise
    with plan_cache.workspace_for(tarr(rnd((2, 2), 0))):
        assert launches.allocate_workspace(100, 0, zero_floats=8)[1] == 1 << 40
    assert got == [(100, 0, 8)]
    with plan_cache.workspace_for(cparr(rnd((2, 2), 0))):
        assert getattr(launches._ws, "kind", None) is None
    assert getattr(launches._ws, "kind", None) is None        # restored after the block


# -- outputs kept for reuse (CuPy) ------------------------------------------------------
def _ab(i=0):
    return cparr(rnd((6, 5), i)), cparr(rnd((5, 7), 10 + i))


def test_dropped_output_is_reused_with_the_new_result():
    a, b = _ab()
    sgemm.gemm(a, b)                                             # the entry
    first = sgemm.gemm(a, b)
    fid = id(first)
    del first
    for i in range(1, 4):
        a, b = _ab(i)
        out = sgemm.gemm(a, b)
        assert id(out) == fid                       # nothing held it: the same array again
        close(out, ref(a.get(), b.get()))
        del out
    assert plan_cache.stats["misses"] == 1


@pytest.mark.parametrize("hold", ["array", "view", "transpose", "ravel", "memptr", "mem"])
def test_an_output_anything_holds_is_never_reused(hold):
    """A view, the MemoryPointer or the allocation behind it keeps the
    output's memory in use, as it keeps CuPy's pool from reusing it."""
    a, b = _ab()
    sgemm.gemm(a, b)
    sgemm.gemm(a, b)                                # kept outputs exist from here on
    out = sgemm.gemm(a, b)
    r0 = ref(a.get(), b.get())
    held = {"array": lambda o: o, "view": lambda o: o[1:], "transpose": lambda o: o.T,
            "ravel": lambda o: o.ravel(), "memptr": lambda o: o.data,
            "mem": lambda o: o.data.mem}[hold](out)
    ptr = out.data.ptr
    del out
    for i in range(1, 5):                          # more calls than kept outputs
        a2, b2 = _ab(i)
        new = sgemm.gemm(a2, b2)
        assert new.data.ptr != ptr
        close(new, ref(a2.get(), b2.get()))
    got = np.ctypeslib.as_array((ctypes.c_float * 42).from_address(ptr)).reshape(6, 7)
    close(got, r0)                                  # the held memory still has its result
    assert held is not None


def test_an_output_with_a_weak_reference_dies_instead():
    import weakref
    a, b = _ab()
    sgemm.gemm(a, b)
    sgemm.gemm(a, b)
    out = sgemm.gemm(a, b)
    died = []
    weakref.finalize(out, died.append, 1)
    del out
    assert died == []                       # still kept by the entry
    r = sgemm.gemm(a, b)                    # finds it watched: lets it go, makes a new one
    assert died == [1]
    close(r, ref(a.get(), b.get()))


def test_a_loop_that_keeps_its_result_reuses_the_one_before():
    """y = gemm(a, b) holds the previous result during the next call: of the
    two kept outputs, the one before it is free."""
    a, b = _ab()
    y = sgemm.gemm(a, b)
    ids = set()
    for i in range(6):
        prev = id(y)
        y = sgemm.gemm(a, b)
        assert id(y) != prev
        ids.add(id(y))
        close(y, ref(a.get(), b.get()))
    assert len(ids) == 2


def test_kept_output_not_reused_on_another_stream_or_when_reshaped():
    a, b = _ab()
    sgemm.gemm(a, b)
    out = sgemm.gemm(a, b)
    oid = id(out)
    del out
    _state["stream"] = 7
    other = sgemm.gemm(a, b)                 # made on stream 0: not handed to stream 7
    assert id(other) != oid
    del other
    _state["stream"] = 0
    out = sgemm.gemm(a, b)
    assert id(out) == oid
    out.shape = (42,)                        # reshaped in place by the caller, then dropped
    ptr = out.data.ptr
    del out
    new = sgemm.gemm(a, b)
    assert new.shape == (6, 7) and new.data.ptr != ptr     # (its id may be the old one's)
    close(new, ref(a.get(), b.get()))


def test_matmul_results_are_kept_too():
    a, b = cparr(rnd((3, 4, 5), 1)), cparr(rnd((3, 5, 2), 2))
    sgemm.matmul(a, b)
    r = sgemm.matmul(a, b)
    rid = id(r)
    del r
    r = sgemm.matmul(a, b)
    assert id(r) == rid and r.shape == (3, 4, 2)
    close(r, ref(a.get(), b.get()))


def test_kept_outputs_off_and_bounded(monkeypatch):
    a, b = _ab()
    monkeypatch.setattr(plan_cache, "_RECYCLE", False)
    sgemm.gemm(a, b)
    out = sgemm.gemm(a, b)
    oid = id(out)
    del out
    assert all(e.spare is None for e in plan_cache._entries.values())
    assert plan_cache._held[0] == 0
    plan_cache.clear()
    monkeypatch.setattr(plan_cache, "_RECYCLE", True)
    monkeypatch.setattr(plan_cache, "RECYCLE_BYTES", 100)        # 6x7 floats: 168 bytes
    sgemm.gemm(a, b)
    sgemm.gemm(a, b)
    assert all(e.spare is None for e in plan_cache._entries.values())
    plan_cache.clear()
    monkeypatch.setattr(plan_cache, "RECYCLE_BYTES", 1 << 20)
    monkeypatch.setattr(plan_cache, "RECYCLE_TOTAL", 168)        # room for one output
    sgemm.gemm(a, b)
    for _ in range(3):
        sgemm.gemm(a, b)
    assert plan_cache._held[0] == 168
    assert sum(len(e.spare) for e in plan_cache._entries.values()) == 1
    plan_cache.clear()
    assert plan_cache._held[0] == 0


def test_torch_outputs_are_never_kept_but_made_like_a_template():
    """PyTorch outputs are new tensors every call (torch.empty_like of the
    entry's zero-stride template: one element of storage, a contiguous
    result), never a kept one; 4-D results use torch.empty."""
    a, b = tarr(rnd((6, 5), 1)), tarr(rnd((5, 7), 2))
    sgemm.matmul(a, b)
    _made["empty_like"] = 0
    outs = [sgemm.matmul(tarr(rnd((6, 5), i)), tarr(rnd((5, 7), 10 + i))) for i in range(3)]
    assert _made["empty_like"] == 3
    assert len({o.data_ptr() for o in outs}) == 3
    for i, o in enumerate(outs):
        assert o.shape == (6, 7) and o.stride() == (7, 1)
        close(o, ref(rnd((6, 5), i), rnd((5, 7), 10 + i)))
    (e,) = plan_cache._entries.values()
    assert e.spare.stride() == (0, 0) and _made["strided_n"] == 1     # one element
    plan_cache.clear()
    a4, b4 = tarr(rnd((2, 3, 4, 5), 1)), tarr(rnd((2, 3, 5, 2), 2))
    sgemm.matmul(a4, b4)
    _made["empty_like"] = 0
    out = sgemm.matmul(a4, b4)
    assert _made["empty_like"] == 0 and out.shape == (2, 3, 4, 2)
    close(out, ref(a4.numpy(), b4.numpy()))
    assert all(e.spare is None for e in plan_cache._entries.values())
