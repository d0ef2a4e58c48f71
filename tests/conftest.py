"""Markers: `gpu` tests skip cleanly where no CUDA GPU is visible; `sm90`
tests also need compute capability 9.0 or newer (thread-block clusters).

No test module touches CUDA when it is imported: device queries live in
fixtures and in the skip conditions below, which look at the device only
where sgemm sees one (tests/test_gpu_modules_import.py checks this with CuPy
importable and no device)."""
import os
import shutil
import tempfile

import pytest


def _has_gpu() -> bool:
    from sgemm.runtime.device import has_gpu
    return has_gpu()


def _compute_capability() -> tuple[int, int]:
    from sgemm.runtime.device import info
    return info(0).cc


def pytest_collection_modifyitems(config, items):
    if not _has_gpu():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible)")
        for item in items:
            if ("gpu" in item.keywords or "multigpu" in item.keywords
                    or item.get_closest_marker("sm90")):
                item.add_marker(skip)
        return
    sm90 = [item for item in items if item.get_closest_marker("sm90")]
    if sm90 and _compute_capability() < (9, 0):
        skip = pytest.mark.skip(reason="thread-block clusters need sm_90")
        for item in sm90:
            item.add_marker(skip)


def _kernel_cache_dir(config):
    """The suite's own kernel cache, kept between runs like a user's
    (~/.cache/sgemm): under pytest's cache directory (.pytest_cache), one per
    NVRTC and cuda-core release (the cache key holds NVRTC's major.minor
    only).  A run with -p no:cacheprovider gets an empty temporary one."""
    from importlib import metadata
    versions = []
    for dist in ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12", "cuda-core"):
        try:
            versions.append(f"{dist}-{metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    cache = getattr(config, "cache", None)
    if cache is None:
        path = tempfile.mkdtemp(prefix="sgemm-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(path, ignore_errors=True))
        return path
    return str(cache.mkdir("sgemm-kernels-" + "-".join(versions)))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sm90: needs compute capability 9.0 or newer (skipped elsewhere)")
    # Tests compile into the suite's kernel cache unless one is set (before
    # collection, so that subprocesses and collection-time compiles use it too).
    if "SGEMM_CACHE_DIR" not in os.environ:
        os.environ["SGEMM_CACHE_DIR"] = _kernel_cache_dir(config)
    # The cache tests need kernels to reach the disk cache: a prebuilt bundle
    # in the checkout would serve them first (tests/test_bundle.py turns it on).
    os.environ.setdefault("SGEMM_BUNDLE", "0")
