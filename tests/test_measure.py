"""The measured choice (sgemm/measure.py) without a GPU: which candidates it
times, which it keeps, where it records them, and when it stays out of the
way.  The GPU's part (events, scratch C, the caller's stream) is in
tests/gpu/test_measure_gpu.py."""
import json

import pytest

import importlib

from sgemm import dispatch, measure, planner
from sgemm.problem import Problem
from sgemm.tune import DEVICE_MODELS

plan = importlib.import_module("sgemm.plan")     # the module (sgemm.plan is also a function)
H100 = DEVICE_MODELS["h100"]
BASE = 1 << 40


def problem(m, n, k, ta=False, tb=False, aligned=True):
    off = 0 if aligned else 4
    return Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=BASE + off, lda=(k if ta else m),
                   b=2 * BASE, ldb=(n if tb else k), c=3 * BASE + off, ldc=m)


def saved(path):
    """The entries of a measured-choice file, one JSON object a line."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def name(c):
    return (c.spec.name, c.params)


def chosen(prob, precision="ieee"):
    spec, params = dispatch.choose(prob, H100, "auto", precision)
    return (spec.name, params)


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SGEMM_TUNED", "0")          # the shipped table would answer first
    monkeypatch.delenv("SGEMM_AUTOTUNE", raising=False)
    monkeypatch.setattr(measure, "allocate_workspace",
                        lambda n, dev, zero_floats=0: (object(), 5 * BASE))
    measure.forget()
    yield
    measure.forget()


def fake_build(seen):
    """build() that records the problems it was given and returns a marker
    per candidate instead of launches."""
    def build(ps, spec, params):
        seen.append(ps)
        return [(spec.name, params)]
    return build


def timed_by(times: dict, default: float, calls=None):
    def time_fn(launches, reps):
        (key,) = launches
        if calls is not None:
            calls.append((key, reps))
        return times.get(key, default)
    return time_fn


DEEP = problem(746, 420, 13017, aligned=False)     # a deep-K shape several plans come close on


def test_shortlist_is_the_models_close_candidates_in_its_order():
    short = measure.shortlist(DEEP, H100, "ieee")
    cands = planner.candidates(DEEP, H100, "ieee")
    assert 2 <= len(short) <= measure.MAX_CANDIDATES
    assert [name(c) for c in short] == [name(c) for c in cands[:len(short)]]
    assert all(c.predicted <= measure.BAND * cands[0].predicted for c in short)
    budget = sum(dict(c.parts)["gpu"] * (1 + 2 * measure.reps_for(dict(c.parts)["gpu"]))
                 for c in short[1:])
    assert budget <= measure.BUDGET_S


def test_host_bound_and_oversized_shapes_are_not_measured():
    assert measure.shortlist(problem(8, 8, 8), H100, "ieee") == []
    # a large product: the model ranks those well, and measuring would cost most
    huge = problem(16384, 16384, 16384)
    assert measure.shortlist(huge, H100, "ieee") == []


def test_pick_keeps_the_models_choice_unless_another_is_clearly_faster():
    cands = ["model", "other"]
    assert measure.pick(cands, [1.0, 0.99]) == 0
    assert measure.pick(cands, [1.0, 0.9]) == 1
    assert measure.pick(cands, [1.0, 1.5]) == 0


def test_settle_records_the_fastest_and_choose_returns_it():
    short = measure.shortlist(DEEP, H100, "ieee")
    fast = name(short[-1])
    seen, calls = [], []
    measure.settle([DEEP], H100, "ieee", 0, fake_build(seen),
                   timed_by({fast: 1e-6}, 1e-3, calls))
    assert [k for k, _ in calls] == [name(c) for c in short]
    assert chosen(DEEP) == fast
    assert dispatch.explain(DEEP, H100, "ieee")["source"] == "measured"
    # timed on a scratch C of the same 16-byte phase and leading dimension; A and B as given
    for (p,) in seen:
        assert p.c != DEEP.c and p.c % 16 == DEEP.c % 16 and p.ldc == DEEP.ldc
        assert (p.a, p.b, p.lda, p.ldb, p.m, p.n, p.k) == (DEEP.a, DEEP.b, DEEP.lda, DEEP.ldb,
                                                            DEEP.m, DEEP.n, DEEP.k)


def test_noise_does_not_flip_the_models_choice():
    short = measure.shortlist(DEEP, H100, "ieee")
    # every other candidate faster than the model's pick by less than the margin
    times = {name(c): 1e-4 * (1 - (0.6 + 0.05 * i) * measure.MARGIN if i else 1)
             for i, c in enumerate(short)}
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), timed_by(times, 1.0))
    assert chosen(DEEP) == name(short[0])


def test_choice_is_saved_and_a_new_process_reuses_it_without_timing(tmp_path):
    short = measure.shortlist(DEEP, H100, "ieee")
    fast = name(short[1])
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), timed_by({fast: 1e-6}, 1e-3))
    files = list((tmp_path / "measured").glob("*.jsonl"))
    assert len(files) == 1
    (entry,) = saved(files[0])
    assert entry["kernel"] == fast[0] and entry["us"] < entry["model_pick_us"]
    measure.forget()                    # a new process: nothing in memory

    def never(launches, reps):
        raise AssertionError("a saved choice must not be measured again")
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), never)
    assert chosen(DEEP) == fast


def test_a_saved_entry_this_version_cannot_run_is_ignored(tmp_path):
    short = measure.shortlist(DEEP, H100, "ieee")
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]),
                   timed_by({name(short[1]): 1e-6}, 1e-3))
    (path,) = (tmp_path / "measured").glob("*.jsonl")
    entries = saved(path)
    for e in entries:
        e["kernel"] = "no_such_kernel"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    measure.forget()
    calls = []
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), timed_by({}, 1e-3, calls))
    assert calls, "an unusable entry is measured again"


def test_choices_are_appended_a_bad_line_is_skipped_and_the_newest_win(tmp_path):
    """Each choice appends one line (a first call's cost does not grow with
    the machine's earlier choices); a line cut short is skipped; a later line
    for the same shape overrides an earlier one."""
    short = measure.shortlist(DEEP, H100, "ieee")
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]),
                   timed_by({name(short[1]): 1e-6}, 1e-3))
    path = measure._path(H100)
    (first,) = saved(path)
    newer = dict(first, kernel=short[2].spec.name, params=short[2].params.as_dict())
    with open(path, "a") as f:
        f.write('{"key": [1, 2\n' + json.dumps(newer) + "\n")
    measure.forget()
    measure._load(H100)
    assert chosen(DEEP) == name(short[2])


def test_a_file_past_its_size_keeps_the_newest_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "MAX_FILE_BYTES", 4000)
    monkeypatch.setattr(measure, "MAX_ENTRIES", 5)
    best = planner.candidates(DEEP, H100, "ieee")[0]
    spec, params = best.spec, best.params
    for i in range(40):
        measure._save(H100, tuple(range(8)) + (i,), spec, params, {"us": float(i)})
    entries = saved(measure._path(H100))
    assert len(entries) < 40 and measure._path(H100).stat().st_size <= 4000 + 400
    assert entries[-1]["key"][-1] == 39 and [e["us"] for e in entries] == sorted(
        e["us"] for e in entries)


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("SGEMM_AUTOTUNE", "0")
    calls = []
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), timed_by({}, 1e-3, calls))
    assert calls == [] and dispatch.measured(H100) == {}


def test_a_failure_keeps_the_models_choice_and_is_not_retried():
    def broken(launches, reps):
        broken.n += 1
        raise RuntimeError("launch failed")
    broken.n = 0
    model = name(planner.candidates(DEEP, H100, "ieee")[0])
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), broken)
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), broken)
    assert broken.n == 1
    assert chosen(DEEP) == model


def test_reps_fill_a_batch_and_stay_bounded():
    assert measure.reps_for(1e-3) == measure.MIN_REPS     # back to back even when long
    assert measure.reps_for(2e-5) == 10
    assert measure.MIN_REPS <= measure.reps_for(1e-9) <= measure.MAX_REPS


def test_prepare_measures_only_automatic_choices_on_a_stream(monkeypatch):
    got = []
    monkeypatch.setattr(measure, "settle", lambda ps, dev, prec, stream, build, since=None:
                        got.append((prec, stream)))
    monkeypatch.setattr(plan, "recipe", lambda ps, dev, spec, params, pack_for=None: (
        spec, params, "direct", []))
    plan.prepare([DEEP], H100, "auto", "ieee", stream=7)
    plan.prepare([DEEP], H100, "auto", "tf32x3", stream=7)
    plan.prepare([DEEP], H100, "double_buffer", None, stream=7)
    plan.prepare([DEEP], H100, "auto", "ieee")            # no stream: nothing to time on
    assert got == [("ieee", 7), ("tf32x3", 7)]


def test_a_choice_measured_with_packing_forced_is_not_reused_without(monkeypatch):
    """SGEMM_PACK changes the candidates, so it is part of the key."""
    monkeypatch.setenv("SGEMM_PACK", "always")
    k_forced = dispatch.shape_key(DEEP, "ieee")
    monkeypatch.delenv("SGEMM_PACK")
    assert dispatch.shape_key(DEEP, "ieee") != k_forced


def test_a_candidate_starts_only_where_its_estimated_cost_fits(monkeypatch):
    """A candidate is timed only if its estimate (predicted GPU time of the
    warm-up and batches, plus LOAD_S for its modules and workspace) ends
    inside WALL_S: the untimed ones cannot be chosen, and the count timed is
    recorded."""
    calls = []
    short = measure.shortlist(DEEP, H100, "ieee")
    assert len(short) >= 3
    two = measure.cost_s(short[0]) + measure.cost_s(short[1])
    monkeypatch.setattr(measure, "WALL_S", two + 0.5 * measure.cost_s(short[2]))
    clock = [100.0]                     # host time, advanced by each timing as estimated
    monkeypatch.setattr(measure, "time", type("T", (), {"perf_counter": lambda: clock[0]}))
    cost = {name(c): measure.cost_s(c) for c in short}
    fast = {name(short[2]): 1e-9}       # the third would win if it were timed
    timed = timed_by(fast, 1e-3, calls)

    def time_fn(launches, reps):
        clock[0] += cost[launches[0]]
        return timed(launches, reps)
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), time_fn)
    assert [k for k, _ in calls] == [name(c) for c in short[:2]]
    assert chosen(DEEP) == name(short[0])
    assert saved(measure._path(H100))[0]["timed"] == 2


def test_a_candidate_slower_than_its_estimate_stops_the_next(monkeypatch):
    """Where a candidate's real cost exceeded its estimate (a large workspace,
    a slow module load), the next one is expected to cost as much."""
    calls = []
    short = measure.shortlist(DEEP, H100, "ieee")
    assert len(short) >= 3
    clock = [100.0]
    monkeypatch.setattr(measure, "time", type("T", (), {"perf_counter": lambda: clock[0]}))
    monkeypatch.setattr(measure, "WALL_S", 1.0)
    timed = timed_by({}, 1e-3, calls)

    def time_fn(launches, reps):        # the second candidate takes 0.6 s of the 1 s
        clock[0] += 0.6 if len(calls) == 1 else 1e-3
        return timed(launches, reps)
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), time_fn)
    assert len(calls) == 2


def test_a_model_pick_slower_than_its_estimate_stops_the_second(monkeypatch):
    """The second candidate is not timed where the first's real cost (its
    modules loading slowly, say) leaves no time for it: the call keeps the
    model's pick, nothing is saved, and the shape stays open."""
    calls = []
    short = measure.shortlist(DEEP, H100, "ieee")
    clock = [100.0]
    monkeypatch.setattr(measure, "time", type("T", (), {"perf_counter": lambda: clock[0]}))
    monkeypatch.setattr(measure, "WALL_S", 0.05)
    timed = timed_by({name(short[1]): 1e-9}, 1e-3, calls)

    def time_fn(launches, reps):        # the model's pick takes 45 ms of the 50
        clock[0] += 0.045
        return timed(launches, reps)
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), time_fn)
    assert [k for k, _ in calls] == [name(short[0])]
    assert chosen(DEEP) == name(short[0])
    assert not measure._path(H100).exists()
    assert (H100, dispatch.shape_key(DEEP, "ieee")) not in measure._given_up


def test_a_call_without_time_left_measures_nothing_and_leaves_the_shape_open():
    """Measuring counts CALL_S from when the call began (a process's first
    call spends part of it on imports): where the model's pick and one other
    do not fit, nothing is timed, saved or given up, and a later plan of the
    shape measures it."""
    import time
    short = measure.shortlist(DEEP, H100, "ieee")
    fast = {name(short[1]): 1e-9}

    def never(launches, reps):
        raise AssertionError("no time left: nothing may be timed")
    late = time.perf_counter() - measure.CALL_S + 0.5 * measure.cost_s(short[0])
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), never, since=late)
    assert chosen(DEEP) == name(short[0])
    assert not measure._path(H100).exists()
    calls = []
    measure.settle([DEEP], H100, "ieee", 0, fake_build([]), timed_by(fast, 1e-3, calls),
                   since=time.perf_counter())
    assert calls and chosen(DEEP) == name(short[1])


def test_a_first_use_import_just_before_a_call_counts_as_part_of_it_once(monkeypatch):
    """``sgemm.gemm(...)`` as a process's first call imports the API before
    the call takes its clock: an import that ended just before the clock
    moves the call's start back to the import's, for that call only; one
    that ended long before, or none, leaves the clock as it is."""
    import sys
    pkg = sys.modules["sgemm"]
    now = 1000.0
    monkeypatch.setattr(pkg, "_last_import", (now - 0.020, now - 0.001))
    assert pkg._call_began(now) == now - 0.020
    assert pkg._call_began(now + 0.002) == now + 0.002        # used up by the first call
    monkeypatch.setattr(pkg, "_last_import", (now - 1.0, now - 0.5))
    assert pkg._call_began(now) == now
    assert pkg._last_import is None
    monkeypatch.setattr(pkg, "_last_import", (now + 1.0, now + 1.5))
    assert pkg._call_began(now) == now
    # without an argument it reads the clock: an import that just ended counts
    import time
    monkeypatch.setattr(pkg, "_last_import", (time.perf_counter() - 0.010, time.perf_counter()))
    began = pkg._last_import[0]
    assert pkg._call_began() == began


def test_sgemm_records_its_first_use_imports():
    import subprocess
    import sys
    code = ("import sgemm; assert sgemm._last_import is None; sgemm.ArgumentError; "
            "assert sgemm._last_import is None; sgemm.records; b, e = sgemm._last_import; "
            "assert 0 < b <= e, (b, e)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_prepare_passes_when_the_call_began_to_the_measuring(monkeypatch):
    got = []
    monkeypatch.setattr(measure, "settle", lambda ps, dev, prec, stream, build, since=None:
                        got.append(since))
    monkeypatch.setattr(plan, "recipe", lambda ps, dev, spec, params, pack_for=None: (
        spec, params, "direct", []))
    plan.prepare([DEEP], H100, "auto", "ieee", stream=7, since=12.5)
    assert got == [12.5]
