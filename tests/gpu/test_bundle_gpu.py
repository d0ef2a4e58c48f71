"""Bundled kernels (sgemm/build.py) give the same bits as kernels NVRTC
compiles in the calling process, on the GPU.

A few problems that reach different kernels and schemes (pack, split-K and
its reduction, gemv_wide, peel strips, clusters on sm_90, batched, tf32x3)
run three ways: (1) bundle off, empty kernel cache: NVRTC compiles in this
process, and the kernels it loads are recorded; (2) a bundle of exactly
those kernels, built by ``sgemm.build`` in fresh processes, with NVRTC made
to fail: every kernel comes from the bundle; (3) where the installed
package carries a bundle for this GPU and NVRTC, that one.  The outputs
must be bit-identical.  CUDA is touched only inside fixtures and tests.

    python -m pytest -q tests/gpu/test_bundle_gpu.py -s    # -s prints first-call times
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from .reference import make

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

# (m, n, k, ta, tb, batch, element offset: 1 breaks float4 alignment, precision)
CASES = [
    (1000, 1000, 1000, False, False, 1, 1, "ieee"),    # unaligned: pack copies
    (300, 200, 20000, False, True, 1, 0, "ieee"),      # deep K: split-K + reduction
    (1, 4096, 4096, False, False, 1, 0, "ieee"),       # gemv_wide
    (2049, 2049, 1024, True, False, 1, 0, "ieee"),     # peel: main block + gemv strips
    (384, 384, 384, False, False, 1, 0, "ieee"),       # small: clusters on sm_90
    (64, 64, 64, False, False, 16, 0, "ieee"),         # batched
    (1024, 1024, 1024, False, False, 1, 0, "tf32x3"),  # tensor cores
    (777, 555, 333, True, True, 1, 0, "tf32x3"),
]


def _operands(case, seed):
    m, n, k, ta, tb, batch, off, _ = case
    rng = np.random.default_rng(seed)
    if batch > 1:
        a = cp.asarray(rng.standard_normal((batch, m, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((batch, k, n)).astype(np.float32))
        return a, b
    a = make(cp, rng, (k, m) if ta else (m, k), offset=off)
    b = make(cp, rng, (n, k) if tb else (k, n), offset=off)
    return a, b


def _run(case, seed=0):
    """The call's output bits (uint32) and its wall time."""
    import sgemm
    m, n, k, ta, tb, batch, off, prec = case
    a, b = _operands(case, seed)
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    if batch > 1:
        out = sgemm.matmul(a, b, precision=prec)
    else:
        out = sgemm.gemm(a, b, trans_a=ta, trans_b=tb, precision=prec)
    cp.cuda.Device().synchronize()
    dt = time.perf_counter() - t
    return cp.asnumpy(out).view(np.uint32), dt


@pytest.fixture(autouse=True, scope="module")
def _model_choices():
    """The model's plans only: a measured choice (sgemm/measure.py) times the
    candidates whose kernels are at hand, which the bundle and an empty
    NVRTC cache differ in, so two runs could pick different plans and the
    bits would differ for that reason, not the kernels'."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SGEMM_AUTOTUNE", "0")
    yield
    mp.undo()


def _fresh(monkeypatch, cache_dir):
    """Forget every compiled and loaded kernel and every cached plan."""
    from sgemm import plan_cache
    from sgemm.runtime import compiler, launcher
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(cache_dir))
    compiler._memory.clear()
    compiler.forget_bundle()
    launcher._loaded.clear()
    plan_cache.clear()


@pytest.fixture(scope="module")
def nvrtc_run(tmp_path_factory):
    """Bundle off, empty cache: outputs of in-process NVRTC kernels, and
    the (source, name expression, arch) of every kernel the calls loaded."""
    from sgemm.runtime import device, launcher
    device.info(0)
    cp.zeros(1).sum()                          # context and CuPy's own kernels first
    mp = pytest.MonkeyPatch()
    mp.setenv("SGEMM_BUNDLE", "0")
    _fresh(mp, tmp_path_factory.mktemp("nvrtc-cache"))
    loaded = set()
    real = launcher.compile_kernel

    def recording(source, expr, arch, *a, **kw):
        loaded.add((source, expr, arch))
        return real(source, expr, arch, *a, **kw)

    mp.setattr(launcher, "compile_kernel", recording)
    try:
        outs = {case: _run(case)[0] for case in CASES}
    finally:
        mp.undo()
    return outs, sorted(loaded)


@pytest.fixture(scope="module")
def bundle(nvrtc_run, tmp_path_factory):
    """A bundle of exactly the kernels the calls loaded, built by sgemm.build
    (NVRTC in fresh spawned processes, nothing reused from a cache)."""
    from sgemm import build
    out = tmp_path_factory.mktemp("bundle")
    items = [build.Item(arch, src, expr, "?") for src, expr, arch in nvrtc_run[1]]
    index = build.build(out, items=items, use_cache=False, progress=False)
    assert index["count"] == len(items) and not index["stats"]["failed"]
    return out


def _no_nvrtc(monkeypatch):
    from sgemm.runtime import compiler

    def boom(source, expr, arch, *a, **k):
        raise AssertionError(f"NVRTC compiled {expr} ({arch}): not served by the bundle")
    monkeypatch.setattr(compiler, "nvrtc_compile", boom)


def test_bundled_kernels_give_the_same_bits(nvrtc_run, bundle, monkeypatch, tmp_path):
    monkeypatch.setenv("SGEMM_BUNDLE_DIR", str(bundle))
    monkeypatch.delenv("SGEMM_BUNDLE", raising=False)
    _fresh(monkeypatch, tmp_path / "cache")
    _no_nvrtc(monkeypatch)
    outs, loaded = nvrtc_run
    for case in CASES:
        bits, dt = _run(case)
        print(f"first call from the bundle: {case}: {dt * 1e3:.1f} ms")
        assert np.array_equal(bits, outs[case]), f"{case}: bundled and NVRTC kernels differ"
    assert not list((tmp_path / "cache").glob("*.cubin")), "bundle hits are not copied"


def test_installed_bundle_gives_the_same_bits(nvrtc_run, monkeypatch, tmp_path):
    """The package's own bundle (python -m sgemm.build, or the wheel's)."""
    from sgemm.runtime import compiler, device
    monkeypatch.delenv("SGEMM_BUNDLE", raising=False)
    monkeypatch.delenv("SGEMM_BUNDLE_DIR", raising=False)
    _fresh(monkeypatch, tmp_path / "cache")
    keys = compiler.bundle_keys()
    arch = device.info(0).arch
    want = {compiler.cache_key(s, e, a) for s, e, a in nvrtc_run[1] if a == arch}
    if not keys or not want <= keys:
        pytest.skip(f"no installed bundle for {arch} and this NVRTC "
                    f"({len(want - keys)} of {len(want)} kernels missing)")
    _no_nvrtc(monkeypatch)
    for case in CASES:
        bits, dt = _run(case)
        print(f"first call, installed bundle: {case}: {dt * 1e3:.1f} ms")
        assert np.array_equal(bits, nvrtc_run[0][case]), case


def test_first_call_from_bundle_is_fast(bundle, monkeypatch, tmp_path):
    """A new shape whose kernels are bundled: no compile, so the first call
    is loading and launching (target 50 ms; asserted loosely at 0.5 s here)."""
    monkeypatch.setenv("SGEMM_BUNDLE_DIR", str(bundle))
    monkeypatch.delenv("SGEMM_BUNDLE", raising=False)
    _fresh(monkeypatch, tmp_path / "cache")
    _no_nvrtc(monkeypatch)
    _run(CASES[0], seed=1)                  # imports, first module load, CuPy's kernels
    _fresh(monkeypatch, tmp_path / "cache2")
    times = {case: _run(case, seed=2)[1] for case in CASES[1:]}
    for case, dt in times.items():
        print(f"first call (warm process, bundled): {case}: {dt * 1e3:.1f} ms")
    assert max(times.values()) < 0.5, times
