"""Tile parameters: one small frozen dataclass shared by every kernel family.

A family uses the fields it needs (``KernelSpec.template_fields`` lists them, in
template-argument order) and leaves the rest at their defaults.  Checks return
*reasons* rather than booleans so that the autotuner, the CLI and error
messages can say why a configuration was rejected.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class TileParams:
    """A kernel's tile configuration (the fields' comments say what each is).
    A dataclass: the tuner keys its search on its equality and hash, and
    ``replace`` derives configs."""
    BM: int = 32        # rows of C per thread block (canonical, column-major m)
    BN: int = 32        # columns of C per thread block
    BK: int = 32        # depth of one k-tile held in shared memory
    WM: int = 0         # rows of C per warp (0: the family has no warp tiling)
    WN: int = 0         # columns of C per warp
    TM: int = 1         # rows of C per thread
    TN: int = 1         # columns of C per thread
    threads: int = 256  # threads per block
    stages: int = 1     # shared-memory pipeline depth
    split_k: int = 1    # k-slices reduced afterwards (split-K schemes)
    swizzle: int = 1    # thread-block swizzle group width (1: none)
    pack: int = 1       # 1: unaligned operands may be copied (sgemm/packing.py); 0: never

    def replace(self, **changes) -> "TileParams":
        """dataclasses.replace without its per-call introspection: the
        planner derives a few hundred split variants per problem, and
        dataclasses.replace (~7 us each on the CPU machine, under cProfile)
        was a third of the planner's time."""
        if not changes.keys() <= _FIELDS:
            raise TypeError(f"TileParams has no field(s) {sorted(changes.keys() - _FIELDS)}")
        new = object.__new__(TileParams)
        new.__dict__.update(self.__dict__, **changes)
        return new

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def basic_reasons(self) -> list[str]:
        """Constraints every family shares."""
        why = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool):
                why.append(f"{f.name}={v!r} is not an integer")
            elif v < 0 or (v == 0 and f.name not in ("WM", "WN", "pack")):
                why.append(f"{f.name}={v} must be positive")
        if why:
            return why
        if self.threads % 32:
            why.append(f"threads={self.threads} is not a multiple of the warp size 32")
        if self.threads > 1024:
            why.append(f"threads={self.threads} exceeds the 1024-thread block limit")
        return why


_FIELDS = frozenset(f.name for f in dataclasses.fields(TileParams))


def divides(a: int, b: int) -> bool:
    return a > 0 and b % a == 0


def need(cond: bool, reason: str, why: list[str]) -> None:
    """Append ``reason`` to ``why`` unless ``cond`` holds."""
    if not cond:
        why.append(reason)
