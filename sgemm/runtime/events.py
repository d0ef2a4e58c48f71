"""GPU time of a few launches on the caller's stream, for the measured choice
(sgemm/measure.py): two driver events around a batch, and whether the
stream is being captured into a CUDA graph (then nothing may be timed or
synchronized on it, and the choice stays the model's).

Through ctypes on libcuda like runtime/cu.py, but bound apart from it: these
calls run only where a choice is measured, and cuEventElapsedTime is
cuEventElapsedTime_v2 only from CUDA 12.8 on, so a missing symbol here must
not make the whole driver "too old".  Where they cannot be bound (no
driver, the test suite's stand-in driver), ``capturing`` answers True and
nothing is timed."""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_float, c_int, c_uint, c_void_p

from ..errors import DeviceError

_fns: dict = {}
CU_STREAM_CAPTURE_STATUS_NONE = 0


def _bind() -> dict:
    if not _fns:
        raw = ctypes.CDLL("libcuda.so.1")
        out = {}
        for name, alts, args in (
                ("is_capturing", ("cuStreamIsCapturing",), (c_void_p, POINTER(c_int))),
                ("create", ("cuEventCreate",), (POINTER(c_void_p), c_uint)),
                ("record", ("cuEventRecord",), (c_void_p, c_void_p)),
                ("sync", ("cuEventSynchronize",), (c_void_p,)),
                ("elapsed", ("cuEventElapsedTime_v2", "cuEventElapsedTime"),
                 (POINTER(c_float), c_void_p, c_void_p)),
                ("destroy", ("cuEventDestroy_v2", "cuEventDestroy"), (c_void_p,))):
            f = next(getattr(raw, a) for a in alts if hasattr(raw, a))
            f.argtypes, f.restype = args, c_int
            out[name] = f
        _fns.update(out)
    return _fns


def _check(err: int, what: str) -> None:
    if err:
        from .cu import error_name
        raise DeviceError(f"{what} failed: {error_name(err)} ({int(err)})")


def capturing(stream_handle: int) -> bool:
    """True where the stream is capturing, or where the driver cannot say
    (the legacy stream while another one captures in global mode answers
    with an error: timing then would invalidate that capture)."""
    try:
        status = c_int()
        err = _bind()["is_capturing"](stream_handle or None, ctypes.byref(status))
    except Exception:  # noqa: BLE001 -- no driver to ask: as if capturing, nothing is timed
        return True
    return bool(err) or status.value != CU_STREAM_CAPTURE_STATUS_NONE


class Timer:
    """Events on one stream: ``seconds(run, n)`` enqueues run() n times
    between them and returns the mean GPU seconds per run."""

    def __init__(self, stream_handle: int):
        self._f, self._s = _bind(), stream_handle or None
        self._ev = []
        for _ in range(2):
            ev = c_void_p()
            _check(self._f["create"](ctypes.byref(ev), 0), "cuEventCreate")
            self._ev.append(ev)

    def seconds(self, run, n: int) -> float:
        f, (e0, e1) = self._f, self._ev
        _check(f["record"](e0, self._s), "cuEventRecord")
        for _ in range(n):
            run()
        _check(f["record"](e1, self._s), "cuEventRecord")
        _check(f["sync"](e1), "cuEventSynchronize")
        ms = c_float()
        _check(f["elapsed"](ctypes.byref(ms), e0, e1), "cuEventElapsedTime")
        return ms.value * 1e-3 / n

    def close(self) -> None:
        for ev in self._ev:
            self._f["destroy"](ev)
        self._ev = []
