"""Failure handling: one failing rank must take the whole job down, loudly and
within a bounded time, never leave the others waiting in a collective.

* ``abort_on_error(comm)``: a context manager for a rank's body.  An exception
  (or ``sys.exit`` with a non-zero code) prints ``[sgemm.distributed] rank
  r/P (host): <error>`` and the traceback to stderr, runs the registered abort
  hooks (NCCL communicators are aborted there, which releases GPU kernels
  stuck in a collective) and calls ``comm.Abort(code)``: the MPI launcher then
  kills every rank and exits non-zero.
* ``Watchdog(seconds, comm)``: a daemon timer that does the same if the body
  is still running after ``seconds`` (a hung peer, a stuck blocking call).
* ``run(main, comm=..., timeout=...)``: both together.
* Waits inside SUMMA poll with a deadline (``timeout``) and raise
  ``DistributedTimeoutError``, which the guard turns into an abort.

NCCL has no collective timeout of its own: a process whose peer died waits
forever inside the kernel.  The deadline polling above plus ncclCommAbort is
the remedy.  ``NCCL_ASYNC_ERROR_HANDLING`` / ``TORCH_NCCL_*`` are PyTorch
settings and do nothing here.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
import traceback

from ..errors import SgemmError

DEFAULT_TIMEOUT_ENV = "SGEMM_DIST_TIMEOUT"


class DistributedError(SgemmError, RuntimeError):
    """A distributed run failed (collective mismatch, peer failure, ...)."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A wait for communication or computation passed its deadline."""


def default_timeout() -> float:
    """Seconds a SUMMA call may wait for its peers: $SGEMM_DIST_TIMEOUT, else 900."""
    try:
        return float(os.environ.get(DEFAULT_TIMEOUT_ENV, "900"))
    except ValueError:
        return 900.0


def ensure_nccl_env() -> None:
    """Environment NCCL must see before its first communicator is created.

    NVLink multicast (NVLS) stays off: on the shared H200 hosts a program using
    it can take the GPUs out of service.  A different value set by the caller
    is overridden, with a warning."""
    prev = os.environ.get("NCCL_NVLS_ENABLE")
    if prev not in (None, "0"):
        print(f"[sgemm.distributed] NCCL_NVLS_ENABLE={prev} overridden to 0 "
              "(NVLink multicast must stay off)", file=sys.stderr, flush=True)
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    # Keep the other multicast paths off too, in case a library in the same
    # process uses them.
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")


_abort_hooks: list = []
_abort_lock = threading.Lock()


def register_abort_hook(fn) -> None:
    """Called (best effort, in reverse order) before MPI_Abort."""
    _abort_hooks.append(fn)


def unregister_abort_hook(fn) -> None:
    with contextlib.suppress(ValueError):
        _abort_hooks.remove(fn)


def _who(comm) -> str:
    host = socket.gethostname()
    if comm is None:
        return f"pid {os.getpid()} ({host})"
    try:
        return f"rank {comm.Get_rank()}/{comm.Get_size()} ({host}, pid {os.getpid()})"
    except Exception:
        return f"pid {os.getpid()} ({host})"


def report(message: str, comm=None, exc: BaseException | None = None) -> None:
    lines = [f"[sgemm.distributed] {_who(comm)}: {message}"]
    if exc is not None:
        lines.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
    except Exception:
        pass


ABORT_GRACE_S = 0.5


def abort(comm=None, code: int = 1) -> None:
    """Run the abort hooks, then MPI_Abort (or exit the process when there is
    no communicator).  Does not return."""
    with _abort_lock:
        for fn in reversed(list(_abort_hooks)):
            try:
                fn()
            except Exception:
                pass
        if comm is not None:
            # Give the launcher a moment to forward this rank's report: MPI_Abort
            # kills every process at once, and a message still in the launcher's
            # pipe was seen lost (the job ended with no word of why).
            time.sleep(ABORT_GRACE_S)
            try:
                comm.Abort(code)
            except Exception:
                pass
        os._exit(code)


@contextlib.contextmanager
def abort_on_error(comm=None, code: int = 1):
    """Wrap a rank's body: any exception aborts the whole MPI job."""
    try:
        yield
    except SystemExit as e:
        rc = e.code
        if rc in (None, 0):
            raise
        if not isinstance(rc, int):
            report(str(rc), comm)
            rc = 1
        else:
            report(f"exited with status {rc}", comm)
        abort(comm, rc)
    except BaseException as e:  # noqa: BLE001 - every failure must abort
        report(f"{type(e).__name__}: {e}  -- aborting the job", comm, e)
        abort(comm, code)


class Watchdog:
    """Abort the job if still armed ``seconds`` after start (None: disarmed)."""

    def __init__(self, seconds: float | None, comm=None, what: str = "the run", code: int = 3):
        self.seconds, self.comm, self.what, self.code = seconds, comm, what, code
        self._timer = None
        self.t0 = None

    def _fire(self):
        report(f"watchdog: {self.what} still running after {self.seconds:.0f} s "
               "(a peer died or hangs?) -- aborting the job", self.comm)
        abort(self.comm, self.code)

    def start(self) -> "Watchdog":
        if self.seconds is not None and self.seconds > 0:
            self.t0 = time.monotonic()
            self._timer = threading.Timer(self.seconds, self._fire)
            self._timer.daemon = True
            self._timer.start()
        return self

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cancel()
        return False


def run(main, *args, comm=None, timeout: float | None = None, **kwargs):
    """``main(*args, **kwargs)`` under ``abort_on_error`` and a ``Watchdog``."""
    with abort_on_error(comm), Watchdog(timeout, comm):
        return main(*args, **kwargs)


def poll_until(done, deadline: float, what: str, check=None) -> None:
    """Spin-sleep until ``done()`` is true; raise DistributedTimeoutError at
    ``deadline`` (time.monotonic()).  ``check()`` runs between polls (it may
    raise, e.g. an NCCL asynchronous error)."""
    sleep = 2e-6
    while not done():
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise DistributedTimeoutError(f"timed out waiting for {what}")
        time.sleep(sleep)
        sleep = min(sleep * 2, 2e-4)
