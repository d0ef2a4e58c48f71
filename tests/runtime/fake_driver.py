"""A stand-in for cuda.bindings.driver, for running a whole first call on a
machine without a GPU (tests/runtime/test_loading.py).

``install()`` puts it in place of the real module before sgemm imports it:
the real module's types and enums (CUlaunchConfig, CUkernel, CUresult, ...)
show through, and the calls that need a driver and a device answer as an
H100 would and record what they were asked (``calls``).  Loading a cubin
records its bytes and returns a made-up handle; launching records the grid.
Nothing runs on a GPU, so the results are meaningless: the point is which
calls are made and what gets imported while making them.
"""
from __future__ import annotations

import sys
import types

H100 = {    # CU_DEVICE_ATTRIBUTE_<name>: value, an H100 SXM's
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
    "MULTIPROCESSOR_COUNT": 132, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
    "MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
    "L2_CACHE_SIZE": 52428800, "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 2619000,
    "GLOBAL_MEMORY_BUS_WIDTH": 5120,
}
NAME = b"NVIDIA H100 80GB HBM3"

calls: dict[str, list] = {}


class _Driver(types.ModuleType):
    def __getattr__(self, name):
        return getattr(self._real, name)


def install(attributes: dict | None = None) -> types.ModuleType:
    """Replace cuda.bindings.driver (sys.modules and the package attribute).
    ``attributes`` overrides H100's; None makes one unknown to the driver."""
    import cuda.bindings
    import cuda.bindings.driver as real
    attrs = dict(H100, **(attributes or {}))
    ok = real.CUresult.CUDA_SUCCESS
    state = {"ctx": 0}
    fake = _Driver("cuda.bindings.driver")
    fake._real = real

    def record(name, *args):
        calls.setdefault(name, []).append(args)

    def define(f):
        setattr(fake, f.__name__, f)
        return f

    @define
    def cuInit(flags):
        record("cuInit", flags)
        return (ok,)

    @define
    def cuDeviceGetCount():
        return (ok, 1)

    @define
    def cuDeviceGet(ordinal):
        return (ok, real.CUdevice(ordinal))

    @define
    def cuDeviceGetName(length, dev):
        return (ok, NAME.ljust(length, b"\0"))

    @define
    def cuDeviceGetAttribute(attr, dev):
        name = attr.name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        if attrs.get(name) is None:             # not known to this driver
            return (real.CUresult.CUDA_ERROR_INVALID_VALUE, 0)
        return (ok, attrs[name])

    @define
    def cuDeviceTotalMem(dev):
        return (ok, 80 * 2**30)

    @define
    def cuDevicePrimaryCtxRetain(dev):
        record("cuDevicePrimaryCtxRetain", int(dev))
        return (ok, real.CUcontext(0x5000 + int(dev)))

    @define
    def cuCtxSetCurrent(ctx):
        record("cuCtxSetCurrent", int(ctx))
        state["ctx"] = int(ctx)
        return (ok,)

    @define
    def cuCtxGetCurrent():
        return (ok, real.CUcontext(state["ctx"]))

    @define
    def cuPointerGetAttribute(attr, ptr):
        return (ok, 0)

    @define
    def cuLibraryLoadData(code, *options):
        record("cuLibraryLoadData", bytes(code))
        return (ok, real.CUlibrary(0x6000 + len(calls["cuLibraryLoadData"])))

    @define
    def cuLibraryGetKernel(library, name):
        record("cuLibraryGetKernel", int(library), name)
        return (ok, real.CUkernel(0x7000 + len(calls["cuLibraryGetKernel"])))

    @define
    def cuKernelSetAttribute(attr, value, kernel, dev):
        record("cuKernelSetAttribute", attr.name, value, int(kernel))
        return (ok,)

    @define
    def cuOccupancyMaxActiveClusters(func, config):
        attrs = [(a.id.name, (a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z))
                 for a in config.attrs[:config.numAttrs]]
        record("cuOccupancyMaxActiveClusters", int(func),
               (config.gridDimX, config.gridDimY, config.gridDimZ), config.blockDimX, attrs)
        return (ok, 16)

    @define
    def cuLaunchKernelEx(config, func, params, extra):
        record("cuLaunchKernelEx", int(func),
               (config.gridDimX, config.gridDimY, config.gridDimZ), config.blockDimX)
        return (ok,)

    sys.modules["cuda.bindings.driver"] = fake
    cuda.bindings.driver = fake
    return fake


class Blocker:
    """A meta-path finder that makes importing the named packages fail (and
    remembers the attempts): a blocked import on the path under test is an
    error there, not a silent success."""

    def __init__(self, *names: str):
        self.names, self.attempts = names, []

    def find_spec(self, name, path=None, target=None):
        if any(name == n or name.startswith(n + ".") for n in self.names):
            self.attempts.append(name)
            raise ModuleNotFoundError(f"{name} is blocked in this test", name=name)
        return None


class CudaArray:
    """A float32 device array in name only: __cuda_array_interface__ with a
    made-up address (C order)."""

    def __init__(self, shape, ptr):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": "<f4",
                                         "data": (ptr, False), "strides": None, "version": 3}
