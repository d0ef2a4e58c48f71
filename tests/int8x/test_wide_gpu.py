"""The scaling check on the GPU (marker gpu): the conversion kernels'
statistics equal bound.summarize word for word on both routes; wide-range
operands raise ScalingLoss before anything is written, N(0,1) ones keep the
integer engine; through sgemm.gemm, precision="fp32" on wide-range data
falls back to tf32x3 (error within twice cuBLAS FP32's componentwise error)
and on N(0,1) keeps int8x (bit for bit the emulation); precision="int8x"
warns on wide-range data and not on N(0,1)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

from sgemm.int8x import bound as BD  # noqa: E402
from sgemm.int8x import reference as R  # noqa: E402


def _op(rng, cls, shape, order="C"):
    x = rng.standard_normal(shape)
    if cls == "uniform":
        x = rng.uniform(0.0, 1.0, shape)
    elif cls.startswith("wide"):
        s = float(cls[4:])
        x *= np.exp2(rng.uniform(-s, s, shape))
    elif cls == "edges":                         # zero rows, a subnormal row, huge and tiny rows
        x[0] = 0.0
        x[1] = 2.0 ** -140
        x[2] *= 2.0 ** 120
        x[3] *= 2.0 ** -120
        x[4, ::3] = 0.0
    x = x.astype(np.float32)
    return cp.asarray(x) if order == "C" else cp.asfortranarray(cp.asarray(x))


def _arch():
    from sgemm.runtime import device as devmod
    return devmod.info(cp.cuda.Device().id).arch


@pytest.mark.parametrize("route", ["rows", "tiles", None])
@pytest.mark.parametrize("cls,m,k,n", [("normal", 33, 70, 45), ("wide20", 65, 300, 17),
                                       ("edges", 40, 129, 33), ("uniform", 3, 20001, 5),
                                       ("wide10", 130, 1000, 257)])
@pytest.mark.parametrize("orders", ["CC", "FF", "FC"])
def test_kernel_statistics_equal_the_host_model(route, cls, m, k, n, orders):
    from sgemm.int8x import device as D
    rng = np.random.default_rng(m + k + n)
    a = _op(rng, cls, (m, k), orders[0])
    b = _op(rng, cls, (k, n), orders[1])
    sa, sb = D.summaries(a, b, route=route)
    assert sa == BD.summarize(a.get(), 1)
    assert sb == BD.summarize(b.get(), 0)


def test_device_gemm_refuses_wide_data_before_writing_and_keeps_normal_data():
    from sgemm.int8x import runner as RN
    rng = np.random.default_rng(3)
    a, b = _op(rng, "wide20", (200, 512), "F"), _op(rng, "wide20", (512, 150), "F")
    out = cp.full((200, 150), 7.0, cp.float32, order="F")
    with pytest.raises(BD.ScalingLoss) as ei:
        RN.gemm(a, b, out=out)
    assert ei.value.ratio > ei.value.limit
    assert bool((out == 7.0).all())                               # untouched
    with pytest.warns(BD.Int8xAccuracyWarning):
        RN.gemm(a, b, on_loss="warn")
    RN.gemm(a, b, on_loss="ignore")
    a, b = _op(rng, "normal", (200, 512), "F"), _op(rng, "normal", (512, 150), "F")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BD.Int8xAccuracyWarning)
        got = RN.gemm(a, b)
    np.testing.assert_array_equal(got.get(), R.gemm(a.get(), b.get()).astype(np.float32))


def _componentwise(c, a, b):
    a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    scale = cp.maximum(cp.abs(a64) @ cp.abs(b64), 1e-300)
    return float(cp.max(cp.abs(c.astype(cp.float64) - a64 @ b64) / scale))


@pytest.mark.parametrize("cls", ["wide10", "wide20", "wide30"])
def test_fp32_on_wide_data_falls_back_within_twice_cublas(cls, monkeypatch):
    import sgemm
    from sgemm.int8x import route
    if _arch() not in route.INT8X_ARCHS:
        pytest.skip("precision='fp32' takes int8x only on sm_90a")
    monkeypatch.setattr(route, "ALWAYS", True)                    # the route at a small size
    rng = np.random.default_rng(11)
    a, b = _op(rng, cls, (512, 1024), "F"), _op(rng, cls, (1024, 384), "F")
    got = sgemm.gemm(a, b, precision="fp32")
    cublas = _componentwise(cp.matmul(a, b), a, b)
    assert _componentwise(got, a, b) <= 2 * cublas


def test_fp32_on_normal_data_keeps_the_integer_engine(monkeypatch):
    import sgemm
    from sgemm.int8x import route
    if _arch() not in route.INT8X_ARCHS:
        pytest.skip("precision='fp32' takes int8x only on sm_90a")
    monkeypatch.setattr(route, "ALWAYS", True)
    rng = np.random.default_rng(12)
    a, b = _op(rng, "normal", (512, 1024), "F"), _op(rng, "normal", (1024, 384), "F")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BD.Int8xAccuracyWarning)
        got = sgemm.gemm(a, b, precision="fp32")
    # k = 1024 N(0,1): the scaling check passes with 7 moduli, which "fp32" takes
    np.testing.assert_array_equal(got.get(),
                                  R.gemm(a.get(), b.get(), n_moduli=7).astype(np.float32))
    assert _componentwise(got, a, b) <= _componentwise(cp.matmul(a, b), a, b)


def test_fp32_takes_eight_moduli_where_seven_fail_the_check(monkeypatch):
    """k = 256 N(0,1): the scaling check fails with 7 moduli and passes with
    8, so "fp32" runs 8 (bit for bit the 8-moduli emulation), then starts
    there on the plan's next call; no warning either time."""
    import sgemm
    from sgemm import plan_cache
    from sgemm.int8x import route
    if _arch() not in route.INT8X_ARCHS:
        pytest.skip("precision='fp32' takes int8x only on sm_90a")
    monkeypatch.setattr(route, "ALWAYS", True)
    plan_cache.clear()
    rng = np.random.default_rng(14)
    a, b = _op(rng, "normal", (300, 256), "F"), _op(rng, "normal", (256, 200), "F")
    want = R.gemm(a.get(), b.get(), n_moduli=8).astype(np.float32)
    p = sgemm.plan(a, b, precision="fp32")
    eng = p._int8x.replay.__self__
    with warnings.catch_warnings():
        warnings.simplefilter("error", BD.Int8xAccuracyWarning)
        for _ in range(2):
            np.testing.assert_array_equal(p.execute().get(), want)
            assert eng.counts == (8,) and list(eng.runners) == [8]
    plan_cache.clear()


def test_fp32_where_it_takes_the_engine_on_wide_data():
    """No monkeypatching: a size where precision='fp32' picks int8x."""
    import sgemm
    from sgemm.int8x import route
    if _arch() not in route.INT8X_ARCHS:
        pytest.skip("precision='fp32' takes int8x only on sm_90a")
    n = 4096
    rng = np.random.default_rng(13)
    a, b = _op(rng, "wide20", (n, n), "F"), _op(rng, "wide20", (n, n), "F")
    assert sgemm.plan(a, b, precision="fp32").scheme == "int8x"
    got = sgemm.gemm(a, b, precision="fp32")
    cublas = _componentwise(cp.matmul(a, b), a, b)
    assert _componentwise(got, a, b) <= 2 * cublas


def test_int8x_warns_on_wide_data_and_not_on_normal_data():
    import sgemm
    rng = np.random.default_rng(14)
    a, b = _op(rng, "wide30", (96, 256)), _op(rng, "wide30", (256, 80))
    with pytest.warns(BD.Int8xAccuracyWarning, match="precision='fp32'"):
        got = sgemm.gemm(a, b, precision="int8x")
    want = R.gemm(b.get().T, a.get().T).T.astype(np.float32)     # row-major C: C^T's problem
    np.testing.assert_array_equal(got.get(), want)                # the engine's result, as asked
    a, b = _op(rng, "normal", (96, 256)), _op(rng, "normal", (256, 80))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BD.Int8xAccuracyWarning)
        sgemm.gemm(a, b, precision="int8x")
