"""GPU tests skip cleanly without a GPU in all three ways a machine lacks one:
CuPy absent, CuPy installed with no usable driver, a driver with no device.

A GPU test module that asks the device at import (``cp.cuda.Device()`` in a
module-level constant, a parametrize list or a skipif condition) imports fine
where CuPy is missing -- ``pytest.importorskip`` skips it first -- but fails
collection where CuPy is installed and the driver is not: the README's main
command installs CuPy, so that is every user's CPU machine.  CPU-only CI, with
no CuPy, cannot see it.  Here each case runs pytest in a fresh interpreter on
every test module (``-m "gpu or multigpu or sm90"`` imports all of them and
runs the GPU ones) with ``CUDA_VISIBLE_DEVICES=""`` (no device, also on a GPU
machine) and, where CuPy is not the real one, a stand-in ``cupy`` on
``sys.path`` that imports fine and raises CUDARuntimeError on any device query,
as CuPy does without a driver.  Every GPU test must be skipped, nothing may
error or fail."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

_STUB = textwrap.dedent('''
    """Stand-in CuPy for tests/test_gpu_modules_import.py: imports, and any
    call, conversion or iteration of anything under it raises like CuPy
    without a device."""
    import os

    _ERR = os.environ["SGEMM_STUB_CUPY"]
    if _ERR == "absent":
        raise ModuleNotFoundError("No module named 'cupy'", name="cupy")


    class CUDARuntimeError(RuntimeError):
        pass


    class _Device:
        def __init__(self, path):
            self._path = path

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Device(self._path + "." + name)

        def _fail(self, *a, **k):
            raise CUDARuntimeError(_ERR + " (" + self._path + ")")

        __call__ = __int__ = __index__ = __float__ = __bool__ = __iter__ = __len__ = _fail
        __getitem__ = __add__ = __radd__ = __mul__ = __rmul__ = __lt__ = __ge__ = _fail


    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Device("cupy." + name)
''')

_CASES = {
    "cupy-absent": "absent",
    "cupy-no-driver": "cudaErrorInsufficientDriver: CUDA driver version is insufficient "
                      "for CUDA runtime version",
    "cupy-no-device": "cudaErrorNoDevice: no CUDA-capable device is detected",
}


def _real_cupy() -> bool:
    return importlib.util.find_spec("cupy") is not None


@pytest.mark.parametrize("case", [*_CASES, pytest.param("real-cupy-no-device", marks=(
    pytest.mark.skipif(not _real_cupy(), reason="CuPy is not installed here")))])
def test_gpu_tests_skip_cleanly_with_no_device(case, tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
    path = [str(ROOT)]
    if case in _CASES:
        (tmp_path / "cupy").mkdir()
        (tmp_path / "cupy" / "__init__.py").write_text(_STUB)
        env["SGEMM_STUB_CUPY"] = _CASES[case]
        path.insert(0, str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("SGEMM_CACHE_DIR", str(tmp_path / "cache"))
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-m", "gpu or multigpu or sm90", "-o", "addopts=", "-rfE", str(TESTS)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    tail = out[-4000:]
    last = out.strip().splitlines()[-1] if out.strip() else ""
    assert r.returncode == 0, f"{case}: pytest exit {r.returncode}\n{tail}"
    assert re.search(r"\d+ skipped", last), f"{case}: {last}"
    for word in ("passed", "failed", "error", "xpassed"):
        assert not re.search(rf"\d+ {word}", last), f"{case}: {last}\n{tail}"
