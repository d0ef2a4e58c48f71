"""Kernel choice for kernel="auto".

Rule (stated, until a tuned table exists for the device): among registered
kernels of the requested precision that run on this device, take the one
with the highest ``extra["auto"]`` priority (the fastest rung, as measured),
falling back to the highest ladder rung up to 11; its own size rule then
picks the tile configuration.
"""
from __future__ import annotations

from .errors import ArgumentError
from .kernels import registry
from .kernels.params import TileParams
from .kernels.spec import KernelSpec
from .problem import Problem
from .runtime.device import DeviceInfo


def candidates(precision: str, dev: DeviceInfo) -> list[KernelSpec]:
    return [s for s in registry.KERNELS.values()
            if s.precision == precision and dev.cc_int >= s.min_cc and s.id >= 1]


def auto_spec(precision: str, dev: DeviceInfo) -> KernelSpec:
    cands = candidates(precision, dev)
    if not cands:
        raise ArgumentError(f"precision={precision!r}: no registered kernel runs on "
                            f"{dev.name} (sm_{dev.cc_int})")
    ranked = [s for s in cands if "auto" in s.extra]
    if ranked:
        return max(ranked, key=lambda s: (s.extra["auto"], s.id))
    ladder = [s for s in cands if s.id <= 11] or cands
    return max(ladder, key=lambda s: s.id)


def choose(prob: Problem, dev: DeviceInfo, kernel, precision: str | None
           ) -> tuple[KernelSpec, TileParams]:
    if kernel is None or kernel == "auto":
        spec = auto_spec(precision or "ieee", dev)
    else:
        spec = registry.get(kernel)
        if precision is not None and precision != spec.precision:
            raise ArgumentError(f"kernel={spec.name!r} computes with precision="
                                f"{spec.precision!r} but precision={precision!r} was asked for")
        if dev.cc_int < spec.min_cc:
            raise ArgumentError(f"kernel={spec.name!r} needs compute capability "
                                f"{spec.min_cc / 10:.1f} but {dev.name} is sm_{dev.cc_int}")
    params = spec.choose(prob, dev.sm_count)
    return spec, params
