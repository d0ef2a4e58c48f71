"""A NumPy-backed stand-in for the few CuPy calls the distributed GPU path
makes, so that its Python (streams, events, NCCL group calls, cross-device
copies, the benchmark driver) runs on a CPU-only CI machine.

It checks structure, not CUDA semantics: every "device" is host memory, work
runs at once, events are host timestamps, and an NCCL broadcast is a memmove
done when every member of the communicator has called it (in one group, as
the lockstep driver does).  ``install(monkeypatch)`` puts it in sys.modules
as cupy, cupy.cuda, cupy.cuda.nccl and cupy.cublas for one test.
"""
from __future__ import annotations

import ctypes
import itertools
import sys
import time
import types

import numpy as np

NDEV = 4
_state = {"device": 0, "group": 0}
_ids = itertools.count(1)


class _Ptr:
    def __init__(self, arr):
        self.ptr = arr.__array_interface__["data"][0] if arr.size else 0
        self._arr = arr

    def copy_from_device(self, src, nbytes):
        if nbytes:
            ctypes.memmove(self.ptr, src.ptr, nbytes)


class ndarray(np.ndarray):
    def __array_finalize__(self, obj):
        self._dev = getattr(obj, "_dev", _state["device"])

    @property
    def data(self):
        return _Ptr(self)

    @property
    def device(self):
        return Device(self._dev)

    def get(self):
        return np.array(self, copy=True).view(np.ndarray)


ndarray.__module__ = "cupy"


def _wrap(a):
    out = np.asarray(a).view(ndarray)
    out._dev = _state["device"]
    return out


def empty(shape, dtype=np.float32):
    return _wrap(np.empty(shape, dtype=dtype))


def zeros(shape, dtype=np.float32):
    return _wrap(np.zeros(shape, dtype=dtype))


def ones(shape, dtype=np.float32):
    return _wrap(np.ones(shape, dtype=dtype))


def arange(*a, **k):
    return _wrap(np.arange(*a, **k))


def asarray(a, dtype=None):
    if isinstance(a, ndarray) and a._dev == _state["device"] and dtype in (None, a.dtype):
        return a
    return _wrap(np.array(np.asarray(a), dtype=dtype, copy=True))


def ascontiguousarray(a, dtype=None):
    if isinstance(a, ndarray) and a.flags.c_contiguous and dtype in (None, a.dtype):
        return a
    return _wrap(np.ascontiguousarray(np.asarray(a), dtype=dtype))


def asnumpy(a, stream=None, blocking=True):
    return np.array(np.asarray(a), copy=True).view(np.ndarray)


def copyto(dst, src):
    np.copyto(dst, src)


def matmul(a, b, out=None):
    r = np.matmul(np.asarray(a), np.asarray(b))
    if out is None:
        return _wrap(r)
    out[...] = r
    return out


float32, uint32, int64 = np.float32, np.uint32, np.int64


class _Pool:
    def free_all_blocks(self):
        pass


def get_default_memory_pool():
    return _Pool()


# -- cuda ------------------------------------------------------------------------------
class Device:
    def __init__(self, i=None):
        self.id = _state["device"] if i is None else int(i)
        if not 0 <= self.id < NDEV:
            raise RuntimeError(f"fake device {self.id} does not exist")
        self._prev = []

    def __enter__(self):
        self._prev.append(_state["device"])
        _state["device"] = self.id
        return self

    def __exit__(self, *exc):
        _state["device"] = self._prev.pop()
        return False

    def use(self):
        _state["device"] = self.id

    def synchronize(self):
        pass


class Stream:
    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.ptr = next(_ids)
        self.device_id = _state["device"]
        self.priority = priority
        self._prev = []

    def __enter__(self):
        if self.device_id != _state["device"]:
            raise RuntimeError(f"stream of device {self.device_id} used on device "
                               f"{_state['device']}")
        self._prev.append(_current_stream.get(_state["device"]))
        _current_stream[_state["device"]] = self
        return self

    def __exit__(self, *exc):
        _current_stream[_state["device"]] = self._prev.pop()
        return False

    def wait_event(self, ev):
        if not isinstance(ev, Event):
            raise TypeError(f"wait_event needs an Event, got {type(ev).__name__}")
        if ev._device != self.device_id:
            raise RuntimeError("event and stream on different devices")

    def synchronize(self):
        pass

    @property
    def done(self):
        return True


_current_stream: dict = {}


def get_current_stream(device_id=-1):
    d = _state["device"] if device_id == -1 else device_id
    if d not in _current_stream or _current_stream[d] is None:
        s = Stream.__new__(Stream)
        s.ptr, s.device_id, s.priority, s._prev = 0, d, None, []
        _current_stream[d] = s
    return _current_stream[d]


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self._t = None
        self._timing = not disable_timing
        self._device = _state["device"]

    def record(self, stream=None):
        if stream is not None and stream.device_id != self._device:
            raise RuntimeError("event recorded on a stream of another device")
        self._t = time.perf_counter()

    @property
    def done(self):
        return True

    def synchronize(self):
        pass


def get_elapsed_time(e0, e1):
    if not (e0._timing and e1._timing):
        raise RuntimeError("elapsed time of an event without timing")
    return (e1._t - e0._t) * 1e3


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return NDEV

    @staticmethod
    def getDeviceProperties(d):
        return {"name": b"Fake GPU", "totalGlobalMem": 1 << 30}

    @staticmethod
    def deviceGetStreamPriorityRange():
        return (0, -5)


# -- nccl --------------------------------------------------------------------------------
class _Clique:
    def __init__(self, n):
        self.n = n
        self.pending: list = []


class NcclCommunicator:
    """initAll: in-process cliques (memmove at group end).  The (ndev, uid,
    rank) constructor, under MPI: an MPI communicator of the processes that
    share ``uid`` (every process creates its communicators in the same order,
    as real NCCL initialisation also requires), broadcasts are MPI Bcasts."""

    def __init__(self, ndev, uid, rank):
        import zlib

        from mpi4py import MPI
        color = zlib.crc32(bytes(x & 0xFF for x in uid)) & 0x7FFFFFFF
        self._mpi = MPI.COMM_WORLD.Split(color, rank)
        if self._mpi.Get_size() != ndev or self._mpi.Get_rank() != rank:
            raise RuntimeError(f"fake NCCL: communicator of {self._mpi.Get_size()} for "
                               f"ndev={ndev}, rank {self._mpi.Get_rank()} for {rank}")
        self._clique, self._rank, self._dev, self._alive = None, rank, _state["device"], True

    @staticmethod
    def initAll(devices):
        clique = _Clique(len(devices))
        _cliques.append(clique)
        out = []
        for r, d in enumerate(devices):
            c = NcclCommunicator.__new__(NcclCommunicator)
            c._clique, c._rank, c._dev, c._alive = clique, r, d, True
            out.append(c)
        return out

    def size(self):
        return self._clique.n if self._clique is not None else self._mpi.Get_size()

    def rank_id(self):
        return self._rank

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        if not self._alive:
            raise RuntimeError("communicator destroyed")
        if datatype != NCCL_FLOAT32:
            raise ValueError("fake NCCL: float32 only")
        if self._clique is None:          # multi-process: do it now, blocking
            if self._rank == root and sendbuf != recvbuf and count:
                ctypes.memmove(recvbuf, sendbuf, 4 * count)
            if count:
                arr = np.ctypeslib.as_array((ctypes.c_float * int(count)).from_address(recvbuf))
                self._mpi.Bcast(arr, root=root)
            return
        self._clique.pending.append(("bcast", self._rank, sendbuf, recvbuf, int(count),
                                     int(root)))
        if _state["group"] == 0:
            _flush()

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        if not self._alive:
            raise RuntimeError("communicator destroyed")
        if datatype != NCCL_FLOAT32 or op != NCCL_SUM:
            raise ValueError("fake NCCL: float32 sums only")
        n = self.size()
        if self._clique is None:          # multi-process: do it now, blocking
            if recvcount:
                send = np.ctypeslib.as_array((ctypes.c_float * int(n * recvcount))
                                             .from_address(sendbuf)).copy()
                recv = np.ctypeslib.as_array((ctypes.c_float * int(recvcount))
                                             .from_address(recvbuf))
                self._mpi.Reduce_scatter_block(send, recv)
            return
        self._clique.pending.append(("rs", self._rank, sendbuf, recvbuf, int(recvcount), -1))
        if _state["group"] == 0:
            _flush()

    def check_async_error(self):
        pass

    def destroy(self):
        self._alive = False

    def abort(self):
        self._alive = False


_cliques: list = []


def _flush():
    for clique in _cliques:
        if clique.pending:
            _run(clique)


def _all_pending():
    return [c for c in _cliques if c.pending]


def _floats(ptr, count):
    return np.ctypeslib.as_array((ctypes.c_float * int(count)).from_address(ptr))


def _run(clique):
    while len(clique.pending) >= clique.n:
        batch, clique.pending = clique.pending[:clique.n], clique.pending[clique.n:]
        ranks = sorted(r for _, r, *_ in batch)
        if ranks != list(range(clique.n)):
            raise RuntimeError(f"fake NCCL: ranks {ranks} in one round")
        kinds = {k for k, *_ in batch}
        counts = {c for *_, c, _ in batch}
        roots = {rt for *_, rt in batch}
        if len(kinds) != 1 or len(counts) != 1 or len(roots) != 1:
            raise RuntimeError(f"fake NCCL: kinds {kinds} counts {counts} roots {roots} "
                               "disagree")
        kind, count, root = kinds.pop(), counts.pop(), roots.pop()
        if kind == "rs":
            n = clique.n
            total = np.zeros(n * count, np.float32)
            for _, r, s, _, _, _ in sorted(batch, key=lambda x: x[1]):
                if count:
                    total += _floats(s, n * count)
            for _, r, _, dst, _, _ in batch:
                if count:
                    _floats(dst, count)[...] = total[r * count:(r + 1) * count]
            continue
        src = next(s for _, r, s, _, _, _ in batch if r == root)
        for _, r, s, dst, _, _ in batch:
            if dst != src and count:
                ctypes.memmove(dst, src, 4 * count)


def groupStart():
    _state["group"] += 1


def groupEnd():
    _state["group"] -= 1
    if _state["group"] == 0:
        _flush()
        left = _all_pending()
        if left:
            raise RuntimeError("fake NCCL: a collective is missing members at groupEnd "
                               "(real NCCL would hang)")


def get_unique_id():
    import os
    return tuple(int(x) - 256 if x > 127 else int(x) for x in os.urandom(128))


def get_version():
    return 22800


NCCL_FLOAT32 = 7
NCCL_SUM = 0


# -- cublas ------------------------------------------------------------------------------
def _cublas_gemm(transa, transb, a, b, out=None, alpha=1.0, beta=0.0):
    A = np.asarray(a).T if transa == "T" else np.asarray(a)
    B = np.asarray(b).T if transb == "T" else np.asarray(b)
    r = alpha * (A @ B)
    if beta != 0.0:
        r = r + beta * np.asarray(out)
    out[...] = r
    return out


class FakePlan:
    """sgemm.plan stand-in (no GPU here): NumPy on the fake arrays."""

    calls: list = []            # (kernel, precision) of every plan made, for tests

    def __init__(self, a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
                 kernel="auto", precision=None, stream=None):
        self.args = (a, b, c, alpha, beta, trans_a, trans_b)
        self.kernel = type("K", (), {"name": "fake"})()
        FakePlan.calls.append((kernel, precision))

    def execute(self, stream=None):
        a, b, c, alpha, beta, ta, tb = self.args
        A = np.asarray(a).T if ta else np.asarray(a)
        B = np.asarray(b).T if tb else np.asarray(b)
        r = alpha * (A @ B) + (beta * np.asarray(c) if beta != 0.0 else 0.0)
        c[...] = r
        return c


def patch_sgemm(monkeypatch=None):
    """sgemm.plan / sgemm.gemm on NumPy (they need a GPU otherwise)."""
    import sgemm
    gemm = lambda *a, **k: FakePlan(*a, **k).execute()  # noqa: E731
    if monkeypatch is None:
        sgemm.plan, sgemm.gemm = FakePlan, gemm
    else:
        monkeypatch.setattr(sgemm, "plan", FakePlan, raising=False)
        monkeypatch.setattr(sgemm, "gemm", gemm, raising=False)


def install(monkeypatch=None):
    """Register this module as cupy (and its submodules): for one test with
    ``monkeypatch``, for the whole process without."""
    mod = sys.modules[__name__]
    cuda = types.ModuleType("cupy.cuda")
    cuda.Device, cuda.Stream, cuda.Event = Device, Stream, Event
    cuda.get_current_stream, cuda.get_elapsed_time = get_current_stream, get_elapsed_time
    cuda.runtime = _Runtime()
    nccl = types.ModuleType("cupy.cuda.nccl")
    for name in ("NcclCommunicator", "groupStart", "groupEnd", "get_unique_id", "get_version",
                 "NCCL_FLOAT32", "NCCL_SUM"):
        setattr(nccl, name, getattr(mod, name))
    cuda.nccl = nccl
    cublas = types.ModuleType("cupy.cublas")
    cublas.gemm = _cublas_gemm
    cupy = types.ModuleType("cupy")
    for name in ("ndarray", "empty", "zeros", "ones", "arange", "asarray", "ascontiguousarray",
                 "asnumpy", "copyto", "matmul", "float32", "uint32", "int64",
                 "get_default_memory_pool"):
        setattr(cupy, name, getattr(mod, name))
    cupy.cuda, cupy.cublas, cupy.__version__ = cuda, cublas, "0.0-fake"
    _state["device"], _state["group"] = 0, 0
    _current_stream.clear()
    _cliques.clear()
    mods = {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nccl": nccl, "cupy.cublas": cublas}
    for name, m in mods.items():
        if monkeypatch is None:
            sys.modules[name] = m
        else:
            monkeypatch.setitem(sys.modules, name, m)
    return cupy
