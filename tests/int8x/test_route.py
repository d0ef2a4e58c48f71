"""precision="int8x" / "fp32" on the CPU: what the validator accepts, which
engine "fp32" picks by size and arch, what route.attach refuses (naming the
argument) and what it does to a plan it takes -- without a GPU, on stand-in
plans and operand descriptions.  The GPU test runs the pipeline through
sgemm.gemm (tests/gpu/test_int8x_gpu.py)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import sgemm
from sgemm import validate as V
from sgemm.errors import ArgumentError
from sgemm.int8x import route


def test_validator_accepts_the_new_precisions_and_names_a_bad_one():
    assert V.precision("int8x") == "int8x" and V.precision("fp32") == "fp32"
    with pytest.raises(ArgumentError, match="precision='int4'.*int8x, fp32"):
        V.precision("int4")


def test_public_entry_checks_precision_before_needing_a_gpu():
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    with pytest.raises(ArgumentError, match="precision='fp64'"):
        sgemm.gemm(a, b, precision="fp64")


H200 = SimpleNamespace(arch="sm_90a", sm_count=132, id=0)


def _tf32x3(m, n, k):
    """The cost model's tf32x3 seconds on an H200 (what plan.py hands route)."""
    from sgemm.plan import _tf32x3_seconds
    from sgemm.runtime.device import DeviceInfo
    dev = DeviceInfo(0, "NVIDIA H200", (9, 0), 132, 232448, 233472, 52428800, 1980000,
                     3201000, 6144, 141 << 30)
    return _tf32x3_seconds(m, n, k, dev)


# (m, n, k, measured faster on an H200: int8x_fp32 shapes of cost.py's fit)
@pytest.mark.parametrize("m,n,k,engine", [
    (2048, 2048, 2048, False), (4096, 4096, 4096, True), (16384, 16384, 16384, True),
    (8192, 8192, 1024, False), (8192, 8192, 2048, True), (1024, 8192, 8192, True),
    (2048, 16384, 16384, True), (2048, 2048, 16384, True)])
def test_fp32_weighs_the_engine_against_tf32x3_by_the_cost_models(m, n, k, engine):
    assert route.weigh(m, n, k, H200, lambda: _tf32x3(m, n, k))["engine"] is engine


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_fp32_keeps_tf32x3_off_sm90a_and_below_min_k(arch, monkeypatch):
    def never():
        raise AssertionError("the rival's time is not needed here")
    dev = SimpleNamespace(arch=arch, sm_count=132)
    assert route.weigh(16384, 16384, 16384, dev, never)["engine"] is False
    assert route.weigh(16384, 16384, route.MIN_K - 1, H200, lambda: 1.0)["engine"] is False
    assert route.weigh(0, 16384, 16384, H200, never)["engine"] is False
    monkeypatch.setattr(route, "ALWAYS", True)
    assert route.weigh(8, 8, 8, H200, never)["engine"] is True
    assert route.weigh(8, 8, 8, dev, never)["engine"] is False


def test_the_plan_keeps_why_fp32_chose():
    """plan.fp32_choice (what Plan.explain shows under "fp32"): the verdict
    and the two predictions, or the reason neither was asked."""
    p = _plan()
    assert _attach(p, "fp32", 8192, 8192, 8192) is None
    c = p.fp32_choice
    assert c["engine"] and c["int8x_7"] < route.MARGIN * c["tf32x3"]
    assert "predicted" in c["why"] and "tf32x3" in c["why"]
    p = _plan()
    assert _attach(p, "fp32", 2048, 2048, 2048) == "tf32x3"
    assert not p.fp32_choice["engine"] and p.fp32_choice["int8x_7"] > route.MARGIN * \
        p.fp32_choice["tf32x3"]
    p = _plan()
    assert _attach(p, "fp32", 8192, 8192, route.MIN_K - 1) == "tf32x3"
    assert "MIN_K" in p.fp32_choice["why"] and "tf32x3" not in p.fp32_choice
    p = _plan(arch="sm_80")
    assert _attach(p, "fp32", 8192, 8192, 8192) == "tf32x3"
    assert "sm_80" in p.fp32_choice["why"]
    p = _plan()
    assert _attach(p, "fp32", 8192, 8192, 8192, bias=object()) == "tf32x3"
    assert "bias=" in p.fp32_choice["why"]


def test_the_cost_models_tile_is_the_wgmma_default():
    from sgemm.int8x import cost
    from sgemm.kernels import utility as U
    p = U.INT8X_WGMMA.configs["default"]
    assert cost.TILE == (p.BM, p.BN)


def _desc(shape, order="C", ptr=1 << 40):
    """A device-side operand description (strides in elements)."""
    from sgemm.arrays import ArrayDesc
    st = (shape[-1], 1) if order == "C" else (1, shape[-2])
    if len(shape) > 2:
        st = (shape[-1] * shape[-2],) + st
    return ArrayDesc("x", "cupy", ptr, shape, st, np.dtype(np.float32), 0)


@pytest.fixture(autouse=True)
def runners(monkeypatch):
    """What the route asks runner.Runner for: the pipeline's problem (no GPU)."""
    from sgemm.int8x import runner
    made = []

    class Stand:
        def __init__(self, *args, **kw):
            made.append((args, kw))
    monkeypatch.setattr(runner, "Runner", Stand)
    return made


def _plan(arch="sm_90a", alpha=1.0, beta=0.0):
    return SimpleNamespace(device=SimpleNamespace(arch=arch, id=0, sm_count=132), alpha=alpha,
                           beta=beta,
                           precision="ieee", kernel="k", params="p", scheme="direct",
                           launches=["l"], problems=["p"], _operands=(1, 2, 3), _kind="cupy")


def _attach(plan, precision, m, n, k, ta=False, tb=False, batch=(), bias=None, act=None):
    A = _desc(batch + ((k, m) if ta else (m, k)), ptr=1 << 40)
    B = _desc(batch + ((n, k) if tb else (k, n)), ptr=2 << 40)
    C = _desc(batch + (m, n), ptr=3 << 40)
    return route.attach(plan, precision, A, B, C, ta, tb, batch, bias, act, _tf32x3)


def test_fp32_where_tf32x3_is_faster_is_tf32x3_and_leaves_the_plan_alone():
    p = _plan()
    assert _attach(p, "fp32", 2048, 2048, 2048) == "tf32x3"
    assert p.launches == ["l"] and p._operands == (1, 2, 3)


@pytest.mark.parametrize("kw", [dict(batch=(3,)), dict(bias=object()), dict(act="relu"),
                                dict(arch="sm_80")])
def test_fp32_keeps_tf32x3_where_int8x_cannot_run(kw):
    arch = kw.pop("arch", "sm_90a")
    assert _attach(_plan(arch), "fp32", 8192, 8192, 8192, **kw) == "tf32x3"


def test_fp32_reads_k_through_the_transpose():
    # op(a) = a.T: a is k x m; k below MIN_K -> tf32x3
    assert _attach(_plan(), "fp32", 8192, 8192, route.MIN_K - 16, ta=True) == "tf32x3"
    assert _attach(_plan(), "fp32", 8192, 8192, 8192, ta=True, tb=True) is None


def test_other_precisions_pass_through():
    assert _attach(_plan(), "tf32x3", 64, 64, 64) == "tf32x3"


@pytest.mark.parametrize("kw,match", [
    (dict(batch=(2,)), r"precision='int8x' takes 2-D operands only; a has shape \(2, 5, 7\)"),
    (dict(bias=object()), "bias= is not supported with precision='int8x'"),
    (dict(act="gelu"), "activation='gelu' is not supported with precision='int8x'"),
])
def test_int8x_names_what_it_does_not_support(kw, match):
    with pytest.raises(ArgumentError, match=match):
        _attach(_plan(), "int8x", 5, 6, 7, **kw)


def test_a_plan_the_route_takes_has_no_launches_and_its_runner_is_cached(runners):
    from sgemm import plan_cache
    p = _plan(alpha=2.0, beta=0.5)
    assert _attach(p, "int8x", 5, 6, 7) is None
    assert p.scheme == "int8x" and p.precision == "int8x"
    assert p.launches == [] and p.problems == [] and p.kernel is None
    assert callable(p._int8x) and len(runners) == 1
    try:
        plan_cache._store(("k",), 0, p, None, "cupy", True, None, None)
        e = plan_cache._entries[(("k",), 0)]     # per stream: the runner's workspace
        assert e.run == p._int8x.replay and e.prepared is None and e.has_ws
    finally:
        plan_cache.clear()


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("oa,ob,oc", [("C", "C", "C"), ("F", "C", "F"), ("C", "F", "C"),
                                      ("F", "F", "F")])
def test_the_pipeline_problem_of_every_layout(ta, tb, oa, ob, oc, runners):
    """op(a) op(b) into a column-major C, or its transpose op(b)^T op(a)^T
    into C^T for a row-major C: shapes and element strides handed to the
    runner, and which address goes where."""
    m, n, k = 5, 6, 7
    A = _desc((k, m) if ta else (m, k), oa)
    B = _desc((n, k) if tb else (k, n), ob)
    C = _desc((m, n), oc)
    p = _plan()
    assert route.attach(p, "int8x", A, B, C, ta, tb, (), None, None) is None
    (dev, M, N, K, sa, sb, ldc, alpha, beta, on_loss), kw = runners[-1]
    opa = A.strides[::-1] if ta else A.strides
    opb = B.strides[::-1] if tb else B.strides
    if oc == "F":                    # C itself
        assert (M, N, K, sa, sb, ldc) == (m, n, k, opa, opb, C.strides[1])
    else:                            # C^T = op(b)^T op(a)^T
        assert (M, N, K, sa, sb, ldc) == (n, m, k, opb[::-1], opa[::-1], C.strides[0])
    assert on_loss == "warn" and kw == {"keep": True, "n_moduli": 8}
    calls = []
    eng = p._int8x.replay.__self__
    eng.runners[8] = lambda *args: calls.append(args)
    p._int8x.replay((10, 20, 30), 0, None)
    assert calls[-1] == ((10, 20, 30, 0) if oc == "F" else (20, 10, 30, 0))


def test_nothing_to_multiply_goes_to_the_planner(runners):
    for kw in (dict(m=0), dict(k=0), dict(alpha=0.0)):
        p = _plan(alpha=kw.pop("alpha", 1.0))
        dims = {"m": 5, "n": 6, "k": 7, **kw}
        assert _attach(p, "int8x", dims["m"], dims["n"], dims["k"]) == "tf32x3"
    assert runners == []


def test_sgemm_int8x_gemm_is_exported_with_gemms_arguments():
    import inspect

    import sgemm.int8x as I
    params = list(inspect.signature(I.gemm).parameters)
    assert params[:7] == ["a", "b", "c", "alpha", "beta", "trans_a", "trans_b"]
