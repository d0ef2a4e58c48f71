"""Build hook: a wheel carries the prebuilt kernels (sgemm/build.py).

Everything else about the package is in pyproject.toml.  Building a wheel
(``pip wheel .``, ``python -m build``) first runs ``python -m sgemm.build``,
which compiles the manifest with NVRTC -- no GPU needed; pyproject's
build-system requirements bring NVRTC -- into sgemm/_bundle, and package
data puts that directory in the wheel.  The build is incremental and reuses
the kernel cache, so a rebuild with the same NVRTC and sources compiles
nothing.  Editable installs skip it (run ``python -m sgemm.build`` to give
one a bundle).  ``SGEMM_BUNDLE_BUILD=0`` builds a wheel without kernels.
See docs/first-call.md.
"""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithKernels(build_py):
    def run(self):
        off = os.environ.get("SGEMM_BUNDLE_BUILD", "1") in ("0", "off", "no")
        if not off and not getattr(self, "editable_mode", False):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
            cmd = [sys.executable, "-m", "sgemm.build", "--out",
                   os.path.join(ROOT, "sgemm", "_bundle")]
            if subprocess.run(cmd, cwd=ROOT, env=env).returncode:
                raise SystemExit("building the kernel bundle failed (python -m sgemm.build); "
                                 "SGEMM_BUNDLE_BUILD=0 builds a wheel without it")
        super().run()


setup(cmdclass={"build_py": BuildPyWithKernels})
