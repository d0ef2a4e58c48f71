"""Load compiled kernels and launch them on the caller's stream.

Cubins are loaded through the driver API (cuLibraryLoadData and
cuLibraryGetKernel, as cuda.core's ObjectCode does) by way of the ctypes layer
runtime/cu.py, so a call whose kernels come from the bundle or the disk cache
imports neither cuda.core nor cuda.bindings: those imports were most of a
process's first call (docs/first-call.md).  Plans and the plan
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
from . import cu
from .device import DeviceInfo, ensure_imports, make_current

_loaded: dict[tuple, object] = {}
_lock = threading.Lock()
_streams: dict[int, object] = {}
_configs: dict[tuple, object] = {}
_pdl: set[int] = set()     # id() of loaded kernels launched with programmatic serialization


class LoadedKernel:
    """One kernel loaded through the driver.

    ``handle`` is its CUkernel as an int (what cuLaunchKernelEx, the occupancy
    queries and cuKernelSetAttribute take), ``library`` the CUlibrary holding
    its code, never unloaded, ``image`` the cubin it was loaded from (kept
    referenced with it), and ``name`` its name expression, for messages.
    ``core()`` wraps the same CUkernel as a cuda.core Kernel for
    cuda.core.launch, on first use only."""

    __slots__ = ("handle", "library", "image", "name", "_core")

    def __init__(self, handle: int, library: int, name: str, image: bytes = b""):
        self.handle, self.library, self.name, self.image = handle, library, name, image
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
    image = bytes(compiled.cubin)
    library = cu.library_load_data(image, f" ({expr})")
    kernel = cu.library_get_kernel(library, _mangled(compiled.symbol_mapping, expr), f" ({expr})")
    return LoadedKernel(kernel, library, expr, image)


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
        # a grid of cs clusters of cs blocks: what cuda.core's
        # LaunchConfig(grid=(1, 1, cs), cluster=(1, 1, cs)) handed the driver
        # (its grid counts clusters) when this query went through it; the
        # default stream, whose context the query reads
        cfg = cu.launch_config((1, 1, cs * cs), (p.threads, 1, 1), spec.dynamic_smem(p), 0,
                               [cu.cluster_attribute(1, 1, cs)])
        make_current(dev.id)
        n = _at_once[key] = cu.occupancy_max_active_clusters(
            k.handle, cfg, f" ({k.name}, clusters of {cs})")
    return n


def _allow_dynamic_smem(kernel, nbytes: int, device_id: int) -> None:
    """Raise the kernel's dynamic shared-memory limit above the 48 KiB default."""
    cu.kernel_set_attribute(cu.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes,
                            kernel.handle, cu.device_get(device_id),
                            f" (allowing {nbytes} B of dynamic shared memory to {kernel.name})")


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


class PreparedLaunch:
    """One launch whose configuration and arguments are built once.

    ``__call__(stream_handle, ptrs)`` writes the pointer arguments that move
    (``relocs``: (argument index, operand, byte offset), with ptrs[operand]
    the operand's new address) into the packed slots and calls
    cuLaunchKernelEx with them: no per-call conversion of 14 Python arguments
    and of the launch configuration, which cuda.core.launch does on every call
    (H200 host, one run: 7.0 against 9.1 us a launch; the host rows of
    `python bench/suite.py`).  The CUlaunchConfig (runtime/cu.py) is built
    once per stream, and every argument of the ctypes call is a ready ctypes
    object, so the call converts nothing.  A lock keeps two threads from
    interleaving the slot writes and the launch (the driver copies the
    arguments during the call)."""

    __slots__ = ("kernel", "grid", "block", "smem", "args", "relocs", "_slots", "_params",
                 "_params_addr", "_params_ptr", "_pdl", "_func", "_cfgs", "_calls", "_lock",
                 "_launch")

    def __init__(self, kernel, grid, block, smem, args, relocs=()):
        self.kernel, self.grid, self.block, self.smem = kernel, tuple(grid), int(block), int(smem)
        self.args, self.relocs = tuple(args), tuple(relocs)
        self._slots = pack_args(self.args)
        base = self._slots.buffer_info()[0]
        # void**: one address per slot; both arrays live (unmoved) in self
        self._params = array.array("Q", [base + 8 * i for i in range(len(self.args))])
        self._params_addr = self._params.buffer_info()[0]
        self._params_ptr = cu.c_void_p(self._params_addr)
        self._pdl = id(kernel) in _pdl
        self._func = cu.c_void_p(kernel.handle)
        self._cfgs = {}          # stream handle -> CUlaunchConfig
        self._calls = {}         # stream handle -> cuLaunchKernelEx's arguments, ready
        self._lock = threading.Lock()
        self._launch = self._bind_launch

    def _bind_launch(self, *args) -> int:
        """The first launch: bind cuLaunchKernelEx (loading the driver)."""
        self._launch = cu.lib().cuLaunchKernelEx_unchecked
        return self._launch(*args)

    def config(self, stream_handle: int) -> cu.LaunchConfig:
        """The launch configuration on one stream (built once per stream)."""
        cfg = self._cfgs.get(stream_handle)
        if cfg is None:
            cfg = cu.launch_config(self.grid, (self.block, 1, 1), self.smem, stream_handle,
                                   [cu.pdl_attribute()] if self._pdl else ())
            if len(self._cfgs) >= 64:      # many short-lived streams: start over
                self._cfgs.clear()
                self._calls.clear()
            self._cfgs[stream_handle] = cfg
            # a pointer object keeps the configuration it points to alive
            self._calls[stream_handle] = (cu.ctypes.pointer(cfg), self._func,
                                          self._params_ptr, None)
        return cfg

    def __call__(self, stream_handle: int, ptrs=None) -> None:
        call = self._calls.get(stream_handle)
        if call is None:
            self.config(stream_handle)
            call = self._calls[stream_handle]
        with self._lock:
            if ptrs is not None:
                slots = self._slots
                for i, op, off in self.relocs:
                    slots[i] = ptrs[op] + off
            err = self._launch(*call)
        if err:
            raise DeviceError(f"cuLaunchKernelEx failed for {self.kernel!r}: "
                              f"{cu.error_name(err)} ({err})")


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
