"""A stand-in for libcuda, for running a whole first call on a machine
without a GPU (tests/runtime/test_loading.py, bench/probes/first_call.py).

``install()`` hands sgemm's ctypes driver layer (sgemm/runtime/cu.py) a
library of ctypes callbacks built from its own prototypes, so every argument
is marshalled as it is for libcuda (structures passed by address, outputs
written through pointers).  The calls that need a device answer as an H100
would and record what they were asked (``calls``).  Loading a cubin records
its bytes and returns a made-up handle; launching records the grid.  Nothing
runs on a GPU, so the results are meaningless: the point is which calls are
made and what gets imported while making them.  It imports neither
cuda.bindings nor cuda.core.
"""
from __future__ import annotations

import ctypes

H100 = {    # CU_DEVICE_ATTRIBUTE_<name>: value, an H100 SXM's
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
    "MULTIPROCESSOR_COUNT": 132, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
    "MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
    "L2_CACHE_SIZE": 52428800, "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 2619000,
    "GLOBAL_MEMORY_BUS_WIDTH": 5120,
}
NAME = b"NVIDIA H100 80GB HBM3"
ERRORS = {0: b"CUDA_SUCCESS", 1: b"CUDA_ERROR_INVALID_VALUE", 200: b"CUDA_ERROR_INVALID_IMAGE",
          500: b"CUDA_ERROR_NOT_FOUND"}
LAUNCH_ATTRIBUTES = {4: "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION",
                     6: "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"}
FUNC_ATTRIBUTES = {8: "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"}

calls: dict[str, list] = {}
fail: dict[str, int] = {}       # symbol -> CUresult it returns instead (tests set it)


class _Lib:
    pass


def _attrs(cfg) -> list:
    return [(LAUNCH_ATTRIBUTES.get(a.id, a.id),
             (a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z)
             if a.id == 4 else a.value.programmaticStreamSerializationAllowed)
            for a in cfg.attrs[:cfg.numAttrs]]


def install(attributes: dict | None = None, record_launches: bool = True):
    """Make the stand-in sgemm's driver.  ``attributes`` overrides H100's;
    None makes one unknown to the driver.  Returns the library object (its
    attributes are the ctypes callbacks)."""
    from sgemm.runtime import cu
    attrs = dict(H100, **(attributes or {}))
    ids = {v: k for k, v in cu.DEVICE_ATTRIBUTES.items()}
    state = {"ctx": 0}
    handlers = {}
    keep = {}          # callback objects and strings handed out must stay alive

    def record(name, *args):
        calls.setdefault(name, []).append(args)

    def define(f):
        handlers[f.__name__] = f
        return f

    @define
    def cuGetErrorName(code, out):
        if code not in ERRORS:
            return 1
        out[0] = ERRORS[code]
        return 0

    @define
    def cuInit(flags):
        record("cuInit", flags)
        return 0

    @define
    def cuDeviceGetCount(out):
        out[0] = 1
        return 0

    @define
    def cuDeviceGet(out, ordinal):
        out[0] = ordinal
        return 0

    @define
    def cuDeviceGetName(buf, length, dev):
        ctypes.memmove(buf, NAME + b"\0", min(length, len(NAME) + 1))
        return 0

    @define
    def cuDeviceGetAttribute(out, attr, dev):
        name = ids.get(attr)
        if attrs.get(name) is None:             # not known to this driver
            return 1
        out[0] = attrs[name]
        return 0

    @define
    def cuDeviceTotalMem_v2(out, dev):
        out[0] = 80 * 2**30
        return 0

    @define
    def cuDevicePrimaryCtxRetain(out, dev):
        record("cuDevicePrimaryCtxRetain", dev)
        out[0] = 0x5000 + dev
        return 0

    @define
    def cuCtxSetCurrent(ctx):
        record("cuCtxSetCurrent", ctx or 0)
        state["ctx"] = ctx or 0
        return 0

    @define
    def cuCtxGetCurrent(out):
        out[0] = state["ctx"] or None
        return 0

    @define
    def cuCtxSynchronize():
        record("cuCtxSynchronize")
        return 0

    @define
    def cuPointerGetAttribute(data, attr, ptr):
        ctypes.c_int.from_address(data).value = 0
        return 0

    @define
    def cuMemsetD32_v2(ptr, value, count):
        record("cuMemsetD32", ptr, value, count)
        return 0

    @define
    def cuLibraryLoadData(out, code, *options):
        record("cuLibraryLoadData", ctypes.string_at(code))    # made-up cubins hold no NUL
        out[0] = 0x6000 + len(calls["cuLibraryLoadData"])
        return 0

    @define
    def cuLibraryGetKernel(out, library, name):
        record("cuLibraryGetKernel", library, name)
        out[0] = 0x7000 + len(calls["cuLibraryGetKernel"])
        return 0

    @define
    def cuKernelSetAttribute(attr, value, kernel, dev):
        record("cuKernelSetAttribute", FUNC_ATTRIBUTES.get(attr, attr), value, kernel)
        return 0

    @define
    def cuFuncSetAttribute(func, attr, value):
        record("cuFuncSetAttribute", func, FUNC_ATTRIBUTES.get(attr, attr), value)
        return 0

    @define
    def cuOccupancyMaxActiveClusters(out, func, config):
        cfg = cu.LaunchConfig.from_address(config)
        record("cuOccupancyMaxActiveClusters", func,
               (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ), cfg.blockDimX, _attrs(cfg))
        out[0] = 16
        return 0

    @define
    def cuLaunchKernelEx(config, func, params, extra):
        if record_launches:
            cfg = cu.LaunchConfig.from_address(config)
            record("cuLaunchKernelEx", func, (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                   cfg.blockDimX, cfg.sharedMemBytes, cfg.hStream or 0, _attrs(cfg))
        return 0

    lib = _Lib()
    for name, argtypes in cu.PROTOTYPES.items():
        def call(*args, _f=handlers[name], _name=name):
            if _name in fail:
                return fail[_name]
            return _f(*args)
        cb = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(call)
        keep[name] = cb
        setattr(lib, name, cb)
    lib._keep = keep
    cu.use(lib)
    return lib


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



class CoreStandIn:
    """A meta-path finder whose ``cuda.core`` holds only what the split-K
    workspace asks of it (launches.allocate_workspace without CuPy):
    Device(i).set_current() and Device(i).allocate(n), a buffer whose handle
    is a made-up address.  Everything else of cuda.core stays missing."""

    def __init__(self, base: int = 1 << 44):
        self.base = base

    def find_spec(self, name, path=None, target=None):
        if name != "cuda.core":
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(name, self, is_package=False)

    def create_module(self, spec):
        import types
        mod, finder = types.ModuleType(spec.name), self

        class Buffer:
            def __init__(self, handle, size):
                self.handle, self.size = handle, size

        class Device:
            def __init__(self, ordinal=0):
                self.device_id = ordinal

            def set_current(self):
                return None

            def allocate(self, size):
                finder.base += -(-size // 256) * 256 + 256
                return Buffer(finder.base, size)
        mod.Device, mod.Buffer = Device, Buffer
        return mod

    def exec_module(self, module):
        return None


class CudaArray:
    """A float32 device array in name only: __cuda_array_interface__ with a
    made-up address (C order)."""

    def __init__(self, shape, ptr):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": "<f4",
                                         "data": (ptr, False), "strides": None, "version": 3}
