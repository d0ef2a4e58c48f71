"""What the library needs to know about a GPU, read once per device.

Nothing here runs at import time: a machine without a GPU (or without a
driver) can import sgemm and learns about it only when it asks.  Queries and
the current context go through the ctypes driver layer (runtime/cu.py), not
cuda.bindings or cuda.core: a process's first call, served by the bundle or
the disk cache, must not pay for importing them (docs/first-call.md); only an
NVRTC compile imports them (``ensure_imports``).
"""
from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache

from ..errors import DeviceError
from . import cu


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU's properties, as the driver reports them (``info``).  A
    dataclass: it keys per-device caches and ``dataclasses.replace`` makes
    device models of it."""
    id: int
    name: str
    cc: tuple[int, int]
    sm_count: int
    smem_optin: int          # bytes of shared memory a block may opt in to
    smem_per_sm: int
    l2_bytes: int
    clock_khz: int           # maximum SM clock the driver reports
    memory_clock_khz: int
    bus_width_bits: int
    total_memory: int

    @property
    def arch(self) -> str:
        return arch_for(self.cc)

    @property
    def cc_int(self) -> int:
        return self.cc[0] * 10 + self.cc[1]

    def fp32_peak_tflops(self, clock_khz: int | None = None) -> float:
        """SMs x 128 FP32 lanes x 2 (an FMA is two flops) x clock."""
        khz = clock_khz or self.clock_khz
        return self.sm_count * 128 * 2 * khz * 1e3 / 1e12

    def dram_bandwidth_gbs(self) -> float:
        """Datasheet-style bandwidth: memory clock x bus width x 2 (DDR)."""
        return 2 * self.memory_clock_khz * 1e3 * self.bus_width_bits / 8 / 1e9


def gpu_key(dev: DeviceInfo) -> str:
    """'nvidia-h100-80gb-hbm3-sm132-sm_90a': name, SM count, arch."""
    name = re.sub(r"[^a-z0-9]+", "-", dev.name.lower()).strip("-")
    return f"{name}-sm{dev.sm_count}-{dev.arch}"


def arch_for(cc: tuple[int, int]) -> str:
    """NVRTC target: sm_90a on Hopper (wgmma/setmaxnreg need the 'a' target)."""
    major, minor = cc
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


_import_lock = threading.Lock()
_imported = {"bindings": False, "core": False}


def ensure_bindings() -> None:
    """Import cuda.bindings' NVRTC module once, under a lock (for NVRTC's
    version where it cannot be read without loading the library: compiler.py)."""
    if _imported["bindings"]:
        return
    with _import_lock:
        if not _imported["bindings"]:
            import cuda.bindings.nvrtc  # noqa: F401
            _imported["bindings"] = True


def ensure_imports() -> None:
    """Import cuda.bindings and cuda.core once, under a lock, for an NVRTC
    compile (cuda.core's Program).  Their first import is not safe to race:
    eight threads making their first sgemm call at once saw "cannot import
    name 'Device' from 'cuda.core.cu13'"."""
    if _imported["core"]:
        return
    ensure_bindings()
    with _import_lock:
        if not _imported["core"]:
            import cuda.core  # noqa: F401
            _imported["core"] = True


def check(err: int, what: str) -> None:
    """Raise DeviceError for a failed driver call (CUresult ``err``), naming
    the call and the CUresult."""
    cu.check(err, what)


@lru_cache(maxsize=1)
def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver or no GPU."""
    try:
        return cu.device_count()
    except Exception:
        return 0


def has_gpu() -> bool:
    return device_count() > 0


def require_gpu() -> None:
    if not has_gpu():
        raise DeviceError("no CUDA GPU is visible (no driver, or no device): "
                          "sgemm needs an NVIDIA GPU to run kernels")


def _handle(device_id: int) -> int:
    """The driver's CUdevice for an ordinal; ValueError (with cuda.core's
    words, which this replaced) when out of range."""
    n = device_count()
    if device_id < 0:
        raise ValueError(f"device_id must be >= 0, got {device_id}")
    if device_id >= n:
        raise ValueError(f"device_id must be within [0, {n}), got {device_id}")
    return cu.device_get(device_id)


@lru_cache(maxsize=None)
def info(device_id: int = 0) -> DeviceInfo:
    require_gpu()
    dev = _handle(device_id)

    def a(attr: str) -> int:
        # 0 where this driver does not know the attribute, as cuda.core's
        # DeviceProperties reads them
        return cu.device_attribute(attr, dev) or 0

    return DeviceInfo(
        id=device_id, name=cu.device_name(dev),
        cc=(a("COMPUTE_CAPABILITY_MAJOR"), a("COMPUTE_CAPABILITY_MINOR")),
        sm_count=a("MULTIPROCESSOR_COUNT"),
        smem_optin=a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") or a("MAX_SHARED_MEMORY_PER_BLOCK"),
        smem_per_sm=a("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        l2_bytes=a("L2_CACHE_SIZE"), clock_khz=a("CLOCK_RATE"),
        memory_clock_khz=a("MEMORY_CLOCK_RATE"), bus_width_bits=a("GLOBAL_MEMORY_BUS_WIDTH"),
        total_memory=_total_mem(dev))


def _total_mem(dev: int) -> int:
    try:
        return cu.device_total_mem(dev)
    except DeviceError:          # informational only: never fail a call for it
        return 0


_current: list[int] = [-1]


def make_current(device_id: int) -> None:
    """Make the device's primary context current (the one CuPy and PyTorch use)."""
    if _current[0] == device_id and cu.ctx_get_current() == _primary_ctx(device_id):
        return
    cu.ctx_set_current(_primary_ctx(device_id))
    # cuda.core keeps its own per-thread record of the device made current
    # through it (Device.allocate refuses without one).  Where cuda.core is
    # already loaded, for code that still allocates or launches through it,
    # keep that record as it was when this function went through cuda.core;
    # never import it here (it is what a first call must not pay for).
    core = sys.modules.get("cuda.core")
    if core is not None and hasattr(core, "Device"):
        core.Device(device_id).set_current()
    _current[0] = device_id


@lru_cache(maxsize=None)
def _primary_ctx(device_id: int) -> int:
    """The address of the device's primary context, retained once for the
    life of the process (CuPy and PyTorch retain the same one)."""
    return cu.primary_ctx_retain(_handle(device_id))
