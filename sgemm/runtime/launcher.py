"""Load compiled kernels and launch them with cuda.core on the caller's stream."""
from __future__ import annotations

import threading

from ..kernels.params import TileParams
from ..kernels.spec import KernelSpec
from ..problem import Problem
from .compiler import compile_kernel
from .device import DeviceInfo, make_current

_loaded: dict[tuple, object] = {}
_lock = threading.Lock()
_streams: dict[int, object] = {}
_configs: dict[tuple, object] = {}
_pdl: set[int] = set()     # id() of loaded kernels launched with programmatic serialization


def pdl_enabled(spec: KernelSpec, dev: DeviceInfo) -> bool:
    """Programmatic dependent launch for this spec on this device: the kernel
    must wait on griddepcontrol first (spec.uses_pdl), the GPU must be sm_90+,
    and SGEMM_PDL=0 turns it off (for A/B timing)."""
    import os
    return spec.uses_pdl and dev.cc_int >= 90 and os.environ.get("SGEMM_PDL", "1") != "0"


def get_kernel(spec: KernelSpec, p: TileParams, ta: bool, tb: bool, aligned: bool,
               dev: DeviceInfo):
    """The loaded cuda.core Kernel for one instantiation on one device."""
    expr = spec.name_expression(p, ta, tb, aligned)
    key = (spec.source, expr, dev.id)
    k = _loaded.get(key)
    if k is not None:
        return k
    compiled = compile_kernel(spec.source, expr, dev.arch)
    with _lock:
        k = _loaded.get(key)
        if k is None:
            from cuda.core import ObjectCode
            make_current(dev.id)
            obj = ObjectCode.from_cubin(compiled.cubin, symbol_mapping=compiled.symbol_mapping)
            k = obj.get_kernel(expr)
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
        from cuda.core import Device, LaunchConfig
        from ..kernels import registry
        spec = registry.get("db_cluster")
        p = spec.configs[config].replace(split_k=cs)
        k = get_kernel(spec, p, False, False, True, dev)
        cfg = LaunchConfig(grid=(1, 1, cs), cluster=(1, 1, cs), block=p.threads,
                           shmem_size=spec.dynamic_smem(p))
        n = _at_once[key] = int(k.occupancy.max_active_clusters(
            cfg, stream=Device(dev.id).default_stream))
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


def launch(kernel, grid: tuple[int, int, int], block: int, smem: int, stream, args) -> None:
    from cuda.core import LaunchConfig, launch as cu_launch
    pdl = id(kernel) in _pdl
    key = (grid, block, smem, pdl)
    cfg = _configs.get(key)
    if cfg is None:
        cfg = (LaunchConfig(grid=grid, block=block, shmem_size=smem,
                            programmatic_stream_serialization=True) if pdl
               else LaunchConfig(grid=grid, block=block, shmem_size=smem))
        _configs[key] = cfg
    cu_launch(as_stream(stream), cfg, kernel, *args)


def run(spec: KernelSpec, p: TileParams, prob: Problem, dev: DeviceInfo, stream) -> None:
    """Compile (cached), load and launch one kernel on one canonical problem."""
    k = get_kernel(spec, p, prob.ta, prob.tb, spec.aligned_for(prob), dev)
    launch(k, spec.grid(prob, p), spec.block(p), spec.dynamic_smem(p), stream, spec.args(prob))
