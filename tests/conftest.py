"""Markers: `gpu` tests skip cleanly where no CUDA GPU is visible."""
import os

import pytest


def _has_gpu() -> bool:
    from sgemm.runtime.device import has_gpu
    return has_gpu()


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible)")
    for item in items:
        if "gpu" in item.keywords or "multigpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Tests compile into a private kernel cache unless one is set."""
    if "SGEMM_CACHE_DIR" not in os.environ:
        os.environ["SGEMM_CACHE_DIR"] = str(tmp_path_factory.mktemp("sgemm-cache"))
    yield
