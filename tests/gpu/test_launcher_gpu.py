"""The prepared launch path (runtime/launcher.PreparedLaunch) on the GPU.

* Plans launched through it and through cuda.core.launch give bit-identical
  results, for one-launch schemes, split-K (a workspace and two launches),
  the cluster kernels and the tensor-core path.
* The plan cache's relocated hits from 8 threads at once, all on one cache
  entry with their own arrays and streams: every result is right (the slot
  writes and the launch are not interleaved).
* A launch the driver refuses raises DeviceError instead of passing silently.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import sgemm
from sgemm import plan_cache
from sgemm.errors import DeviceError
from sgemm.runtime import launcher

from .reference import rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

CASES = [((300, 200, 500), "auto", "ieee"), ((128, 128, 40000), "splitk", "ieee"),
         ((1, 777, 1500), "gemv", "ieee"), ((257, 129, 65), "tile", "ieee"),
         ((512, 512, 512), "auto", "tf32x3")]
# Hopper only: marked sm90 (tests/conftest.py skips them elsewhere), so that
# nothing asks the device at import.
CASES += [pytest.param(*case, marks=pytest.mark.sm90) for case in (
    ((512, 512, 512), "db_cluster", "ieee"), ((384, 384, 384), "auto", "ieee"),
    ((128, 128, 128), "splitk_cluster", "ieee"))]


@pytest.mark.parametrize("shape,kernel,precision", CASES)
def test_prepared_and_cuda_core_launches_agree(shape, kernel, precision, monkeypatch):
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    a = cp.asarray(rng.standard_normal((m, k)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
    outs = []
    for driver in (True, False):
        monkeypatch.setattr(launcher, "DRIVER_LAUNCH", driver)
        c = cp.full((m, n), cp.nan, dtype=cp.float32)
        p = sgemm.plan(a, b, c, kernel=kernel, precision=precision)
        p.execute()
        p.execute()                       # a second run of the same prepared launches
        outs.append(c.get())
    ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
    tol = 1e-4 if precision != "ieee" else 2e-5 * max(1.0, (k / 4096) ** 0.5)
    assert rel_err(outs[0], ref) < tol
    np.testing.assert_array_equal(outs[0], outs[1])


def test_plan_cache_hits_from_many_threads():
    plan_cache.clear()
    m, n, k = 96, 80, 700
    rng = np.random.default_rng(5)
    a0 = cp.asarray(rng.standard_normal((m, k)).astype(np.float32))
    b0 = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
    plan_cache.gemm(a0, b0)               # one entry, then only relocated hits
    cp.cuda.Device().synchronize()
    errors, lock = [], threading.Lock()

    def work(t):
        r = np.random.default_rng(100 + t)
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            for i in range(25):
                a = cp.asarray(r.standard_normal((m, k)).astype(np.float32))
                b = cp.asarray(r.standard_normal((k, n)).astype(np.float32))
                c = plan_cache.gemm(a, b)
                s.synchronize()
                ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
                e = rel_err(c, ref)
                if not e < 2e-5:
                    with lock:
                        errors.append((t, i, e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:5]
    assert plan_cache.stats["hits"] >= 8 * 25, plan_cache.stats


def test_a_refused_launch_raises():
    a = cp.ones((64, 64), dtype=cp.float32)
    p = sgemm.plan(a, a, kernel="tile")
    l0 = p.launches[0]
    bad = launcher.PreparedLaunch(l0.kernel, l0.grid, 4096, l0.smem, l0.args)  # > 1024 threads
    with pytest.raises(DeviceError, match="cuLaunchKernelEx"):
        bad(cp.cuda.get_current_stream().ptr)


# A fresh process's first call, its kernels served by the bundle or the disk
# cache: loaded and launched through the ctypes driver layer (runtime/cu.py),
# cuda.core, cuda.bindings' driver module and cuda.pathfinder never imported
# (runtime/launcher.py; their import was most of such a call, see
# docs/notes/first-call.md).  The CPU twin with a stand-in driver is
# tests/runtime/test_loading.py.
_FIRST_CALL = '''
import json, sys, time
import cupy as cp
a = cp.random.standard_normal((1024, 512), dtype=cp.float32)
b = cp.random.standard_normal((512, 768), dtype=cp.float32)
ref = a.astype(cp.float64) @ b.astype(cp.float64)
cp.cuda.Device().synchronize()
before = sorted(m for m in sys.modules if m.startswith("cuda.core"))
cuda_before = {m for m in sys.modules if m.startswith("cuda.")}
import sgemm
from sgemm.runtime import compiler
if sys.argv[1] == "hit":
    def no_compile(source, expr, *rest, **kw):
        raise AssertionError(f"NVRTC compiled {expr}: the cache was not warm")
    compiler.nvrtc_compile = no_compile
t = time.perf_counter()
c = sgemm.gemm(a, b)
cp.cuda.Device().synchronize()
ms = (time.perf_counter() - t) * 1e3
new_cuda = sorted({m for m in sys.modules if m.startswith("cuda.")} - cuda_before)
err = float(cp.abs(c - ref).max() / cp.abs(ref).max())
print(json.dumps({"before": before, "ms": ms, "err": err, "new_cuda": new_cuda,
                  "nvrtc_on_disk": compiler._nvrtc_version_on_disk() is not None,
                  "after": sorted(m for m in sys.modules if m.startswith("cuda.core"))}))
'''


def _fresh_process(phase: str, cache_dir) -> dict:
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, SGEMM_CACHE_DIR=str(cache_dir))
    env.pop("SGEMM_LAUNCH", None)              # plans launch through cuLaunchKernelEx
    r = subprocess.run([sys.executable, "-c", _FIRST_CALL, phase], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, f"{phase}: {r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_first_call_from_warm_kernels_does_not_import_cuda_core(tmp_path):
    _fresh_process("warm", tmp_path / "cache")   # compiles what the bundle lacks, into the cache
    hit = _fresh_process("hit", tmp_path / "cache")
    if hit["before"]:
        pytest.skip(f"CuPy itself imported {hit['before']}")
    assert hit["err"] < 1e-5, hit
    print(f"first sgemm.gemm of a fresh process, kernels warm: {hit['ms']:.1f} ms")
    assert hit["after"] == [], f"the first call imported {hit['after']}"
    assert not [m for m in hit["new_cuda"] if m.startswith(("cuda.bindings.driver",
                                                           "cuda.core"))], hit["new_cuda"]
    if hit["nvrtc_on_disk"]:      # NVRTC's version read without cuda.bindings.nvrtc
        assert hit["new_cuda"] == [], hit["new_cuda"]
