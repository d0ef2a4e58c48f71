"""Large problems: 64-bit indexing, out-of-memory behaviour, no leaks.

* Every kernel on outputs with more than 2^31 (and 2^32) elements, on A or B
  operands with more than 2^31 elements, and on a strided batch whose batch
  offsets pass 2^31 -- checked against an fp64 reference on sampled rows and
  columns (random ones plus the first and last, where index arithmetic
  overflows first), with a random-walk error bound
  8 (delta + sqrt(K) u) ||a_i . b_j||_2 (K reaches 60000 here, where the
  worst-case K u |a||b| bound would hide a missing k-slab).  C is poisoned with NaN before each kernel (beta == 0),
  and the whole C must be free of NaN afterwards (every element written).
* A problem whose output does not fit on the device raises a MemoryError
  (sgemm.OutOfMemoryError or CuPy's OutOfMemoryError, both MemoryError
  subclasses) with a message, and leaves the process usable.
* Nothing leaks: after the operands are freed and CuPy's pool is emptied, the
  device's free memory is back to its start value (256 MiB tolerance for
  loaded modules and library workspaces).

Sizes are chosen for an 80 GB H100 and skipped where the device has less.
Marked gpu and slow.  Timings go to $SGEMM_RELIABILITY_OUT (JSON) if set.
"""
from __future__ import annotations

import gc
import json
import os
import time

import numpy as np
import pytest

import sgemm
from sgemm.kernels.registry import KERNELS

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
cp = pytest.importorskip("cupy")

U = 2.0 ** -24
DELTA = {"ieee": 0.0, "tf32x3": 2.0 ** -19, "tf32": 2.0 ** -10}
SPECS = list(KERNELS.values())
GiB = 1 << 30
RECORD: dict = {}


def _free_bytes() -> int:
    return cp.cuda.runtime.memGetInfo()[0]


def _release():
    gc.collect()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


@pytest.fixture(autouse=True)
def _context_alive():
    """After a kernel fault the CUDA context is gone for the whole process:
    skip later tests (naming the cause) rather than fail them all."""
    try:
        cp.cuda.Device().synchronize()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"CUDA context lost in an earlier test: {type(e).__name__}: {e}")


@pytest.fixture(scope="module", autouse=True)
def memory_baseline():
    """Warm up (context, modules), then record free memory; at the end every
    byte taken by this module's tests must be back."""
    a = cp.ones((64, 64), cp.float32)
    sgemm.gemm(a, a)
    cp.cuda.Device().synchronize()
    del a
    _release()
    start = _free_bytes()
    yield start
    try:
        _release()
        end = _free_bytes()
    except Exception as e:  # noqa: BLE001 - context lost: nothing to measure
        RECORD["leak_check"] = {"free_start": start, "error": f"{type(e).__name__}"}
        _dump()
        return
    RECORD["leak_check"] = {"free_start": start, "free_end": end}
    _dump()
    assert start - end < 256 << 20, f"device memory not returned: {start - end} B missing"


def _dump():
    out = os.environ.get("SGEMM_RELIABILITY_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(RECORD, f, indent=1)


def _need(nbytes: int):
    free = _free_bytes()
    if free < nbytes + GiB:
        pytest.skip(f"needs {nbytes / GiB:.1f} GiB free on the device, {free / GiB:.1f} GiB is")


def _samples(n: int, rng, count: int = 48) -> np.ndarray:
    picks = set(rng.integers(0, n, count).tolist()) | {0, 1, n // 2, n - 2, n - 1}
    return np.array(sorted(p for p in picks if 0 <= p < n))


def _check_sampled(spec, a, b, c, ta, tb, rng, alpha=1.0, tag=""):
    """Compare sampled rows x cols of c with fp64 op(a)[rows] @ op(b)[:, cols]."""
    m, n = c.shape
    rows, cols = _samples(m, rng), _samples(n, rng)
    opA = a.T if ta else a
    opB = b.T if tb else b
    Ar = opA[cp.asarray(rows)].astype(cp.float64)
    Bc = opB[:, cp.asarray(cols)].astype(cp.float64)
    ref = alpha * (Ar @ Bc)
    # Random data: rounding errors add up like a random walk, so the bound
    # scales with sqrt(K) * ||a_i * b_j||_2 rather than the worst case
    # K * |a||b| (which at K = 60000 would no longer catch a missing k-slab).
    rms = abs(alpha) * cp.sqrt((Ar * Ar) @ (Bc * Bc))
    k = Ar.shape[1]
    got = c[cp.asarray(rows)][:, cp.asarray(cols)].astype(cp.float64)
    bound = 4 * (DELTA[spec.precision] + np.sqrt(k) * U) * rms * 2 + 1e-30
    bad = ~(cp.abs(got - ref) <= bound)
    nbad = int(bad.sum())
    if nbad:
        i, j = map(int, cp.unravel_index(cp.argmax(bad), bad.shape))
        raise AssertionError(f"{spec.name} {tag}: {nbad} sampled elements wrong, e.g. "
                             f"C[{rows[i]}, {cols[j]}] = {float(got[i, j])} vs "
                             f"{float(ref[i, j])}")
    assert not bool(cp.isnan(c).any()), f"{spec.name} {tag}: NaN left in C (unwritten elements)"


def _run_all(name, a, b, m, n, ta=False, tb=False):
    c = cp.empty((m, n), cp.float32)
    rng = np.random.default_rng(7)
    times = {}
    failures = {}
    RECORD[name] = {"m": m, "n": n, "k": a.shape[0] if ta else a.shape[1],
                    "c_elements": m * n, "a_elements": a.size, "b_elements": b.size,
                    "seconds": times, "failures": failures}
    for spec in SPECS:
        try:
            c.fill(cp.nan)
            t0 = time.perf_counter()
            out = sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, kernel=spec.name)
            cp.cuda.Device().synchronize()
            times[spec.name] = round(time.perf_counter() - t0, 4)
            assert out is c
            _check_sampled(spec, a, b, c, ta, tb, rng, tag=name)
        except AssertionError as e:
            failures[spec.name] = str(e)[:300]      # wrong values: go on with the next kernel
        except Exception as e:
            failures[spec.name] = f"{type(e).__name__}: {str(e)[:300]}"
            break                                    # a fault kills the context
    del c
    assert not failures, f"{name}: " + "; ".join(f"{k}: {v}" for k, v in failures.items())


@pytest.mark.parametrize("m,n,k", [(50000, 50000, 64), (65536, 65536, 32), (70000, 70000, 16)])
def test_huge_output_every_kernel(m, n, k):
    """C with m*n >= 2.5e9 (> 2^31; 70000^2 = 4.9e9 > 2^32) elements."""
    _need(4 * (m * n + (m + n) * k))
    rng = np.random.default_rng(1)
    a = cp.asarray(rng.standard_normal((m, k), np.float32))
    b = cp.asarray(rng.standard_normal((k, n), np.float32))
    _run_all(f"C{m}x{n}x{k}", a, b, m, n)
    del a, b
    _release()


@pytest.mark.parametrize("which,ta", [("A", False), ("A", True), ("B", False)])
def test_huge_operand_every_kernel(which, ta):
    """An A (or B) operand of 40000 x 60000 = 2.4e9 elements: lda * column
    offsets pass 2^31 inside the k loop."""
    big, small, k = 40000, 32, 60000
    _need(4 * (big * k + 2 * small * max(big, k)))
    rng = np.random.default_rng(2)
    if which == "A":
        shape = (k, big) if ta else (big, k)
        a = cp.random.RandomState(20).standard_normal(shape, dtype=cp.float32)
        b = cp.asarray(rng.standard_normal((k, small), np.float32))
        _run_all(f"A{big}x{k}{'T' if ta else ''}", a, b, big, small, ta=ta)
    else:
        a = cp.asarray(rng.standard_normal((small, k), np.float32))
        b = cp.random.RandomState(21).standard_normal((k, big), dtype=cp.float32)
        _run_all(f"B{k}x{big}", a, b, small, big)
    del a, b
    _release()


def test_batch_offsets_past_2_31():
    """gemm_batched with 3 entries of 30000 x 30000: entry 2 starts at
    element 1.8e9 and ends at 2.7e9 (batch stride * z in 64 bits)."""
    batch, m, n, k = 3, 30000, 30000, 16
    _need(4 * batch * (m * n + (m + n) * k))
    rng = np.random.default_rng(3)
    a = cp.asarray(rng.standard_normal((batch, m, k), np.float32))
    b = cp.asarray(rng.standard_normal((batch, k, n), np.float32))
    c = cp.empty((batch, m, n), cp.float32)
    times, failures = {}, {}
    RECORD["batched"] = {"batch": batch, "m": m, "n": n, "k": k, "c_elements": c.size,
                         "seconds": times, "failures": failures}
    for spec in SPECS:
        try:
            c.fill(cp.nan)
            t0 = time.perf_counter()
            sgemm.gemm_batched(a, b, c, kernel=spec.name)
            cp.cuda.Device().synchronize()
            times[spec.name] = round(time.perf_counter() - t0, 4)
            for z in (0, batch - 1):
                _check_sampled(spec, a[z], b[z], c[z], False, False, rng, tag=f"batch {z}")
        except AssertionError as e:
            failures[spec.name] = str(e)[:300]
        except Exception as e:
            failures[spec.name] = f"{type(e).__name__}: {str(e)[:300]}"
            break
    del a, b, c
    _release()
    assert not failures, "; ".join(f"{k}: {v}" for k, v in failures.items())


def test_beta_only_many_columns():
    """alpha == 0 (the scale kernel) on C with n = 70000 > 65535 columns:
    the grid's y dimension must be split."""
    m, n = 40, 70000
    c = cp.asarray(np.random.default_rng(4).standard_normal((n, m), np.float32)).T  # F order
    c0 = c.copy()
    sgemm.gemm(cp.ones((m, 3), cp.float32), cp.ones((3, n), cp.float32), c, alpha=0.0,
               beta=-2.0)
    assert bool((c == -2.0 * c0).all())


@pytest.mark.parametrize("order", ["F", "C"])
def test_int8x_workspace_past_2_31_bytes(order):
    """The integer engine at 16384^3: workspace regions of 2^31 bytes (eight
    residue planes of 16384 x 16384), after 8192^3 so that the kept
    workspaces of the smaller plans are given back to make room, each
    precision twice (the second call takes the cached runner).  Every
    entry against cuBLAS FP32 (TF32 off): on N(0,1) data both sit within
    ~1e-6 of the largest entry, so 1e-4 separates a right product from a
    missing tile or a stale buffer (int8-api-cost-h200-2026-11-28.json
    recorded max_rel 1.0 here once, not reproduced since)."""
    if cp.cuda.runtime.memGetInfo()[1] < 40 * GiB:
        pytest.skip("needs 40 GiB of device memory")
    if os.environ.get("CUPY_TF32", "0") != "0":
        pytest.skip("CUPY_TF32 is on: cupy.matmul would not be FP32")
    for s in (8192, 16384):
        rng = cp.random.default_rng(s)
        a = rng.standard_normal((s, s), dtype=cp.float32)
        b = rng.standard_normal((s, s), dtype=cp.float32)
        if order == "F":
            a, b = cp.asfortranarray(a), cp.asfortranarray(b)
        ref = cp.matmul(a, b)
        top = float(cp.abs(ref).max())
        for prec in ("int8x", "fp32", "int8x", "fp32"):
            got = sgemm.gemm(a, b, precision=prec)
            rel = float(cp.abs(got - ref).max()) / top
            assert rel < 1e-4, (s, order, prec, rel)
            del got
        del a, b, ref
    # the plans' runners keep their workspaces (6 GiB at 16384^3) until the
    # cache lets them go; the module's leak check counts them otherwise
    sgemm.plan_cache.clear()
    _release()


def test_out_of_memory_is_a_memory_error(memory_baseline):
    """An output of 300000 x 300000 (360 GB) cannot be allocated: a
    MemoryError with a message, nothing half-done, the process still works."""
    a = cp.ones((300000, 2), cp.float32)
    b = cp.ones((2, 300000), cp.float32)
    before = _free_bytes()
    with pytest.raises(MemoryError) as e:
        sgemm.gemm(a, b)
    RECORD["oom"] = {"type": f"{type(e.value).__module__}.{type(e.value).__name__}",
                     "is_sgemm_error": isinstance(e.value, sgemm.SgemmError),
                     "message": str(e.value)[:300]}
    assert str(e.value), "MemoryError without a message"
    # The process is usable: a correct call works right after.
    x = cp.asarray(np.random.default_rng(5).standard_normal((130, 70), np.float32))
    y = sgemm.gemm(x, x.T)
    ref = x.astype(cp.float64) @ x.T.astype(cp.float64)
    assert float(cp.abs(y - ref).max()) < 1e-3
    del a, b, x, y, ref
    _release()
    assert before - _free_bytes() < 64 << 20, "memory lost after the failed allocation"


def test_out_of_memory_host_inputs():
    """NumPy operands whose result cannot be allocated on the device."""
    a = np.ones((300000, 1), np.float32)
    with pytest.raises(MemoryError):
        sgemm.gemm(a, a.T)
    _release()
