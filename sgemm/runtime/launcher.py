"""Load compiled kernels and launch them on the caller's stream.

Cubins are loaded through cuda.bindings' driver API (cuLibraryLoadData and
cuLibraryGetKernel, as cuda.core's ObjectCode does), so a call whose kernels
come from the bundle or the disk cache never imports cuda.core: that import
was half of a process's first call (docs/first-call.md).  Plans and the plan
cache, which launch the same arguments again and again, pack them once into a
PreparedLaunch and call cuLaunchKernelEx directly.  ``launch`` goes through
cuda.core.launch, and SGEMM_LAUNCH=core sends plans there too (A/B runs)."""
from __future__ import annotations

import array
import threading

from ..errors import DeviceError
from ..kernels.params import TileParams
from ..kernels.spec import KernelSpec
from ..problem import Problem
from .compiler import Compiled, compile_kernel
from .device import DeviceInfo, check, ensure_bindings, ensure_imports, make_current

_loaded: dict[tuple, object] = {}
_lock = threading.Lock()
_streams: dict[int, object] = {}
_configs: dict[tuple, object] = {}
_pdl: set[int] = set()     # id() of loaded kernels launched with programmatic serialization


class LoadedKernel:
    """One kernel loaded through the driver.

    ``handle`` is its CUkernel (what cuLaunchKernelEx, the occupancy queries
    and cuKernelSetAttribute take), ``library`` the CUlibrary holding its
    code, kept so that the code stays loaded for the life of the process, and
    ``name`` its name expression, for messages.  ``core()`` wraps the same
    CUkernel as a cuda.core Kernel for cuda.core.launch, on first use only."""

    __slots__ = ("handle", "library", "name", "_core")

    def __init__(self, handle, library, name: str):
        self.handle, self.library, self.name = handle, library, name
        self._core = None

    def core(self):
        if self._core is None:
            ensure_imports()
            from cuda.core import Kernel
            self._core = Kernel.from_handle(int(self.handle))
        return self._core

    def __repr__(self) -> str:
        return f"<LoadedKernel {self.name}>"


def _mangled(symbols: dict, expr: str) -> bytes:
    """The name NVRTC lowered a name expression to.  The symbol mapping's keys
    and values are str or bytes depending on the cuda.core release that
    compiled it (compiler._enc keeps the type); an expression missing from it
    is looked up as it is, as cuda.core's ObjectCode.get_kernel does."""
    for key in (expr, expr.encode()):
        name = symbols.get(key)
        if name is not None:
            return name if isinstance(name, bytes) else name.encode()
    return expr.encode()


def load(compiled: Compiled, expr: str) -> LoadedKernel:
    """Load a cubin and get one kernel from it, through the driver only."""
    driver = _cuda_driver()
    err, library = driver.cuLibraryLoadData(compiled.cubin, [], [], 0, [], [], 0)
    check(err, f"cuLibraryLoadData ({expr})")
    err, kernel = driver.cuLibraryGetKernel(library, _mangled(compiled.symbol_mapping, expr))
    check(err, f"cuLibraryGetKernel ({expr})")
    return LoadedKernel(kernel, library, expr)


def pdl_enabled(spec: KernelSpec, dev: DeviceInfo) -> bool:
    """Programmatic dependent launch for this spec on this device: the kernel
    must wait on griddepcontrol first (spec.uses_pdl), the GPU must be sm_90+,
    and SGEMM_PDL=0 turns it off (for A/B timing)."""
    import os
    return spec.uses_pdl and dev.cc_int >= 90 and os.environ.get("SGEMM_PDL", "1") != "0"


def get_kernel(spec: KernelSpec, p: TileParams, ta: bool, tb: bool, aligned: bool,
               dev: DeviceInfo):
    """The LoadedKernel for one instantiation on one device."""
    expr = spec.name_expression(p, ta, tb, aligned)
    key = (spec.source, expr, dev.id)
    k = _loaded.get(key)
    if k is not None:
        return k
    compiled = compile_kernel(spec.source, expr, dev.arch)
    with _lock:
        k = _loaded.get(key)
        if k is None:
            make_current(dev.id)
            k = load(compiled, expr)
            smem = spec.dynamic_smem(p)
            if smem > 48 * 1024:
                _allow_dynamic_smem(k, smem, dev.id)
            if pdl_enabled(spec, dev):
                _pdl.add(id(k))
            _loaded[key] = k
    return k


_at_once: dict[tuple[int, int, str], int] = {}


def clusters_at_once(dev: DeviceInfo, cs: int, config: str = "k4") -> int:
    """How many clusters of cs db_cluster blocks (one block per SM: its
    shared-memory reservation, so any of its configs gives the same count)
    the device runs at once, from the driver (cuOccupancyMaxActiveClusters
    on the named config's instantiation); cached.  The default is the tile
    rule c'' launches, so the query compiles nothing the launch would not."""
    key = (dev.id, cs, config)
    n = _at_once.get(key)
    if n is None:
        from ..kernels import registry
        spec = registry.get("db_cluster")
        p = spec.configs[config].replace(split_k=cs)
        k = get_kernel(spec, p, False, False, True, dev)
        driver = _cuda_driver()
        cfg = driver.CUlaunchConfig()
        # a grid of cs clusters of cs blocks: what cuda.core's
        # LaunchConfig(grid=(1, 1, cs), cluster=(1, 1, cs)) handed the driver
        # (its grid counts clusters) when this query went through it
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = 1, 1, cs * cs
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = p.threads, 1, 1
        cfg.sharedMemBytes = spec.dynamic_smem(p)
        cfg.hStream = driver.CUstream(0)     # the default stream: the query reads its context
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dim = attr.value.clusterDim
        dim.x, dim.y, dim.z = 1, 1, cs
        cfg.attrs = [attr]
        cfg.numAttrs = 1
        make_current(dev.id)
        err, count = driver.cuOccupancyMaxActiveClusters(k.handle, cfg)
        check(err, f"cuOccupancyMaxActiveClusters ({k.name}, clusters of {cs})")
        n = _at_once[key] = int(count)
    return n


def _allow_dynamic_smem(kernel, nbytes: int, device_id: int) -> None:
    """Raise the kernel's dynamic shared-memory limit above the 48 KiB default."""
    from cuda.bindings import driver
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    h = kernel.handle
    if isinstance(h, driver.CUkernel):
        err, dev = driver.cuDeviceGet(device_id)
        (err,) = driver.cuKernelSetAttribute(attr, nbytes, h, dev)
    else:
        (err,) = driver.cuFuncSetAttribute(h, attr, nbytes)
    if int(err) != 0:
        raise RuntimeError(f"could not allow {nbytes} B of dynamic shared memory: {err}")


def as_stream(stream):
    """A cuda.core Stream for a handle (int), a CuPy/PyTorch/cuda.core stream
    object, or anything implementing __cuda_stream__."""
    ensure_imports()
    from cuda.core import LEGACY_DEFAULT_STREAM, Stream
    if isinstance(stream, Stream):
        return stream
    handle = stream_handle(stream)
    s = _streams.get(handle)
    if s is None:
        s = LEGACY_DEFAULT_STREAM if handle == 0 else Stream.from_handle(handle)
        _streams[handle] = s
    return s


def stream_handle(stream) -> int:
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("ptr", "cuda_stream", "handle"):  # CuPy, PyTorch, others
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream={stream!r} is not a CUDA stream (int handle, CuPy or "
                    "PyTorch stream, or an object with __cuda_stream__)")


def driver_launch_enabled() -> bool:
    """Plans and the plan cache launch through PreparedLaunch
    (cuLaunchKernelEx) unless SGEMM_LAUNCH=core, which sends them through
    cuda.core.launch like every other launch (A/B runs)."""
    import os
    return os.environ.get("SGEMM_LAUNCH", "driver") != "core"


DRIVER_LAUNCH = driver_launch_enabled()     # read once; tests may patch it


def pack_args(args) -> array.array:
    """Kernel arguments as one 8-byte slot each (array of uint64, native
    little-endian), the layout cuLaunchKernelEx's void** points into: a Python
    int is a 64-bit value (pointer, long long; negative ones in two's
    complement), a NumPy int/float scalar its own bytes at the start of its
    slot (int32, float32)."""
    import numpy as np
    slots = array.array("Q", bytes(8 * len(args)))
    for i, x in enumerate(args):
        if type(x) is int:
            slots[i] = x & 0xFFFF_FFFF_FFFF_FFFF
        elif isinstance(x, np.generic) and x.dtype.itemsize <= 8 and x.dtype.kind in "iuf":
            slots[i] = int.from_bytes(x.tobytes().ljust(8, b"\0"), "little")
        else:
            raise TypeError(f"kernel argument {i} ({x!r}): an int or a NumPy int/float scalar")
    return slots


_driver = None


def _cuda_driver():
    global _driver
    if _driver is None:
        ensure_bindings()
        from cuda.bindings import driver
        _driver = driver
    return _driver


class PreparedLaunch:
    """One launch whose configuration and arguments are built once.

    ``__call__(stream_handle, ptrs)`` writes the pointer arguments that move
    (``relocs``: (argument index, operand, byte offset), with ptrs[operand]
    the operand's new address) into the packed slots and calls
    cuLaunchKernelEx with them: no per-call conversion of 14 Python arguments
    and of the launch configuration, which cuda.core.launch does on every call
    (H200 host, one run: 7.0 against 9.1 us a launch; the host rows of
    `python bench/suite.py`).  A lock keeps two threads from interleaving the slot
    writes and the launch (the driver copies the arguments during the call)."""

    __slots__ = ("kernel", "grid", "block", "smem", "args", "relocs", "_slots", "_params",
                 "_params_addr", "_pdl", "_func", "_cfgs", "_lock")

    def __init__(self, kernel, grid, block, smem, args, relocs=()):
        self.kernel, self.grid, self.block, self.smem = kernel, tuple(grid), int(block), int(smem)
        self.args, self.relocs = tuple(args), tuple(relocs)
        self._slots = pack_args(self.args)
        base = self._slots.buffer_info()[0]
        # void**: one address per slot; both arrays live (unmoved) in self
        self._params = array.array("Q", [base + 8 * i for i in range(len(self.args))])
        self._params_addr = self._params.buffer_info()[0]
        self._pdl = id(kernel) in _pdl
        self._func = kernel.handle
        self._cfgs = {}          # stream handle -> CUlaunchConfig
        self._lock = threading.Lock()

    def config(self, stream_handle: int):
        """The launch configuration on one stream (built once per stream)."""
        cfg = self._cfgs.get(stream_handle)
        if cfg is None:
            driver = _cuda_driver()
            cfg = driver.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = (int(g) for g in self.grid)
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.block, 1, 1
            cfg.sharedMemBytes = self.smem
            cfg.hStream = driver.CUstream(stream_handle)
            if self._pdl:
                attr = driver.CUlaunchAttribute()
                attr.id = (driver.CUlaunchAttributeID
                           .CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
                attr.value.programmaticStreamSerializationAllowed = 1
                cfg.attrs = [attr]
                cfg.numAttrs = 1
            if len(self._cfgs) >= 64:      # many short-lived streams: start over
                self._cfgs.clear()
            self._cfgs[stream_handle] = cfg
        return cfg

    def __call__(self, stream_handle: int, ptrs=None) -> None:
        cfg = self._cfgs.get(stream_handle) or self.config(stream_handle)
        with self._lock:
            if ptrs is not None:
                slots = self._slots
                for i, op, off in self.relocs:
                    slots[i] = ptrs[op] + off
            (err,) = _driver.cuLaunchKernelEx(cfg, self._func, self._params_addr, 0)
        if int(err):
            raise DeviceError(f"cuLaunchKernelEx failed for {self.kernel!r}: {err!r}")


def launch(kernel, grid: tuple[int, int, int], block: int, smem: int, stream, args) -> None:
    """One launch through cuda.core.launch (a LoadedKernel or a cuda.core Kernel)."""
    ensure_imports()
    from cuda.core import LaunchConfig, launch as cu_launch
    pdl = id(kernel) in _pdl
    key = (grid, block, smem, pdl)
    cfg = _configs.get(key)
    if cfg is None:
        cfg = (LaunchConfig(grid=grid, block=block, shmem_size=smem,
                            programmatic_stream_serialization=True) if pdl
               else LaunchConfig(grid=grid, block=block, shmem_size=smem))
        _configs[key] = cfg
    core = kernel.core() if isinstance(kernel, LoadedKernel) else kernel
    cu_launch(as_stream(stream), cfg, core, *args)


def run(spec: KernelSpec, p: TileParams, prob: Problem, dev: DeviceInfo, stream) -> None:
    """Compile (cached), load and launch one kernel on one canonical problem."""
    k = get_kernel(spec, p, prob.ta, prob.tb, spec.aligned_for(prob), dev)
    launch(k, spec.grid(prob, p), spec.block(p), spec.dynamic_smem(p), stream, spec.args(prob))
