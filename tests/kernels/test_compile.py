"""Every registered kernel instantiation compiles for every arch it targets
with no spills and no stack frame.  NVRTC needs no GPU, so this runs in CI."""
import os

import pytest

from sgemm.kernels.registry import KERNELS
from sgemm.kernels.utility import UTILITY
from sgemm.runtime import compiler
from sgemm.runtime.compiler import compile_kernel

SPECS = list(KERNELS.values()) + UTILITY
CASES = [(s, arch) for s in SPECS for arch in s.archs]


@pytest.fixture(scope="module")
def compiled(request):
    """Compile each instantiation the selected tests check once, on every
    core (sgemm.tune.compile_all: spawned processes), into the session's disk
    kernel cache (tests/conftest.py); the tests then read ptxas's reports from
    it, as a user's process reads its cache."""
    from sgemm.tune import compile_all
    items = set()
    for item in request.session.items:
        cs = getattr(item, "callspec", None)
        if getattr(item, "originalname", None) == "test_compiles_without_spills" and cs:
            spec, arch = cs.params["spec"], cs.params["arch"]
            items.update((spec.source, spec.name_expression(p, ta, tb, al), arch)
                         for _, p, ta, tb, al in spec.instantiations())
    compile_all(sorted(items))


@pytest.mark.parametrize("spec,arch", CASES, ids=[f"{s.name}-{a}" for s, a in CASES])
def test_compiles_without_spills(spec, arch, compiled):
    for cname, p, ta, tb, al in spec.instantiations():
        assert not spec.can_implement(p), (cname, spec.can_implement(p))
        expr = spec.name_expression(p, ta, tb, al)
        r = compile_kernel(spec.source, expr, arch).resources()
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, (expr, arch, r)
        assert r["stack"] == 0, (expr, arch, r)
        assert r["registers"] is not None and r["registers"] <= 255
        assert r["smem"] + spec.dynamic_smem(p) <= 227 * 1024


def test_resources_table_lists_every_instantiation():
    """docs/kernel-resources.md records registers and shared memory of every
    instantiation; a kernel or config added without regenerating it
    (python -m sgemm.bench.resources) fails here."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "kernel-resources.md")
    with open(path) as f:
        listed = {(cols[3].strip("` "), cols[4].strip())
                  for cols in (line.split("|") for line in f if line.startswith("| "))
                  if len(cols) > 5}
    want = {(s.name_expression(p, ta, tb, al), arch)
            for s in SPECS for _, p, ta, tb, al in s.instantiations() for arch in s.archs}
    missing = sorted(want - listed)
    assert not missing, f"{len(missing)} not in docs/kernel-resources.md, e.g. {missing[:3]}"


def test_registers_json_matches_the_table():
    """sgemm/data/registers.json (the cost model's occupancy) holds, for every
    planner kernel's config and arch, the most registers the resources table
    lists for it; regenerated with the table, so the two cannot drift."""
    import json
    from pathlib import Path
    from sgemm import cost
    from sgemm.bench.resources import REGISTERS, table_registers
    table = Path(__file__).resolve().parents[2] / "docs" / "kernel-resources.md"
    shipped = json.loads(REGISTERS.read_text())
    assert shipped == table_registers(table)
    for spec in KERNELS.values():
        for p in spec.configs.values():
            for arch in spec.archs:
                assert cost.register_key(spec, p) in shipped[arch], (spec.name, p, arch)


def test_occupancy_reads_compiled_registers():
    """The 256x64 tile compiles to 221-231 registers at 128 threads: two
    blocks an SM, where accumulators + 40 (168) would say three."""
    from sgemm import cost
    from sgemm.tune import DEVICE_MODELS
    spec, dev = KERNELS["double_buffer"], DEVICE_MODELS["h100"]
    p = spec.configs["tall64"]
    assert cost.compiled_registers(spec, p, dev) > 200
    assert cost.resident(spec, p, dev) == 2
    assert cost.resident(spec, p, dev, regs=168) == 3
    a100 = DEVICE_MODELS["a100"]
    assert cost.compiled_registers(spec, p, a100) is not None


def test_registry_consistent():
    ids = [s.id for s in KERNELS.values()]
    assert len(ids) == len(set(ids))
    for s in KERNELS.values():
        assert s.configs, s.name
        assert os.path.exists(os.path.join(os.path.dirname(__import__("sgemm").__file__),
                                           "kernels", "cuda", s.source)), s.source
        for f in s.template_fields:
            assert f in s.configs[next(iter(s.configs))].as_dict(), (s.name, f)


class _Program:
    """cuda.core.Program stand-in: ptxas reports from a script, one per compile."""
    reports: list = []

    def __init__(self, *a, **k):
        pass

    def compile(self, target, name_expressions=(), logs=None):
        stack, spill = self.reports.pop(0)
        logs.write(f"ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
                   f"ptxas         .     {stack} bytes stack frame, {spill} bytes spill stores, "
                   f"{spill} bytes spill loads\nptxas info    : Used 128 registers\n")
        return type("Obj", (), {"code": bytes([stack, spill]), "symbol_mapping": {}})()


@pytest.mark.parametrize("draws,kept", [([(0, 0)], (0, 0)),
                                        ([(8, 4), (0, 0)], (0, 0)),
                                        ([(8, 8), (8, 4), (16, 8)], (8, 4))])
def test_a_draw_with_local_memory_is_compiled_again(monkeypatch, draws, kept):
    """ptxas sometimes allocates the same PTX differently in a process that
    has compiled before (compiler.LOCAL_MEMORY_DRAWS): a draw that spills is
    compiled again and the one with the least local memory kept."""
    import cuda.core
    monkeypatch.setattr(cuda.core, "Program", _Program)
    monkeypatch.setattr(_Program, "reports", list(draws))
    c = compiler.nvrtc_compile("01_naive.cu", "sgemm_naive<8, 8, false, false>", "sm_90a")
    assert tuple(c.cubin) == kept and not _Program.reports
    r = c.resources()
    assert (r["stack"], r["spill_stores"]) == kept
