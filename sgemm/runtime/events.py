"""GPU time of a few launches on the caller's stream, for the measured choice
(sgemm/measure.py): two driver events around a batch, and whether the
stream is being captured into a CUDA graph (then nothing may be timed or
synchronized on it, and the choice stays the model's)."""
from __future__ import annotations


def _driver():
    from .device import ensure_bindings
    ensure_bindings()
    from cuda.bindings import driver
    return driver


def capturing(stream_handle: int) -> bool:
    """True where the stream is capturing, or where the driver cannot say
    (the legacy stream while another one captures in global mode answers
    with an error: timing then would invalidate that capture)."""
    try:
        d = _driver()
        err, status = d.cuStreamIsCapturing(d.CUstream(stream_handle))
    except Exception:  # noqa: BLE001 -- no answer: as if capturing, nothing is timed
        return True
    if int(err):
        return True
    return status != d.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


class Timer:
    """Events on one stream: ``seconds(run, n)`` enqueues run() n times
    between them and returns the mean GPU seconds per run."""

    def __init__(self, stream_handle: int):
        d = _driver()
        self._d, self._s = d, d.CUstream(stream_handle)
        self._ev = []
        for _ in range(2):
            err, ev = d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT)
            if int(err):
                self.close()
                raise RuntimeError(f"cuEventCreate: {err!r}")
            self._ev.append(ev)

    def seconds(self, run, n: int) -> float:
        d, (e0, e1) = self._d, self._ev
        d.cuEventRecord(e0, self._s)
        for _ in range(n):
            run()
        d.cuEventRecord(e1, self._s)
        (err,) = d.cuEventSynchronize(e1)
        if int(err):
            raise RuntimeError(f"cuEventSynchronize: {err!r}")
        err, ms = d.cuEventElapsedTime(e0, e1)
        if int(err):
            raise RuntimeError(f"cuEventElapsedTime: {err!r}")
        return ms * 1e-3 / n

    def close(self) -> None:
        for ev in self._ev:
            self._d.cuEventDestroy(ev)
        self._ev = []
