"""What the library needs to know about a GPU, read once per device.

Nothing here runs at import time: a machine without a GPU (or without a
driver) can import sgemm and learns about it only when it asks.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache

from ..errors import DeviceError


@dataclass(frozen=True)
class DeviceInfo:
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
_imported = [False]


def ensure_imports() -> None:
    """Import cuda.core and cuda.bindings once, under a lock.  Their first
    import is not safe to race: eight threads making their first sgemm call
    at once saw "cannot import name 'Device' from 'cuda.core.cu13'"."""
    if _imported[0]:
        return
    with _import_lock:
        if not _imported[0]:
            import cuda.bindings.driver  # noqa: F401
            import cuda.bindings.nvrtc  # noqa: F401
            import cuda.core  # noqa: F401
            _imported[0] = True


@lru_cache(maxsize=1)
def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver or no GPU."""
    try:
        ensure_imports()
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0
        err, n = driver.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except Exception:
        return 0


def has_gpu() -> bool:
    return device_count() > 0


def require_gpu() -> None:
    if not has_gpu():
        raise DeviceError("no CUDA GPU is visible (no driver, or no device): "
                          "sgemm needs an NVIDIA GPU to run kernels")


@lru_cache(maxsize=None)
def info(device_id: int = 0) -> DeviceInfo:
    require_gpu()
    from cuda.core import Device
    d = Device(device_id)
    p = d.properties
    from cuda.bindings import driver
    err, total = driver.cuDeviceTotalMem(device_id)
    return DeviceInfo(
        id=device_id, name=d.name, cc=(p.compute_capability_major, p.compute_capability_minor),
        sm_count=p.multiprocessor_count,
        smem_optin=int(getattr(p, "max_shared_memory_per_block_optin", 0)
                       or p.max_shared_memory_per_block),
        smem_per_sm=p.max_shared_memory_per_multiprocessor,
        l2_bytes=p.l2_cache_size, clock_khz=p.clock_rate,
        memory_clock_khz=p.memory_clock_rate, bus_width_bits=p.global_memory_bus_width,
        total_memory=int(total) if int(err) == 0 else 0)


_current: list[int] = [-1]


_get_ctx: list = []         # driver.cuCtxGetCurrent, once imported (a per-call cost)


def make_current(device_id: int) -> None:
    """Make the device's primary context current (the one CuPy and PyTorch use)."""
    if _current[0] == device_id:
        if not _get_ctx:
            from cuda.bindings import driver
            _get_ctx.append(driver.cuCtxGetCurrent)
        err, ctx = _get_ctx[0]()
        if not int(err) and int(ctx) == _primary_ctx(device_id):
            return
    from cuda.core import Device
    Device(device_id).set_current()
    _current[0] = device_id


@lru_cache(maxsize=None)
def _primary_ctx(device_id: int) -> int:
    from cuda.core import Device
    d = Device(device_id)
    d.set_current()
    from cuda.bindings import driver
    err, ctx = driver.cuCtxGetCurrent()
    return int(ctx)
