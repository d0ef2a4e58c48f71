"""The 2-D process grid.

P processes are arranged as ``nprow x npcol`` (row-major: rank = r*npcol + c),
so consecutive ranks, which launchers place on the same node, share a grid
row.  ``choose_grid`` picks the shape: the most square factorisation of P with
``nprow <= npcol``, or, when the global C shape is given, the factorisation
that minimises the SUMMA traffic per process (m/nprow + n/npcol words per
unit of k), ties going to the squarer grid.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError


def _factor_pairs(p: int) -> list[tuple[int, int]]:
    return [(r, p // r) for r in range(1, p + 1) if p % r == 0]


def choose_grid(nprocs: int, m: int | None = None, n: int | None = None) -> tuple[int, int]:
    """(nprow, npcol) with nprow * npcol == nprocs.

    Without m, n: as square as possible, nprow <= npcol (2 -> 1x2, 3 -> 1x3,
    4 -> 2x2, 6 -> 2x3, 8 -> 2x4).  With m, n (global C shape): minimise
    m/nprow + n/npcol, the words of A and B panels each process receives per
    unit of k; ties go to the squarer grid, then to nprow <= npcol.
    """
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ArgumentError(f"nprocs must be a positive int, got {nprocs!r}")
    pairs = _factor_pairs(nprocs)

    def squareness(rc):
        r, c = rc
        return (abs(c - r), 0 if r <= c else 1)

    if m is None or n is None:
        return min(pairs, key=squareness)
    m, n = max(int(m), 1), max(int(n), 1)
    return min(pairs, key=lambda rc: (m / rc[0] + n / rc[1], *squareness(rc)))


@dataclass(frozen=True)
class ProcessGrid:
    nprow: int
    npcol: int

    def __post_init__(self):
        for name in ("nprow", "npcol"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ArgumentError(f"ProcessGrid.{name} must be a positive int, got {v!r}")

    @classmethod
    def create(cls, nprocs: int, shape=None, m: int | None = None,
               n: int | None = None) -> "ProcessGrid":
        """A grid for nprocs processes: ``shape`` (nprow, npcol) when given
        (it must multiply to nprocs), else ``choose_grid``."""
        if shape is None:
            return cls(*choose_grid(nprocs, m, n))
        if isinstance(shape, ProcessGrid):
            shape = shape.shape
        try:
            r, c = (int(x) for x in shape)
        except Exception:
            raise ArgumentError(f"grid must be (nprow, npcol), got {shape!r}") from None
        if r * c != nprocs:
            raise ArgumentError(f"grid {r}x{c} has {r * c} places but there are "
                                f"{nprocs} processes")
        return cls(r, c)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.nprow, self.npcol)

    @property
    def size(self) -> int:
        return self.nprow * self.npcol

    def coords(self, rank: int) -> tuple[int, int]:
        if not 0 <= rank < self.size:
            raise ArgumentError(f"rank {rank} is outside a {self.nprow}x{self.npcol} grid")
        return divmod(rank, self.npcol)

    def rank_of(self, r: int, c: int) -> int:
        if not (0 <= r < self.nprow and 0 <= c < self.npcol):
            raise ArgumentError(f"({r}, {c}) is outside a {self.nprow}x{self.npcol} grid")
        return r * self.npcol + c

    def row_ranks(self, r: int) -> list[int]:
        """World ranks of grid row r, ordered by column (= rank in the row communicator)."""
        return [self.rank_of(r, c) for c in range(self.npcol)]

    def col_ranks(self, c: int) -> list[int]:
        """World ranks of grid column c, ordered by row (= rank in the column communicator)."""
        return [self.rank_of(r, c) for r in range(self.nprow)]

    def __str__(self) -> str:
        return f"{self.nprow}x{self.npcol}"
