"""The integer engine's kernels against exact references: the conversion and
reconstruction kernels (40_int8x.cu) against the host emulation
(sgemm/int8x/reference.py), with CuPy's integer matmul standing in for the
INT8 GEMMs, the residue planes for every operand layout; both INT8 GEMMs
(41_int8_mma.cu, and 42_int8_wgmma.cu on sm_90a), whose byte planes must
hold the NumPy int64 products modulo p bit for bit (padding rows too) on
odd shapes and past one exact INT32 sum; the whole pipeline (runner.gemm)
against the emulation bit for bit and against fp64 next to cuBLAS FP32
(TF32 off); and the public path (sgemm.gemm(precision="int8x" / "fp32"))
on every layout, bit for bit against the emulation of the problem it runs
and against fp64."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


def _operands(rng, m, k, n, wide=False):
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    if wide:
        a *= np.exp2(rng.integers(-30, 31, (m, 1)))
        b *= np.exp2(rng.integers(-30, 31, (1, n)))
    a[0, :] = 0.0                                    # an all-zero row: exponent 0
    return a.astype(np.float32), b.astype(np.float32)


@pytest.mark.parametrize("m,k,n,wide", [(1, 1, 1, False), (17, 33, 9, False),
                                        (64, 1000, 48, True), (5, 4097, 3, False)])
def test_kernels_match_the_emulation_bit_for_bit(m, k, n, wide):
    from sgemm.int8x import device as D
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(m * 1000 + k)
    a, b = _operands(rng, m, k, n, wide)
    parts = R.decompose(a, b, 8)
    bud = parts.budget
    ga, gb = cp.asarray(a), cp.asfortranarray(cp.asarray(b))       # B column-major too
    mods = D.constants(8)
    bad = cp.zeros(1, cp.int32)
    pa, mu = D.convert(ga, 1, bud.alpha, bad)  # (8, m, lda)
    pb, nu = D.convert(gb, 0, bud.beta, bad)   # (8, n, ldb): B^T, k contiguous
    assert not int(bad[0])
    np.testing.assert_array_equal(mu.get(), parts.mu)
    np.testing.assert_array_equal(nu.get(), parts.nu)
    for l in range(8):
        np.testing.assert_array_equal(pa[l, :, :k].get(), parts.a_res[l])
        np.testing.assert_array_equal(pb[l, :, :k].get(), parts.b_res[l].T)
        assert not pa[l, :, k:].any() and not pb[l, :, k:].any()    # zero padding
    # the INT8 GEMMs, by CuPy's integer matmul (exact in int32 below 131072 deep)
    planes = cp.stack([pa[l].astype(cp.int32) @ pb[l].astype(cp.int32).T for l in range(8)])
    np.testing.assert_array_equal(planes.get(), np.stack(parts.c_res))
    planes = D.byte_planes(planes)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    for alpha, beta in ((1.0, 0.0), (-1.5, 0.5)):
        got = D.garner(planes, mods, mu, nu, alpha, beta, cp.asarray(c0) if beta else None)
        want = R.gemm(a, b, c0, alpha=alpha, beta=beta, n_moduli=8).astype(np.float32)
        np.testing.assert_array_equal(got.get(), want)


def test_garner_with_beta_zero_never_reads_c():
    from sgemm.int8x import device as D
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(5)
    a, b = _operands(rng, 9, 70, 7)
    parts = R.decompose(a, b, 8)
    mods = D.constants(8)
    planes = D.byte_planes(cp.asarray(np.stack(parts.c_res).astype(np.int32)))
    poisoned = cp.full((9, 7), cp.nan, cp.float32)
    got = D.garner(planes, mods, cp.asarray(parts.mu.astype(np.int32)),
                   cp.asarray(parts.nu.astype(np.int32)), 1.0, 0.0, poisoned)
    assert cp.isfinite(got).all()
    np.testing.assert_array_equal(got.get(), R.gemm(a, b).astype(np.float32))


@pytest.mark.parametrize("route", ["rows", "tiles"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_input_is_flagged(value, route):
    from sgemm.int8x import device as D
    x = cp.ones((4, 50), cp.float32)
    x[2, 17] = value
    _, bad = D.exponents(x, 1, 25, route=route)
    assert bad
    _, bad_cols = D.exponents(x, 0, 25, route=route)
    assert bad_cols
    _, fine = D.exponents(cp.ones((4, 50), cp.float32), 1, 25, route=route)
    assert not fine


RESIDUE_CASES = [(1, 1, "C"), (1, 1, "F"), (33, 129, "C"), (33, 129, "F"), (70, 300, "F"),
                 (257, 1, "F"), (5, 4097, "C"), (300, 31, "F"), (64, 128, "P"),
                 (3, 20001, "C"), (40, 16385, "F"), (33, 260, "S")]


@pytest.mark.parametrize("route", [None, "rows", "tiles"])
@pytest.mark.parametrize("m,k,order", RESIDUE_CASES,
                         ids=[f"{m}x{k}-{o}" for m, k, o in RESIDUE_CASES])
def test_residue_planes_for_every_layout(m, k, order, route):
    """Both conversion routes on every layout (None: the one the strides
    pick): int8x_convert_rows (one block a row; rows past 16384 columns read
    their tail twice: 20001; unaligned rows: P; neither stride 1: S) and
    int8x_rowmax + int8x_residues (32 x 128 tiles crossing every edge).
    k = 1 gives the largest scaled integers (2^31); the rows' exponents span
    2^-140 to 2^120 (subnormal rows, scales past 2^127)."""
    from sgemm.int8x import device as D
    from sgemm.int8x import reference as R
    from tests.gpu.reference import make
    rng = np.random.default_rng(m * 31 + k)
    n = max(1, min(k // 3, 40))          # B's columns: the emulation's products stay cheap
    if order == "S":                                 # every other row and column
        a = cp.asarray(rng.standard_normal((2 * m, 2 * k)).astype(np.float32))[::2, ::2]
    else:
        a = make(cp, rng, (m, k), "C" if order == "P" else order,
                 pad=2 if order == "P" else 0)
    b = make(cp, rng, (k, n), "C" if order == "F" else "F")     # the other way round
    a *= cp.asarray(np.exp2(rng.integers(-140, 121, (m, 1))).astype(np.float32))
    parts = R.decompose(a.get(), b.get(), 8)
    bad = cp.zeros(1, cp.int32)
    pa, mu = D.convert(a, 1, parts.budget.alpha, bad, route=route)
    pb, nu = D.convert(b, 0, parts.budget.beta, bad, route=route)
    assert not int(bad[0])
    np.testing.assert_array_equal(mu.get(), parts.mu)
    np.testing.assert_array_equal(nu.get(), parts.nu)
    for l in range(8):
        np.testing.assert_array_equal(pa[l, :, :k].get(), parts.a_res[l])
        np.testing.assert_array_equal(pb[l, :, :k].get(), parts.b_res[l].T)
    assert not pa[:, :, k:].any() and not pb[:, :, k:].any()        # zero padding


# ---- the INT8 GEMMs (41_int8_mma.cu; 42_int8_wgmma.cu on sm_90a) ----

def _residue_planes(rng, rows, k, ms, extreme=False):
    """int8 (len(ms), rows, K16) symmetric residues, zero past k; extreme:
    plane 0 (p = 256) all -128, every product the largest, 16384."""
    kp = -(-max(k, 1) // 16) * 16
    out = np.zeros((len(ms), rows, kp), np.int8)
    for l, p in enumerate(ms):
        out[l, :, :k] = rng.integers(-(p // 2), (p + 1) // 2, (rows, k))
    if extreme:
        out[0, :, :k] = -128
    return out


def _int64_planes(pa, pb):
    return np.stack([pa[l].astype(np.int64) @ pb[l].astype(np.int64).T
                     for l in range(pa.shape[0])])


SHAPES = [(1, 1, 1), (17, 33, 65), (33, 17, 65), (129, 255, 1000), (255, 129, 1000),
          (128, 128, 64), (256, 256, 128), (130, 257, 4097), (1, 300, 33), (300, 1, 33),
          (5, 7, 4096), (200, 9, 16), (1000, 1000, 31),
          # the wgmma tiles (128 x 256 and 128 x 128, k-tiles of 128): one
          # past and one short of them, k not a multiple of 32, 64 or 128
          (128, 256, 128), (127, 255, 112), (129, 257, 144), (257, 513, 2000), (384, 128, 48),
          (64, 600, 272)]

GEMMS = [("mma", "default"), ("mma", "large"), ("wgmma", "default"), ("wgmma", "narrow")]


def _skip_unless_runs(kernel):
    from sgemm.runtime import device as devmod
    if kernel == "wgmma" and devmod.info(cp.cuda.Device().id).arch != "sm_90a":
        pytest.skip("wgmma needs sm_90a")


@pytest.mark.parametrize("kernel,config", GEMMS, ids=[f"{k}-{c}" for k, c in GEMMS])
@pytest.mark.parametrize("m,n,k", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_int8_gemm_planes_are_exact(m, n, k, kernel, config):
    from sgemm.int8x import device as D
    from sgemm.int8x import moduli as M
    _skip_unless_runs(kernel)
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    ms = M.moduli(8)
    pa = _residue_planes(rng, m, k, ms, extreme=True)
    pb = _residue_planes(rng, n, k, ms, extreme=True)
    got = D.int8_gemm(cp.asarray(pa), cp.asarray(pb), D.constants(8), config, kernel)
    assert got.shape == (8, m, n) and got.dtype == cp.uint8
    ld = D.padded_rows(m)
    assert got.strides == (n * ld, 1, ld)                   # column-major byte planes
    want = np.mod(_int64_planes(pa, pb), np.array(ms, np.int64)[:, None, None])
    np.testing.assert_array_equal(got.get(), want)
    # the padding rows [m, ld) Garner's 4-row loads touch: written, residues of 0
    full = cp.lib.stride_tricks.as_strided(got, (8, ld, n), got.strides)
    assert not full[:, m:, :].any()


EXACT_K = {"mma": 131008, "wgmma": 131056}     # deepest K each leaves unfolded


@pytest.mark.parametrize("kernel", ["mma", "wgmma"])
@pytest.mark.parametrize("k", [131008, 131056, 131072 + 4000])
def test_int8_gemm_past_one_int32_sum_stays_congruent(k, kernel):
    """Worst-case products (-128 x -128 on plane 0): the byte planes are the
    exact residues up to the fold interval (131008 for mma.sync's BK = 64,
    131056 for wgmma) and past it, where an unfolded INT32 sum would wrap."""
    from sgemm.int8x import device as D
    from sgemm.int8x import moduli as M
    _skip_unless_runs(kernel)
    rng = np.random.default_rng(k)
    ms = M.moduli(8)
    pa = _residue_planes(rng, 20, k, ms, extreme=True)
    pb = _residue_planes(rng, 9, k, ms, extreme=True)
    want = _int64_planes(pa, pb)
    got = D.int8_gemm(cp.asarray(pa), cp.asarray(pb), D.constants(8),
                      kernel=kernel).get().astype(np.int64)
    if k > EXACT_K[kernel] and k * 128 * 128 >= 2 ** 31:
        assert want[0].max() >= 2 ** 31          # an unfolded INT32 sum would wrap
    for l, p in enumerate(ms):
        np.testing.assert_array_equal(got[l], np.mod(want[l], p))


def test_int8_gemm_refuses_bad_planes():
    from sgemm.int8x import device as D
    mods = D.constants(8)
    a = cp.zeros((8, 4, 32), cp.int8)
    with pytest.raises(ValueError, match="do not match"):
        D.int8_gemm(a, cp.zeros((8, 4, 48), cp.int8), mods)
    with pytest.raises(ValueError, match="must be uint8"):
        D.garner(cp.zeros((8, 4, 3), cp.int32), mods, cp.zeros(4, cp.int32),
                 cp.zeros(3, cp.int32))
    with pytest.raises(ValueError, match="not column-major byte planes"):
        D.garner(cp.zeros((8, 4, 3), cp.uint8), mods, cp.zeros(4, cp.int32),
                 cp.zeros(3, cp.int32))
    with pytest.raises(ValueError, match="multiple of 16"):
        D.int8_gemm(cp.zeros((8, 4, 20), cp.int8), cp.zeros((8, 4, 20), cp.int8), mods)
    with pytest.raises(ValueError, match="int8"):
        D.int8_gemm(a.astype(cp.int32), a, mods)
    with pytest.raises(ValueError, match="not one of"):
        D.int8_gemm(a, a, mods, "huge")
    with pytest.raises(ValueError, match="kernel='tensor' must be"):
        D.int8_gemm(a, a, mods, kernel="tensor")


# ---- the whole pipeline (runner.gemm) ----

PIPE = [(1, 1, 1, "C", "C"), (17, 65, 33, "F", "F"), (129, 1000, 255, "F", "C"),
        (64, 4097, 48, "C", "F"), (300, 31, 2, "F", "F"), (257, 512, 130, "C", "C")]


@pytest.mark.parametrize("m,k,n,oa,ob", PIPE, ids=[f"{m}x{k}x{n}-{oa}{ob}" for m, k, n, oa, ob
                                                   in PIPE])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-1.5, 0.5)])
@pytest.mark.parametrize("count", [8, 7])
def test_pipeline_matches_the_emulation_bit_for_bit(m, k, n, oa, ob, alpha, beta, count):
    from sgemm.int8x import runner as RN
    from sgemm.int8x import reference as R
    from tests.gpu.reference import make
    rng = np.random.default_rng(m * 1000 + k + n)
    a = make(cp, rng, (m, k), oa, pad=3)
    b = make(cp, rng, (k, n), ob, pad=1)
    a[min(1, m - 1), :] = 0.0                       # an all-zero row
    a *= cp.asarray(np.exp2(rng.integers(-20, 21, (m, 1))).astype(np.float32))
    c = cp.asfortranarray(cp.asarray(rng.standard_normal((m, n)).astype(np.float32)))
    # the scaling check is not the point here (7 moduli fail it at small k)
    got = RN.gemm(a, b, c if beta else None, alpha, beta, n_moduli=count, on_loss="ignore")
    assert got.flags.f_contiguous and got.dtype == cp.float32
    want = R.gemm(a.get(), b.get(), c.get(), alpha=alpha, beta=beta,
                  n_moduli=count).astype(np.float32)
    np.testing.assert_array_equal(got.get(), want)


def test_pipeline_with_every_gemm_config_and_deep_k():
    from sgemm.int8x import runner as RN
    from sgemm.int8x import reference as R
    from sgemm.runtime import device as devmod
    rng = np.random.default_rng(11)
    a = cp.asarray(rng.standard_normal((40, 140000)).astype(np.float32))
    b = cp.asfortranarray(cp.asarray(rng.standard_normal((140000, 24)).astype(np.float32)))
    want = R.gemm(a.get(), b.get()).astype(np.float32)
    hopper = devmod.info(cp.cuda.Device().id).arch == "sm_90a"
    for kernel, config in GEMMS:
        if kernel == "wgmma" and not hopper:
            continue
        np.testing.assert_array_equal(RN.gemm(a, b, config=config, kernel=kernel).get(), want)


@pytest.mark.parametrize("kernel", ["mma", "wgmma"])
def test_pipeline_with_either_gemm_on_odd_shapes(kernel):
    """Both INT8 GEMMs give the emulation's result bit for bit; the default
    (auto) path is the other tests'."""
    from sgemm.int8x import runner as RN
    from sgemm.int8x import reference as R
    _skip_unless_runs(kernel)
    rng = np.random.default_rng(23)
    for m, k, n in ((129, 200, 257), (300, 1000, 31)):
        a = cp.asfortranarray(cp.asarray(rng.standard_normal((m, k)).astype(np.float32)))
        b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
        want = R.gemm(a.get(), b.get()).astype(np.float32)
        np.testing.assert_array_equal(RN.gemm(a, b, kernel=kernel).get(), want)


def test_auto_picks_wgmma_on_sm90a():
    from sgemm.int8x import device as D
    from sgemm.runtime import device as devmod
    arch = devmod.info(cp.cuda.Device().id).arch
    assert D.gemm_spec().name == ("int8_wgmma" if arch == "sm_90a" else "int8_mma")


def _errors(out, ref, scale):
    """(median relative error, max componentwise error |out - ref| / (|A||B|))."""
    d = np.abs(np.asarray(out, np.float64) - ref)
    return float(np.median(d / np.maximum(np.abs(ref), 1e-300))), float(np.max(d / scale))


@pytest.mark.parametrize("m,k,n", [(256, 4096, 256), (512, 1024, 384), (333, 8191, 77)])
def test_accuracy_on_normal_data_is_at_least_cublas_fp32s(m, k, n):
    if os.environ.get("CUPY_TF32", "0") != "0":
        pytest.skip("CUPY_TF32 is on: cupy.matmul would not be FP32")
    from sgemm.int8x import runner as RN
    rng = np.random.default_rng(k)
    a = cp.asarray(rng.standard_normal((m, k)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
    A, B = a.get().astype(np.float64), b.get().astype(np.float64)
    ref, scale = A @ B, np.abs(A) @ np.abs(B)
    med, mx = _errors(RN.gemm(a, b).get(), ref, scale)
    med32, mx32 = _errors(cp.matmul(a, b).get(), ref, scale)
    assert med <= med32 and mx <= mx32, (med, med32, mx, mx32)


def test_non_finite_input_raises_and_alpha_zero_reads_nothing():
    from sgemm.int8x import device as D
    from sgemm.int8x import runner as RN
    a = cp.ones((6, 40), cp.float32)
    b = cp.ones((40, 5), cp.float32)
    a[3, 7] = cp.nan
    with pytest.raises(D.NonFiniteInput, match="Inf or NaN in a"):
        RN.gemm(a, b)
    b[1, 1] = cp.inf
    with pytest.raises(D.NonFiniteInput):
        RN.gemm(cp.ones((6, 40), cp.float32), b)
    c = cp.full((6, 5), 2.0, cp.float32)
    np.testing.assert_array_equal(RN.gemm(a, b, c, alpha=0.0, beta=0.5).get(), 1.0)
    np.testing.assert_array_equal(RN.gemm(a, b, alpha=0.0).get(), 0.0)


def test_degenerate_shapes_and_beta_zero_never_reads_c():
    from sgemm.int8x import runner as RN
    assert RN.gemm(cp.ones((0, 4), cp.float32), cp.ones((4, 3), cp.float32)).shape == (0, 3)
    c = cp.full((3, 2), 4.0, cp.float32)
    np.testing.assert_array_equal(
        RN.gemm(cp.ones((3, 0), cp.float32), cp.ones((0, 2), cp.float32), c, 1.0, 0.25).get(),
        1.0)
    poisoned = cp.full((3, 2), cp.nan, cp.float32)
    got = RN.gemm(cp.ones((3, 5), cp.float32), cp.ones((5, 2), cp.float32), poisoned, 1.0, 0.0)
    np.testing.assert_array_equal(got.get(), 5.0)


# ---- the public path: sgemm.gemm(precision="int8x" / "fp32") ----

API = [(1, 1, 1, "C", "C", False, False), (17, 33, 9, "F", "C", False, False),
       (129, 255, 130, "C", "F", True, False), (64, 1000, 3, "F", "F", False, True),
       (300, 31, 257, "C", "C", True, True), (2, 4097, 70, "F", "C", True, False)]


def _emulated(a, b, c, alpha, beta, ta, tb, row_major_out):
    """reference.gemm of the problem the route runs: op(a) op(b), or for a
    row-major output op(b)^T op(a)^T transposed (its scaling differs)."""
    from sgemm.int8x import reference as R
    A, B = (a.T if ta else a), (b.T if tb else b)
    if row_major_out:
        return R.gemm(B.T, A.T, None if c is None else c.T, alpha, beta).T.astype(np.float32)
    return R.gemm(A, B, c, alpha, beta).astype(np.float32)


@pytest.mark.parametrize("m,k,n,oa,ob,ta,tb", API,
                         ids=[f"{m}x{k}x{n}-{oa}{ob}-{int(ta)}{int(tb)}"
                              for m, k, n, oa, ob, ta, tb in API])
@pytest.mark.parametrize("oc,alpha,beta", [("C", 1.0, 0.0), ("F", -1.5, 0.5), ("C", 2.0, -1.0)])
def test_api_int8x_every_layout_bit_for_bit_and_against_fp64(m, k, n, oa, ob, ta, tb,
                                                              oc, alpha, beta):
    import sgemm
    from tests.gpu.reference import make
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a = make(cp, rng, (k, m) if ta else (m, k), oa)
    b = make(cp, rng, (n, k) if tb else (k, n), ob)
    c = make(cp, rng, (m, n), oc)
    c0 = c.get()
    got = sgemm.gemm(a, b, c if beta else None, alpha=alpha, beta=beta, trans_a=ta,
                     trans_b=tb, precision="int8x")
    if beta:
        assert got is c
    row_major = m > 1 and got.strides[0] != 4
    want = _emulated(a.get(), b.get(), c0 if beta else None, alpha, beta, ta, tb, row_major)
    np.testing.assert_array_equal(got.get(), want)
    A = (a.get().T if ta else a.get()).astype(np.float64)
    B = (b.get().T if tb else b.get()).astype(np.float64)
    ref = alpha * (A @ B) + (beta * c0.astype(np.float64) if beta else 0.0)
    scale = abs(alpha) * (np.abs(A) @ np.abs(B)) + abs(beta) * np.abs(c0) + 1e-30
    assert np.max(np.abs(got.get() - ref) / scale) < 2 ** -20


def test_api_int8x_numpy_and_plan_and_module_function():
    import sgemm
    import sgemm.int8x
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(9)
    a = rng.standard_normal((70, 300)).astype(np.float32)
    b = rng.standard_normal((300, 45)).astype(np.float32)
    want = R.gemm(b.T, a.T).T.astype(np.float32)            # row-major output: C^T's problem
    got = sgemm.gemm(a, b, precision="int8x")
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, want)
    p = sgemm.plan(cp.asarray(a), cp.asarray(b), precision="int8x")
    assert p.scheme == "int8x" and p.launches == []
    np.testing.assert_array_equal(p.execute().get(), want)
    np.testing.assert_array_equal(p.execute().get(), want)  # a plan runs again
    np.testing.assert_array_equal(sgemm.int8x.gemm(cp.asarray(a), cp.asarray(b)).get(), want)


def test_api_int8x_non_finite_inputs_go_to_fp32_and_refusals_name_the_argument():
    import sgemm
    from sgemm.errors import ArgumentError
    rng = np.random.default_rng(10)
    a = cp.asarray(rng.standard_normal((40, 64)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((64, 30)).astype(np.float32))
    a[3, 5] = cp.inf
    a[7, 1] = cp.nan
    got = sgemm.gemm(a, b, precision="int8x")
    ref = cp.matmul(a, b)
    np.testing.assert_array_equal(cp.isnan(got).get(), cp.isnan(ref).get())
    np.testing.assert_array_equal(cp.isinf(got).get(), cp.isinf(ref).get())
    fin = cp.isfinite(ref).get()
    assert fin.sum() > 0 and np.allclose(got.get()[fin], ref.get()[fin], rtol=1e-4, atol=1e-4)
    with pytest.raises(ArgumentError, match="bias="):
        sgemm.gemm(b.T, b, bias=cp.zeros(30, cp.float32), precision="int8x")
    with pytest.raises(ArgumentError, match="2-D operands only"):
        sgemm.gemm_batched(cp.ones((2, 4, 5), cp.float32), cp.ones((2, 5, 3), cp.float32),
                           precision="int8x")
    c = cp.full((40, 30), 3.0, cp.float32)
    np.testing.assert_array_equal(sgemm.gemm(a, b, c, alpha=0.0, beta=0.5,
                                             precision="int8x").get(), 1.5)


def test_fp32_accuracy_on_normal_data_is_at_least_cublas_fp32s():
    """precision="fp32" where it takes the integer engine (4096^3: the cost
    model picks it): 7 moduli on N(0,1) data, whose scaling check passes
    with them there, at or below cuBLAS FP32's error.  (Off that domain
    cuBLAS splits K on skinny deep shapes and is more accurate than 7 moduli
    give: tests/int8x's CPU model and docs/accuracy.md.)"""
    if os.environ.get("CUPY_TF32", "0") != "0":
        pytest.skip("CUPY_TF32 is on: cupy.matmul would not be FP32")
    import sgemm
    from sgemm.int8x import route
    from sgemm.runtime import device as devmod
    if devmod.info(cp.cuda.Device().id).arch not in route.INT8X_ARCHS:
        pytest.skip("precision='fp32' takes the integer engine on sm_90a only")
    s = 4096
    rng = np.random.default_rng(s)
    a = cp.asarray(rng.standard_normal((s, s)).astype(np.float32))
    b = cp.asfortranarray(cp.asarray(rng.standard_normal((s, s)).astype(np.float32)))
    a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    ref, scale = (a64 @ b64).get(), (cp.abs(a64) @ cp.abs(b64)).get()
    del a64, b64
    p = sgemm.plan(a, b, precision="fp32")
    assert p.scheme == "int8x"
    med, mx = _errors(p.execute().get(), ref, scale)
    med32, mx32 = _errors(cp.matmul(a, b).get(), ref, scale)
    assert med <= med32 and mx <= mx32, (med, med32, mx, mx32)
    assert p._int8x.replay.__self__.counts == (7, 8)      # 7 passed: nothing moved


def test_api_fp32_picks_tf32x3_where_faster_and_int8x_where_faster():
    """The two ends of the cost models' choice (route.weigh): 64^3 and
    2048 x 2048 x 2048 on tf32x3, 4096^3 on the engine (sm_90a)."""
    import sgemm
    from sgemm.runtime import device as devmod
    for s in (64, 2048):
        a = cp.ones((s, s), cp.float32)
        p = sgemm.plan(a, a, precision="fp32")
        assert p.scheme != "int8x" and not p.explain()["fp32"]["engine"]
    s = 4096
    big = cp.ones((s, s), cp.float32)
    p = sgemm.plan(big, big, precision="fp32")
    hopper = devmod.info(cp.cuda.Device().id).arch == "sm_90a"
    assert (p.scheme == "int8x") is hopper
    assert p.explain()["fp32"]["engine"] is hopper
    got = p.execute()
    assert float(got[0, 0]) == s and float(got[-1, -1]) == s
