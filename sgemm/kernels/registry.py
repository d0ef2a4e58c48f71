"""The one registry: every kernel the library can run, by id and by name.

Runner, CLI choices, plots, README tables, test parametrization, the
dispatcher and the autotuner all read ``KERNELS``; nothing lists kernels by
hand anywhere else.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ArgumentError
from .ladder import LADDER
from .spec import KernelSpec

CUDA_DIR = Path(__file__).with_name("cuda")


def _families() -> list[KernelSpec]:
    specs = list(LADDER)
    # Optional families register here as they land (tensor cores, schemes).
    for mod in ("tensorcore", "schemes"):
        try:
            m = __import__(f"{__package__}.{mod}", fromlist=["SPECS"])
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{mod}":
                raise
            continue
        specs += list(m.SPECS)
    return specs


KERNELS: dict[str, KernelSpec] = {}
for _s in sorted(_families(), key=lambda s: s.id):
    if _s.name in KERNELS or any(k.id == _s.id for k in KERNELS.values()):
        raise RuntimeError(f"duplicate kernel id/name: {_s.id} {_s.name}")
    KERNELS[_s.name] = _s


def get(kernel: str | int) -> KernelSpec:
    """Look a kernel up by name ('smem') or id (3, '3')."""
    if isinstance(kernel, KernelSpec):
        return kernel
    key = str(kernel).strip()
    if key in KERNELS:
        return KERNELS[key]
    for s in KERNELS.values():
        if key == str(s.id):
            return s
    names = ", ".join(f"{s.id}:{s.name}" for s in KERNELS.values())
    raise ArgumentError(f"kernel={kernel!r} is not registered; choose one of {names} or 'auto'")


def source_path(spec: KernelSpec) -> Path:
    return CUDA_DIR / spec.source
