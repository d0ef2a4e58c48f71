"""``import sgemm`` is cheap: no CUDA work, no NumPy, CuPy, cuda.core or the
bench tools until they are used, and well under the 0.25 s budget
(docs/first-call.md).  Each check runs in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "cupy", "cuda", "torch", "matplotlib", "sgemm.bench", "sgemm.runtime",
         "sgemm.kernels", "sgemm.api", "sgemm.plan_cache")


def _python(code: str) -> str:
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def test_import_loads_nothing_heavy():
    r = _python("import sys, sgemm; print(' '.join(sorted(sys.modules)))")
    loaded = r.stdout.split()
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert not heavy, f"import sgemm loaded {heavy}"


def test_import_time_budget():
    """sgemm's own cumulative import time (python -X importtime), best of 3."""
    best = None
    for _ in range(3):
        r = _python("import sgemm")
        row = [l for l in r.stderr.splitlines() if l.rstrip().endswith("| sgemm")]
        us = int(row[-1].split("|")[1])
        best = us if best is None else min(best, us)
    assert best < 250_000, f"import sgemm took {best / 1e6:.3f} s"


def test_public_names_load_on_use():
    r = _python("import sgemm, sgemm.plan, sys\n"
                "assert callable(sgemm.plan) and not isinstance(sgemm.plan, type(sys))\n"
                "assert sgemm.Plan.__name__ == 'Plan' and 'tile' in sgemm.KERNELS\n"
                "assert sgemm.blas.sgemm and sgemm.gemm and sgemm.matmul and sgemm.gemm_batched\n"
                "assert sys.modules['sgemm.plan'].Plan is sgemm.Plan\n"
                "from sgemm import *\n"
                "assert gemm is sgemm.gemm and issubclass(ArgumentError, SgemmError)\n"
                "import sgemm.runtime.compiler\n"
                "assert sgemm.runtime.compiler.cache_dir()\n"
                "try:\n    sgemm.no_such_name\nexcept AttributeError:\n    pass\n"
                "else:\n    raise SystemExit('no AttributeError')\n")
    assert r.returncode == 0
