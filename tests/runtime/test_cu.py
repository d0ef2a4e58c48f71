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


# A C stand-in for libcuda compiled against the installed cuda.h, loaded with
# ctypes.CDLL as libcuda is: the argtypes, the unprototyped per-call entry
# points and the structures go through a C compiler's view of the header.
_STUB = r"""
#include <string.h>
#include <cuda.h>
unsigned g_grid[3], g_block[3], g_smem, g_nattrs, g_attr_id, g_attr_val[3];
unsigned long long g_stream, g_func, g_arg0, g_memset[3];
int g_launches;
static const char *names[] = {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"};
CUresult cuGetErrorName(CUresult e, const char **s) {
    if (e > 1) return CUDA_ERROR_INVALID_VALUE; *s = names[e]; return CUDA_SUCCESS; }
CUresult cuInit(unsigned f) { return f ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 2; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int i) { *d = i; return CUDA_SUCCESS; }
CUresult cuDeviceGetName(char *s, int len, CUdevice d) {
    strncpy(s, "Stub GPU", len); return CUDA_SUCCESS; }
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = (size_t)80 << 30; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    if (a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) { *v = 132 + d; return CUDA_SUCCESS; }
    return CUDA_ERROR_INVALID_VALUE; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    *c = (CUcontext)(0x5000ull + d); return CUDA_SUCCESS; }
static CUcontext current;
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult cuLibraryLoadData(CUlibrary *l, const void *code, CUjit_option *o, void **ov,
                           unsigned no, CUlibraryOption *lo, void **lov, unsigned nlo) {
    if (no || nlo || memcmp(code, "cubin", 5)) return CUDA_ERROR_INVALID_VALUE;
    *l = (CUlibrary)0x6000ull; return CUDA_SUCCESS; }
CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name) {
    if (strcmp(name, "_Z1kv")) return CUDA_ERROR_NOT_FOUND;
    *k = (CUkernel)((unsigned long long)l + 1); return CUDA_SUCCESS; }
CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) {
    return a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && v > 0
           ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { return CUDA_SUCCESS; }
static void record(const CUlaunchConfig *c) {
    g_grid[0] = c->gridDimX; g_grid[1] = c->gridDimY; g_grid[2] = c->gridDimZ;
    g_block[0] = c->blockDimX; g_block[1] = c->blockDimY; g_block[2] = c->blockDimZ;
    g_smem = c->sharedMemBytes; g_stream = (unsigned long long)c->hStream;
    g_nattrs = c->numAttrs; g_attr_id = c->numAttrs ? c->attrs[0].id : 0;
    if (c->numAttrs && c->attrs[0].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        g_attr_val[0] = c->attrs[0].value.clusterDim.x; g_attr_val[1] = c->attrs[0].value.clusterDim.y;
        g_attr_val[2] = c->attrs[0].value.clusterDim.z;
    } else if (c->numAttrs) {
        g_attr_val[0] = c->attrs[0].value.programmaticStreamSerializationAllowed; } }
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c) {
    record(c); *n = 7; return CUDA_SUCCESS; }
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    if (extra) return CUDA_ERROR_INVALID_VALUE;
    record(c); g_func = (unsigned long long)f; g_arg0 = *(unsigned long long *)params[0];
    g_launches++; return CUDA_SUCCESS; }
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) {
    if (a != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL || p < (1ull << 40)) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = 1; return CUDA_SUCCESS; }
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
    g_memset[0] = p; g_memset[1] = v; g_memset[2] = n; return CUDA_SUCCESS; }
"""


@pytest.fixture
def stub(tmp_path):
    inc, cc = _cuda_h(), shutil.which("cc") or shutil.which("gcc")
    if inc is None or cc is None:
        pytest.skip("no cuda.h or no C compiler")
    src, so = tmp_path / "stub.c", tmp_path / "libcudastub.so"
    src.write_text(_STUB)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", f"-I{inc}", str(src), "-o", str(so)],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(so))
    cu.use(lib)
    yield lib
    cu.use(None)


def test_a_c_library_through_the_prototypes(stub):
    """The calls as made to a real shared library (argtypes, the unchecked
    per-call entry points, out-parameters, structures read by C code)."""
    from sgemm.errors import DeviceError
    from sgemm.runtime import launcher
    g = lambda name, t=ctypes.c_uint: t.in_dll(stub, name).value        # noqa: E731
    assert cu.device_count() == 2 and cu.device_get(1) == 1
    assert cu.device_name(0) == "Stub GPU" and cu.device_total_mem(0) == 80 << 30
    assert cu.device_attribute("MULTIPROCESSOR_COUNT", 1) == 133
    assert cu.device_attribute("L2_CACHE_SIZE", 0) is None
    ctx = cu.primary_ctx_retain(1)
    cu.ctx_set_current(ctx)
    assert ctx == 0x5001 and cu.ctx_get_current() == 0x5001
    library = cu.library_load_data(b"cubin\0with\0NULs")
    assert cu.library_get_kernel(library, b"_Z1kv") == 0x6001
    with pytest.raises(DeviceError, match=r"cuLibraryGetKernel \(x\) failed: CUresult 500"):
        cu.library_get_kernel(library, b"_Z1xv", " (x)")
    cu.kernel_set_attribute(cu.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200000,
                            0x6001, 0)
    assert cu.pointer_device(1 << 40) == 1 and cu.pointer_device(4096) is None
    cu.memset_d32(1 << 41, 0, 5)
    assert list((ctypes.c_uint64 * 3).in_dll(stub, "g_memset")) == [1 << 41, 0, 5]

    cfg = cu.launch_config((1, 1, 36), (256, 1, 1), 1024, 0, [cu.cluster_attribute(1, 1, 6)])
    assert cu.occupancy_max_active_clusters(0x6001, cfg) == 7
    assert g("g_attr_id") == 4 and list((ctypes.c_uint * 3).in_dll(stub, "g_attr_val")) == [1, 1, 6]

    class K:
        handle, name = 0x6001, "k"
    k = K()
    launcher._pdl.add(id(k))
    try:
        p = launcher.PreparedLaunch(k, (5, 4, 3), 128, 4096, (2**40 + 8, np.int32(3)),
                                    relocs=((0, 0, 8),))
    finally:
        launcher._pdl.discard(id(k))
    p(0xABC, [2**41])
    assert list((ctypes.c_uint * 3).in_dll(stub, "g_grid")) == [5, 4, 3]
    assert list((ctypes.c_uint * 3).in_dll(stub, "g_block")) == [128, 1, 1]
    assert (g("g_smem"), g("g_stream", ctypes.c_uint64), g("g_func", ctypes.c_uint64)) == \
        (4096, 0xABC, 0x6001)
    assert (g("g_nattrs"), g("g_attr_id"), g("g_attr_val")) == (1, 6, 1)      # PDL allowed
    assert g("g_arg0", ctypes.c_uint64) == 2**41 + 8                         # relocated
    p(0)
    assert g("g_stream", ctypes.c_uint64) == 0 and g("g_launches", ctypes.c_int) == 2
