"""Block-cyclic distribution descriptors.

One axis of ``n`` items cut into blocks of ``block`` items (the last one
possibly shorter) is dealt round-robin to ``nprocs`` owners: block ``b`` lives
on owner ``b % nprocs`` at local block slot ``b // nprocs``.  An owner stores
its blocks back to back in increasing global order, so its local axis has
``local_size(p)`` items and a local index maps to exactly one global index.

A 2-D matrix distribution (``BlockCyclic``) is a row axis and a column axis
over a ``ProcessGrid``.  Normally matrix rows are dealt over grid rows and
columns over grid columns.  ``transposed=True`` swaps that: the matrix's rows
go over grid *columns* and its columns over grid rows.  That is how a
transposed operand is stored: if the caller holds A^T (K x M) then A^T is
distributed so that each process's local block of A^T is exactly the
transpose of the local block op(A) would have, and SUMMA needs no transpose
communication, only a local ``trans_a`` GEMM.

``gemm_layout`` builds the three consistent descriptors SUMMA needs: op(A)
rows share C's row blocks (mb), op(B) columns share C's column blocks (nb),
and the K axis of both is cut into blocks of kb (the SUMMA panel width).
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import ArgumentError
from .grid import ProcessGrid


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _check_int(name: str, v, minimum: int) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise ArgumentError(f"{name} must be an int >= {minimum}, got {v!r}")
    return int(v)


@dataclass(frozen=True)
class AxisCyclic:
    """1-D block-cyclic distribution of ``n`` items in blocks of ``block``
    over ``nprocs`` owners."""
    n: int
    block: int
    nprocs: int

    def __post_init__(self):
        _check_int("n", self.n, 0)
        _check_int("block", self.block, 1)
        _check_int("nprocs", self.nprocs, 1)

    @property
    def nblocks(self) -> int:
        return _cdiv(self.n, self.block)

    def owner(self, b: int) -> int:
        return b % self.nprocs

    def block_range(self, b: int) -> tuple[int, int]:
        """Global [start, stop) of block b."""
        if not 0 <= b < self.nblocks:
            raise ArgumentError(f"block {b} outside 0..{self.nblocks - 1}")
        s = b * self.block
        return s, min(s + self.block, self.n)

    def block_len(self, b: int) -> int:
        s, e = self.block_range(b)
        return e - s

    def local_offset(self, b: int) -> int:
        """Start of block b in its owner's local storage."""
        return (b // self.nprocs) * self.block

    def blocks_of(self, p: int) -> range:
        return range(p, self.nblocks, self.nprocs)

    def local_size(self, p: int) -> int:
        if not 0 <= p < self.nprocs:
            raise ArgumentError(f"owner {p} outside 0..{self.nprocs - 1}")
        nb = self.nblocks
        count = max(0, _cdiv(nb - p, self.nprocs))
        if count == 0:
            return 0
        size = count * self.block
        if (nb - 1) % self.nprocs == p:            # p holds the (possibly short) last block
            size -= nb * self.block - self.n
        return size

    def max_local_size(self) -> int:
        return max(self.local_size(p) for p in range(self.nprocs))

    def segments(self, p: int) -> list[tuple[int, int, int]]:
        """(global_start, global_stop, local_start) runs of owner p, with
        adjacent blocks merged where both sides are contiguous (nprocs == 1)."""
        out: list[list[int]] = []
        for b in self.blocks_of(p):
            s, e = self.block_range(b)
            lo = self.local_offset(b)
            if out and out[-1][1] == s and out[-1][2] + (out[-1][1] - out[-1][0]) == lo:
                out[-1][1] = e
            else:
                out.append([s, e, lo])
        return [tuple(x) for x in out]

    def global_indices(self, p: int) -> np.ndarray:
        """Global index of each local item of owner p (int64, increasing)."""
        parts = [np.arange(s, e, dtype=np.int64) for s, e, _ in self.segments(p)]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def to_local(self, g: int) -> tuple[int, int]:
        """(owner, local index) of global index g."""
        if not 0 <= g < self.n:
            raise ArgumentError(f"index {g} outside 0..{self.n - 1}")
        b, off = divmod(g, self.block)
        return b % self.nprocs, (b // self.nprocs) * self.block + off

    def to_global(self, p: int, l: int) -> int:
        if not 0 <= l < self.local_size(p):
            raise ArgumentError(f"local index {l} outside owner {p}'s "
                                f"{self.local_size(p)} items")
        lb, off = divmod(l, self.block)
        return (lb * self.nprocs + p) * self.block + off


@dataclass(frozen=True)
class Block:
    """One block of a distributed matrix: where it is globally and locally."""
    index: tuple[int, int]          # (block row, block column)
    owner: int                      # world rank
    rows: slice                     # global rows
    cols: slice                     # global columns
    local_rows: slice               # rows in the owner's local array
    local_cols: slice

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows.stop - self.rows.start, self.cols.stop - self.cols.start)


@dataclass(frozen=True)
class BlockCyclic:
    """2-D block-cyclic distribution of a ``shape`` matrix in ``block`` tiles
    over ``grid``.  ``transposed``: matrix rows over grid columns, matrix
    columns over grid rows (see the module docstring)."""
    shape: tuple[int, int]
    block: tuple[int, int]
    grid: ProcessGrid
    transposed: bool = False

    def __post_init__(self):
        if len(self.shape) != 2 or len(self.block) != 2:
            raise ArgumentError(f"shape and block must be pairs, got {self.shape}, {self.block}")
        object.__setattr__(self, "shape", (_check_int("rows", self.shape[0], 0),
                                           _check_int("cols", self.shape[1], 0)))
        object.__setattr__(self, "block", (_check_int("row block", self.block[0], 1),
                                           _check_int("column block", self.block[1], 1)))

    @cached_property
    def rows(self) -> AxisCyclic:
        p = self.grid.npcol if self.transposed else self.grid.nprow
        return AxisCyclic(self.shape[0], self.block[0], p)

    @cached_property
    def cols(self) -> AxisCyclic:
        p = self.grid.nprow if self.transposed else self.grid.npcol
        return AxisCyclic(self.shape[1], self.block[1], p)

    def axis_owners(self, rank: int) -> tuple[int, int]:
        """(row-axis owner index, column-axis owner index) of a world rank."""
        r, c = self.grid.coords(rank)
        return (c, r) if self.transposed else (r, c)

    def rank_of_owners(self, pr: int, pc: int) -> int:
        return self.grid.rank_of(pc, pr) if self.transposed else self.grid.rank_of(pr, pc)

    def local_shape(self, rank: int) -> tuple[int, int]:
        pr, pc = self.axis_owners(rank)
        return (self.rows.local_size(pr), self.cols.local_size(pc))

    def owner(self, i: int, j: int) -> tuple[int, tuple[int, int]]:
        """(world rank, local (i, j)) of global element (i, j)."""
        pr, li = self.rows.to_local(i)
        pc, lj = self.cols.to_local(j)
        return self.rank_of_owners(pr, pc), (li, lj)

    def row_indices(self, rank: int) -> np.ndarray:
        return self.rows.global_indices(self.axis_owners(rank)[0])

    def col_indices(self, rank: int) -> np.ndarray:
        return self.cols.global_indices(self.axis_owners(rank)[1])

    def blocks(self, rank: int | None = None) -> list[Block]:
        """Every block (rank None) or the blocks of one rank, row-major by block index."""
        out = []
        ranks = range(self.grid.size) if rank is None else [rank]
        for rk in ranks:
            pr, pc = self.axis_owners(rk)
            for bi in self.rows.blocks_of(pr):
                rs, re_ = self.rows.block_range(bi)
                lr = self.rows.local_offset(bi)
                for bj in self.cols.blocks_of(pc):
                    cs, ce = self.cols.block_range(bj)
                    lc = self.cols.local_offset(bj)
                    out.append(Block((bi, bj), rk, slice(rs, re_), slice(cs, ce),
                                     slice(lr, lr + re_ - rs), slice(lc, lc + ce - cs)))
        if rank is None:
            out.sort(key=lambda b: b.index)
        return out

    def _runs(self, rank: int):
        pr, pc = self.axis_owners(rank)
        return self.rows.segments(pr), self.cols.segments(pc)

    def extract(self, global_array, rank: int, out=None):
        """This rank's local array cut from the full matrix (a contiguous copy
        in the global array's package; ``out`` to fill a given array)."""
        if tuple(global_array.shape) != self.shape:
            raise ArgumentError(f"global array has shape {tuple(global_array.shape)}, "
                                f"the descriptor {self.shape}")
        shape = self.local_shape(rank)
        with _device_of(global_array):
            if out is None:
                xp = _namespace(global_array)
                out = xp.empty(shape, dtype=global_array.dtype)
            elif tuple(out.shape) != shape:
                raise ArgumentError(f"out has shape {tuple(out.shape)}, rank {rank} holds {shape}")
            rruns, cruns = self._runs(rank)
            for rs, re_, lr in rruns:
                for cs, ce, lc in cruns:
                    out[lr:lr + re_ - rs, lc:lc + ce - cs] = global_array[rs:re_, cs:ce]
        return out

    def insert(self, global_array, local, rank: int) -> None:
        """Write this rank's local array into its place in the full matrix."""
        shape = self.local_shape(rank)
        if tuple(local.shape) != shape:
            raise ArgumentError(f"local array has shape {tuple(local.shape)}, "
                                f"rank {rank} holds {shape}")
        rruns, cruns = self._runs(rank)
        with _device_of(global_array):
            for rs, re_, lr in rruns:
                for cs, ce, lc in cruns:
                    global_array[rs:re_, cs:ce] = local[lr:lr + re_ - rs, lc:lc + ce - cs]


def _device_of(arr):
    """The CUDA device of a CuPy array as a context manager (else a no-op)."""
    if type(arr).__module__.split(".")[0] == "cupy":
        return arr.device
    return contextlib.nullcontext()


def _namespace(arr):
    mod = type(arr).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        return cupy
    return np


def default_kb(k: int, grid: ProcessGrid) -> int:
    """SUMMA panel width: all of K on one process (no communication to hide);
    otherwise about K/8, a multiple of 256, so that the pipeline fill (one
    exposed panel broadcast) and the per-panel C read-modify-write each cost
    about 1 % at large sizes."""
    if k <= 0:
        return 1
    if grid.size == 1:
        return k
    return min(k, 256 * _cdiv(_cdiv(k, 8), 256))


@dataclass(frozen=True)
class GemmLayout:
    """Consistent distributions of A (stored), B (stored) and C for
    C = alpha * op(A) @ op(B) + beta * C over one grid."""
    m: int
    n: int
    k: int
    grid: ProcessGrid
    mb: int
    nb: int
    kb: int
    trans_a: bool = False
    trans_b: bool = False
    a: BlockCyclic = field(init=False)
    b: BlockCyclic = field(init=False)
    c: BlockCyclic = field(init=False)

    def __post_init__(self):
        for name in ("m", "n", "k"):
            _check_int(name, getattr(self, name), 0)
        for name in ("mb", "nb", "kb"):
            _check_int(name, getattr(self, name), 1)
        g = self.grid
        c = BlockCyclic((self.m, self.n), (self.mb, self.nb), g)
        if self.trans_a:
            a = BlockCyclic((self.k, self.m), (self.kb, self.mb), g, transposed=True)
        else:
            a = BlockCyclic((self.m, self.k), (self.mb, self.kb), g)
        if self.trans_b:
            b = BlockCyclic((self.n, self.k), (self.nb, self.kb), g, transposed=True)
        else:
            b = BlockCyclic((self.k, self.n), (self.kb, self.nb), g)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "c", c)

    @property
    def nsteps(self) -> int:
        return _cdiv(self.k, self.kb)

    @property
    def k_axis_a(self) -> AxisCyclic:
        """The K axis of A: owners are grid columns."""
        return self.a.rows if self.trans_a else self.a.cols

    @property
    def k_axis_b(self) -> AxisCyclic:
        """The K axis of B: owners are grid rows."""
        return self.b.cols if self.trans_b else self.b.rows

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def local_shapes(self, rank: int) -> dict:
        return {"a": self.a.local_shape(rank), "b": self.b.local_shape(rank),
                "c": self.c.local_shape(rank)}

    def max_local_flops(self) -> int:
        """2 * m_loc * n_loc * k of the busiest rank (every rank runs all of K)."""
        return max(2 * math.prod(self.c.local_shape(r)) * self.k for r in range(self.grid.size))


def gemm_layout(m: int, n: int, k: int, grid: ProcessGrid, *, trans_a: bool = False,
                trans_b: bool = False, mb: int | None = None, nb: int | None = None,
                kb: int | None = None) -> GemmLayout:
    """Descriptors for a distributed GEMM.  Defaults: C in one block per
    process along each axis (mb = ceil(m/nprow), nb = ceil(n/npcol): best
    local GEMM shape, balanced to one block), kb = ``default_kb``."""
    m, n, k = (_check_int(x, v, 0) for x, v in (("m", m), ("n", n), ("k", k)))
    if mb is None:
        mb = max(1, _cdiv(m, grid.nprow))
    if nb is None:
        nb = max(1, _cdiv(n, grid.npcol))
    if kb is None:
        kb = default_kb(k, grid)
    return GemmLayout(m, n, k, grid, mb, nb, kb, bool(trans_a), bool(trans_b))


@dataclass(frozen=True)
class KSplitLayout:
    """A, B split along K over p ranks; C in mb-row blocks over a p x 1 grid."""
    m: int
    n: int
    k: int
    grid: ProcessGrid               # p x 1
    mb: int                         # C rows per rank per chunk
    trans_a: bool = False
    trans_b: bool = False
    a: BlockCyclic = field(init=False)
    b: BlockCyclic = field(init=False)
    c: BlockCyclic = field(init=False)
    algorithm = "ksplit"

    def __post_init__(self):
        for name in ("m", "n", "k"):
            _check_int(name, getattr(self, name), 0)
        _check_int("mb", self.mb, 1)
        if self.grid.npcol != 1:
            raise ArgumentError(f"the K split runs on a p x 1 grid, got {self.grid}")
        p = self.grid.size
        rows, cols = ProcessGrid(p, 1), ProcessGrid(1, p)
        m1, n1, ks = max(self.m, 1), max(self.n, 1), self.ks
        a = (BlockCyclic((self.k, self.m), (ks, m1), rows) if self.trans_a
             else BlockCyclic((self.m, self.k), (m1, ks), cols))
        b = (BlockCyclic((self.n, self.k), (n1, ks), cols) if self.trans_b
             else BlockCyclic((self.k, self.n), (ks, n1), rows))
        c = BlockCyclic((self.m, self.n), (self.mb, n1), rows)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "c", c)

    @property
    def ks(self) -> int:
        """K slice per rank (the last rank's may be shorter or empty)."""
        return max(1, _cdiv(self.k, self.grid.size))

    @property
    def chunk(self) -> int:
        """C rows per chunk (p x mb)."""
        return self.grid.size * self.mb

    @property
    def nsteps(self) -> int:
        return _cdiv(self.m, self.chunk) if self.m and self.n else 0

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def k_range(self, rank: int) -> tuple[int, int]:
        s = min(rank * self.ks, self.k)
        return s, min(s + self.ks, self.k)

    def local_shapes(self, rank: int) -> dict:
        return {"a": self.a.local_shape(rank), "b": self.b.local_shape(rank),
                "c": self.c.local_shape(rank)}


def ksplit_layout(m: int, n: int, k: int, grid: ProcessGrid, *, trans_a: bool = False,
                  trans_b: bool = False, mb: int | None = None) -> KSplitLayout:
    """Descriptors for the K split on ``grid`` (p x 1).  mb default: one chunk."""
    m, n, k = (_check_int(x, v, 0) for x, v in (("m", m), ("n", n), ("k", k)))
    if mb is None:
        mb = max(1, _cdiv(m, grid.size))
    return KSplitLayout(m, n, k, grid, mb, bool(trans_a), bool(trans_b))
