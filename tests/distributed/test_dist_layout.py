"""Pure-Python tests: process grid choice, block-cyclic descriptors, and
scatter/gather over a fake communicator (threads, no MPI)."""
import threading

import numpy as np
import pytest

from sgemm.distributed import (AxisCyclic, BlockCyclic, ProcessGrid, choose_grid, default_kb,
                               gather_matrix, gemm_layout, scatter_matrix)
from sgemm.errors import ArgumentError


# -- grid ---------------------------------------------------------------------------------
@pytest.mark.parametrize("p,shape", [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (2, 2)),
                                     (5, (1, 5)), (6, (2, 3)), (8, (2, 4)), (9, (3, 3)),
                                     (12, (3, 4)), (16, (4, 4))])
def test_choose_grid_square(p, shape):
    assert choose_grid(p) == shape


def test_choose_grid_follows_c_shape():
    assert choose_grid(4, m=100000, n=10) == (4, 1)        # tall C: split its rows
    assert choose_grid(4, m=10, n=100000) == (1, 4)
    assert choose_grid(6, m=1000, n=1000) == (2, 3)        # square C: squarest grid
    assert choose_grid(4, m=1000, n=1000) == (2, 2)


def test_process_grid_coords_roundtrip():
    g = ProcessGrid(2, 3)
    assert [g.coords(r) for r in range(6)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert all(g.rank_of(*g.coords(r)) == r for r in range(6))
    assert g.row_ranks(1) == [3, 4, 5] and g.col_ranks(2) == [2, 5]
    with pytest.raises(ArgumentError):
        g.coords(6)


def test_process_grid_create_checks_shape():
    assert ProcessGrid.create(6, (3, 2)).shape == (3, 2)
    assert ProcessGrid.create(6).shape == (2, 3)
    with pytest.raises(ArgumentError, match="4 places"):
        ProcessGrid.create(6, (2, 2))
    with pytest.raises(ArgumentError):
        ProcessGrid(0, 2)


# -- 1-D axis -------------------------------------------------------------------------------
@pytest.mark.parametrize("n,b,p", [(37, 5, 2), (53, 7, 3), (29, 4, 4), (10, 3, 6), (0, 3, 2),
                                   (1, 1, 3), (64, 16, 4), (7, 100, 3)])
def test_axis_partition(n, b, p):
    ax = AxisCyclic(n, b, p)
    seen = np.concatenate([ax.global_indices(q) for q in range(p)]) if n else np.zeros(0)
    assert sorted(seen.tolist()) == list(range(n))            # every index exactly once
    assert sum(ax.local_size(q) for q in range(p)) == n
    for q in range(p):
        gi = ax.global_indices(q)
        assert len(gi) == ax.local_size(q)
        assert np.all(np.diff(gi) > 0)                         # increasing
        for li, g in enumerate(gi.tolist()):
            assert ax.to_local(g) == (q, li)
            assert ax.to_global(q, li) == g
    # sizes differ by at most one block between owners
    sizes = [ax.local_size(q) for q in range(p)]
    assert max(sizes) - min(sizes) <= b


def test_axis_uneven_last_block():
    ax = AxisCyclic(37, 5, 2)        # blocks 0..7, the last one has 2 items
    assert ax.nblocks == 8
    assert ax.block_range(7) == (35, 37)
    assert ax.local_size(0) == 20 and ax.local_size(1) == 17
    assert ax.local_offset(7) == 15
    assert ax.segments(1) == [(5, 10, 0), (15, 20, 5), (25, 30, 10), (35, 37, 15)]
    assert AxisCyclic(37, 5, 1).segments(0) == [(0, 37, 0)]    # merged on one owner


# -- 2-D descriptors ---------------------------------------------------------------------------
def _all_descs():
    for grid in (ProcessGrid(1, 1), ProcessGrid(2, 2), ProcessGrid(2, 3), ProcessGrid(3, 1)):
        for transposed in (False, True):
            yield BlockCyclic((37, 53), (5, 7), grid, transposed)
            yield BlockCyclic((4, 3), (3, 2), grid, transposed)


@pytest.mark.parametrize("desc", list(_all_descs()), ids=str)
def test_blocks_tile_the_matrix(desc):
    cover = np.zeros(desc.shape, dtype=int)
    for blk in desc.blocks():
        cover[blk.rows, blk.cols] += 1
        r0, c0 = blk.rows.start, blk.cols.start
        rank, (li, lj) = desc.owner(r0, c0)
        assert rank == blk.owner and (li, lj) == (blk.local_rows.start, blk.local_cols.start)
        lr, lc = desc.local_shape(blk.owner)
        assert blk.local_rows.stop <= lr and blk.local_cols.stop <= lc
    assert np.all(cover == 1)


@pytest.mark.parametrize("desc", list(_all_descs()), ids=str)
def test_extract_insert_roundtrip(desc):
    g = np.arange(np.prod(desc.shape), dtype=np.float32).reshape(desc.shape)
    out = np.full(desc.shape, -1, np.float32)
    for rank in range(desc.grid.size):
        loc = desc.extract(g, rank)
        assert loc.shape == desc.local_shape(rank) and loc.flags.c_contiguous
        ri, ci = desc.row_indices(rank), desc.col_indices(rank)
        np.testing.assert_array_equal(loc, g[np.ix_(ri, ci)])
        for blk in desc.blocks(rank):
            np.testing.assert_array_equal(loc[blk.local_rows, blk.local_cols], g[blk.rows, blk.cols])
        desc.insert(out, loc, rank)
    np.testing.assert_array_equal(out, g)


def test_transposed_descriptor_is_transpose_of_normal():
    """A^T stored transposed over the grid: each local block is the transpose
    of the local block of A under the normal distribution."""
    g = ProcessGrid(2, 3)
    a = np.random.default_rng(0).standard_normal((37, 29)).astype(np.float32)   # op(A): m x k
    normal = BlockCyclic((37, 29), (5, 4), g)
    stored_t = BlockCyclic((29, 37), (4, 5), g, transposed=True)
    for rank in range(g.size):
        np.testing.assert_array_equal(stored_t.extract(a.T.copy(), rank),
                                      normal.extract(a, rank).T)


def test_gemm_layout_consistency():
    g = ProcessGrid(2, 3)
    for ta in (False, True):
        for tb in (False, True):
            lay = gemm_layout(37, 53, 29, g, trans_a=ta, trans_b=tb, mb=5, nb=7, kb=4)
            assert lay.nsteps == 8
            assert lay.a.shape == ((29, 37) if ta else (37, 29))
            assert lay.b.shape == ((53, 29) if tb else (29, 53))
            for rank in range(g.size):
                m_loc, n_loc = lay.c.local_shape(rank)
                a_shape, b_shape = lay.a.local_shape(rank), lay.b.local_shape(rank)
                assert (a_shape[1] if ta else a_shape[0]) == m_loc    # A rows follow C rows
                assert (b_shape[0] if tb else b_shape[1]) == n_loc    # B columns follow C columns
            # K owners: A's over grid columns, B's over grid rows
            assert lay.k_axis_a.nprocs == 3 and lay.k_axis_b.nprocs == 2


def test_default_blocks():
    lay = gemm_layout(1000, 999, 4096, ProcessGrid(2, 2))
    assert (lay.mb, lay.nb) == (500, 500)
    assert lay.kb == 512 and lay.nsteps == 8
    assert default_kb(32768, ProcessGrid(2, 2)) == 4096
    assert default_kb(16384, ProcessGrid(1, 2)) == 2048
    assert default_kb(29, ProcessGrid(2, 2)) == 29
    assert default_kb(5000, ProcessGrid(1, 1)) == 5000     # one process: one panel
    with pytest.raises(ArgumentError):
        gemm_layout(10, 10, 10, ProcessGrid(1, 1), kb=0)


# -- scatter / gather over a fake communicator ---------------------------------------------
class FakeWorld:
    def __init__(self, n):
        self.n = n
        self.boxes = {}
        self.cv = threading.Condition()
        self.messages = 0


class FakeComm:
    """Get_rank/Get_size/Send/Recv with MPI's matching by (source, dest, tag)."""

    def __init__(self, world, rank):
        self.world, self.rank = world, rank

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.world.n

    def Send(self, buf, dest, tag=0):
        w = self.world
        with w.cv:
            w.boxes.setdefault((self.rank, dest, tag), []).append(np.array(buf, copy=True))
            w.messages += 1
            w.cv.notify_all()

    def Recv(self, buf, source, tag=0):
        w = self.world
        with w.cv:
            key = (source, self.rank, tag)
            assert w.cv.wait_for(lambda: w.boxes.get(key), timeout=10), "fake Recv timed out"
            msg = w.boxes[key].pop(0)
        assert msg.shape == buf.shape and msg.dtype == buf.dtype
        buf[...] = msg


def run_ranks(n, fn):
    world = FakeWorld(n)
    results, errors = [None] * n, []

    def target(r):
        try:
            results[r] = fn(FakeComm(world, r))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=target, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    if errors:
        raise errors[0]
    return results, world


@pytest.mark.parametrize("grid,transposed,root", [((2, 3), False, 0), ((2, 3), True, 4),
                                                  ((1, 1), False, 0), ((3, 1), True, 2)])
def test_scatter_gather_roundtrip_fake_comm(grid, transposed, root):
    g = ProcessGrid(*grid)
    desc = BlockCyclic((37, 53), (5, 7), g, transposed)
    full = np.random.default_rng(1).standard_normal(desc.shape).astype(np.float32)

    def body(comm):
        mine = scatter_matrix(comm, desc, full if comm.Get_rank() == root else None, root=root)
        np.testing.assert_array_equal(mine, desc.extract(full, comm.Get_rank()))
        return gather_matrix(comm, desc, mine * 2, root=root)

    results, world = run_ranks(g.size, body)
    assert world.messages == 2 * (g.size - 1)           # one message per rank each way
    for r, res in enumerate(results):
        if r == root:
            np.testing.assert_array_equal(res, full * 2)
        else:
            assert res is None


def test_scatter_root_checks_shape():
    desc = BlockCyclic((4, 4), (2, 2), ProcessGrid(1, 1))
    with pytest.raises(ArgumentError, match="needs the"):
        run_ranks(1, lambda comm: scatter_matrix(comm, desc, np.zeros((3, 4), np.float32)))
