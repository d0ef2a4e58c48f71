"""The fused epilogue (bias, activation) on the CPU: argument checks, the
canonical bias axis against a NumPy model, sub-problems' bias pointers,
and that the kernel source and epilogue.py agree on the codes.  The GPU
results are checked in tests/gpu/test_epilogue_gpu.py."""
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest

import sgemm
from sgemm import epilogue, peeling
from sgemm.errors import ArgumentError, ArgumentTypeError, DeviceError
from sgemm.launches import split_for_grid
from sgemm.layout import Mat, normalize, reference
from sgemm.problem import Problem

ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]


def f32(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


# -- argument checks (before the GPU is touched) ------------------------------------------
@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(activation="tanh"), ArgumentError, "activation='tanh'"),
    (dict(activation="GELU"), ArgumentError, "activation="),
    (dict(activation=1), ArgumentError, "activation=1"),
    (dict(bias=f32(5).astype(np.float64)), ArgumentTypeError, "bias has dtype float64"),
    (dict(bias=f32(1, 5)), ArgumentError, "bias has 2 dimension"),
    (dict(bias=f32(3)), ArgumentError, "bias has 3 entries but the result has 5 columns"),
    (dict(bias=f32(10)[::2]), ArgumentError, "bias has stride 2"),
    (dict(bias=[0.0] * 5), ArgumentTypeError, "bias must be an array"),
])
def test_rejections(kwargs, exc, match):
    c = np.full((3, 5), np.nan, np.float32)
    with pytest.raises(exc, match=match):
        sgemm.gemm(f32(3, 4), f32(4, 5), c, **kwargs)
    assert np.isnan(c).all(), "c changed by a failed call"


def test_every_entry_point_checks():
    with pytest.raises(ArgumentError, match="activation"):
        sgemm.gemm_batched(f32(2, 3, 4), f32(2, 4, 5), activation="swish")
    with pytest.raises(ArgumentError, match="bias has 4 entries"):
        sgemm.gemm_batched(f32(2, 3, 4), f32(2, 4, 5), bias=f32(4))
    with pytest.raises(ArgumentError, match="bias has 3 entries"):
        sgemm.matmul(f32(2, 3, 4), f32(4, 5), bias=f32(3))
    with pytest.raises(ArgumentError, match="activation"):
        sgemm.matmul(f32(3, 4), f32(4, 5), activation="elu")
    with pytest.raises(ArgumentError, match="activation"):
        sgemm.plan(f32(3, 4), f32(4, 5), activation="elu")


def test_bias_must_not_overlap_c():
    buf = np.zeros(64, np.float32)
    c = buf[:15].reshape(3, 5)
    with pytest.raises(ArgumentError, match="c overlaps bias"):
        sgemm.gemm(f32(3, 4), f32(4, 5), c, bias=buf[10:15])


def test_bias_in_another_package_or_place():
    from sgemm.arrays import ArrayDesc
    from sgemm import validate as V
    a = ArrayDesc("a", "cupy", 1 << 40, (3, 4), (4, 1), np.dtype(np.float32), 0)
    host = ArrayDesc("bias", "numpy", 1 << 20, (5,), (1,), np.dtype(np.float32), None)
    with pytest.raises(DeviceError, match="bias is on"):
        V.bias(host, 5, a)
    torchish = ArrayDesc("bias", "torch", 1 << 41, (5,), (1,), np.dtype(np.float32), 0)
    with pytest.raises(ArgumentTypeError, match="one package"):
        V.bias(torchish, 5, a)


def test_codes_match_the_kernel_source():
    src = (Path(sgemm.__file__).parent / "kernels" / "cuda" / "common.cuh").read_text()
    got = dict(re.findall(r"EPI_([A-Z_]+) = (\d+)", src))
    assert {k: int(v) for k, v in got.items()} == {
        "RELU": epilogue.ACTIVATIONS["relu"], "GELU": epilogue.ACTIVATIONS["gelu"],
        "GELU_TANH": epilogue.ACTIVATIONS["gelu_tanh"], "SILU": epilogue.ACTIVATIONS["silu"],
        "ACT": epilogue.ACT_MASK, "BIAS_M": epilogue.BIAS_M, "BIAS_N": epilogue.BIAS_N}


def test_activation_model_matches_formulas():
    x = np.linspace(-6, 6, 101)
    assert np.array_equal(epilogue.activate(x, "relu"), np.maximum(x, 0))
    phi = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(epilogue.activate(x, "gelu"), x * phi, rtol=1e-15)
    np.testing.assert_allclose(epilogue.activate(x, "silu"), x / (1 + np.exp(-x)), rtol=1e-15)
    # the tanh form is within 1e-3 of the exact one
    assert np.abs(epilogue.activate(x, "gelu_tanh") - x * phi).max() < 1e-3
    assert np.isnan(epilogue.activate(np.array([np.nan]), "relu"))[0]   # torch.relu(nan)


# -- the bias axis under layout normalization -----------------------------------------------
def _view(off, rows, cols, order, pad):
    if order == "C":
        return Mat(off, rows, cols, cols + pad, 1)
    return Mat(off, rows, cols, 1, rows + pad)


def _get(mem, v):
    i = np.arange(v.rows)[:, None] * v.rs + np.arange(v.cols)[None, :] * v.cs
    return mem[v.ptr + i]


@pytest.mark.parametrize("ta,tb,oa,ob,oc,act", list(itertools.product(
    (False, True), (False, True), "CF", "CF", "CF", ["relu", "gelu_tanh"])))
def test_bias_runs_along_the_users_columns(ta, tb, oa, ob, oc, act):
    """Whatever the storage, bias[j] goes to column j of the user's C: the
    canonical problem of a row-major C is C^T, so the bias runs along its
    rows there (epilogue.BIAS_M), else along its columns."""
    rng = np.random.default_rng(hash((ta, tb, oa, ob, oc)) % 2**32)
    m, n, k = 5, 4, 3
    mem = rng.standard_normal(4000)
    a = _view(10, *((k, m) if ta else (m, k)), oa, 2)
    b = _view(500, *((n, k) if tb else (k, n)), ob, 0)
    c = _view(1000, m, n, oc, 1)
    bias_at = 3000
    A, B, C, bias = _get(mem, a), _get(mem, b), _get(mem, c), mem[bias_at:bias_at + n].copy()
    z = 0.5 * ((A.T if ta else A) @ (B.T if tb else B)) - 1.25 * C + bias[None, :]
    prob = normalize(a, b, c, ta, tb, 0.5, -1.25, bias=bias_at,
                     act=epilogue.activation_code(act))
    assert prob.epi & epilogue.ACT_MASK == epilogue.activation_code(act)
    assert prob.epi & (epilogue.BIAS_M if oc == "C" else epilogue.BIAS_N)
    reference(prob, mem)
    np.testing.assert_allclose(_get(mem, c), epilogue.activate(z, act), rtol=1e-12,
                               atol=1e-12)
    assert np.array_equal(mem[bias_at:bias_at + n], bias)


def test_no_bias_means_no_axis():
    a, b, c = Mat(0, 6, 4, 4, 1), Mat(100, 4, 3, 3, 1), Mat(200, 6, 3, 3, 1)
    assert normalize(a, b, c, False, False, 1.0, 0.0).epi == 0
    assert normalize(a, b, c, False, False, 1.0, 0.0, act=2).epi == 2


# -- sub-problems carry their share of the bias -------------------------------------------
def _prob(m, n, epi):
    return Problem(m=m, n=n, k=8, ta=False, tb=False, a=1 << 40, lda=m, b=1 << 41, ldb=8,
                   c=1 << 42, ldc=m, bias=1 << 43, epi=epi)


@pytest.mark.parametrize("axis", [epilogue.BIAS_M, epilogue.BIAS_N])
def test_peel_strips_move_the_bias(axis):
    pr = _prob(1030, 1028, axis | 2)
    main, strips = peeling.parts(pr)
    assert main.bias == pr.bias and main.epi == pr.epi
    bottom, right = strips                  # rows 1024.., then columns 1024..
    assert bottom.bias == pr.bias + (4 * 1024 if axis == epilogue.BIAS_M else 0)
    assert right.bias == pr.bias + (4 * 1024 if axis == epilogue.BIAS_N else 0)


@pytest.mark.parametrize("axis", [epilogue.BIAS_M, epilogue.BIAS_N])
def test_grid_pieces_move_the_bias(axis):
    from sgemm.kernels import schemes
    spec, p = schemes.TILE, schemes.TILE_CONFIGS["small"]
    pr = _prob(64, 32 * 65535 + 40, axis)
    pieces = split_for_grid(pr, spec, p)
    assert len(pieces) == 2 and all(x.epi == axis for x in pieces)
    j0 = pieces[0].n
    assert pieces[1].bias == pr.bias + (4 * j0 if axis == epilogue.BIAS_N else 0)


def test_pack_moves_the_epilogue_to_the_reduction(monkeypatch):
    """Unaligned C: the GEMM writes C' without the epilogue and the
    reduction applies it into C (else it would run twice or on padding)."""
    from sgemm import launches, packing
    from sgemm.kernels import schemes
    from sgemm.runtime import launcher
    from sgemm.runtime.device import DeviceInfo

    monkeypatch.setattr(launcher, "get_kernel", lambda spec, *a: spec)
    monkeypatch.setattr(launches, "allocate_workspace", lambda nf, dev, zero_floats=0:
                        (None, 1 << 44))
    pr = Problem(m=1023, n=1021, k=1000, ta=False, tb=False, a=(1 << 40) + 4, lda=1023,
                 b=1 << 41, ldb=1001, c=(1 << 42) + 4, ldc=1023, bias=1 << 43,
                 epi=epilogue.BIAS_N | 3)
    dev = DeviceInfo(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 232448, 233472, 52428800,
                     1980000, 2619000, 5120, 85 << 30)
    spec, p = schemes.TILE, schemes.TILE_CONFIGS["large"]
    _, _, scheme, ls = packing.pack_launches(pr, dev, spec, p)
    gemm = [l for l in ls if l.role == "gemm"]
    tail = ls[-1]
    assert all(int(l.args[-1]) == 0 for l in gemm)
    assert tail.role == "epilogue" and int(tail.args[-1]) == pr.epi and tail.args[-2] == pr.bias
