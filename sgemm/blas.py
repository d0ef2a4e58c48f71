"""The netlib / cuBLAS column-major interface on flat device buffers.

    sgemm.blas.sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)

Semantics follow the reference BLAS exactly: argument checks in xerbla's
order (the error names the parameter and its position), quick return when
m == 0 or n == 0 or ((alpha == 0 or k == 0) and beta == 1), C = beta*C when
alpha == 0 or k == 0 (A and B not read), beta == 0 overwrites C without
reading it, and only the m x n block of C (leading dimension ldc) is written.
A, B, C are 1-D float32 buffers (CuPy, PyTorch, NumPy, ...).  Non-finite alpha
or beta are rejected, like everywhere in this library.
"""
from __future__ import annotations

import numbers

from . import plan_cache
from . import validate as V
from .arrays import current_stream, describe, to_device
from .errors import ArgumentError, ArgumentTypeError
from .problem import Problem
from .runtime import device as devmod
from .runtime import launcher

_TRANS = {"N": False, "T": True, "C": True}  # real data: conjugate transpose == transpose


def _xerbla(pos: int, name: str, msg: str) -> ArgumentError:
    return ArgumentError(f"sgemm: parameter {pos} ({name}) {msg}")


def _int(pos: int, name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise _xerbla(pos, name, f"must be an integer, got {v!r}")
    return int(v)


def check(transa, transb, m, n, k, lda, ldb, ldc) -> tuple[bool, bool, int, int, int]:
    """The reference BLAS argument checks, in its order."""
    ta = _TRANS.get(transa.upper()) if isinstance(transa, str) and len(transa) == 1 else None
    if ta is None:
        raise _xerbla(1, "transa", f"= {transa!r} is not one of 'N', 'T', 'C'")
    tb = _TRANS.get(transb.upper()) if isinstance(transb, str) and len(transb) == 1 else None
    if tb is None:
        raise _xerbla(2, "transb", f"= {transb!r} is not one of 'N', 'T', 'C'")
    m, n, k = _int(3, "m", m), _int(4, "n", n), _int(5, "k", k)
    for pos, name, v in ((3, "m", m), (4, "n", n), (5, "k", k)):
        if v < 0:
            raise _xerbla(pos, name, f"= {v} must be >= 0")
    nrowa = k if ta else m
    nrowb = n if tb else k
    for pos, name, v, rows, what in ((8, "lda", lda, nrowa, "k" if ta else "m"),
                                     (10, "ldb", ldb, nrowb, "n" if tb else "k"),
                                     (13, "ldc", ldc, m, "m")):
        v = _int(pos, name, v)
        if v < max(1, rows):
            raise _xerbla(pos, name, f"= {v} must be >= max(1, {what}) = {max(1, rows)}")
    return ta, tb, m, n, k


def _need(pos: int, name: str, d, ld: int, rows: int, cols: int) -> None:
    if rows == 0 or cols == 0:
        return
    need = ld * (cols - 1) + rows
    if d.size < need:
        raise _xerbla(pos, name, f"holds {d.size} elements but a {rows}x{cols} matrix with "
                      f"leading dimension {ld} needs {need}")


_TA = {"N": False, "n": False, "T": True, "t": True, "C": True, "c": True}
_SCALARS, _plain, _call_blas = plan_cache._SCALARS, plan_cache.plain, plan_cache.call_blas


def sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, *,
          kernel="auto", precision=None, stream=None):
    """C = alpha*op(A)*op(B) + beta*C on column-major buffers; returns C."""
    args = (transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, kernel, precision,
            stream)
    # A repeated call relaunches the stored launches (plan_cache.py).  The key
    # holds every argument besides the buffers' addresses; the spans that
    # relocation and the overlap test use are what the leading dimensions
    # address.  Zero sizes and unusual types take the full path below.
    # (Names bound at module level and one chained type test: each module
    # attribute or separate test is a few tens of ns on this path.)
    ta = _TA.get(transa) if type(transa) is str else None
    tb = _TA.get(transb) if type(transb) is str else None
    if (ta is None or tb is None
            or not (type(m) is type(n) is type(k) is type(lda) is type(ldb) is type(ldc) is int)
            or m <= 0 or n <= 0 or k <= 0
            or type(alpha) not in _SCALARS or type(beta) not in _SCALARS
            or not (type(kernel) is str and precision is None or _plain(kernel, precision))):
        return _uncached(*args)[1]
    ext = (4 * (lda * ((m if ta else k) - 1) + (k if ta else m)),
           4 * (ldb * ((k if tb else n) - 1) + (n if tb else k)),
           4 * (ldc * (n - 1) + m))
    # alpha and beta as given: equal scalars of these types are one float32
    extra = (transa, transb, m, n, k, lda, ldb, ldc, alpha, beta, kernel, precision)
    return _call_blas(A, B, C, extra, ext, stream, _uncached, args)


class _Trace:
    """What the plan cache stores from an uncached call: the launches, the
    device and the device-side buffers (NumPy ones' GPU copies)."""
    __slots__ = ("launches", "device", "_operands")

    def __init__(self, launches, device, operands):
        self.launches, self.device, self._operands = launches, device, operands


def _uncached(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, kernel, precision,
              stream):
    """The full path: every check, then dispatch and launch; (trace or None, C)."""
    ta, tb, m, n, k = check(transa, transb, m, n, k, lda, ldb, ldc)
    alpha = V.scalar("alpha", alpha)
    beta = V.scalar("beta", beta)
    dA, dB, dC = describe(A, "A"), describe(B, "B"), describe(C, "C")
    for d in (dA, dB, dC):
        V.dtype(d)
        if d.size > 1 and not _contiguous(d):
            raise ArgumentError(f"sgemm: {d.name} must be a contiguous buffer (the BLAS "
                                f"interface addresses it through its leading dimension), "
                                f"got shape {d.shape} strides {d.strides}")
    V.same_place([dA, dB, dC])
    V.kernel(kernel, precision)
    V.writeable(dC)
    if m == 0 or n == 0 or ((alpha == 0.0 or k == 0) and beta == 1.0):
        return None, C
    reads_ab = alpha != 0.0 and k > 0
    if reads_ab:
        _need(7, "A", dA, lda, k if ta else m, m if ta else k)
        _need(9, "B", dB, ldb, n if tb else k, k if tb else n)
    _need(12, "C", dC, ldc, m, n)
    cspan = _span(dC, ldc, m, n)
    for d, ld, r, c in ((dA, lda, k if ta else m, m if ta else k),
                        (dB, ldb, n if tb else k, k if tb else n)):
        if reads_ab:
            lo, hi = _span(d, ld, r, c)
            if cspan[0] < hi and lo < cspan[1]:
                raise ArgumentError(f"sgemm: C overlaps {d.name} in memory; the output must "
                                    "not alias an input")

    from .plan import prepare
    devmod.require_gpu()
    host = dA.device is None
    dev = devmod.info(0 if host else dA.device)
    if host:
        dA, dB, dC = (to_device(d, dev.id) for d in (dA, dB, dC))
    prob = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=dA.ptr, lda=lda, b=dB.ptr, ldb=ldb,
                   c=dC.ptr, ldc=ldc, alpha=alpha, beta=beta)
    _, _, _, launches = prepare([prob], dev, kernel, precision)
    s = stream if stream is not None else current_stream(dC.kind, dev.id)
    devmod.make_current(dev.id)
    for l in launches:
        launcher.launch(l.kernel, l.grid, l.block, l.smem, s, l.args)
    if host:
        launcher.as_stream(s).sync()     # the copy back reads what the launches wrote
        C[...] = dC.obj.get().reshape(C.shape)
    return _Trace(launches, dev, (dA, dB, dC)), C


def _contiguous(d) -> bool:
    expect = 1
    for n, s in zip(reversed(d.shape), reversed(d.strides)):
        if n > 1 and s != expect:
            return False
        expect *= n
    return True


def _span(d, ld, rows, cols) -> tuple[int, int]:
    lo = d.ptr
    return lo, lo + 4 * (ld * (cols - 1) + rows) if rows and cols else lo
