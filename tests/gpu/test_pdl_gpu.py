"""Programmatic dependent launch on the GPU: chains of GEMMs where each one
reads the previous one's output, launched back to back (eager and inside a
CUDA graph), so a kernel that touched memory before its griddepcontrol wait
would read a half-written operand.  Every scheme the small-problem path
uses, against an fp64 chain; on pre-Hopper GPUs the same chains run without
PDL and must pass too."""
from __future__ import annotations

import numpy as np
import pytest

import sgemm
from sgemm.runtime import launcher

from .reference import rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

# (m=n=k, kernel): the small path, split-K (two launches), fused split-K, the
# tile kernel, rung 9, gemv (n = 1 handled by its own shape below)
CASES = [(128, "auto"), (384, "auto"), (512, "auto"), (512, "splitk"), (384, "splitk_fused"),
         (256, "tile"), (256, "small"), (512, "double_buffer"), (512, "splitk_cluster"),
         (384, "splitk_cluster")]
STEPS = 12


def _chain_inputs(n, seed):
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((n, n)).astype(np.float32)
    # orthogonal-ish steps (entries N(0, 1/n)) keep the chain's scale near 1
    bs = [(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(STEPS)]
    ref = x0.astype(np.float64)
    for b in bs:
        ref = ref @ b.astype(np.float64)
    return x0, bs, ref


def _run_chain(xs, bs, kernel, stream):
    plans = [sgemm.plan(xs[i], bs[i], xs[i + 1], kernel=kernel) for i in range(STEPS)]
    for p in plans:
        p.execute(stream=stream)
    return plans


@pytest.mark.parametrize("n,kernel", CASES)
def test_dependent_chain_eager_and_graph(n, kernel):
    if kernel == "splitk_cluster" and int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("thread-block clusters need sm_90")
    x0, bs, ref = _chain_inputs(n, seed=n)
    xs = [cp.asarray(x0)] + [cp.full((n, n), cp.nan, dtype=cp.float32) for _ in range(STEPS)]
    dbs = [cp.asarray(b) for b in bs]
    s = cp.cuda.Stream(non_blocking=True)
    plans = _run_chain(xs, dbs, kernel, s)
    s.synchronize()
    tol = 1e-5 * STEPS
    assert rel_err(xs[-1], ref) < tol, (n, kernel, rel_err(xs[-1], ref))
    if any(id(l.kernel) in launcher._pdl for l in plans[0].launches):
        assert cp.cuda.Device().compute_capability >= "90"
    # the same chain captured in a graph, replayed over poisoned outputs
    s.begin_capture()
    for p in plans:
        p.execute(stream=s)
    g = s.end_capture()
    for _ in range(3):
        for x in xs[1:]:
            x.fill(cp.nan)
        cp.cuda.Device().synchronize()
        g.launch(s)
        s.synchronize()
        assert rel_err(xs[-1], ref) < tol, (n, kernel, "graph")


def test_pdl_is_on_for_ffma_kernels_on_hopper():
    a = cp.ones((256, 256), dtype=cp.float32)
    p = sgemm.plan(a, a, kernel="tile")
    on = id(p.launches[0].kernel) in launcher._pdl
    major = int(cp.cuda.Device().compute_capability[:-1])
    import os
    assert on == (major >= 9 and os.environ.get("SGEMM_PDL", "1") != "0")
