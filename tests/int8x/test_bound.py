"""The scaling check (sgemm/int8x/bound.py) on the CPU: the statistics the
kernels gather, computed by hand on small rows; the bound is sound against
the exact emulation (reference.gemm) on every input class, including the
wide-range ones it refuses; N(0,1) and U(0,1) pass from K = 64 on; every
wide-range class of docs/accuracy.md is refused; the route's choice of what
a failed check does.  The GPU test compares the kernels' statistics with
bound.summarize word for word (tests/int8x/test_wide_gpu.py)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from sgemm.int8x import bound as BD
from sgemm.int8x import moduli as M
from sgemm.int8x import reference as R


def _op(rng, cls, shape):
    if cls == "uniform":
        return rng.uniform(0.0, 1.0, shape).astype(np.float32)
    x = rng.standard_normal(shape)
    if cls.startswith("wide"):
        s = float(cls[4:])
        x *= np.exp2(rng.uniform(-s, s, shape))
    elif cls == "relu":
        x = np.maximum(x, 0.0)
    elif cls == "rows":                          # whole rows scaled: the scaling's own case
        x *= np.exp2(rng.integers(-40, 41, (shape[0], 1)))
    elif cls == "outlier":                       # a few entries far above their row
        x[:, :3] *= 2.0 ** 12
    return x.astype(np.float32)


# ---- the statistics ----

def test_summary_of_hand_made_rows():
    x = np.array([[3.0, 1.0, 0.5, 0.0],          # E = 1: units ceil(2^20 * 4.5 / 2) each
                  [0.0, 0.0, 0.0, 0.0],          # all zero: left out
                  [1.0, 2.0 ** -3, 2.0 ** -12, -0.75]], np.float32)
    s = BD.summarize(x, 1)
    # row 0: |x|/2 = 1.5, 0.5, 0.25 -> 2.25 * 2^20; row 2: 1 + 2^-3 + 2^-12 + 0.75
    assert s.units == max(int(2.25 * 2 ** 20), int((1.875 + 2.0 ** -12) * 2 ** 20))
    # counts of |x| >= 2^(E - T), T = 0, 1, 2, 4, 7, 11: row 0 (E = 1) has 3, 1, 0.5, 0;
    # row 2 (E = 0) has 1, 2^-3, 2^-12, 0.75
    row0 = [1, 2, 3, 3, 3, 3]
    row2 = [1, 2, 2, 3, 3, 3]
    assert s.counts == tuple(min(a, b) for a, b in zip(row0, row2))
    assert not s.bad
    assert BD.summarize(x.T, 0) == s              # columns of the transpose: the same


def test_summary_units_round_up_and_subnormals_never_count():
    tiny = np.float32(2.0 ** -140)                # subnormal
    s = BD.summarize(np.array([[1.0, tiny, 2.0 ** -21]], np.float32), 1)
    assert s.units == 2 ** 20 + 1 + 1             # each nonzero entry at least one unit
    assert s.counts[-1] == 1                      # 2^-21 is 21 binades down; tiny never
    sub = BD.summarize(np.array([[tiny, tiny]], np.float32), 1)
    assert sub.counts == (0,) * len(BD.THRESHOLDS)
    assert BD.summarize(np.array([[1.0, np.inf]], np.float32), 1).bad
    none = BD.summarize(np.zeros((3, 4), np.float32), 1)
    assert none.counts[0] == BD.COUNT_NONE and BD.holds(none, none, 4, 20, 20)


def test_words_round_trip_and_initial_words():
    w = BD.Summary.initial_words()
    assert len(w) == BD.WORDS and w[1] == 0 and w[-1] == 0
    assert all(c == BD.COUNT_NONE for c in w[2:-1])
    s = BD.Summary.from_words([1, 5 * 2 ** 20, 1, 2, 3, 4, 5, 6, 7])
    assert s.bad and s.r == 5.0 and s.counts == (1, 2, 3, 4, 5, 6) and s.gap == 7


def test_ratio_is_infinite_without_overlap_and_falls_with_overlap():
    k = 100
    lo = BD.Summary(10 * 2 ** 20, (1, 1, 1, 1, 1, 1))
    hi = BD.Summary(10 * 2 ** 20, (90, 95, 99, 100, 100, 100))
    assert BD.ratio(lo, lo, k, 25, 25) == np.inf
    # the bits of each row's maximum are alpha + 1 - gap: 26 with no gap
    assert BD.ratio(hi, hi, k, 25, 25) == pytest.approx(
        (10 * 2.0 ** -26 * 2 + k * 2.0 ** -52) / 80)          # T = 0 for both, overlap 80
    wide = BD.Summary(10 * 2 ** 20, hi.counts, gap=4)
    assert BD.ratio(wide, wide, k, 25, 25) == pytest.approx(
        (10 * 2.0 ** -22 * 2 + k * 2.0 ** -44) / 80)


# ---- soundness against the exact emulation ----

@pytest.mark.parametrize("cls", ["normal", "uniform", "relu", "rows", "outlier",
                                 "wide3", "wide6", "wide10", "wide30"])
@pytest.mark.parametrize("k", [64, 700])
def test_the_bound_holds_for_the_emulation_whenever_it_is_finite(cls, k):
    rng = np.random.default_rng(k + len(cls))
    a, b = _op(rng, cls, (24, k)), _op(rng, cls, (k, 20))
    parts = R.decompose(a, b)
    bud = parts.budget
    sa, sb = BD.summarize(a, 1), BD.summarize(b, 0)
    r = BD.ratio(sa, sb, k, bud.alpha, bud.beta)
    exact = BD.exact_ratio(a, b, parts.mu, parts.nu)
    assert r >= exact                                         # the relaxation is an upper bound
    got = R.gemm(a, b)                                        # float64, before C's rounding
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    live = scale > 0
    err = np.abs(got - want)[live] / scale[live]
    assert np.max(err) <= exact * (1 + 1e-9) + 2.0 ** -52 * k   # the truncation bound is sound
    if BD.holds(sa, sb, k, bud.alpha, bud.beta):              # and then FP32's bound holds
        c32 = got.astype(np.float32).astype(np.float64)
        assert np.max(np.abs(c32 - want)[live] / scale[live]) <= (k + 1) * BD.U


@pytest.mark.parametrize("k", [64, 256, 1024, 4096])
@pytest.mark.parametrize("cls", ["normal", "uniform"])
def test_normal_and_uniform_data_keep_the_fast_path(cls, k):
    rng = np.random.default_rng(k)
    a, b = _op(rng, cls, (128, k)), _op(rng, cls, (k, 96))
    bud = M.budget(8, k)
    assert BD.holds(BD.summarize(a, 1), BD.summarize(b, 0), k, bud.alpha, bud.beta)


@pytest.mark.parametrize("k", [64, 256, 1024, 4096])
@pytest.mark.parametrize("cls", ["wide10", "wide20", "wide30"])
def test_every_wide_class_of_the_accuracy_table_is_refused(cls, k):
    rng = np.random.default_rng(k + 1)
    a, b = _op(rng, cls, (128, k)), _op(rng, cls, (k, 96))
    bud = M.budget(8, k)
    assert not BD.holds(BD.summarize(a, 1), BD.summarize(b, 0), k, bud.alpha, bud.beta)


def test_rows_scaled_as_a_whole_pass_the_scaling_handles_them():
    rng = np.random.default_rng(5)
    a, b = _op(rng, "rows", (64, 512)), _op(rng, "normal", (512, 48))
    bud = M.budget(8, 512)
    assert BD.holds(BD.summarize(a, 1), BD.summarize(b, 0), 512, bud.alpha, bud.beta)


def test_report_loss_raises_or_warns_with_the_numbers():
    s = BD.Summary(2 ** 20, (1,) * 6)
    bud = M.budget(8, 64)
    with pytest.raises(BD.ScalingLoss, match="FP32's 3.8e-06 at k = 64") as ei:
        BD.report_loss(s, s, 64, bud, "raise")
    assert ei.value.ratio == np.inf and ei.value.limit == 64 * BD.U
    with pytest.warns(BD.Int8xAccuracyWarning, match="precision='fp32'"):
        BD.report_loss(s, s, 64, bud, "warn")


# ---- what the route does with a failed check ----

def _route_with_fake_runners(monkeypatch, summaries):
    """route._runner with runner.Runner standing in: each fake checks
    ``summaries`` against its own moduli count's budget as the real runner
    does (raising only under on_loss="raise"); returns (made, calls, ran,
    make_plan): the fakes' (count, on_loss), each call's count, the tf32x3
    fallbacks' arguments."""
    from sgemm.int8x import moduli as M
    from sgemm.int8x import runner
    made, calls, ran = [], [], []

    class FakeRunner:
        def __init__(self, *args, **kw):
            self.on_loss, self.n, self.k = args[9], kw["n_moduli"], args[3]
            self.summaries = summaries
            made.append((self.n, self.on_loss))

        def __call__(self, *args):
            calls.append(self.n)
            bud = M.budget(self.n, self.k)
            if self.on_loss == "raise" and not BD.holds(*summaries, self.k, bud.alpha, bud.beta):
                raise BD.ScalingLoss("wide", 1.0, 0.5)

    class FakePlan:
        """Stands in for sgemm.plan.Plan: keeps its arguments (as attributes
        too), and execute() records them."""
        def __init__(self, *args, **kw):
            self.args, self.kw = args, kw
            self.__dict__.update(kw)

        def execute(self):
            ran.append((self.args, self.kw))
    monkeypatch.setattr(runner, "Runner", FakeRunner)

    def make_plan():
        return FakePlan(alpha=1.0, beta=0.0, _kind="cupy", device=SimpleNamespace(id=0),
                        _result=lambda s: "result")
    return made, calls, ran, make_plan


K4 = SimpleNamespace(shape=(4, 4), strides=(4, 1), ptr=1 << 40, obj="x")


def test_fp32_falls_back_and_int8x_warns(monkeypatch):
    """route's runners check with on_loss="raise" for precision="fp32" (the
    ScalingLoss is caught and, no count passing, a tf32x3 plan of the plan's
    own class runs, on the call's stream) and "warn" for "int8x", 8 moduli."""
    from sgemm.int8x import route
    wide = BD.Summary(10 * 2 ** 20, (1,) * len(BD.THRESHOLDS))     # no overlap: fails always
    made, calls, ran, make_plan = _route_with_fake_runners(monkeypatch, (wide, wide))
    for asked, falls_back in (("fp32", True), ("int8x", False)):
        ran.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert route._runner(make_plan(), K4, K4, K4, False, False, asked)(stream=5) == \
                "result"
        assert bool(ran) == falls_back
        if falls_back:
            assert ran[0][0] == ("x", "x", "x")
            assert ran[0][1]["precision"] == "tf32x3" and ran[0][1]["stream"] == 5
    # "fp32" tried 7 and did not build 8 (the same statistics fail its budget too)
    assert made == [(7, "raise"), (8, "warn")] and calls == [7, 8]


def test_fp32_takes_eight_moduli_where_only_eight_pass_and_starts_there_next_time(monkeypatch):
    from sgemm.int8x import moduli as M
    from sgemm.int8x import route
    k = 4
    mid = BD.Summary(4 * 2 ** 20, (k,) * len(BD.THRESHOLDS), gap=6)
    b7, b8 = M.budget(7, k), M.budget(8, k)
    assert not BD.holds(mid, mid, k, b7.alpha, b7.beta) and BD.holds(mid, mid, k, b8.alpha, b8.beta)
    made, calls, ran, make_plan = _route_with_fake_runners(monkeypatch, (mid, mid))
    run = route._runner(make_plan(), K4, K4, K4, False, False, "fp32")
    assert run(stream=5) == "result" and run(stream=5) == "result"
    assert made == [(7, "raise"), (8, "raise")] and calls == [7, 8, 8] and not ran
    good = BD.Summary(4 * 2 ** 20, (k,) * len(BD.THRESHOLDS), gap=0)
    made, calls, ran, make_plan = _route_with_fake_runners(monkeypatch, (good, good))
    route._runner(make_plan(), K4, K4, K4, False, False, "fp32")(stream=5)
    assert made == [(7, "raise")] and calls == [7] and not ran
