"""41_int8_mma.cu (the integer engine's INT8 GEMM) compiles with NVRTC, no
GPU needed: every registered config for sm_80, sm_86, sm_89 and sm_90a with
no spills and no stack frame, within the register and shared-memory budget
its config promises, and its PTX issues the instructions the design rests
on (mma.sync s8 m16n8k32, ldmatrix, cp.async with zero-fill)."""
from __future__ import annotations

import pytest

from sgemm.kernels import utility as U
from sgemm.kernels.spec import SMEM_LIMIT
from sgemm.runtime.compiler import KERNEL_DIR, compile_kernel

SPEC = U.INT8X_GEMM
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90a")
CASES = [(c, a) for c in SPEC.configs for a in ARCHS]


@pytest.mark.parametrize("config,arch", CASES, ids=[f"{c}-{a}" for c, a in CASES])
def test_int8_mma_compiles_without_spills(config, arch):
    p = SPEC.configs[config]
    r = compile_kernel(SPEC.source, SPEC.name_expression(p), arch).resources()
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack"] == 0, r
    assert r["registers"] is not None and r["registers"] <= 255, r
    if config == "default":
        # 2 blocks of 256 threads an SM: at most 128 registers a thread
        assert r["registers"] <= 128, r
    cc = int(arch[3:5])
    assert r["smem"] == 0                         # all shared memory is dynamic
    assert SPEC.dynamic_smem(p) <= SMEM_LIMIT[cc]


def test_archs_match_the_registration():
    assert set(SPEC.archs) == set(ARCHS) and SPEC.min_cc == 80


def test_ptx_holds_the_int8_tensor_core_path():
    """Compile to PTX and look for the instructions: a refactor that
    silently fell back to another MMA shape or to plain loads fails."""
    ptx = _ptx(SPEC.source, SPEC.name_expression(SPEC.configs["default"]), "sm_80")
    assert ptx.count("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32") >= 16
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    assert "rem.s32" in ptx                        # the deep-K fold modulo p


def _ptx(source: str, expr: str, arch: str) -> str:
    """PTX from NVRTC directly (cuda.core's PTX target queries the driver,
    which a CPU-only machine lacks)."""
    from cuda.bindings import nvrtc

    def ok(ret):
        err, *rest = ret
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
        return rest[0] if rest else None

    code = (KERNEL_DIR / source).read_bytes()
    prog = ok(nvrtc.nvrtcCreateProgram(code, source.encode(), 0, [], []))
    ok(nvrtc.nvrtcAddNameExpression(prog, expr.encode()))
    opts = [b"--std=c++17", f"--gpu-architecture={arch}".encode(), b"-default-device",
            f"-I{KERNEL_DIR}".encode()]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = ok(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise AssertionError(log.decode())
    size = ok(nvrtc.nvrtcGetPTXSize(prog))
    buf = b" " * size
    ok(nvrtc.nvrtcGetPTX(prog, buf))
    nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode(errors="replace")
