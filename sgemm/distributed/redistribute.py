"""Scatter a matrix held by one rank into a block-cyclic distribution, and
gather it back, over MPI point-to-point messages.

The root cuts each rank's local array out of the full matrix (host or device
memory; on a device the cut runs there and only the pieces cross to the
host) and sends it as one contiguous float32 message; a receiver gets its
whole local array in one message.  Only ``Get_rank``, ``Get_size``, ``Send``
and ``Recv`` are used, so a fake communicator can test this without MPI.
Setup-time helpers: they stage through host memory and are not tuned.
"""
from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .layout import BlockCyclic

SCATTER_TAG = 7301
GATHER_TAG = 7302


def host_f32(x) -> np.ndarray:
    """A C-contiguous float32 NumPy copy/view of a NumPy or CuPy array."""
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy
        x = cupy.asnumpy(x)
    return np.ascontiguousarray(x, dtype=np.float32)


def scatter_matrix(comm, desc: BlockCyclic, matrix=None, *, root: int = 0,
                   tag: int = SCATTER_TAG) -> np.ndarray:
    """This rank's local array (host float32) of ``matrix``, which only
    ``root`` needs to pass."""
    rank, size = comm.Get_rank(), comm.Get_size()
    if size != desc.grid.size:
        raise ArgumentError(f"communicator has {size} ranks, the descriptor's grid {desc.grid.size}")
    if rank == root:
        if matrix is None or tuple(matrix.shape) != desc.shape:
            got = None if matrix is None else tuple(matrix.shape)
            raise ArgumentError(f"scatter root needs the {desc.shape} matrix, got {got}")
        mine = None
        for dest in range(size):
            piece = host_f32(desc.extract(matrix, dest))
            if dest == root:
                mine = piece
            else:
                comm.Send(piece, dest=dest, tag=tag)
        return mine
    buf = np.empty(desc.local_shape(rank), dtype=np.float32)
    comm.Recv(buf, source=root, tag=tag)
    return buf


def gather_matrix(comm, desc: BlockCyclic, local, *, root: int = 0, out=None,
                  tag: int = GATHER_TAG):
    """The full matrix on ``root`` (a new host float32 array, or ``out``
    filled in place); None on the other ranks."""
    rank, size = comm.Get_rank(), comm.Get_size()
    if size != desc.grid.size:
        raise ArgumentError(f"communicator has {size} ranks, the descriptor's grid {desc.grid.size}")
    mine = host_f32(local)
    if tuple(mine.shape) != desc.local_shape(rank):
        raise ArgumentError(f"local array has shape {tuple(mine.shape)}, rank {rank} holds "
                            f"{desc.local_shape(rank)}")
    if rank != root:
        comm.Send(mine, dest=root, tag=tag)
        return None
    if out is None:
        out = np.empty(desc.shape, dtype=np.float32)
    elif tuple(out.shape) != desc.shape:
        raise ArgumentError(f"out has shape {tuple(out.shape)}, the matrix {desc.shape}")
    for src in range(size):
        if src == root:
            piece = mine
        else:
            piece = np.empty(desc.local_shape(src), dtype=np.float32)
            comm.Recv(piece, source=src, tag=tag)
        if type(out).__module__.split(".")[0] == "cupy":
            import cupy
            with out.device:
                piece = cupy.asarray(piece)
        desc.insert(out, piece, src)
    return out
