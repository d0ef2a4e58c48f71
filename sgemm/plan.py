"""Plan: a validated, dispatched GEMM on fixed operands; ``execute()`` runs it.

    p = sgemm.plan(a, b, c, beta=1.0)   # checks, layout, kernel choice, compile
    p.kernel, p.params, p.grid, p.scheme, p.waves   # the choice, inspectable
    p.execute()                         # launches only; call it as often as you like

Everything that can fail is done in the constructor, before any launch, so a
failed call leaves C untouched.  ``gemm``/``matmul``/``gemm_batched`` are thin
wrappers that build a plan and execute it once.
"""
from __future__ import annotations

import math

import numpy as np

from . import _call_began, packing, peeling
from . import validate as V
from .arrays import ArrayDesc, current_stream, describe, empty_like_package, to_device
from .errors import ArgumentError
from .kernels.utility import SCALE
from .layout import Mat, check_output, normalize, storage
from .problem import Problem
from .runtime import device as devmod
from .launches import direct_launches, epilogue_launches, scheme_for, scheme_launches
from .runtime import launcher


def _tf32x3_seconds(m: int, n: int, k: int, dev) -> float:
    """The cost model's time for tf32x3 on an aligned m x n x k product:
    what precision="fp32" weighs the integer engine against
    (sgemm/int8x/route.py)."""
    from . import planner
    r4 = lambda x: -(-max(x, 1) // 4) * 4  # noqa: E731
    t = planner.best_time(Problem(m=m, n=n, k=k, ta=False, tb=False, a=0, lda=r4(m), b=0,
                                  ldb=r4(k), c=0, ldc=r4(m)), dev, "tf32x3")
    return math.inf if t is None else t


def prepare(problems: list[Problem], dev, kernel="auto", precision: str | None = None,
            stream: int | None = None, since: float | None = None):
    """Kernel choice and launches for canonical problems of one shape.
    ``stream``: the handle the plan will run on, where the choice may be
    measured (measure.py; kernel="auto" only); ``since``: when the call
    building the plan began (``time.perf_counter()``), which bounds that
    measuring.  Returns (spec, params, scheme, launches)."""
    from . import dispatch
    if not problems:
        return None, None, "empty", []
    first = problems[0]
    if first.m == 0 or first.n == 0 or first.batch == 0:
        return None, None, "empty", []
    if first.k == 0 or first.alpha == 0.0:
        if first.epi:     # act(beta * C + bias): the reduction with no slices
            return None, None, "epilogue", epilogue_launches(problems, dev)
        if first.beta == 1.0:
            return None, None, "noop", []
        spec, params = SCALE, SCALE.configs["default"]
        return spec, params, "scale", direct_launches(problems, spec, params, dev)
    auto = kernel in (None, "auto")
    prec = precision or "ieee"
    if auto and len(problems) == 1 and peeling.wants_peel(first, dev, prec):
        return peeling.peel_launches(first, dev, prec, prepare)   # a few rows/columns past whole tiles
    if auto and stream is not None:
        from . import measure
        measure.settle(problems, dev, prec, stream,
                       lambda ps, spec, params: recipe(ps, dev, spec, params, prec)[3],
                       since=since)
    spec, params, _ = dispatch.select(first, dev, kernel, precision)
    why = spec.can_implement(params, dev.smem_optin)
    if why:
        raise ArgumentError(f"kernel {spec.name} cannot run {params}: {'; '.join(why)}")
    return recipe(problems, dev, spec, params, prec if auto else None)


def recipe(problems: list[Problem], dev, spec, params, pack_for: str | None = "ieee"):
    """(spec, params, scheme, launches) of one chosen kernel and params:
    behind the pack scheme's copies where packing.wants_pack says so for
    precision ``pack_for`` (None: never; forced kernels are not packed),
    split-K's two launches and workspace, or direct launches."""
    first = problems[0]
    if (pack_for is not None and len(problems) == 1
            and packing.wants_pack(first, pack_for, spec, params)):
        return packing.pack_launches(first, dev, spec, params)   # unaligned: copy, then ALIGNED
    scheme = scheme_for(spec, params, first)
    if scheme == "splitk":       # two launches and a workspace (launches.scheme_launches)
        return spec, params, scheme, scheme_launches(problems, spec, params, scheme, dev)
    return spec, params, scheme, direct_launches(problems, spec, params, dev)


def _mat(d: ArrayDesc, extra_elems: int = 0) -> Mat:
    return Mat(d.ptr + 4 * extra_elems, d.shape[-2], d.shape[-1], d.strides[-2], d.strides[-1])


def _batch_strides(d: ArrayDesc, out_batch: tuple[int, ...]) -> list[int]:
    """Per output-batch-dimension strides of d (0 where d is broadcast)."""
    nb = d.ndim - 2
    lead = len(out_batch) - nb
    out = []
    for i, n in enumerate(out_batch):
        j = i - lead
        if j < 0 or d.shape[j] == 1:
            out.append(0)
        else:
            out.append(d.strides[j])
    return out


def _collapse(out_batch, strides_list) -> tuple[int, list[int]]:
    """Index s such that batch dims s.. collapse into one strided dimension for
    every operand; returns (s, inner strides)."""
    r = len(out_batch)
    if r == 0:
        return 0, [0] * len(strides_list)
    s = r - 1
    while s > 0:
        d = s - 1
        ok = all(st[d] == st[d + 1] * out_batch[d + 1] or out_batch[d] == 1
                 for st in strides_list)
        if not ok:
            break
        for st in strides_list:
            if out_batch[d] == 1:
                st[d] = st[d + 1] * out_batch[d + 1]
        s = d
    return s, [st[r - 1] for st in strides_list]


class Plan:
    # execute()'s launches, prepared once for the launch list they were built
    # from (autotune and the scripts may replace self.launches)
    _prepared_for = None
    _prepared: list = []
    _int8x = None     # execute(stream) of a plan that route.attach took (precision="int8x")
    fp32_choice = None   # precision="fp32": sgemm/int8x/route.py's weigh() for the problem

    def __init__(self, a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
                 kernel="auto", precision=None, stream=None, bias=None, activation=None,
                 _ndims=(2,), _what="gemm", _since=None):
        since = _call_began() if _since is None else _since
        act = V.activation(activation)
        alpha = V.scalar("alpha", alpha)
        beta = V.scalar("beta", beta)
        ta = V.flag("trans_a", trans_a)
        tb = V.flag("trans_b", trans_b)
        if precision is not None:
            V.precision(precision)
        V.kernel(kernel, precision)
        A, B = describe(a, "a"), describe(b, "b")
        C = describe(c, "c") if c is not None else None
        descs = [A, B] + ([C] if C is not None else [])
        for d in descs:
            V.ndim(d, _ndims, _what)
            V.dtype(d)
            V.strides(d)
        V.same_place(descs)
        op_a = (A.shape[-1], A.shape[-2]) if ta else A.shape[-2:]
        op_b = (B.shape[-1], B.shape[-2]) if tb else B.shape[-2:]
        V.inner(op_a, op_b, ta, tb)
        for D in (A, B):   # one unit stride per matrix, checked before the GPU is touched
            if D.size:
                storage(_mat(D), D.name)
        M, N = op_a[0], op_b[1]
        Bias = None
        if bias is not None:
            Bias = describe(bias, "bias")
            V.bias(Bias, N, A)
            V.same_place([A, Bias])
        try:
            out_batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
        except ValueError:
            raise ArgumentError(f"batch dimensions of a {A.shape[:-2]} and b {B.shape[:-2]} "
                                f"do not broadcast") from None
        out_shape = out_batch + (M, N)
        if C is not None:
            if tuple(C.shape) != out_shape:
                raise ArgumentError(f"c has shape {tuple(C.shape)} but op(a)@op(b) has shape "
                                    f"{out_shape}")
            V.writeable(C)
            if C.size:
                check_output(_mat(C))
                for n, st in zip(C.shape[:-2], C.strides[:-2]):
                    if n > 1 and st == 0:
                        raise ArgumentError("c has a zero batch stride: its batch entries "
                                            "overlap (a broadcast view cannot be an output)")
            V.no_overlap(C, [A, B] + ([Bias] if Bias is not None else []))
        elif beta != 0.0:
            raise ArgumentError(f"beta={beta} needs c: without c the result is "
                                f"alpha*op(a)@op(b)")

        self.alpha, self.beta, self.shape = alpha, beta, out_shape
        self.precision = precision or "ieee"
        self._host = A.device is None
        self._user_c = c
        self._stream = stream
        devmod.require_gpu()
        dev_id = 0 if self._host else A.device
        self.device = devmod.info(dev_id)
        if self._host:
            A, B = to_device(A, dev_id), to_device(B, dev_id)
            if C is not None:
                C = to_device(C, dev_id)
            if Bias is not None:
                Bias = to_device(Bias, dev_id)
        kind = A.kind
        if C is None:
            out = empty_like_package(kind, A.obj, out_shape, dev_id)
            C = describe(out, "c")
        self._out = C.obj
        self._kind = kind
        # device-side operands, output last: holds NumPy inputs' GPU copies for
        # as long as the launches point into them; the plan cache relocates from them
        self._operands = (A, B, C)
        self._bias = Bias            # the device-side bias (the plan cache relocates it)
        self.activation = activation
        if precision in ("int8x", "fp32"):   # the integer engine or tf32x3: sgemm/int8x/route.py
            from .int8x import route
            precision = route.attach(self, precision, A, B, C, ta, tb, out_batch, Bias, activation,
                                     lambda m, n, k: _tf32x3_seconds(m, n, k, self.device))
            if precision is None:
                return
            self.precision = precision

        problems = self._problems(A, B, C, ta, tb, alpha, beta, out_batch,
                                  Bias.ptr if Bias is not None else None, act)
        self.problems = problems
        (self.kernel, self.params, self.scheme,
         self.launches) = prepare(problems, self.device, kernel, precision,
                                  self._stream_handle() if kernel in (None, "auto") else None,
                                  since=since)

    def _stream_handle(self) -> int:
        """The handle execute() launches on by default (where a choice is measured)."""
        if self._stream is not None:
            return launcher.stream_handle(self._stream)
        return current_stream(self._kind, self.device.id)

    @staticmethod
    def _problems(A, B, C, ta, tb, alpha, beta, out_batch, bias=None, act=0) -> list[Problem]:
        sl = [_batch_strides(D, out_batch) for D in (A, B, C)]
        s, (sa, sb, sc) = _collapse(out_batch, sl)
        inner = int(np.prod(out_batch[s:])) if out_batch else 1
        probs = []
        for idx in np.ndindex(*out_batch[:s]):
            offs = [sum(i * st[d] for d, i in enumerate(idx)) for st in sl]
            probs.append(normalize(_mat(A, offs[0]), _mat(B, offs[1]), _mat(C, offs[2]),
                                   ta, tb, alpha, beta, inner, (sa, sb, sc), bias, act))
        return probs

    # -- inspection ---------------------------------------------------------------
    @property
    def grid(self):
        """The grid of the (first) GEMM launch."""
        gemm = [l for l in self.launches if l.role == "gemm"] or self.launches
        return gemm[0].grid if gemm else (0, 0, 0)

    @property
    def waves(self) -> float:
        """GEMM blocks over SMs (one resident block per SM assumed): 1.0 is one
        full wave.  Copies and epilogues (split-K's reduction) do not count."""
        blocks = sum(math.prod(l.grid) for l in self.launches if l.role == "gemm")
        return blocks / self.device.sm_count

    def __repr__(self) -> str:
        name = self.kernel.name if self.kernel is not None else "-"
        return (f"Plan(shape={self.shape}, kernel={name}, params={self.params}, "
                f"scheme={self.scheme}, grid={self.grid}, launches={len(self.launches)}, "
                f"waves={self.waves:.2f})")

    def explain(self, top: int = 8) -> dict:
        """The choice and the cost model's best ``top`` candidates, each with
        its predicted time (docs/dispatch.md); for precision="fp32", under
        "fp32", why it took the integer engine or tf32x3."""
        from .dispatch import explain
        out = ({"scheme": self.scheme} if not self.problems
               else explain(self.problems[0], self.device, self.precision, top))
        if self.fp32_choice is not None:
            out = {**out, "fp32": self.fp32_choice}
        return out

    # -- execution ------------------------------------------------------------------
    def execute(self, stream=None):
        """Launch on ``stream`` (default: the plan's, else the caller's current
        stream in its array package) and return the result array."""
        s = stream if stream is not None else self._stream
        if self._int8x is not None:
            return self._int8x(s)
        if s is None:
            s = current_stream(self._kind, self.device.id)
        if self.launches:
            devmod.make_current(self.device.id)
            if launcher.DRIVER_LAUNCH:
                if self._prepared_for is not self.launches:   # built once per launch list
                    self._prepared = [launcher.PreparedLaunch(l.kernel, l.grid, l.block,
                                                              l.smem, l.args)
                                      for l in self.launches]
                    self._prepared_for = self.launches
                h = launcher.stream_handle(s)
                for p in self._prepared:
                    p(h)
            else:
                for l in self.launches:
                    launcher.launch(l.kernel, l.grid, l.block, l.smem, s, l.args)
        return self._result(s)

    def _result(self, stream):
        if not self._host:
            return self._out
        launcher.as_stream(stream).sync()
        host = self._out.get()
        if self._user_c is not None:
            self._user_c[...] = host
            return self._user_c
        return host
