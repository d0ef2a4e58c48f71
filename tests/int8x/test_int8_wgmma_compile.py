"""42_int8_wgmma.cu compiles with NVRTC, no GPU needed: every registered
config for sm_90a with no spills and no stack frame (narrow within the 128
registers its two blocks an SM need), its PTX issues the s8 wgmma forms,
the async-proxy fence and cp.async with zero-fill, and for the other archs
(which the bundle builder compiles every utility kernel for) it builds as a
trap-only stub."""
from __future__ import annotations

import pytest

from sgemm.kernels import utility as U
from sgemm.runtime.compiler import compile_kernel
from tests.kernels.test_int8_mma import _ptx

SPEC = U.INT8X_WGMMA


@pytest.mark.parametrize("config", sorted(SPEC.configs))
def test_int8_wgmma_compiles_without_spills(config):
    p = SPEC.configs[config]
    r = compile_kernel(SPEC.source, SPEC.name_expression(p), "sm_90a").resources()
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack"] == 0, r
    assert r["registers"] is not None and r["registers"] <= 255, r
    if p.BN <= 128:                 # __launch_bounds__(256, 2): two blocks an SM
        assert r["registers"] <= 128, r
    assert r["smem"] == 0           # all shared memory is dynamic


@pytest.mark.parametrize("config", sorted(SPEC.configs))
def test_ptx_holds_the_s8_wgmma_path(config):
    p = SPEC.configs[config]
    ptx = _ptx(SPEC.source, SPEC.name_expression(p), "sm_90a")
    form = f"wgmma.mma_async.sync.aligned.m64n{p.BN}k32.s32.s8.s8"
    assert ptx.count(form) >= 4, form            # four k32 steps a k-tile
    assert "wgmma.fence.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned" in ptx
    assert "fence.proxy.async.shared::cta" in ptx
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    assert "rem.s32" in ptx                       # the deep-K fold modulo p
    assert "mma.sync" not in ptx
    # no module-scope symbols: NVRTC names them per process (the enum in the source)
    assert ".global .align" not in ptx


def test_other_archs_get_a_trap_only_stub():
    p = SPEC.configs["default"]
    ptx = _ptx(SPEC.source, SPEC.name_expression(p), "sm_80")
    assert "trap;" in ptx and "wgmma.mma_async" not in ptx and "cp.async" not in ptx
