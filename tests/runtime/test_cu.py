"""The ctypes driver layer (sgemm/runtime/cu.py) without a GPU: structure
layouts against cuda.h, enum values, and a launch's configuration as the
driver receives it (through the stand-in libcuda of fake_driver.py)."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sgemm.runtime import cu

HERE = Path(__file__).resolve().parent

# Derived from cuda.h (CUDA 12.0-13.x), LP64: CUlaunchConfig is seven
# unsigned ints (28 bytes), padding to 32, CUstream hStream at 32,
# CUlaunchAttribute *attrs at 40, unsigned numAttrs at 48, padded to 56.
# CUlaunchAttribute is CUlaunchAttributeID id (4), char pad[8 - 4], then the
# 64-byte union CUlaunchAttributeValue, 8-aligned (its CUaccessPolicyWindow
# holds a void *): value at 8, 72 in all.
LAYOUT = {
    "sizeof(CUlaunchConfig)": 56, "offsetof(CUlaunchConfig, sharedMemBytes)": 24,
    "offsetof(CUlaunchConfig, hStream)": 32, "offsetof(CUlaunchConfig, attrs)": 40,
    "offsetof(CUlaunchConfig, numAttrs)": 48,
    "sizeof(CUlaunchAttribute)": 72, "offsetof(CUlaunchAttribute, value)": 8,
    "sizeof(CUlaunchAttributeValue)": 64, "_Alignof(CUlaunchAttributeValue)": 8,
    "sizeof(CUdevice)": 4, "sizeof(CUdeviceptr)": 8, "sizeof(CUresult)": 4,
}
ENUMS = dict({f"CU_DEVICE_ATTRIBUTE_{k}": v for k, v in cu.DEVICE_ATTRIBUTES.items()},
             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8,
             CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL=9,
             CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION=4,
             CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION=6,
             CUDA_ERROR_INVALID_VALUE=1)


def _ours() -> dict:
    C, A, V = cu.LaunchConfig, cu.LaunchAttribute, cu.LaunchAttributeValue
    return {
        "sizeof(CUlaunchConfig)": ctypes.sizeof(C),
        "offsetof(CUlaunchConfig, sharedMemBytes)": C.sharedMemBytes.offset,
        "offsetof(CUlaunchConfig, hStream)": C.hStream.offset,
        "offsetof(CUlaunchConfig, attrs)": C.attrs.offset,
        "offsetof(CUlaunchConfig, numAttrs)": C.numAttrs.offset,
        "sizeof(CUlaunchAttribute)": ctypes.sizeof(A), "offsetof(CUlaunchAttribute, value)":
        A.value.offset, "sizeof(CUlaunchAttributeValue)": ctypes.sizeof(V),
        "_Alignof(CUlaunchAttributeValue)": ctypes.alignment(V),
        "sizeof(CUdevice)": ctypes.sizeof(ctypes.c_int),
        "sizeof(CUdeviceptr)": ctypes.sizeof(ctypes.c_uint64),
        "sizeof(CUresult)": ctypes.sizeof(ctypes.c_int),
    }


def test_layouts_match_the_numbers_derived_from_cuda_h():
    assert _ours() == LAYOUT
    ours = {"CU_DEVICE_ATTRIBUTE_" + k: v for k, v in cu.DEVICE_ATTRIBUTES.items()}
    assert all(ENUMS[k] == v for k, v in ours.items())
    assert (cu.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, cu.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            cu.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            cu.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) == (4, 9, 8, 6)
    # the union's members sgemm sets sit at its start
    assert cu.LaunchAttributeValue.clusterDim.offset == 0
    assert cu.LaunchAttributeValue.programmaticStreamSerializationAllowed.offset == 0


def _cuda_h() -> Path | None:
    for root in sorted(Path("/usr/local").glob("cuda*/include"), reverse=True):
        if (root / "cuda.h").is_file():
            return root
    return None


def test_layouts_and_enums_match_the_installed_cuda_h(tmp_path):
    """Compiled against the real header where one and a C compiler exist."""
    inc, cc = _cuda_h(), shutil.which("cc") or shutil.which("gcc")
    if inc is None or cc is None:
        pytest.skip("no cuda.h or no C compiler")
    lines = [f'printf("%s %ld\\n", "{k}", (long)({k}));' for k in list(LAYOUT) + list(ENUMS)]
    src = tmp_path / "layout.c"
    src.write_text("#include <stdio.h>\n#include <stddef.h>\n#include <cuda.h>\nint main(void){"
                   + "\n".join(lines) + "return 0;}\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", f"-I{inc}", str(src), "-o", str(exe)], check=True,
                   capture_output=True)
    out = dict(line.rsplit(" ", 1) for line in
               subprocess.run([str(exe)], check=True, capture_output=True,
                              text=True).stdout.splitlines())
    header = {k: int(v) for k, v in out.items()}
    assert {k: header[k] for k in LAYOUT} == _ours() == LAYOUT
    assert {k: header[k] for k in ENUMS} == ENUMS


@pytest.fixture
def fake():
    sys.path.insert(0, str(HERE))
    import fake_driver as F
    F.calls.clear()
    lib = F.install()
    yield F
    F.calls.clear()
    F.fail.clear()
    cu.use(None)
    del lib


class _Kernel:
    handle = 0x7001
    name = "k<1>"

    def __repr__(self):
        return f"<LoadedKernel {self.name}>"


@pytest.mark.parametrize("pdl", [False, True])
def test_prepared_launch_hands_the_driver_its_configuration(fake, pdl):
    from sgemm.runtime import launcher
    k = _Kernel()
    if pdl:
        launcher._pdl.add(id(k))
    try:
        args = (np.int32(64), np.float32(2.0), 2**36, 0)
        p = launcher.PreparedLaunch(k, (3, 2, 1), 256, 1024, args, relocs=((2, 0, 16),))
    finally:
        launcher._pdl.discard(id(k))
    p(0x1234, [2**40])
    p(0x1234, [2**41])
    (func, grid, block, smem, stream, attrs), again = fake.calls["cuLaunchKernelEx"]
    assert (func, grid, block, smem, stream) == (0x7001, (3, 2, 1), 256, 1024, 0x1234)
    assert attrs == ([("CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION", 1)] if pdl
                     else [])
    assert again == (func, grid, block, smem, stream, attrs)
    assert p._slots[2] == 2**41 + 16


def test_a_failed_launch_raises_device_error_naming_the_kernel(fake):
    from sgemm.errors import DeviceError
    from sgemm.runtime import launcher
    p = launcher.PreparedLaunch(_Kernel(), (1, 1, 1), 32, 0, (0,))
    fake.fail["cuLaunchKernelEx"] = 1
    with pytest.raises(DeviceError, match=r"cuLaunchKernelEx failed for .*k<1>.*"
                                          r"CUDA_ERROR_INVALID_VALUE \(1\)"):
        p(0)


def test_device_queries_and_memory_calls(fake):
    assert cu.device_count() == 1
    dev = cu.device_get(0)
    assert cu.device_name(dev) == "NVIDIA H100 80GB HBM3"
    assert cu.device_attribute("MULTIPROCESSOR_COUNT", dev) == 132
    assert cu.device_total_mem(dev) == 80 * 2**30
    assert cu.pointer_device(2**40) == 0
    cu.memset_d32(2**40, 0, 17)
    cu.ctx_synchronize()
    assert fake.calls["cuMemsetD32"] == [(2**40, 0, 17)] and fake.calls["cuCtxSynchronize"]
    fake.fail["cuPointerGetAttribute"] = 1
    assert cu.pointer_device(2**40) is None        # not the driver's: the caller's default


def test_no_driver_is_a_device_error(monkeypatch):
    from sgemm.errors import DeviceError
    cu.use(None)
    monkeypatch.setattr(cu, "LIBRARY", "libcuda-that-is-not-there.so.1")
    with pytest.raises(DeviceError, match="no CUDA driver"):
        cu.lib()
    from sgemm.runtime import device
    device.device_count.cache_clear()
    try:
        assert device.device_count() == 0
    finally:
        device.device_count.cache_clear()
