"""NVRTC's version for the cache key, read without loading the library
(sgemm/runtime/compiler.py: _nvrtc_version_on_disk) where that is certain,
and corrected by a compile where it was not."""
from __future__ import annotations

import pytest

from sgemm.runtime import compiler


def test_read_from_disk_agrees_with_the_library():
    pytest.importorskip("cuda.bindings.nvrtc")
    on_disk = compiler._nvrtc_version_on_disk()
    if on_disk is None:
        pytest.skip("no NVRTC wheel here: the version is read from the library")
    assert on_disk == compiler._nvrtc_version_loaded()


def _wheel(tmp_path, builtins, dist_infos, soname="libnvrtc.so.13"):
    site = tmp_path / "site-packages"
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (lib / soname).write_bytes(b"")
    for b in builtins:
        (lib / f"libnvrtc-builtins.so.{b}").write_bytes(b"")
    for d in dist_infos:
        (site / f"{d}.dist-info").mkdir()
    return str(site), str(lib)


@pytest.mark.parametrize("builtins, dist_infos, want", [
    (["13.5"], ["nvidia_cuda_nvrtc-13.5.37"], (13, 5)),
    (["12.8"], ["nvidia_cuda_nvrtc_cu12-12.8.93"], None),     # builtins of another major
    (["13.5", "13.4"], ["nvidia_cuda_nvrtc-13.5.37"], None),  # which one is it?
    (["13.5"], ["nvidia_cuda_nvrtc-13.4.1"], None),           # the metadata disagrees
    (["13.5"], [], None),                                     # no metadata
    (["13.5"], ["nvidia_cuda_nvrtc-13.5.37", "nvidia_cuda_nvrtc-13.4.1"], None),
])
def test_wheel_version_only_when_unambiguous(tmp_path, builtins, dist_infos, want):
    site, lib = _wheel(tmp_path, builtins, dist_infos)
    assert compiler._wheel_nvrtc_version(site, lib, 13) == want


def test_site_packages_wheel_is_found_first(tmp_path, monkeypatch):
    import site as site_mod
    site, _ = _wheel(tmp_path, ["13.5"], ["nvidia_cuda_nvrtc-13.5.37"])
    monkeypatch.setattr(site_mod, "getsitepackages", lambda: [site])
    monkeypatch.setattr(site_mod, "ENABLE_USER_SITE", False)
    monkeypatch.setattr(compiler, "_NVRTC_SONAMES", ("libnvrtc-not-loaded.so.13",
                                                     "libnvrtc.so.13"))
    import ctypes
    real = ctypes.CDLL

    def no_loaded_nvrtc(name, mode=0, *a, **k):     # nothing counts as already loaded
        if "nvrtc" in str(name):
            raise OSError(name)
        return real(name, mode, *a, **k)
    monkeypatch.setattr(ctypes, "CDLL", no_loaded_nvrtc)
    assert compiler._nvrtc_version_on_disk() == (13, 5)


def test_a_compile_corrects_a_wrong_version(monkeypatch):
    """Where the version read from disk was not the loaded library's, the
    compile keys its result by the library's, and so does everything after."""
    monkeypatch.setattr(compiler, "_nvrtc", [(13, 1)])
    monkeypatch.setattr(compiler, "_nvrtc_version_loaded", lambda: (13, 5))
    before = compiler.cache_key("01_naive.cu", "f<1>", "sm_90a")
    compiler._check_nvrtc_version()
    assert compiler.nvrtc_version() == (13, 5)
    assert compiler.cache_key("01_naive.cu", "f<1>", "sm_90a") != before
