"""Every registered kernel instantiation compiles for every arch it targets
with no spills and no stack frame.  NVRTC needs no GPU, so this runs in CI."""
import json
import os

import pytest

from sgemm.kernels.registry import KERNELS
from sgemm.kernels.utility import UTILITY
from sgemm.runtime.compiler import compile_kernel

SPECS = list(KERNELS.values()) + UTILITY
CASES = [(s, arch) for s in SPECS for arch in s.archs]
RESOURCES = {}


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
        RESOURCES[f"{expr} {arch}"] = r


def test_record_resources(tmp_path):
    """Write what ptxas reported (SGEMM_RESOURCES_OUT, default a temp file)."""
    out = os.environ.get("SGEMM_RESOURCES_OUT", str(tmp_path / "resources.json"))
    with open(out, "w") as f:
        json.dump(RESOURCES, f, indent=1, sort_keys=True)
    assert os.path.getsize(out) > 2


def test_registry_consistent():
    ids = [s.id for s in KERNELS.values()]
    assert len(ids) == len(set(ids))
    for s in KERNELS.values():
        assert s.configs, s.name
        assert os.path.exists(os.path.join(os.path.dirname(__import__("sgemm").__file__),
                                           "kernels", "cuda", s.source)), s.source
        for f in s.template_fields:
            assert f in s.configs[next(iter(s.configs))].as_dict(), (s.name, f)
