"""Programmatic dependent launch is only safe for a kernel that waits on
griddepcontrol before its first global access (common.cuh, pdl_wait).  The
launcher turns it on for every spec whose ``uses_pdl`` is true, so check the
sources: between the opening brace of each such kernel and its first
SGEMM_BATCH_OFFSET() / sg::pdl_wait() there may only be declarations."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgemm.kernels import registry
from sgemm.kernels.spec import KernelSpec
from sgemm.runtime import launcher
from sgemm.runtime.device import DeviceInfo

CUDA_DIR = Path(registry.__file__).resolve().parent / "cuda"
WAIT = re.compile(r"SGEMM_BATCH_OFFSET\(\)|sg::pdl_wait\(\)")
# statements allowed before the wait: compile-time and shared-memory declarations
DECL = re.compile(r"^(constexpr|static_assert|__shared__|extern __shared__|using|"
                  r"const (s\d+::)?\w+(<[^;]*>)? tile;?$)")


def _pdl_specs() -> list[KernelSpec]:
    from sgemm.kernels import schemes, utility
    specs = list(registry.KERNELS.values()) + schemes.UTILITY_SPECS + utility.UTILITY
    return [s for s in specs if s.uses_pdl]


def _body_before_wait(source: str, function: str) -> str | None:
    name = function.split("<")[0]
    m = re.search(r"__global__[^{;]*?\b" + re.escape(name) + r"\s*\(", source, re.S)
    if m is None:
        return None
    brace = source.index("{", m.end())
    w = WAIT.search(source, brace)
    return source[brace + 1: w.start()] if w else ""


def test_every_ieee_kernel_uses_pdl_and_the_tensor_core_ones_do_not():
    names = {s.name for s in _pdl_specs()}
    assert {"double_buffer", "tile", "small", "splitk", "gemv", "gemv_wide",
            "splitk_fused", "scale", "splitk_reduce", "splitk_reduce_vec"} <= names
    assert not any(s.precision != "ieee" for s in _pdl_specs())


@pytest.mark.parametrize("spec", _pdl_specs(), ids=lambda s: s.name)
def test_kernel_waits_before_any_global_access(spec):
    source = (CUDA_DIR / spec.source).read_text()
    before = _body_before_wait(source, spec.function)
    assert before is not None, f"{spec.function} not found in {spec.source}"
    assert WAIT.search(source), f"{spec.source} never calls pdl_wait"
    bad = _non_declarations(before)
    assert not bad, f"{spec.name}: statements before the griddepcontrol wait: {bad}"


def _non_declarations(code: str) -> list[str]:
    code = re.sub(r'"[^"\n]*"', '""', re.sub(r"//[^\n]*", "", code))   # comments, strings
    stmts = [" ".join(s.split()) for s in code.split(";")]
    return [s for s in stmts if s and not DECL.match(s)]


def test_the_source_check_catches_an_early_access():
    src = """template <int N> __global__ void __launch_bounds__(N) k(float* C) {
        constexpr int X = N; // fine
        static_assert(X > 0, "a; b");
        C[threadIdx.x] = 0.0f;
        SGEMM_BATCH_OFFSET();
    }"""
    assert _non_declarations(_body_before_wait(src, "k<128>")) == ["C[threadIdx.x] = 0.0f"]


def test_launcher_enables_pdl_only_on_hopper(monkeypatch):
    spec = registry.get("tile")
    h100 = DeviceInfo(0, "H100", (9, 0), 132, 232448, 233472, 52428800, 1980000, 2619000,
                      5120, 85 << 30)
    a100 = DeviceInfo(0, "A100", (8, 0), 108, 167936, 166912, 41943040, 1410000, 1593000,
                      5120, 40 << 30)
    monkeypatch.delenv("SGEMM_PDL", raising=False)
    assert launcher.pdl_enabled(spec, h100)
    assert not launcher.pdl_enabled(spec, a100)
    assert not launcher.pdl_enabled(registry.get("tf32x3_wgmma"), h100)
    monkeypatch.setenv("SGEMM_PDL", "0")
    assert not launcher.pdl_enabled(spec, h100)
