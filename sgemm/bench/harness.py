"""Inputs, reference check and timing.  No kernel knowledge lives here:
a runner (runners.py) hands over ``launch(i)`` (enqueue one GEMM on input
set i on the bench stream) and ``output(i)``; this module checks and times it.

Method (see docs/bench.md and /work/.library/device/METHOD.md):
  * inputs are fresh standard-normal float32 (never zeros: zeros hide
    unwritten outputs and can run faster than real data);
  * the output is poisoned with NaN, one launch runs, and
    ||out - ref||_F / ||ref||_F against a float64 product of the same inputs
    must be under the precision's tolerance before anything is timed;
  * timing uses CUDA events around ``inner`` back-to-back launches, preceded
    by a short GPU spin so that the host has queued every launch before the
    first one starts (otherwise small kernels time the Python launch path);
  * warm-up first, then ``repeat`` samples; median and quartiles reported;
  * --cold-l2 rotates among enough input sets that their total exceeds twice
    the L2, so a launch never finds its operands left in L2 by the previous.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .sizes import Shape

# Relative Frobenius error allowed per arithmetic.  FP32 FMA at K=8192 lands
# near 1e-6 (cuBLAS) to 1e-5 (a sequential sum); 1e-4 leaves room and still
# catches any indexing bug.  1xTF32 (10-bit mantissa inputs) lands near 3e-4
# to 8e-4.
TOLERANCE = {"ieee": 1e-4, "tf32x3": 1e-4, "tf32": 5e-3}

WARMUP_LAUNCHES = 3
TARGET_SAMPLE_S = 1e-3     # a sample spans >= ~1 ms of GPU time (events tick 0.5 us)
MAX_INNER = 64             # launches per sample
POINT_BUDGET_S = 2.0       # timing budget per (runner, shape); at least MIN_REPEAT samples
MIN_REPEAT = 5
SLOW_RUN_S = 0.5           # one run slower than this is not timed (the naive rung at 8192)
COLD_SETS_MAX_BYTES = 4 << 30


class CheckFailed(Exception):
    pass


# -- inputs -------------------------------------------------------------------------
def set_bytes(shape: Shape) -> int:
    return shape.min_bytes


def n_sets_for(shape: Shape, l2_bytes: int, cold: bool) -> int:
    """How many input sets to rotate: 1 normally; with cold L2, enough that the
    sets total more than twice the L2 (LRU-ish replacement then evicts a set
    before it comes round again), within COLD_SETS_MAX_BYTES."""
    if not cold:
        return 1
    per = set_bytes(shape)
    want = math.ceil(2 * l2_bytes / per) + 1
    cap = max(2, COLD_SETS_MAX_BYTES // per)
    return int(max(2, min(want, cap)))


@dataclass
class Inputs:
    shape: Shape
    a: list            # stored operands (K x M when ta), cupy float32
    b: list
    ref: object = None     # float64 op(a0) @ op(b0), cupy
    ref_norm: float = 0.0
    host: tuple | None = None  # NumPy copies of set 0, made on demand

    @property
    def n_sets(self) -> int:
        return len(self.a)

    def op(self, x, trans: bool):
        return x.swapaxes(-1, -2) if trans else x

    def host_set0(self):
        if self.host is None:
            import cupy
            self.host = (cupy.asnumpy(self.a[0]), cupy.asnumpy(self.b[0]))
        return self.host


def make_inputs(shape: Shape, n_sets: int, seed: int = 0) -> Inputs:
    """Fresh standard-normal operands in the stored layout the shape says."""
    import cupy
    rng = cupy.random.default_rng(seed)
    lead = (shape.batch,) if shape.batch > 1 else ()
    sa = lead + ((shape.k, shape.m) if shape.ta else (shape.m, shape.k))
    sb = lead + ((shape.n, shape.k) if shape.tb else (shape.k, shape.n))
    a = [rng.standard_normal(sa, dtype=cupy.float32) for _ in range(n_sets)]
    b = [rng.standard_normal(sb, dtype=cupy.float32) for _ in range(n_sets)]
    inp = Inputs(shape, a, b)
    a64 = inp.op(a[0], shape.ta).astype(cupy.float64)
    b64 = inp.op(b[0], shape.tb).astype(cupy.float64)
    inp.ref = cupy.matmul(a64, b64)
    del a64, b64
    inp.ref_norm = float(cupy.linalg.norm(inp.ref.ravel()))
    return inp


def rel_error(out, inp: Inputs) -> float:
    """||out - ref||_F / ||ref||_F in float64; NaN/Inf anywhere gives inf."""
    import cupy
    o = cupy.asarray(out)
    if o.shape != inp.ref.shape:
        raise CheckFailed(f"output shape {o.shape} != expected {inp.ref.shape}")
    if not bool(cupy.isfinite(o).all()):
        return math.inf
    d = float(cupy.linalg.norm((o.astype(cupy.float64) - inp.ref).ravel()))
    return d / inp.ref_norm if inp.ref_norm else d


def rel_error_host(out: np.ndarray, inp: Inputs) -> float:
    import cupy
    return rel_error(cupy.asarray(out), inp)


# -- timing ---------------------------------------------------------------------------
_SPIN_SRC = r"""
extern "C" __global__ void sgemm_bench_spin(unsigned long long ns) {
    // Busy-wait on the global timer: holds the stream while the host queues
    // the timed launches, so their start is not paced by the Python launch path.
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""
_spin_kernel = None


def spin(stream, seconds: float) -> None:
    global _spin_kernel
    import cupy
    if _spin_kernel is None:
        _spin_kernel = cupy.RawKernel(_SPIN_SRC, "sgemm_bench_spin")
    with stream:
        _spin_kernel((1,), (1,), (np.uint64(int(seconds * 1e9)),))


@dataclass
class Timing:
    samples_ms: list = field(default_factory=list)   # per launch, one per sample
    inner: int = 1
    host_launch_s: float = 0.0


def _events():
    import cupy
    return cupy.cuda.Event(), cupy.cuda.Event()


def estimate(launch, stream, n_sets: int) -> tuple[float, float]:
    """(GPU seconds per launch, host seconds per launch) from a short warm-up."""
    import cupy
    stream.synchronize()
    e0, e1 = _events()
    e0.record(stream)
    t0 = time.perf_counter()
    for i in range(WARMUP_LAUNCHES):
        launch(i % n_sets)
    host = (time.perf_counter() - t0) / WARMUP_LAUNCHES
    e1.record(stream)
    e1.synchronize()
    gpu = cupy.cuda.get_elapsed_time(e0, e1) / 1e3 / WARMUP_LAUNCHES
    return gpu, host


def time_launches(launch, stream, n_sets: int, repeat: int, graphs: bool) -> Timing:
    """Median-ready samples of one launch's GPU time, in ms."""
    import cupy
    gpu_s, host_s = estimate(launch, stream, n_sets)
    inner = int(min(MAX_INNER, max(1, math.ceil(TARGET_SAMPLE_S / max(gpu_s, 1e-7)))))
    if n_sets > 1:
        # every sample cycles through whole rotations, so each set is used equally
        inner = max(inner, n_sets)
    sample_s = inner * gpu_s
    repeat = max(MIN_REPEAT, min(repeat, int(POINT_BUDGET_S / max(sample_s, 1e-9))))
    t = Timing(inner=inner, host_launch_s=host_s)
    graph = None
    if graphs:
        stream.begin_capture()
        try:
            for j in range(inner):
                launch(j % n_sets)
        finally:
            graph = stream.end_capture()
        if hasattr(graph, "upload"):
            graph.upload(stream)
        graph.launch(stream)           # warm the graph once
    # enough spin to cover queueing the sample on the host, plus slack
    spin_s = min(0.05, (1 if graphs else inner) * host_s * 1.5 + 50e-6)
    k = 0
    for _ in range(repeat):
        e0, e1 = _events()
        spin(stream, spin_s)
        e0.record(stream)
        if graph is not None:
            graph.launch(stream)
        else:
            for _j in range(inner):
                launch(k % n_sets)
                k += 1
        e1.record(stream)
        e1.synchronize()
        t.samples_ms.append(cupy.cuda.get_elapsed_time(e0, e1) / inner)
    return t


def time_host(fn, repeat: int) -> Timing:
    """Host (CPU BLAS) timing: perf_counter around each call, one warm-up."""
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    repeat = max(3, min(repeat, int(POINT_BUDGET_S / max(one, 1e-9))))
    t = Timing()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.samples_ms.append((time.perf_counter() - t0) * 1e3)
    return t


def quartiles(samples) -> tuple[float, float, float]:
    """(q1, median, q3) with linear interpolation (numpy's default)."""
    q1, med, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 50, 75])
    return float(q1), float(med), float(q3)
