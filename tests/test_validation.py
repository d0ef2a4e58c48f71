"""Argument errors are raised before the GPU is touched, so they are checked
here on a CPU-only machine; each message names the argument."""
import numpy as np
import pytest

import sgemm
from sgemm.errors import ArgumentError, ArgumentTypeError


def f32(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(a=f32(3, 4).astype(np.float64), b=f32(4, 5)), ArgumentTypeError, "a has dtype float64"),
    (dict(a=f32(3, 4), b=f32(4, 5).astype(np.int32)), ArgumentTypeError, "b has dtype int32"),
    (dict(a=f32(3, 4), b=f32(5, 5)), ArgumentError, "inner dimensions 4 and 5"),
    (dict(a=f32(4), b=f32(4, 5)), ArgumentError, "a has 1 dimension"),
    (dict(a=f32(2, 3, 4), b=f32(4, 5)), ArgumentError, "a has 3 dimension"),
    (dict(a=f32(3, 4), b=f32(4, 5), c=f32(3, 6)), ArgumentError, r"c has shape \(3, 6\)"),
    (dict(a=f32(3, 4), b=f32(4, 5), alpha=float("nan")), ArgumentError, "alpha=nan"),
    (dict(a=f32(3, 4), b=f32(4, 5), beta=float("inf"), c=f32(3, 5)), ArgumentError, "beta=inf"),
    (dict(a=f32(3, 4), b=f32(4, 5), alpha=1j), ArgumentTypeError, "alpha=1j is complex"),
    (dict(a=f32(3, 4), b=f32(4, 5), trans_a=1), ArgumentTypeError, "trans_a must be True"),
    (dict(a=f32(3, 4), b=f32(4, 5), beta=2.0), ArgumentError, "beta=2.0 needs c"),
    (dict(a=f32(3, 4), b=f32(4, 5), precision="fp16"), ArgumentError, "precision='fp16'"),
    (dict(a=[[1.0]], b=f32(1, 1)), ArgumentTypeError, "a must be an array"),
    (dict(a=f32(3, 8)[:, ::2], b=f32(4, 5)), ArgumentError, "a has strides"),
    (dict(a=f32(3, 4)[::-1], b=f32(4, 5)), ArgumentError, "a has a negative stride"),
])
def test_rejections(kwargs, exc, match):
    c = kwargs.get("c")
    saved = None if c is None else c.copy()
    with pytest.raises(exc, match=match):
        sgemm.gemm(**kwargs)
    if c is not None:
        assert np.array_equal(c, saved, equal_nan=True), "c changed by a failed call"


def test_read_only_c():
    c = f32(3, 5)
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match="c is read-only"):
        sgemm.gemm(f32(3, 4), f32(4, 5), c)


def test_c_overlapping_a():
    buf = f32(64)
    a = buf[:12].reshape(3, 4)
    c = buf[8:23].reshape(3, 5)
    with pytest.raises(ArgumentError, match="c overlaps a"):
        sgemm.gemm(a, f32(4, 5), c)


def test_unknown_kernel_named(monkeypatch):
    from sgemm.kernels import registry
    with pytest.raises(ValueError, match="kernel='nope' is not registered"):
        registry.get("nope")


def test_batched_broadcast_mismatch():
    with pytest.raises(ArgumentError, match="do not broadcast"):
        sgemm.matmul(f32(2, 3, 4), f32(3, 4, 5))
