"""Concurrency on the GPU: host threads, streams, processes, first use.

* 8 host threads, each on its own non-blocking CuPy stream (passed as
  ``stream=`` or made current with ``with stream:``), each running a mix of
  kernels and shapes: every result matches the fp64 reference.
* 8 streams with work queued on all of them before any synchronization:
  every result is right (kernels use only their own operands; nothing is
  shared through the launcher's caches in a way that breaks).
* A plan built once and executed on several streams.
* First use from many threads / processes at once, with a fresh kernel cache:
  every result is right, every instantiation is compiled exactly once, the
  cache holds one valid entry per instantiation and no temporary file.
* PyTorch tensors on several PyTorch streams (if PyTorch is installed).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import sgemm
from sgemm.kernels.registry import KERNELS

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

U = 2.0 ** -24
DELTA = {"ieee": 0.0, "tf32x3": 2.0 ** -19, "tf32": 2.0 ** -10}
NAMES = list(KERNELS)
SHAPES = [(1, 1, 1), (17, 65, 33), (129, 127, 63), (256, 300, 500), (600, 31, 257)]


def _shape_for(name, shape):
    """gemv-scheme kernels get shapes of their domain (m <= 16): the fuzz
    tests cover them elsewhere; here they must not mask the concurrency
    property with their own failures."""
    m, n, k = shape
    if KERNELS[name].extra.get("scheme") == "gemv":
        return min(m, 16), n, k
    return m, n, k


def _inputs(rng, m, n, k, ta, tb):
    a = cp.asarray(rng.standard_normal((k, m) if ta else (m, k), np.float32))
    b = cp.asarray(rng.standard_normal((n, k) if tb else (k, n), np.float32))
    c = cp.asarray(rng.standard_normal((m, n), np.float32))
    return a, b, c


def _check(name, a, b, c0, out, alpha, beta, ta, tb):
    A = a.astype(cp.float64)
    B = b.astype(cp.float64)
    A = A.T if ta else A
    B = B.T if tb else B
    ref = alpha * (A @ B)
    mag = abs(alpha) * (cp.abs(A) @ cp.abs(B))
    if beta != 0.0:
        ref += beta * c0.astype(cp.float64)
        mag += abs(beta) * cp.abs(c0.astype(cp.float64))
    k = A.shape[1]
    bound = 2 * (DELTA[KERNELS[name].precision] + (k + 2) * U) * mag + 1e-30
    bad = int((~(cp.abs(out.astype(cp.float64) - ref) <= bound)).sum())
    return bad


def _job(t: int, use_with: bool, errors: list, reps: int = 6):
    """One thread's work: its own stream, several kernels and shapes."""
    try:
        rng = np.random.default_rng(100 + t)
        s = cp.cuda.Stream(non_blocking=True)
        for r in range(reps):
            name = NAMES[(t * reps + r) % len(NAMES)]
            m, n, k = _shape_for(name, SHAPES[(t + r) % len(SHAPES)])
            ta, tb = bool(r & 1), bool(r & 2)
            with s:
                a, b, c = _inputs(rng, m, n, k, ta, tb)
                c0 = c.copy()
                alpha, beta = 1.5, -0.5
                if use_with:
                    sgemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                               kernel=name)
                else:
                    sgemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                               kernel=name, stream=s)
                bad = _check(name, a, b, c0, c, alpha, beta, ta, tb)
            s.synchronize()
            if bad:
                errors.append(f"thread {t}: {name} {m}x{n}x{k} ta={ta} tb={tb}: {bad} wrong")
    except Exception as e:  # surfaced by the main thread
        errors.append(f"thread {t}: {type(e).__name__}: {e}")


@pytest.fixture(autouse=True)
def _context_alive():
    """After a kernel fault the CUDA context is gone for the whole process:
    skip later tests (naming the cause) rather than fail them all."""
    try:
        cp.cuda.Device().synchronize()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"CUDA context lost in an earlier test: {type(e).__name__}: {e}")


def test_threads_each_with_a_stream():
    errors: list = []
    threads = [threading.Thread(target=_job, args=(t, t % 2 == 0, errors)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    assert not errors, "\n".join(errors)


def test_streams_queued_before_any_sync():
    rng = np.random.default_rng(7)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(8)]
    jobs = []
    for i, s in enumerate(streams):
        name = NAMES[i % len(NAMES)]
        m, n, k = _shape_for(name, SHAPES[i % len(SHAPES)])
        a, b, c = _inputs(rng, m, n, k, False, True)
        jobs.append((name, a, b, c, c.copy(), s))
    cp.cuda.Device().synchronize()            # inputs ready before the non-blocking streams
    for rep in range(3):                       # same work three times, all queued
        for name, a, b, c, c0, s in jobs:
            with s:
                c[...] = c0
            sgemm.gemm(a, b, c, alpha=-1.0, beta=2.0, trans_b=True, kernel=name, stream=s)
    for s in streams:
        s.synchronize()
    for name, a, b, c, c0, s in jobs:
        assert _check(name, a, b, c0, c, -1.0, 2.0, False, True) == 0, name


def test_one_plan_many_streams():
    rng = np.random.default_rng(8)
    a, b, c = _inputs(rng, 300, 200, 100, False, False)
    p = sgemm.plan(a, b, c)
    for i in range(4):
        s = cp.cuda.Stream(non_blocking=True)
        c[...] = cp.nan
        cp.cuda.Device().synchronize()
        p.execute(stream=s)
        s.synchronize()
        assert _check(p.kernel.name, a, b, c, c, 1.0, 0.0, False, False) == 0


CHILD = textwrap.dedent("""
    import json, os, sys, threading
    import numpy as np, cupy as cp
    import sgemm
    from sgemm.runtime import compiler
    real = compiler.nvrtc_compile
    log = os.environ["SGEMM_TEST_COMPILE_LOG"]
    def counting(src, expr, *a, **k):
        with open(log, "a") as f:
            f.write(expr.replace(" ", "") + "\\n")
        return real(src, expr, *a, **k)
    compiler.nvrtc_compile = counting
    names = sys.argv[1].split(",")
    nthreads = int(sys.argv[2])
    barrier = threading.Barrier(nthreads)
    errors = []
    def work(t):
        try:
            rng = np.random.default_rng(t)
            a = cp.asarray(rng.standard_normal((96, 2048), np.float32))
            b = cp.asarray(rng.standard_normal((2048, 80), np.float32))
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            s = cp.cuda.Stream(non_blocking=True)
            cp.cuda.Device().synchronize()
            barrier.wait()
            for name in names:
                c = sgemm.gemm(a, b, kernel=name, stream=s)
                s.synchronize()
                tol = 1e-2 if sgemm.KERNELS[name].precision == "tf32" else 1e-4
                err = float(cp.abs(c - ref).max() / cp.abs(ref).max())
                if not err < tol:
                    errors.append(f"{name}: max error {err}")
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
    th = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    [x.start() for x in th]
    [x.join() for x in th]
    print(json.dumps({"errors": errors}))
""")


def _spawn(cache: Path, log: Path, names, nthreads):
    env = dict(os.environ, SGEMM_CACHE_DIR=str(cache), SGEMM_TEST_COMPILE_LOG=str(log))
    return subprocess.Popen([sys.executable, "-c", CHILD, ",".join(names), str(nthreads)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _assert_cache_clean(cache: Path, log: Path):
    from sgemm.runtime import compiler
    compiled = [x for x in log.read_text().split("\n") if x]
    dupes = {e for e in compiled if compiled.count(e) > 1}
    assert not dupes, f"compiled more than once: {sorted(dupes)}"
    entries = list(cache.glob("*.cubin"))
    assert len(entries) == len(compiled), (len(entries), len(compiled))
    for p in entries:
        assert compiler._read_entry(p, p.stem) is not None, f"invalid cache entry {p.name}"
    assert not list(cache.glob(".tmp-*")), "temporary file left behind"


# A spread of families (the deep K makes split-K take several slices, so its
# reduction kernel is compiled on first use too).
FIRST_USE = ["naive", "tile", "splitk", "small",
             next((n for n, s in KERNELS.items() if s.precision == "tf32x3"), "smem")]


def test_first_use_from_many_threads(tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "compiles.log"
    log.touch()
    p = _spawn(cache, log, FIRST_USE, 8)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    assert json.loads(out.strip().splitlines()[-1])["errors"] == []
    _assert_cache_clean(cache, log)


def test_first_use_from_many_processes(tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "compiles.log"
    log.touch()
    procs = [_spawn(cache, log, FIRST_USE, 2) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["errors"] == []
    _assert_cache_clean(cache, log)


def test_torch_streams():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    g = torch.Generator(device="cuda").manual_seed(0)
    streams = [torch.cuda.Stream() for _ in range(4)]
    jobs = []
    for i, s in enumerate(streams):
        a = torch.randn(200 + i, 96, device="cuda", generator=g)
        b = torch.randn(96, 150, device="cuda", generator=g)
        jobs.append((a, b, s))
    torch.cuda.synchronize()
    outs = []
    for a, b, s in jobs:
        with torch.cuda.stream(s):
            outs.append(sgemm.gemm(a, b))
    torch.cuda.synchronize()
    for (a, b, _), c in zip(jobs, outs):
        assert isinstance(c, torch.Tensor) and c.is_cuda
        ref = a.double() @ b.double()
        assert float((c.double() - ref).abs().max()) < 1e-3
