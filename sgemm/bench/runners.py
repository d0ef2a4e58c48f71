"""What ``sgemm bench`` can time, each behind one small interface.

A Runner knows its name, kind and precision; ``bind(inputs, stream)`` returns
a Bound with ``launch(i)`` (enqueue one GEMM on input set i), ``output(i)``,
``poison(i)`` and a ``context()`` to wrap checking and timing in.  Ladder
runners are read from the registry (never listed by hand).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..kernels import registry
from ..kernels.spec import KernelSpec
from .sizes import Shape

NUMPY_MAX_SIZE = 2048       # CPU BLAS column only up to 2048^3 (seed 001's range)
PRECISIONS = ("ieee", "tf32x3", "tf32")
# cuBLAS has no 3xTF32 mode: tf32x3 kernels are compared with FP32 cuBLAS.
BASELINE = {"ieee": "cublas", "tf32x3": "cublas", "tf32": "cublas-tf32"}


@dataclass
class Runner:
    name: str
    kind: str                  # "sgemm", "cublas", "triton", "numpy"
    precision: str
    title: str
    id: int | None = None
    spec: KernelSpec | None = None
    extra: dict = field(default_factory=dict)

    @property
    def gpu(self) -> bool:
        return self.kind != "numpy"

    def unsupported(self, shape: Shape) -> str | None:
        """Why this runner does not run ``shape`` (None: it does)."""
        if self.kind == "numpy" and max(shape.m, shape.n, shape.k) > NUMPY_MAX_SIZE:
            return f"CPU BLAS only up to {NUMPY_MAX_SIZE}"
        return None

    def bind(self, inp, stream):
        return _BIND[self.kind](self, inp, stream)

    def describe(self) -> dict:
        return {"runner": self.name, "kind": self.kind, "id": self.id,
                "title": self.title, "precision": self.precision}


# -- selection -----------------------------------------------------------------------
SCHEME_IDS = 30   # ids >= 30 are dispatch schemes (split-K, GEMV, ...), not rungs
AUTO_ID = 100     # sorts the dispatcher after every rung; never shown as a rung number


def ladder(precisions) -> list[Runner]:
    """Registered rungs of the given precisions (ids 1..29, in id order), then
    the dispatcher ('auto': what sgemm.gemm runs by default) per precision.
    Scheme kernels are reached through 'auto' or by naming them."""
    out = []
    for s in sorted(registry.KERNELS.values(), key=lambda s: s.id):
        if 1 <= s.id < SCHEME_IDS and s.precision in precisions:
            out.append(Runner(s.name, "sgemm", s.precision, s.title, s.id, s))
    for prec in precisions:
        name = "auto" if prec == "ieee" else f"auto-{prec}"
        out.append(Runner(name, "sgemm", prec, f"sgemm dispatcher (kernel='auto', "
                          f"precision={prec!r})", AUTO_ID, None))
    return out


def cublas(precision: str) -> Runner:
    if precision == "tf32":
        return Runner("cublas-tf32", "cublas", "tf32", "cuBLAS via cupy.matmul, TF32 tensor cores")
    return Runner("cublas", "cublas", "ieee", "cuBLAS via cupy.matmul, FP32 (TF32 off)")


def triton(precision: str) -> Runner:
    name = "triton" if precision == "ieee" else f"triton-{precision}"
    return Runner(name, "triton", precision,
                  f"Triton tl.dot(input_precision={precision!r}), autotuned over 4 tiles")


def numpy_runner() -> Runner:
    return Runner("numpy", "numpy", "ieee", "NumPy matmul on the CPU (host BLAS)")


def triton_available() -> bool:
    """Installed?  (find_spec: no import, which would cost a second of start-up)"""
    import importlib.util
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def select(kernels: str | None, precision: str) -> list[Runner]:
    """Runners for --kernels / --precision.  The precision's cuBLAS baseline is
    always added (every row reads as a % of it)."""
    precs = PRECISIONS if precision == "all" else (precision,)
    if kernels is None:
        out = ladder(precs)
        for base in dict.fromkeys(BASELINE[p] for p in precs):
            out.append(cublas("tf32" if base == "cublas-tf32" else "ieee"))
        if triton_available():
            out += [triton(p) for p in precs]
        if "ieee" in precs:
            out.append(numpy_runner())
        return _dedup(out)
    out = []
    for item in (x.strip() for x in kernels.split(",")):
        if not item:
            continue
        low = item.lower()
        if low == "cublas":
            out += [cublas(p) for p in precs if p != "tf32x3"] or [cublas("ieee")]
        elif low == "cublas-tf32":
            out.append(cublas("tf32"))
        elif low == "triton" or low.startswith("triton-"):
            ps = precs if low == "triton" else (low.split("-", 1)[1],)
            if ps[0] not in PRECISIONS:
                raise ValueError(f"--kernels: {item!r}: precision must be one of {PRECISIONS}")
            out += [triton(p) for p in ps]
        elif low == "numpy":
            out.append(numpy_runner())
        elif low in ("ladder", "all"):
            out += ladder(precs)
        elif low == "auto" or low.startswith("auto-"):
            ps = precs if low == "auto" else (low.split("-", 1)[1],)
            out += [r for r in ladder(ps) if r.spec is None]
        else:
            try:
                s = registry.get(item)
            except ValueError as e:
                raise ValueError(f"--kernels: {e}; or cublas, triton, numpy, ladder") from None
            out.append(Runner(s.name, "sgemm", s.precision, s.title, s.id, s))
    for p in dict.fromkeys(r.precision for r in out if r.kind != "numpy"):
        base = BASELINE[p]
        if not any(r.name == base for r in out):
            out.append(cublas("tf32" if base == "cublas-tf32" else "ieee"))
    return _dedup(out)


def _dedup(rs: list[Runner]) -> list[Runner]:
    seen, out = set(), []
    for r in rs:
        if r.name not in seen:
            seen.add(r.name)
            out.append(r)
    return out


# -- binding: one per kind -------------------------------------------------------------------
class Bound:
    # False where the launches cannot be captured in a CUDA graph
    capturable = True

    def __init__(self, inp, stream, outs):
        self.inp, self.stream, self.outs = inp, stream, outs
        self.config: str | None = None

    def output(self, i: int):
        return self.outs[i]

    def poison(self, i: int) -> None:
        import cupy
        with self.stream:
            self.outs[i].fill(cupy.nan)

    def context(self):
        return contextlib.nullcontext()


def _outputs(inp):
    import cupy
    sh = inp.ref.shape
    return [cupy.empty(sh, dtype=cupy.float32) for _ in range(inp.n_sets)]


def _bind_sgemm(r: Runner, inp, stream) -> Bound:
    import sgemm
    outs = _outputs(inp)
    sh = inp.shape
    # One plan per input set: planning (checks, kernel choice, compile) stays
    # out of the timed region; execute() only launches.  _ndims admits the
    # 3-D operands of a batched shape (the same path gemm_batched takes).
    kernel = r.spec.name if r.spec is not None else "auto"
    prec = None if r.spec is not None else r.precision
    plans = [sgemm.plan(inp.a[i], inp.b[i], outs[i], kernel=kernel, precision=prec,
                        trans_a=sh.ta,
                        trans_b=sh.tb, _ndims=(3,) if sh.batch > 1 else (2,),
                        _what="bench")
             for i in range(inp.n_sets)]
    b = Bound(inp, stream, outs)
    chosen = plans[0].kernel.name if plans[0].kernel is not None else "-"
    b.config = (f"{chosen} {plans[0].params} grid={plans[0].grid} "
                f"launches={len(plans[0].launches)}")
    b.launch = lambda i: plans[i].execute(stream=stream)
    return b


def set_cublas_tf32(on: bool) -> None:
    """Switch CuPy's float32 matmul between FP32 and TF32 tensor-core math."""
    import cupy
    import numpy as np
    f = getattr(cupy._core, "set_allow_tf32", None)
    if f is not None:
        f(on)
        return
    from cupy._core import _routines_linalg as L
    L.set_compute_type(np.float32, getattr(L, "COMPUTE_TYPE_TF32", 7) if on
                       else getattr(L, "COMPUTE_TYPE_DEFAULT", 1))


def _bind_cublas(r: Runner, inp, stream) -> Bound:
    import cupy
    outs = _outputs(inp)
    sh = inp.shape
    A = [inp.op(a, sh.ta) for a in inp.a]
    B = [inp.op(b, sh.tb) for b in inp.b]
    b = Bound(inp, stream, outs)
    b.config = "cupy.matmul " + ("TF32" if r.precision == "tf32" else "FP32")
    # CuPy raises NotImplementedError for cuBLAS calls during stream capture
    # (seen with CuPy 14.2 on an H200, 2026-11-21): --graphs times cuBLAS
    # with plain launches, and the record says so.
    b.capturable = False

    def launch(i):
        with stream:
            cupy.matmul(A[i], B[i], out=outs[i])
    b.launch = launch

    @contextlib.contextmanager
    def ctx():
        set_cublas_tf32(r.precision == "tf32")
        try:
            yield
        finally:
            set_cublas_tf32(False)
    b.context = ctx
    return b


def _bind_triton(r: Runner, inp, stream) -> Bound:
    from . import triton_ref
    outs = _outputs(inp)
    sh = inp.shape
    A = [inp.op(a, sh.ta) for a in inp.a]
    B = [inp.op(b, sh.tb) for b in inp.b]
    b = Bound(inp, stream, outs)
    runs = [triton_ref.bind(A[i], B[i], outs[i], r.precision) for i in range(inp.n_sets)]

    def launch(i):
        with triton_ref.on_stream(stream):
            runs[i]()
    b.launch = launch
    b.config_fn = triton_ref.best_config
    return b


def _bind_numpy(r: Runner, inp, stream) -> Bound:
    import numpy as np
    a, bb = inp.host_set0()
    sh = inp.shape
    A = a.swapaxes(-1, -2) if sh.ta else a
    B = bb.swapaxes(-1, -2) if sh.tb else bb
    b = Bound(inp, stream, [None])
    b.config = f"numpy {np.__version__}"

    def run():
        b.outs[0] = np.matmul(A, B)
    b.run_host = run
    return b


_BIND = {"sgemm": _bind_sgemm, "cublas": _bind_cublas, "triton": _bind_triton,
         "numpy": _bind_numpy}
