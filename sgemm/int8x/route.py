"""The integer engine behind the public entry points, beside the planner.

    sgemm.gemm(a, b, precision="int8x")   # Ozaki scheme II on INT8 tensor cores, 8 moduli
    sgemm.gemm(a, b, precision="fp32")    # FP32 accuracy at the best speed: the engine
                                          # where the cost model predicts it faster than
                                          # tf32x3 (7 moduli where its scaling check
                                          # passes with 7, else 8), tf32x3 elsewhere
    sgemm.int8x.gemm(a, b, c, alpha, beta, trans_a, trans_b)   # the same, int8x always (api.gemm)

Plan (sgemm/plan.py) validates every argument as for the other precisions,
then hands precision="int8x" or "fp32" to ``attach``: it either returns the
precision the planner should use instead ("fp32" where tf32x3 is predicted
faster -> "tf32x3"; nothing to multiply -> the planner's scale kernel) or takes the
call, giving the plan the pipeline built once for its shape
(sgemm/int8x/runner.py: launches prepared, workspace kept within a bound,
the INT8 GEMMs launched before the one synchronisation).  The plan cache
stores that runner in place of launches (``plan._int8x.replay``): a
repeated call relocates the operands' addresses into it and runs it -- the
launches, the one synchronisation and the result, no Plan, no CuPy array
built per call.

What it runs: any 2-D shape, transpose and stride the other precisions
take, alpha/beta (beta == 0 never reads C; alpha == 0 or k == 0 never
reads A or B), NumPy, CuPy, PyTorch and other CUDA arrays.  Inf or NaN in
A or B have no integer form: the call goes to tf32x3 (through the plan
cache, on the same stream, C untouched until then), which propagates them
as FP32 does.  Not yet: batched operands, bias= and activation= (each
raises ArgumentError naming the argument).

Wide exponent ranges: rows of A or columns of B whose entries span many
binades keep an error bounded by their norm (per-row scaling), not per
entry.  The conversion gathers a few statistics per row and column and
the pipeline's one synchronisation reads them with the Inf/NaN flags
(sgemm/int8x/bound.py): where they cannot prove FP32's componentwise bound,
precision="fp32" runs 8 moduli if the same statistics pass with 8's budget
(and starts there on its next call), else tf32x3, before anything is
written, and
precision="int8x" runs the engine as asked and warns
(Int8xAccuracyWarning; `warnings.simplefilter("error", ...)` makes it an
exception).
"""
from __future__ import annotations

from ..errors import ArgumentError
from ..kernels import utility as U

# precision="fp32" takes the integer engine on sm_90a (wgmma s8) where
# cost.predict (its 7-moduli pipeline) is below MARGIN times the cost
# model's tf32x3 time, from k = MIN_K on: 7 moduli pass the scaling check on
# N(0,1) data from k ~ 1024 (accuracy-table-h200-2026-11-29.json), and a
# failed check costs the call a second pass, which the margin pays for.  On
# the 19 timed shapes of cost.py's fit the rule picks the faster path on 18
# (3072^3, a 5 % loss, is the miss), where min(m, n, k) >= 3072 missed 7.
INT8X_ARCHS = ("sm_90a",)     # the mma.sync pipeline (68 TFLOPS at 8192^3) never wins
MIN_K = 1024
MARGIN = 0.95
ALWAYS = False                # tests and probes: "fp32" takes the engine wherever it runs
# Moduli counts: "int8x" runs 8 (the most accurate the kernels are built
# for); "fp32" tries 7 first -- an eighth fewer INT8 products, which is an
# eighth less time where the call is held at the power cap -- and 8 where
# the scaling check passes only there (sgemm/int8x/bound.py).
INT8X_MODULI = U.INT8X_MODULI
FP32_MODULI = U.INT8X_COUNTS         # (7, 8): fewest first


def weigh(m: int, n: int, k: int, dev, rival) -> dict:
    """precision="fp32"'s choice for this problem on dev, and why:
    {"engine": bool, "why": str} plus, where both models were asked, the
    predicted seconds "int8x_7" and "tf32x3"; rival() is the cost model's
    tf32x3 time (asked only where the engine can run)."""
    if dev.arch not in INT8X_ARCHS:
        return {"engine": False, "why": f"the engine runs on {INT8X_ARCHS}, not {dev.arch}"}
    if min(m, n, k) == 0:
        return {"engine": False, "why": "nothing to multiply"}
    if ALWAYS:
        return {"engine": True, "why": "route.ALWAYS"}
    if k < MIN_K:
        return {"engine": False, "why": f"k = {k} < MIN_K = {MIN_K}: 7 moduli would fail "
                                        f"the scaling check on most data"}
    from . import cost
    t7, tt = cost.predict(m, n, k, dev.sm_count), rival()
    return {"engine": t7 < MARGIN * tt, "int8x_7": t7, "tf32x3": tt,
            "why": f"predicted {t7 * 1e3:.3f} ms on the engine (7 moduli) against "
                   f"{tt * 1e3:.3f} ms on tf32x3; the engine needs {MARGIN} of tf32x3's"}


def attach(plan, precision: str, A, B, C, ta: bool, tb: bool, out_batch: tuple,
           bias, activation, rival=None) -> str | None:
    """precision "int8x" or "fp32" on a validated plan (A, B, C: device-side
    ArrayDesc, C the output).  Returns the precision the planner should use,
    or None after giving the plan an int8x runner (plan._int8x).  rival(m,
    n, k): the cost model's tf32x3 seconds (plan.py), for "fp32"."""
    m, n = C.shape[-2], C.shape[-1]
    k = A.shape[-2] if ta else A.shape[-1]
    if precision == "fp32":
        if out_batch or bias is not None or activation is not None:
            plan.fp32_choice = {"engine": False, "why": "batched operands, bias= or "
                                                        "activation= (the engine has none)"}
            return "tf32x3"
        plan.fp32_choice = weigh(m, n, k, plan.device, lambda: rival(m, n, k))
        if not plan.fp32_choice["engine"]:
            return "tf32x3"
    if precision != "int8x" and precision != "fp32":
        return precision
    what = "precision='int8x'" if precision == "int8x" else "precision='fp32' (int8x here)"
    if out_batch or len(A.shape) > 2 or len(B.shape) > 2:
        raise ArgumentError(f"{what} takes 2-D operands only; a has shape {tuple(A.shape)} and "
                            f"b {tuple(B.shape)} (batched int8x is not implemented: use "
                            f"precision='tf32x3' or loop over the batch)")
    if bias is not None:
        raise ArgumentError(f"bias= is not supported with {what} yet (no fused epilogue); use "
                            f"precision='tf32x3' or add the bias afterwards")
    if activation is not None:
        raise ArgumentError(f"activation={activation!r} is not supported with {what} yet; use "
                            f"precision='tf32x3' or apply it afterwards")
    if m == 0 or n == 0 or k == 0 or plan.alpha == 0.0:
        # nothing to multiply: beta C (or zeros) by the planner's scale
        # kernel, which reads neither A nor B, nor C when beta == 0
        return "tf32x3"
    plan.precision = "int8x"
    plan.kernel = plan.params = None
    plan.scheme = "int8x"
    plan.launches = []
    plan.problems = []
    plan._operands = (A, B, C)   # what plan_cache relocates into the runner's call
    plan._int8x = _runner(plan, A, B, C, ta, tb, precision)
    return None


class _Engine:
    """The pipeline behind one int8x plan: the runner (kept workspace) and
    what its tf32x3 fallback needs.  ``replay(ptrs, stream, arrays)``: ptrs
    the addresses of a, b and the output, arrays the same three as arrays
    (the fallback's operands)."""

    def __init__(self, plan, A, B, C, ta: bool, tb: bool, asked: str):
        from . import runner
        self.alpha, self.beta, self.ta, self.tb = plan.alpha, plan.beta, ta, tb
        self.plan_cls = type(plan)
        m, n = C.shape
        # strides in elements of op(a), op(b)
        sa = (A.strides[1], A.strides[0]) if ta else tuple(A.strides)
        sb = (B.strides[1], B.strides[0]) if tb else tuple(B.strides)
        k = A.shape[0] if ta else A.shape[1]
        # Garner writes down columns: a row-major C is the column-major C^T =
        # op(B)^T op(A)^T, computed in place either way
        self.swap = not (m <= 1 or C.strides[0] == 1)
        if self.swap:
            m, n, sa, sb, ldc = n, m, sb[::-1], sa[::-1], C.strides[0]
        else:
            ldc = C.strides[1]
        # "fp32" promises FP32 accuracy whatever the engine: the fewest moduli
        # whose scaling check passes, else tf32x3; "int8x" names the engine:
        # its 8 moduli run, warned where the check fails
        on_loss = "raise" if asked == "fp32" else "warn"
        self._make = lambda count: runner.Runner(
            plan.device.id, m, n, k, sa, sb, ldc, plan.alpha, plan.beta, on_loss, keep=True,
            n_moduli=count)
        self.k = k
        self.counts = FP32_MODULI if asked == "fp32" else (INT8X_MODULI,)
        self.runners = {}
        self._runner(self.counts[0])         # built with the plan; the next only if needed

    def _runner(self, count: int):
        r = self.runners.get(count)
        if r is None:
            r = self.runners[count] = self._make(count)
        return r

    def replay(self, ptrs, stream: int, arrays) -> None:
        from . import bound as BD
        from . import moduli as M
        from .device import NonFiniteInput
        pa, pb = (ptrs[1], ptrs[0]) if self.swap else (ptrs[0], ptrs[1])
        r = self._runner(self.counts[0])
        try:
            r(pa, pb, ptrs[2], stream)
            return
        except NonFiniteInput:
            pass
        except BD.ScalingLoss:
            # The statistics do not depend on the moduli: a larger count runs
            # only where its budget passes the same check, and the plan then
            # starts there (the data of one call site tend to keep their
            # ranges); the smaller count's runner and workspace go
            sa, sb = r.summaries
            buds = ((c, M.budget(c, self.k)) for c in self.counts[1:])
            nxt = next((c for c, b in buds if BD.holds(sa, sb, self.k, b.alpha, b.beta)), None)
            if nxt is not None:
                del self.runners[self.counts[0]]
                self.counts = (nxt,)
                self._runner(nxt)(pa, pb, ptrs[2], stream)
                return
        # Inf/NaN have no integer form, or the scaling cannot hold the data
        # to FP32 accuracy at any count; C is untouched so far.  A tf32x3 plan
        # of the plan's own class: the engine sits below the planner and the
        # plan cache (both import this module), so it imports neither
        a, b, c = arrays
        self.plan_cls(a, b, c, alpha=self.alpha, beta=self.beta, trans_a=self.ta,
                      trans_b=self.tb, precision="tf32x3", stream=stream).execute()


def _runner(plan, A, B, C, ta: bool, tb: bool, asked: str = "int8x"):
    """execute(stream) for an int8x plan: the pipeline into C on the stream,
    then the plan's usual result (copied back for NumPy inputs); its
    ``replay`` is what the plan cache keeps."""
    eng = _Engine(plan, A, B, C, ta, tb, asked)
    ptrs, arrays = (A.ptr, B.ptr, C.ptr), (A.obj, B.obj, C.obj)

    def run(stream=None):
        from ..arrays import current_stream
        from ..runtime import launcher
        s = stream if stream is not None else current_stream(plan._kind, plan.device.id)
        eng.replay(ptrs, launcher.stream_handle(s), arrays)
        return plan._result(s)

    run.replay = eng.replay
    return run
