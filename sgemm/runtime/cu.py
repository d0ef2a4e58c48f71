"""The CUDA driver calls sgemm makes once a kernel is compiled, through ctypes.

Loading a kernel from the bundle or the disk cache, querying the device and
launching need about twenty driver entry points.  Reaching them through
cuda.bindings cost a process's first call 33 ms of import in CuPy's
environment and ~120 ms in PyTorch's, where it also imports cuda.pathfinder
(docs/notes/first-call.md); with this module instead, the whole first call
took 27-28 ms on the H100 (the same notes, 2026-11-26).  cuda.core and
cuda.bindings remain for NVRTC (a cache miss).

Every function raises DeviceError naming the call and the CUresult (name from
cuGetErrorName, and number).  Handles (CUcontext, CUlibrary, CUkernel,
CUstream) are plain ints.  The structures mirror cuda.h (CUDA 12 and 13: the
layout of CUlaunchConfig and CUlaunchAttribute is the same in both);
tests/runtime/test_cu.py checks their sizes and offsets against the header
where one is installed, and against the numbers derived from it otherwise.

``use(lib)`` replaces the library: anything with an attribute per symbol of
``PROTOTYPES`` taking the C arguments (tests/runtime/fake_driver.py builds
one from ctypes callbacks, so the arguments are marshalled as for libcuda).
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import POINTER, c_char, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

from ..errors import DeviceError

# enum values from cuda.h (stable across CUDA 12 and 13)
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
DEVICE_ATTRIBUTES = {       # CU_DEVICE_ATTRIBUTE_<name>
    "MAX_SHARED_MEMORY_PER_BLOCK": 8, "CLOCK_RATE": 13, "MULTIPROCESSOR_COUNT": 16,
    "MEMORY_CLOCK_RATE": 36, "GLOBAL_MEMORY_BUS_WIDTH": 37, "L2_CACHE_SIZE": 38,
    "COMPUTE_CAPABILITY_MAJOR": 75, "COMPUTE_CAPABILITY_MINOR": 76,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 81, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
}
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class Dim3(ctypes.Structure):
    _fields_ = [("x", c_uint), ("y", c_uint), ("z", c_uint)]


class LaunchAttributeValue(ctypes.Union):
    """CUlaunchAttributeValue: a 64-byte union whose largest-aligned member
    (CUaccessPolicyWindow) holds a pointer, so it is 8-byte aligned; only the
    members sgemm sets are named."""
    _fields_ = [("pad", c_char * 64), ("_align", c_uint64), ("clusterDim", Dim3),
                ("programmaticStreamSerializationAllowed", c_int)]


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: the id, padding to 8 bytes, the value union."""
    _fields_ = [("id", c_int), ("pad", c_char * 4), ("value", LaunchAttributeValue)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("gridDimX", c_uint), ("gridDimY", c_uint), ("gridDimZ", c_uint),
                ("blockDimX", c_uint), ("blockDimY", c_uint), ("blockDimZ", c_uint),
                ("sharedMemBytes", c_uint), ("hStream", c_void_p),
                ("attrs", POINTER(LaunchAttribute)), ("numAttrs", c_uint)]


def launch_config(grid, block, smem: int, stream: int, attrs=()) -> LaunchConfig:
    """A CUlaunchConfig; ``attrs`` is kept alive by the returned object."""
    cfg = LaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = (int(g) for g in grid)
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = (int(b) for b in block)
    cfg.sharedMemBytes = int(smem)
    cfg.hStream = stream or None
    if attrs:
        arr = (LaunchAttribute * len(attrs))(*attrs)
        cfg._keep = arr              # the driver reads attrs through the pointer
        cfg.attrs = ctypes.cast(arr, POINTER(LaunchAttribute))
        cfg.numAttrs = len(attrs)
    return cfg


def cluster_attribute(x: int, y: int, z: int) -> LaunchAttribute:
    a = LaunchAttribute()
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = x, y, z
    return a


def pdl_attribute() -> LaunchAttribute:
    a = LaunchAttribute()
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    a.value.programmaticStreamSerializationAllowed = 1
    return a


_p = c_void_p
# symbol -> argument types (every one returns CUresult, an int).  Versioned
# symbols are the ones cuda.h's macros name: the unversioned cuMemsetD32 and
# cuDeviceTotalMem are the 32-bit ones of CUDA 3.x.
PROTOTYPES: dict[str, tuple] = {
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuInit": (c_uint,),
    "cuDeviceGetCount": (POINTER(c_int),),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDeviceGetName": (_p, c_int, c_int),
    "cuDeviceTotalMem_v2": (POINTER(c_size_t), c_int),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuDevicePrimaryCtxRetain": (POINTER(_p), c_int),
    "cuCtxSetCurrent": (_p,),
    "cuCtxGetCurrent": (POINTER(_p),),
    "cuCtxSynchronize": (),
    "cuLibraryLoadData": (POINTER(_p), _p, _p, _p, c_uint, _p, _p, c_uint),
    "cuLibraryGetKernel": (POINTER(_p), _p, c_char_p),
    "cuKernelSetAttribute": (c_int, c_int, _p, c_int),
    "cuFuncSetAttribute": (_p, c_int, c_int),
    "cuOccupancyMaxActiveClusters": (POINTER(c_int), _p, _p),
    "cuLaunchKernelEx": (_p, _p, _p, _p),
    "cuPointerGetAttribute": (_p, c_int, c_uint64),
    "cuMemsetD32_v2": (c_uint64, c_uint, c_size_t),
}

UNCHECKED = ("cuLaunchKernelEx", "cuCtxGetCurrent")

LIBRARY = "libcuda.so.1"


class _Lib:
    """The bound entry points, one attribute per symbol."""


_ready: list = [None]      # the _Lib once cuInit succeeded on it: the per-call path reads this
_chosen: list = [None]     # a library handed to use(), not yet initialised
_load_lock = threading.Lock()


def _bind(raw) -> _Lib:
    out = _Lib()
    for name, argtypes in PROTOTYPES.items():
        f = getattr(raw, name)
        if isinstance(raw, ctypes.CDLL):
            f.argtypes, f.restype = argtypes, c_int
        setattr(out, name, f)
    # The per-call entry points again, without argtypes: their callers pass
    # ready ctypes objects (c_void_p, byref(...), a pointer object, or None
    # for NULL), which ctypes then hands over as they are instead of calling
    # a converter per argument (bench/results/ctypes-call-cpu-2026-11-26.log:
    # 0.84 against 1.27 us a call with a byref, 0.66 against 0.74 with four
    # pointers, on the CPU machine).  Anything else would be passed as
    # a C int, so only the calls below use them.
    for name in UNCHECKED:
        setattr(out, name + "_unchecked", raw._FuncPtr((name, raw))
                if isinstance(raw, ctypes.CDLL) else getattr(out, name))
    return out


def use(raw) -> None:
    """Make ``raw`` the driver (None: libcuda again); cuInit is called on it
    at its first use."""
    with _load_lock:
        _ready[0] = None
        _chosen[0] = None if raw is None else _bind(raw)


def lib() -> _Lib:
    """The driver's entry points, loaded and cuInit'ed once."""
    bound = _ready[0]
    if bound is not None:
        return bound
    with _load_lock:
        if _ready[0] is None:
            bound = _chosen[0]
            if bound is None:
                try:
                    raw = ctypes.CDLL(LIBRARY)
                except OSError as e:
                    raise DeviceError(f"no CUDA driver: {LIBRARY} could not be loaded "
                                      f"({e})") from None
                try:
                    bound = _bind(raw)
                except AttributeError as e:
                    raise DeviceError("the CUDA driver is too old for sgemm (CUDA 12 or "
                                      f"newer is needed): {e}") from None
                _chosen[0] = bound
            check(bound.cuInit(0), "cuInit", bound)
            _ready[0] = bound
    return _ready[0]


def error_name(code: int, lib_=None) -> str:
    """CUDA_ERROR_... for a CUresult, or 'CUresult N' where the driver has none."""
    s = c_char_p()
    try:
        f = (lib_ or _ready[0] or _chosen[0]).cuGetErrorName
        if f(int(code), ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
    except Exception:
        pass
    return f"CUresult {int(code)}"


def check(err: int, what: str, lib_=None) -> None:
    """Raise DeviceError for a failed driver call, naming the call and the
    CUresult: 'cuLibraryLoadData failed: CUDA_ERROR_INVALID_IMAGE (200)'."""
    if err:
        raise DeviceError(f"{what} failed: {error_name(err, lib_)} ({int(err)})")


# ---- device and context -------------------------------------------------

def device_count() -> int:
    n = c_int()
    check(lib().cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    return n.value


def device_get(ordinal: int) -> int:
    d = c_int()
    check(lib().cuDeviceGet(ctypes.byref(d), int(ordinal)), "cuDeviceGet")
    return d.value


def device_name(dev: int) -> str:
    buf = ctypes.create_string_buffer(256)
    check(lib().cuDeviceGetName(buf, 256, dev), "cuDeviceGetName")
    return buf.value.decode(errors="replace")


def device_total_mem(dev: int) -> int:
    n = c_size_t()
    check(lib().cuDeviceTotalMem_v2(ctypes.byref(n), dev), "cuDeviceTotalMem")
    return n.value


def device_attribute(name: str, dev: int) -> int | None:
    """CU_DEVICE_ATTRIBUTE_<name>; None where this driver does not know it
    (CUDA_ERROR_INVALID_VALUE)."""
    v = c_int()
    err = lib().cuDeviceGetAttribute(ctypes.byref(v), DEVICE_ATTRIBUTES[name], dev)
    if err == CUDA_ERROR_INVALID_VALUE:
        return None
    check(err, f"cuDeviceGetAttribute({name})")
    return v.value


def primary_ctx_retain(dev: int) -> int:
    ctx = c_void_p()
    check(lib().cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    return ctx.value or 0


def ctx_set_current(ctx: int) -> None:
    check(lib().cuCtxSetCurrent(ctx or None), "cuCtxSetCurrent")


def ctx_get_current() -> int:
    """The calling thread's current context (0: none).  Every plan execution
    asks it (device.make_current)."""
    ctx = c_void_p()
    check((_ready[0] or lib()).cuCtxGetCurrent_unchecked(ctypes.byref(ctx)), "cuCtxGetCurrent")
    return ctx.value or 0


def ctx_synchronize() -> None:
    check(lib().cuCtxSynchronize(), "cuCtxSynchronize")


# ---- loading --------------------------------------------------------------

def library_load_data(image: bytes, what: str = "") -> int:
    """A CUlibrary for a cubin (no JIT or library options)."""
    libh = c_void_p()
    check(lib().cuLibraryLoadData(ctypes.byref(libh), image, None, None, 0, None, None, 0),
          "cuLibraryLoadData" + what)
    return libh.value


def library_get_kernel(library: int, name: bytes, what: str = "") -> int:
    k = c_void_p()
    check(lib().cuLibraryGetKernel(ctypes.byref(k), library, name), "cuLibraryGetKernel" + what)
    return k.value


def kernel_set_attribute(attr: int, value: int, kernel: int, dev: int, what: str = "") -> None:
    check(lib().cuKernelSetAttribute(attr, int(value), kernel, dev), "cuKernelSetAttribute" + what)


def func_set_attribute(func: int, attr: int, value: int) -> None:
    check(lib().cuFuncSetAttribute(func, attr, int(value)), "cuFuncSetAttribute")


def occupancy_max_active_clusters(func: int, cfg: LaunchConfig, what: str = "") -> int:
    n = c_int()
    check(lib().cuOccupancyMaxActiveClusters(ctypes.byref(n), func, ctypes.addressof(cfg)),
          "cuOccupancyMaxActiveClusters" + what)
    return n.value


# ---- memory ---------------------------------------------------------------

def pointer_device(ptr: int) -> int | None:
    """The device ordinal a pointer belongs to; None where the driver does
    not know the pointer (host memory, say)."""
    d = c_int()
    try:
        err = lib().cuPointerGetAttribute(ctypes.byref(d), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                          int(ptr))
    except DeviceError:         # no driver: the launch that follows says so
        return None
    return d.value if err == 0 else None


def memset_d32(ptr: int, value: int, count: int) -> None:
    check(lib().cuMemsetD32_v2(int(ptr), int(value), int(count)), "cuMemsetD32")
