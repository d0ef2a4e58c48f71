"""Every entry point through the plan cache against the uncached path, on
the GPU: the same bits, and both within tolerance of an fp64 product.

Each case runs a few rounds on fresh operands (NaN-poisoned outputs where
beta == 0): the uncached path (cache off), then the cached one on equal
operands in new arrays, so the first cached round builds the entry and the
later ones are relocated hits.  CUDA is touched only inside tests and
fixtures (the module imports on a machine without a GPU).
"""
from __future__ import annotations

import numpy as np
import pytest

import sgemm
from sgemm import blas, plan_cache
from sgemm.errors import ArgumentError

from .reference import host, rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

ROUNDS = 3


def _tol(k: int, precision: str | None = None) -> float:
    base = 2e-5 * max(1.0, (k / 4096) ** 0.5)
    return base * (4 if precision in ("tf32x3",) else 1)


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch):
    monkeypatch.setattr(plan_cache, "_ON", True)
    plan_cache.clear()
    plan_cache._ON = True
    yield
    plan_cache.clear()


def _sync():
    cp.cuda.Device().synchronize()


def _rnd(rng, shape):
    return cp.asarray(rng.standard_normal(shape).astype(np.float32))


def _nan(shape):
    return cp.full(shape, cp.nan, dtype=cp.float32)


def compare(monkeypatch, make, run, ref, tol, rounds=ROUNDS, sync=_sync):
    """make(seed) -> operands (equal data for equal seeds, new arrays each
    call); run(*ops) -> result; ref(*ops) -> fp64 product (on operands not
    yet written).  Returns the cache's stats after the cached rounds."""
    plan_cache.clear()

    def once(seed):
        ops = make(seed)
        _sync()                 # operands written (on any stream) before the call reads them
        out = run(*ops)
        sync()                  # the call's stream, before the result is read
        return host(out)

    for seed in range(rounds):
        monkeypatch.setattr(plan_cache, "_ON", False)
        want = once(seed)
        monkeypatch.setattr(plan_cache, "_ON", True)
        expect = ref(*make(seed))
        got = once(seed)
        np.testing.assert_array_equal(got, want, err_msg=f"round {seed}")
        assert got.shape == expect.shape
        assert rel_err(got, expect) < tol, (seed, rel_err(got, expect))
    s = dict(plan_cache.stats)
    assert s["misses"] == 1 and s["hits"] == rounds - 1, s
    return s


def _ref(a, b, c=None, alpha=1.0, beta=0.0, ta=False, tb=False):
    A, B = host(a), host(b)
    A = np.swapaxes(A, -1, -2) if ta else A
    B = np.swapaxes(B, -1, -2) if tb else B
    r = alpha * np.matmul(A, B)
    return r + beta * host(c) if beta else r


# -- gemm ---------------------------------------------------------------------------
GEMM_CASES = [((64, 64, 64), False, False, "auto", None, 1.0, 0.0),
              ((300, 200, 500), True, False, "auto", "ieee", 0.5, 0.0),
              ((257, 129, 65), False, True, "auto", None, 1.0, -1.5),
              ((128, 128, 40000), False, False, "splitk", "ieee", 1.0, 0.0),   # workspace
              ((1, 777, 1500), True, True, "auto", None, 2.0, 0.0),
              ((512, 384, 256), False, False, "auto", "tf32x3", 1.0, 0.0),
              ((1023, 1025, 1021), False, False, "auto", None, 1.0, 0.0)]


@pytest.mark.parametrize("shape,ta,tb,kernel,precision,alpha,beta", GEMM_CASES)
@pytest.mark.parametrize("given_c", [True, False])
def test_gemm(monkeypatch, shape, ta, tb, kernel, precision, alpha, beta, given_c):
    if beta and not given_c:
        pytest.skip("beta needs c")
    m, n, k = shape

    def make(seed):
        rng = np.random.default_rng(seed)
        a = _rnd(rng, (k, m) if ta else (m, k))       # stored transposed: the flag transposes
        b = _rnd(rng, (n, k) if tb else (k, n))
        c = (_rnd(rng, (m, n)) if beta else _nan((m, n))) if given_c else None
        return a, b, c

    def run(a, b, c):
        out = sgemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                         kernel=kernel, precision=precision)
        assert c is None or out is c
        return out

    compare(monkeypatch, make, run, lambda a, b, c: _ref(a, b, c, alpha, beta, ta, tb),
            _tol(k, precision))


def test_gemm_unaligned_views(monkeypatch):
    """Padded pitch and an element offset (16-byte alignment broken): the
    key holds the alignment, and the fresh views relocate."""
    from .reference import make as view

    def make(seed):
        rng = np.random.default_rng(seed)
        return (view(cp, rng, (200, 131), "C", 3, 1), view(cp, rng, (131, 90), "F", 2, 1),
                _nan((200, 90)))

    compare(monkeypatch, make, lambda a, b, c: sgemm.gemm(a, b, c),
            lambda a, b, c: _ref(a, b), _tol(131))


def test_gemm_on_a_side_stream(monkeypatch):
    s = cp.cuda.Stream(non_blocking=True)

    def run(a, b, c):
        with s:
            return sgemm.gemm(a, b, c)

    def make(seed):
        rng = np.random.default_rng(seed)
        return _rnd(rng, (96, 700)), _rnd(rng, (700, 80)), _nan((96, 80))

    compare(monkeypatch, make, run, lambda a, b, c: _ref(a, b), _tol(700), sync=s.synchronize)


# -- gemm_batched -------------------------------------------------------------------
@pytest.mark.parametrize("bt,m,n,k,ta,tb,bcast,precision",
                         [(8, 64, 64, 64, False, False, None, None),
                          (12, 197, 64, 197, False, True, None, "ieee"),
                          (5, 100, 70, 33, True, False, "b", None),
                          (4, 128, 128, 128, True, True, "a", "tf32x3")])
@pytest.mark.parametrize("given_c", [True, False])
def test_gemm_batched(monkeypatch, bt, m, n, k, ta, tb, bcast, precision, given_c):
    def make(seed):
        rng = np.random.default_rng(seed)
        a = _rnd(rng, (1 if bcast == "a" else bt,) + ((k, m) if ta else (m, k)))
        b = _rnd(rng, (1 if bcast == "b" else bt,) + ((n, k) if tb else (k, n)))
        return a, b, (_nan((bt, m, n)) if given_c else None)

    def run(a, b, c):
        return sgemm.gemm_batched(a, b, c, trans_a=ta, trans_b=tb, precision=precision)

    compare(monkeypatch, make, run, lambda a, b, c: _ref(a, b, None, 1.0, 0.0, ta, tb),
            _tol(k, precision))


# -- matmul -------------------------------------------------------------------------
MATMUL_SHAPES = [((64, 64), (64, 64)), ((300, 70), (70,)), ((70,), (70, 300)),
                 ((129,), (129,)), ((3, 1, 40, 50), (2, 50, 60)), ((6, 33, 17), (17, 9)),
                 ((5,), (4, 5, 7)), ((8, 64, 64), (8, 64, 64))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(monkeypatch, sa, sb):
    def make(seed):
        rng = np.random.default_rng(seed)
        return _rnd(rng, sa), _rnd(rng, sb)

    def ref(a, b):
        return np.matmul(host(a), host(b))

    compare(monkeypatch, make, sgemm.matmul, ref, _tol(sa[-1]))


def test_matmul_non_collapsible_batch(monkeypatch):
    """A sliced batch: several problems, so several launches whose pointers
    lie anywhere in the operands' N-D extent."""
    def make(seed):
        rng = np.random.default_rng(seed)
        return _rnd(rng, (3, 4, 40, 30))[:, 1:3], _rnd(rng, (3, 2, 30, 20))

    compare(monkeypatch, make, sgemm.matmul, lambda a, b: np.matmul(host(a), host(b)),
            _tol(30))


def test_matmul_same_operand_twice(monkeypatch):
    def make(seed):
        x = _rnd(np.random.default_rng(seed), (96, 96))
        return x, x

    compare(monkeypatch, make, sgemm.matmul, lambda a, b: host(a) @ host(b), _tol(96))


# -- blas.sgemm -------------------------------------------------------------------------
@pytest.mark.parametrize("transa,transb", [("N", "N"), ("T", "N"), ("N", "T"), ("C", "T")])
@pytest.mark.parametrize("m,n,k,pad,alpha,beta", [(64, 64, 64, 0, 1.0, 0.0),
                                                  (100, 75, 130, 3, 0.5, 2.0),
                                                  (33, 257, 1000, 8, -1.0, 0.0)])
def test_blas_padded(monkeypatch, transa, transb, m, n, k, pad, alpha, beta):
    ta, tb = transa != "N", transb != "N"
    ra, ca = (k, m) if ta else (m, k)
    rb, cb = (n, k) if tb else (k, n)
    lda, ldb, ldc = ra + pad, rb + pad + 1, m + pad

    def make(seed):
        rng = np.random.default_rng(seed)
        A, B = _rnd(rng, lda * ca), _rnd(rng, ldb * cb)
        C = rng.standard_normal(ldc * n).astype(np.float32)
        if not beta:            # poison what is written; the padding must survive
            C.reshape(n, ldc)[:, :m] = np.nan
        return A, B, cp.asarray(C)

    def mat(x, ld, r, c):                 # column-major r x c with leading dimension ld
        return host(x).reshape(c, ld).T[:r, :]

    def run(A, B, C):
        out = blas.sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
        assert out is C
        return out

    def ref(A, B, C):
        Am, Bm = mat(A, lda, ra, ca), mat(B, ldb, rb, cb)
        r = alpha * ((Am.T if ta else Am) @ (Bm.T if tb else Bm))
        full = host(C).reshape(n, ldc).T.copy()
        full[:m, :] = r + (beta * full[:m, :] if beta else 0.0)
        return full.T.reshape(-1)          # the padding rows stay as they were

    compare(monkeypatch, make, run, ref, _tol(k))


def test_blas_judge_call(monkeypatch):
    def make(seed):
        rng = np.random.default_rng(seed)
        return _rnd(rng, (64, 64)), _rnd(rng, (64, 64)), _nan((64, 64))

    def run(a, b, c):
        blas.sgemm("N", "N", 64, 64, 64, 1.0, a.ravel(), 64, b.ravel(), 64, 0.0, c.ravel(), 64)
        return c

    # row-major storage read column-major: C^T = A^T B^T, i.e. C = B A
    compare(monkeypatch, make, run, lambda a, b, c: host(b) @ host(a), _tol(64))


# -- other packages -------------------------------------------------------------------
def test_torch_every_entry_point(monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    s = torch.cuda.Stream()

    def t(rng, shape, nan=False):
        x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).cuda()
        return x.fill_(float("nan")) if nan else x

    cases = [
        (lambda r: (t(r, (70, 50)), t(r, (50, 40))), lambda a, b: sgemm.matmul(a, b)),
        (lambda r: (t(r, (2, 70, 50)), t(r, (50,))), lambda a, b: sgemm.matmul(a, b)),
        (lambda r: (t(r, (70, 50)), t(r, (50, 40)), t(r, (70, 40), True)),
         lambda a, b, c: sgemm.gemm(a, b, c)),
        (lambda r: (t(r, (50, 70)), t(r, (50, 40))),
         lambda a, b: sgemm.gemm(a, b, trans_a=True)),
        (lambda r: (t(r, (4, 70, 50)), t(r, (1, 50, 40))),
         lambda a, b: sgemm.gemm_batched(a, b)),
    ]
    for make_r, fn in cases:
        def make(seed, make_r=make_r):
            return make_r(np.random.default_rng(seed))

        def run(*ops, fn=fn):
            with torch.cuda.stream(s):           # the result is on the caller's stream
                out = fn(*ops)
            assert isinstance(out, torch.Tensor) and out.is_cuda
            return out

        def ref(*ops, fn=fn):
            a, b = host(ops[0]), host(ops[1])
            if fn is cases[3][1]:
                a = a.T
            return np.matmul(a, b)

        compare(monkeypatch, make, run, ref, _tol(50), sync=s.synchronize)

    def make_blas(seed):
        r = np.random.default_rng(seed)
        return t(r, 64 * 64), t(r, 64 * 64), t(r, 64 * 64, True)

    compare(monkeypatch, make_blas,
            lambda A, B, C: blas.sgemm("N", "N", 64, 64, 64, 1.0, A, 64, B, 64, 0.0, C, 64),
            lambda A, B, C: (host(A).reshape(64, 64).T @ host(B).reshape(64, 64).T)
            .T.reshape(-1), _tol(64))


def test_numpy_every_entry_point(monkeypatch):
    f32 = np.float32

    def r(seed, *shape):
        return np.random.default_rng(seed).standard_normal(shape).astype(f32)

    cases = [
        (lambda s: (r(s, 70, 50), r(s + 100, 50, 40)), lambda a, b: sgemm.gemm(a, b),
         lambda a, b: host(a) @ host(b)),
        (lambda s: (r(s, 70, 50), r(s + 100, 50, 40), np.full((70, 40), np.nan, f32)),
         lambda a, b, c: sgemm.gemm(a, b, c), lambda a, b, c: host(a) @ host(b)),
        (lambda s: (r(s, 3, 70, 50), r(s + 100, 50)), lambda a, b: sgemm.matmul(a, b),
         lambda a, b: np.matmul(host(a), host(b))),
        (lambda s: (r(s, 2, 70, 50), r(s + 100, 2, 50, 40)),
         lambda a, b: sgemm.gemm_batched(a, b), lambda a, b: np.matmul(host(a), host(b))),
        (lambda s: (r(s, 64 * 64), r(s + 100, 64 * 64), np.full(64 * 64, np.nan, f32)),
         lambda A, B, C: blas.sgemm("N", "N", 64, 64, 64, 1.0, A, 64, B, 64, 0.0, C, 64),
         lambda A, B, C: (host(A).reshape(64, 64).T @ host(B).reshape(64, 64).T).T.reshape(-1)),
    ]
    for make, fn, ref in cases:
        def run(*ops, fn=fn):
            out = fn(*ops)
            assert type(out) is np.ndarray
            if len(ops) == 3:
                assert out is ops[2]
            return out

        compare(monkeypatch, make, run, ref, _tol(64))


# -- errors on a hit ----------------------------------------------------------------------
def _same_error(monkeypatch, call):
    with pytest.raises(ArgumentError) as cached:
        call()
    monkeypatch.setattr(plan_cache, "_ON", False)
    with pytest.raises(ArgumentError) as uncached:
        call()
    monkeypatch.setattr(plan_cache, "_ON", True)
    assert str(cached.value) == str(uncached.value)
    return str(cached.value)


def test_overlap_on_a_hit_raises_the_uncached_error(monkeypatch):
    rng = np.random.default_rng(1)
    b = _rnd(rng, (64, 64))
    sgemm.gemm(_rnd(rng, (64, 64)), b, _nan((64, 64)))            # the entry
    buf = _rnd(rng, (128, 64))
    before = buf.get()
    msg = _same_error(monkeypatch, lambda: sgemm.gemm(buf[:64], b, buf[32:96]))
    assert "overlaps" in msg
    np.testing.assert_array_equal(buf.get(), before)               # C as it was

    b3 = _rnd(rng, (4, 64, 64))
    sgemm.gemm_batched(_rnd(rng, (4, 64, 64)), b3, _nan((4, 64, 64)))
    buf3 = _rnd(rng, (6, 64, 64))
    _same_error(monkeypatch, lambda: sgemm.gemm_batched(buf3[:4], b3, buf3[2:6]))

    A, B = _rnd(rng, 64 * 64), _rnd(rng, 64 * 64)
    blas.sgemm("N", "N", 64, 64, 64, 1.0, A, 64, B, 64, 0.0, _nan(64 * 64), 64)
    flat = _rnd(rng, 3 * 64 * 64)
    before = flat.get()
    _same_error(monkeypatch, lambda: blas.sgemm("N", "N", 64, 64, 64, 1.0, flat[:4096], 64,
                                                B, 64, 0.0, flat[2048:6144], 64))
    np.testing.assert_array_equal(flat.get(), before)
    assert plan_cache.stats["misses"] == 3


def test_cache_off_by_environment(monkeypatch):
    monkeypatch.setenv("SGEMM_PLAN_CACHE", "0")
    plan_cache.clear()
    a = _rnd(np.random.default_rng(2), (64, 64))
    for _ in range(3):
        sgemm.matmul(a, a)
    assert plan_cache.stats["hits"] == 0 and plan_cache.stats["bypass"] == 3
    monkeypatch.delenv("SGEMM_PLAN_CACHE")
    plan_cache.clear()


def test_eager_costs_runs():
    """The eager-cost script's rows exist and the entry points hit the cache."""
    from sgemm.bench import eager
    monkey = eager.per_call_us
    try:
        eager.per_call_us = lambda f, sync, **kw: (f(), f(), sync(), 0.0)[-1]
        out = eager.eager_costs(torch_rows=False)
    finally:
        eager.per_call_us = monkey
    assert "sgemm.blas.sgemm(...)" in out and "cupy.matmul(a, b)" in out
    assert out["plan_cache.stats"]["hits"] >= 6


# -- outputs kept for reuse ---------------------------------------------------------
def test_dropped_outputs_are_reused_and_held_ones_never():
    """A dropped allocating result comes back as the next call's output (the
    same CuPy array, the new product in it); one held through the array, a
    view, its MemoryPointer or its Memory is never written again."""
    rng = np.random.default_rng(5)
    a, b = _rnd(rng, (64, 64)), _rnd(rng, (64, 64))
    sgemm.gemm(a, b)
    sgemm.gemm(a, b)
    out = sgemm.gemm(a, b)
    oid = id(out)
    del out
    for hold in (lambda o: o, lambda o: o[1:], lambda o: o.T, lambda o: o.data,
                 lambda o: o.data.mem, lambda o: o.ravel(), None):
        a2, b2 = _rnd(rng, (64, 64)), _rnd(rng, (64, 64))
        _sync()
        out = sgemm.gemm(a2, b2)
        want = _ref(a2, b2)
        if hold is None:
            assert id(out) == oid                      # nothing held the kept ones
        held, ptr = (hold(out) if hold else None), out.data.ptr
        del out
        for _ in range(3):                             # more calls than kept outputs
            a3, b3 = _rnd(rng, (64, 64)), _rnd(rng, (64, 64))
            _sync()
            new = sgemm.gemm(a3, b3)
            if hold is not None:
                assert new.data.ptr != ptr
            _sync()
            assert rel_err(host(new), _ref(a3, b3)) < _tol(64)
            del new
        if hold is not None:
            mem = cp.cuda.UnownedMemory(ptr, 64 * 64 * 4, held)
            kept = cp.ndarray((64, 64), cp.float32, cp.cuda.MemoryPointer(mem, 0))
            assert rel_err(host(kept), want) < _tol(64)
            del kept, mem
        del held


def test_kept_outputs_per_stream():
    """Alternating streams, results dropped: every result right (a kept
    output made on one stream is not handed to another)."""
    rng = np.random.default_rng(6)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    for i in range(8):
        s = streams[i % 2]
        a, b = _rnd(rng, (64, 48)), _rnd(rng, (48, 80))
        _sync()
        with s:
            r = sgemm.matmul(a, b)
        s.synchronize()
        assert rel_err(host(r), _ref(a, b)) < _tol(48)
        del r
    assert plan_cache.stats["misses"] == 1


def test_torch_outputs_fresh_and_contiguous():
    """A hit allocates a PyTorch result like the entry's zero-stride template
    (1-3 dimensions) or with torch.empty (4): a new contiguous float32 tensor
    on the operands' device each call, never a kept one."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    g = torch.Generator(device="cuda").manual_seed(3)
    for sa, sb in [((64, 64), (64, 64)), ((64,), (64, 48)), ((40, 64), (64,)),
                   ((3, 20, 30), (3, 30, 10)), ((2, 3, 4, 5), (2, 3, 5, 6))]:
        outs = []
        for _ in range(3):
            a = torch.randn(sa, device="cuda", generator=g)
            b = torch.randn(sb, device="cuda", generator=g)
            o = sgemm.matmul(a, b)
            want = torch.matmul(a.double(), b.double())
            torch.cuda.synchronize()
            assert o.shape == want.shape and o.dtype == torch.float32 and o.device == a.device
            assert o.is_contiguous() and not o.requires_grad
            assert rel_err(o, want) < _tol(64)
            outs.append(o)
        assert len({o.data_ptr() for o in outs}) == 3, (sa, sb)
    assert plan_cache.stats["hits"] >= 10
