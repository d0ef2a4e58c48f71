"""The fused epilogue on the GPU against an fp64 reference:
act(alpha*op(A)@op(B) + beta*C + bias) with every registered FP32 kernel
forced (the ladder, the tensor-core kernels in tf32x3 and tf32, split-K,
gemv, fused split-K, the cluster kernels) and through kernel="auto" (pack
and peel schemes included), row- and column-major C, every activation, odd
shapes and deep K, NaN-poisoned C with beta == 0, batches, alpha == 0 /
k == 0, and PyTorch's Linear with GELU forward and backward against float64.

A bias applied once per split-K slice, or an activation applied to each
slice instead of the sum, is off by O(1): the fp64 comparison catches both.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import sgemm
from sgemm import epilogue
from sgemm.kernels.registry import KERNELS

from .reference import host, make, ref_gemm, rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]
FP32 = [s for s in KERNELS.values() if s.precision in ("ieee", "tf32x3", "tf32")]
KERNEL_PARAMS = [pytest.param(s.name, marks=pytest.mark.sm90) if s.min_cc >= 90 else s.name
                 for s in FP32]
SHAPES = [(1, 17, 129), (17, 129, 65), (129, 17, 300), (33, 65, 4100), (257, 129, 1)]


def _tol(precision: str, k: int) -> float:
    if precision == "tf32":
        return 5e-3
    return 4e-5 * max(1.0, (k / 4096) ** 0.5)


def _ref(a, b, c_in, alpha, beta, ta, tb, bias, act):
    z = ref_gemm(a, b, c_in, alpha, beta, ta, tb)
    if bias is not None:
        z = z + host(bias)[None, :]
    return epilogue.activate(z, act)


def _run(m, n, k, kernel, act, *, ta=False, tb=False, order="C", alpha=1.0, beta=0.0,
         with_bias=True, offset=0, precision=None, seed=0):
    rng = np.random.default_rng(seed)
    a = make(cp, rng, (k, m) if ta else (m, k), order, 0, offset)
    b = make(cp, rng, (n, k) if tb else (k, n), order, 0, offset)
    c = make(cp, rng, (m, n), order, 0, offset)
    bias = cp.asarray(rng.standard_normal(n).astype(np.float32)) if with_bias else None
    c_in = c.copy()
    if beta == 0:
        c[...] = cp.nan                      # beta == 0 must not read C
    p = sgemm.plan(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, kernel=kernel,
                   precision=precision, bias=bias, activation=act)
    out = p.execute()
    cp.cuda.Device().synchronize()
    ref = _ref(a, b, c_in, alpha, beta, ta, tb, bias, act)
    prec = precision or ("ieee" if kernel == "auto" else _spec(kernel).precision)
    err = rel_err(out, ref)
    assert err < _tol(prec, k), (kernel, (m, n, k, ta, tb, order), act, p, err)
    return p


def _spec(name):
    return next(s for s in FP32 if s.name == name)


@pytest.mark.parametrize("act", [None, "gelu", "silu"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_every_kernel(kernel, shape, order, act):
    m, n, k = shape
    spec = _spec(kernel)
    if spec.precision == "ieee" and spec.id < 5 and m * n * k > 2 ** 21:
        pytest.skip("the naive rungs are too slow for the deep shapes")
    _run(m, n, k, kernel, act, order=order, ta=(m % 2 == 1), tb=(n % 2 == 0))


# The wgmma kernels (21_tf32x3_wgmma.cu's store_tile, also 22's) finish each
# element in registers before its one store, a chunk of column groups at a
# time: whole chunks store unguarded, chunks at C's edges guarded.
WGMMA = [pytest.param(n, marks=pytest.mark.sm90)
         for n in ("tf32x3_wgmma", "tf32_wgmma", "tf32x3_wgmma_rs")]
WGMMA_EPI = [(True, a) for a in ACTS] + [(False, "gelu")]


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1.5, -0.75)], ids=["beta0", "beta"])
@pytest.mark.parametrize("with_bias,act", WGMMA_EPI, ids=lambda x: str(x))
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(256, 256, 64), (65, 200, 70), (130, 129, 33),
                                   (257, 63, 40)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kernel", WGMMA)
def test_wgmma_epilogue_in_registers(kernel, shape, order, with_bias, act, alpha, beta):
    """Every activation, the bias along either canonical axis (row- or
    column-major C), whole and edge tiles and chunks, beta == 0 on a
    NaN-poisoned C and beta != 0."""
    m, n, k = shape
    _run(m, n, k, kernel, act, order=order, alpha=alpha, beta=beta, with_bias=with_bias,
         ta=(k % 2 == 1), tb=(m % 2 == 1))


@pytest.mark.parametrize("beta", [0.0, 0.5])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("kernel", WGMMA[::2])
def test_wgmma_epilogue_on_the_ffma_fallback(kernel, order, beta):
    """An Inf in A sends its tile through tc::ffma_tile, which applies the
    epilogue itself: finite entries match float64, the row of Infs is
    relu(+-Inf + bias) = Inf or 0 as in float64."""
    rng = np.random.default_rng(3)
    m, n, k = 200, 150, 70
    a = make(cp, rng, (m, k), order)
    b = make(cp, rng, (k, n), order)
    c = make(cp, rng, (m, n), order)
    a[37, 5] = cp.inf
    bias = cp.asarray(rng.standard_normal(n).astype(np.float32))
    c_in = c.copy()
    if beta == 0:
        c[...] = cp.nan
    out = sgemm.gemm(a, b, c, beta=beta, kernel=kernel, bias=bias, activation="relu")
    ref = _ref(a, b, c_in, 1.0, beta, False, False, bias, "relu")
    got = host(out)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
    fin = np.isfinite(ref)
    assert np.isinf(ref).any() and np.isfinite(got[fin]).all()
    assert rel_err(got[fin], ref[fin]) < _tol("tf32x3", k)


@pytest.mark.parametrize("precision", ["ieee", "tf32x3", "tf32"])
@pytest.mark.parametrize("trans", list(itertools.product((False, True), repeat=2)),
                         ids=lambda t: "".join("T" if x else "N" for x in t))
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (4096, 1, 4096), (256, 256, 65536),
                                   (1023, 1025, 1021), (35, 79, 19), (129, 65, 4097),
                                   (3, 5, 70000), (2049, 2050, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_auto_every_scheme(shape, order, trans, precision):
    """kernel="auto" reaches split-K (two launches and fused), gemv,
    gemv_wide, the cluster kernels, pack (unaligned) and peel (2049 x 2050)."""
    m, n, k = shape
    _run(m, n, k, "auto", "gelu", ta=trans[0], tb=trans[1], order=order,
         precision=precision, alpha=0.75, beta=0.5)


@pytest.mark.parametrize("act", ["relu", "silu"])
@pytest.mark.parametrize("offset", [1, 3])
def test_pack_scheme_unaligned(monkeypatch, offset, act):
    monkeypatch.setenv("SGEMM_PACK", "always")
    _run(1023, 1021, 1000, "auto", act, offset=offset)
    _run(1023, 1021, 1000, "auto", act, offset=offset, beta=-1.5)
    _run(1023, 1021, 1000, "auto", act, offset=offset, order="F", with_bias=False)


def test_peel_scheme():
    _run(2049, 2049, 2049, "auto", "gelu_tanh")
    _run(2049, 2049, 2049, "auto", "relu", order="F", alpha=2.0, beta=1.0)


@pytest.mark.parametrize("kernel", ["splitk", "splitk_fused", "gemv_wide", "auto"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_splitk_bias_once(kernel, order):
    """Deep K with a large bias and an activation that is not additive: a
    bias added per slice (S times) or act applied per slice fails here."""
    m, n, k = (1, 256, 65536) if kernel == "gemv_wide" else (64, 48, 65536)
    _run(m, n, k, kernel, "silu", order=order)
    _run(m, n, k, kernel, None, order=order, beta=2.0)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shape", [(0, 5, 3), (4, 5, 0)])
def test_empty_sum(shape, act):
    """k == 0 (and alpha == 0): C = act(beta * C + bias), A and B unread."""
    m, n, k = shape
    if m == 0:
        _run(m, n, k, "auto", act)
        return
    for alpha, beta in ((1.0, 0.0), (0.0, 2.0), (1.0, 1.0)):
        _run(m, n, k, "auto", act, alpha=alpha, beta=beta)
    _run(6, 5, 7, "auto", act, alpha=0.0, beta=0.5)
    _run(6, 5, 7, "auto", act, alpha=0.0, beta=0.5, with_bias=False, order="F")


@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
def test_batched_and_matmul(precision):
    rng = np.random.default_rng(1)
    a = cp.asarray(rng.standard_normal((3, 17, 33)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((3, 33, 129)).astype(np.float32))
    bias = cp.asarray(rng.standard_normal(129).astype(np.float32))
    ref = epilogue.activate(host(a) @ host(b) + host(bias), "gelu")
    out = sgemm.gemm_batched(a, b, bias=bias, activation="gelu", precision=precision)
    assert rel_err(out, ref) < _tol(precision, 33)
    out = sgemm.matmul(a, b[0], bias=bias, activation="gelu", precision=precision)
    ref0 = epilogue.activate(host(a) @ host(b[0]) + host(bias), "gelu")
    assert rel_err(out, ref0) < _tol(precision, 33)


def test_plan_cache_hits_relocate_the_bias():
    rng = np.random.default_rng(2)
    for i in range(3):
        a = cp.asarray(rng.standard_normal((300, 200)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((200, 100)).astype(np.float32))
        bias = cp.asarray(rng.standard_normal(100).astype(np.float32))
        out = sgemm.gemm(a, b, bias=bias, activation="relu")
        ref = epilogue.activate(host(a) @ host(b) + host(bias), "relu")
        assert rel_err(out, ref) < 1e-5
        plain = sgemm.gemm(a, b)
        assert rel_err(plain, host(a) @ host(b)) < 1e-5


# -- PyTorch --------------------------------------------------------------------------------
@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu", "silu"])
def test_torch_linear_forward_backward_vs_float64(precision, act):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    import sgemm.torch as st
    torch.manual_seed(0)
    lin = st.Linear(257, 129, precision=precision, activation=act).cuda()
    x = torch.randn(4, 33, 257, device="cuda", requires_grad=True)
    x64 = x.detach().double().requires_grad_()
    w64 = lin.weight.detach().double().requires_grad_()
    b64 = lin.bias.detach().double().requires_grad_()
    y64 = st.functional.ACTIVATIONS[act](F.linear(x64, w64, b64))
    with torch.no_grad():                              # inference: fully fused
        y_inf = lin(x)
    y = lin(x)                                         # training: bias fused
    tol = _tol(precision, 257) * 4
    assert rel_err(y_inf, y64) < tol
    assert rel_err(y, y64) < tol
    g = torch.randn_like(y)
    y.backward(g)
    y64.backward(g.double())
    assert rel_err(x.grad, x64.grad) < tol
    assert rel_err(lin.weight.grad, w64.grad) < tol
    assert rel_err(lin.bias.grad, b64.grad) < tol
    # the operator called directly with the activation: recomputes z in backward
    x2 = x.detach().requires_grad_()
    w2 = lin.weight.detach().requires_grad_()
    b2 = lin.bias.detach().requires_grad_()
    y2 = torch.ops.sgemm.linear(x2, w2, b2, precision, act)
    assert rel_err(y2, y64) < tol
    y2.backward(g)
    assert rel_err(x2.grad, x64.grad) < tol and rel_err(w2.grad, w64.grad) < tol
    assert rel_err(b2.grad, b64.grad) < tol
