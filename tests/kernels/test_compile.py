"""Every registered kernel instantiation compiles for every arch it targets
with no spills and no stack frame.  NVRTC needs no GPU, so this runs in CI."""
import os

import pytest

from sgemm.kernels.registry import KERNELS
from sgemm.kernels.utility import UTILITY
from sgemm.runtime.compiler import compile_kernel

SPECS = list(KERNELS.values()) + UTILITY
CASES = [(s, arch) for s in SPECS for arch in s.archs]


@pytest.mark.parametrize("spec,arch", CASES, ids=[f"{s.name}-{a}" for s, a in CASES])
def test_compiles_without_spills(spec, arch):
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
    (python scripts/resources.py) fails here."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "kernel-resources.md")
    with open(path) as f:
        listed = {(cols[3].strip("` "), cols[4].strip())
                  for cols in (line.split("|") for line in f if line.startswith("| "))
                  if len(cols) > 5}
    want = {(s.name_expression(p, ta, tb, al), arch)
            for s in SPECS for _, p, ta, tb, al in s.instantiations() for arch in s.archs}
    missing = sorted(want - listed)
    assert not missing, f"{len(missing)} not in docs/kernel-resources.md, e.g. {missing[:3]}"


def test_registry_consistent():
    ids = [s.id for s in KERNELS.values()]
    assert len(ids) == len(set(ids))
    for s in KERNELS.values():
        assert s.configs, s.name
        assert os.path.exists(os.path.join(os.path.dirname(__import__("sgemm").__file__),
                                           "kernels", "cuda", s.source)), s.source
        for f in s.template_fields:
            assert f in s.configs[next(iter(s.configs))].as_dict(), (s.name, f)
