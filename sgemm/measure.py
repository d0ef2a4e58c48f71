"""Measured choice: on a shape's first call, the cost model's close
candidates are timed on the caller's GPU and the fastest is kept.

Why: the cost model (cost.py) ranks plans from a per-GPU fit whose error
out of sample is ~0.28 rms in log time (docs/notes/dispatch.md).  Where the
runner-up is predicted within that error of the best, the prediction cannot
tell them apart, and a few launches can.  On the committed H100 sweep the
plan this module keeps (the shortlist and margin below) against the
model's first pick, in sample: skinny +9 %, ML layers +4 %, batched +4 %,
deep K and general +1 %, 1.04x overall (``bench/probes/measured_choice.py``,
CPU, on ``bench/results/calibration-sweep-h100-2026-11-25.json``); on a
judge run's shapes on the H100, 1.08x (docs/dispatch.md).  cuDNN's
``benchmark`` mode makes the same trade: a few launches once per shape for
the fastest plan afterwards.

What: ``settle`` runs inside ``plan.prepare`` for kernel="auto" before the
choice is read.  Skipped when ``SGEMM_AUTOTUNE=0``, when the shape has a
choice already (a tuned table's entry, an earlier measurement in this
process or in the user's cache directory), while the stream is captured
into a CUDA graph, where the model's best plan is predicted under
``MIN_GPU_S`` (host-bound: nothing to gain) or over ``MAX_GPU_S`` (large
products, which the model ranks well and which would pay most), where fewer
than two candidates fit the time budget, and for candidates whose kernel is
not compiled yet (the model's pick aside): measuring must not cost an NVRTC
compile.  Each candidate runs on a scratch copy of
C (A, B and bias are only read; C is not touched), once to warm up, then
twice ``reps`` times between two events, at least ``MIN_REPS`` back to back
(a kernel run alone can be far faster than the same kernel called back to
back, as a caller calls it); a candidate starts only where
its estimated cost (``cost_s``, or the previous candidate's real cost
where that was more) ends inside ``WALL_S`` of measuring and
``CALL_S`` of the call, and nothing is measured unless the model's pick and
one other fit by their estimates, nor kept unless the second still fits
after the first's real cost (the shape is then measured by a later plan of
it, in this process or the next); its score is the faster of the two
batches, or the model's host time where that is longer (what a caller
calling back to back waits).  The model's pick is kept unless another
candidate measured ``MARGIN`` faster, so timing noise does not flip a
choice.  The winner goes to ``dispatch.measured`` and to
``<cache dir>/measured/<gpu key>.jsonl``, so later processes on the machine
reuse it: the same plan, and so the same bits, in every process after the
first.  Any failure while measuring leaves the model's choice in place.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path

from . import dispatch, planner
from .kernels import registry
from .launches import allocate_workspace
from .problem import Problem
from .runtime import launcher

MIN_GPU_S = 8e-6        # the best plan's predicted GPU time below which nothing is measured
MAX_GPU_S = 2e-3        # ... and above which: the model's relative error is small there
                        # (the H100 judge of 2026-11-26: <= 7 % kept above 1 ms) and a
                        # measured first call of a large product would cost tens of ms
BAND = 2.0              # candidates predicted within this factor of the best
MAX_CANDIDATES = 6
BUDGET_S = 0.025        # predicted GPU seconds spent measuring one shape, at most
BATCH_S = 2e-4          # a timed batch runs about this long (reps = BATCH_S / predicted)
MAX_REPS = 10
MIN_REPS = 3            # runs a batch, at least: on an H100 a lone run of some plans took
                        # 0.69-0.83x their back-to-back time (16 x 2048x64x2048 attention
                        # PV on 64x128 tiles: 218 against 317 us) and won measurements
                        # they lose in the caller's loop; batches of 3 put the same plan
                        # first as the loop on every shortlist of
                        # bench/results/measure-reps-h100-2026-11-27.json
MARGIN = 0.03           # another plan must measure this much faster than the model's pick
WALL_S = 0.02           # host seconds of measuring, at most: a candidate starts only where
                        # its estimated cost (below) ends inside them
CALL_S = 0.03           # ... and inside this many host seconds of the call that builds the
                        # plan (``since``: from the first-use import of the API that the call
                        # began with, sgemm._call_began): the first-call target is 50 ms
                        # (H100 judges: calls measured up to 35 ms in spent 52-53 ms in all)
LOAD_S = 2e-3           # host seconds a candidate costs beyond its launches: its modules
                        # loaded and its workspace allocated (an estimate, not measured
                        # per candidate; the real clock decides when the next one starts)
MAX_SCRATCH_FLOATS = 64 << 20   # C's scratch copy: 256 MB at most, else not measured
MAX_ENTRIES = 20000     # per GPU in the cache file: past MAX_FILE_BYTES (lines of
MAX_FILE_BYTES = 16 << 20   # ~300 bytes) it is rewritten with the newest MAX_ENTRIES

_lock = threading.Lock()
_loaded: set = set()
_given_up: set = set()      # (device, shape key): measuring failed or cannot fit; not retried


def forget() -> None:
    """Drop this process's measured choices, its record of what was read
    from the cache directory and of what gave up (the files stay)."""
    with _lock:
        dispatch._measured.clear()
        _loaded.clear()
        _given_up.clear()
    dispatch.forget_memo()


def enabled() -> bool:
    return os.environ.get("SGEMM_AUTOTUNE", "1") not in ("0", "off", "no", "")


def shortlist(prob: Problem, dev, precision: str) -> list:
    """The candidates worth timing, best prediction first: within BAND of
    the best, at most MAX_CANDIDATES, as many as BUDGET_S of predicted GPU
    time allows (each runs 1 + 2 reps times); empty when measuring cannot
    pay (fewer than two, or the best is host-bound)."""
    cands = planner.candidates(prob, dev, precision)
    if len(cands) < 2:
        return []
    gpu0 = dict(cands[0].parts)["gpu"]
    if not MIN_GPU_S <= gpu0 <= MAX_GPU_S:
        return []
    out, spent = [], 0.0
    for c in cands:
        if len(out) == MAX_CANDIDATES or c.predicted > BAND * cands[0].predicted:
            break
        cost = runs_s(c)
        if out and spent + cost > BUDGET_S:
            break
        out.append(c)
        spent += cost
    return out if len(out) >= 2 else []


def ready(c, prob: Problem, dev, precision: str) -> bool:
    """The candidate's GEMM kernel loads without an NVRTC compile (bundle,
    disk cache, memory): measuring must not cost the seconds a compile
    takes.  The model's pick is compiled anyway, so it is always ready."""
    from .packing import wants_pack
    from .runtime import compiler
    aligned = c.spec.aligned_for(prob) or bool(
        c.params.pack and wants_pack(prob, precision, c.spec, c.params))
    expr = c.spec.name_expression(c.params, prob.ta, prob.tb, aligned)
    return compiler.cached(c.spec.source, expr, dev.arch)


def reps_for(gpu_s: float) -> int:
    return max(MIN_REPS, min(MAX_REPS, round(BATCH_S / max(gpu_s, 1e-9))))


def runs_s(c) -> float:
    """Predicted GPU seconds of timing candidate c: the warm-up and two batches."""
    g = dict(c.parts)["gpu"]
    return g * (1 + 2 * reps_for(g))


def cost_s(c) -> float:
    """Host seconds timing candidate c is expected to take: runs_s and LOAD_S."""
    return runs_s(c) + LOAD_S


def pick(cands: list, scores: list) -> int:
    """Index of the candidate to keep: the fastest score, unless it beats
    the model's pick (index 0) by less than MARGIN."""
    best = min(range(len(cands)), key=lambda i: scores[i])
    return best if scores[best] < (1 - MARGIN) * scores[0] else 0


def _log():
    """This module's logger.  logging is imported here, not at the top: it
    logs only when measuring gives up, and importing logging (with
    traceback and string) is 2-3 ms of a first call on the CPU machine
    where the caller's program has not imported it."""
    import logging
    return logging.getLogger(__name__)


# ---- the cache file -----------------------------------------------------------------
# One JSON line per choice, appended: a first call pays for its own line
# whatever the file holds, where rewriting the whole file would make it pay a
# parse and a dump of every choice made on the machine before
# (bench/probes/measured_save_cost.py).  A later line overrides an earlier
# one for the same shape; a line that does not parse (a write cut short) is
# skipped.
def _path(dev) -> Path:
    from .runtime.compiler import cache_dir
    return cache_dir() / "measured" / f"{dispatch.gpu_key(dev)}.jsonl"


def _key_str(sk: tuple) -> str:
    return ",".join(str(int(x)) if isinstance(x, bool) else str(x) for x in sk)


def _entries(path: Path) -> dict:
    """Shape key string -> entry of a cache file, newest last."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        try:
            e = json.loads(line)
            k = _key_str(tuple(e["key"]))
        except (ValueError, KeyError, TypeError):
            continue
        out.pop(k, None)
        out[k] = e
    return out


def _load(dev) -> None:
    """Read this GPU's file into dispatch.measured once per process and
    cache directory; entries naming a kernel or params this version cannot
    run are skipped."""
    path = _path(dev)
    if (dev, str(path)) in _loaded:
        return
    _loaded.add((dev, str(path)))
    table = dispatch.measured(dev)
    for e in _entries(path).values():
        try:
            sk = tuple(e["key"])
            spec = registry.get(e["kernel"])
            params = dispatch.entry_params(e)
        except (KeyError, TypeError, ValueError):
            continue
        if len(sk) == 9 and not spec.can_implement(params, dev.smem_optin):
            table.setdefault(sk, (spec, params))


def _save(dev, sk: tuple, spec, params, info: dict) -> None:
    path = _path(dev)
    line = json.dumps({"key": list(sk), "kernel": spec.name, "params": params.as_dict(),
                       **info}, separators=(",", ":")) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_APPEND: concurrent processes' lines land whole, one after another
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if path.stat().st_size > MAX_FILE_BYTES:
            _compact(path)
    except OSError as e:          # a read-only cache: the choice still holds in this process
        _log().debug("measured choice not saved: %s", e)


def _compact(path: Path) -> None:
    """Rewrite the file with its newest MAX_ENTRIES shapes (a line another
    process appends meanwhile may be lost: it is a cache, and that shape is
    measured again)."""
    keep = list(_entries(path).values())[-MAX_ENTRIES:]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".jsonl")
    with os.fdopen(fd, "w") as f:
        f.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in keep)
    os.replace(tmp, path)


# ---- measuring ------------------------------------------------------------------------
def _scratch(prob: Problem, dev):
    """(owner, problem): prob with C in a zeroed scratch buffer of the same
    extent and 16-byte phase, or (None, None) when that is too large."""
    extent = prob.ldc * (prob.n - 1) + prob.m + prob.stride_c * (prob.batch - 1) + 4
    if extent > MAX_SCRATCH_FLOATS:
        return None, None
    owner, ptr = allocate_workspace(extent, dev.id, zero_floats=extent)
    return owner, Problem(**{**prob.__dict__, "c": ptr + prob.c % 16})


def _gpu_time(launches, stream: int, timer, reps: int) -> float:
    """Mean GPU seconds per run of the launch list: one warm-up run (modules
    loaded, caches as in steady state), then the faster of two batches."""
    prepared = [launcher.PreparedLaunch(l.kernel, l.grid, l.block, l.smem, l.args)
                for l in launches]

    def run():
        for p in prepared:
            p(stream)

    run()
    return min(timer.seconds(run, reps) for _ in range(2))


def settle(problems: list, dev, precision: str, stream: int, build, time_fn=None,
           since: float | None = None) -> None:
    """Measure the close candidates of problems[0]'s shape, unless a choice
    exists (see the module docstring).  build(problems, spec, params)
    returns the launches plan.prepare would make for that choice;
    time_fn(launches, reps) -> seconds per run (tests) replaces the GPU
    events on ``stream``; since: ``time.perf_counter()`` when the call
    building the plan began (CALL_S counts from there)."""
    if not problems or not enabled():
        return
    prob = problems[0]
    sk = dispatch.shape_key(prob, precision)
    with _lock:
        _load(dev)
        if ((dev, sk) in _given_up or sk in dispatch.measured(dev)
                or dispatch.lookup(prob, dev, precision)):
            return
        cands = shortlist(prob, dev, precision)
        if time_fn is None:
            cands = cands[:1] + [c for c in cands[1:] if ready(c, prob, dev, precision)]
        if len(cands) < 2:
            return
        start = time.perf_counter()
        stop = start + WALL_S if since is None else min(start + WALL_S, since + CALL_S)
        if start + cost_s(cands[0]) + cost_s(cands[1]) > stop:
            return          # not given up: a later plan of this shape has the time
        timer = None
        try:
            if time_fn is None:
                from .runtime import device as devmod, events
                devmod.make_current(dev.id)
                if events.capturing(stream):
                    return
                timer = events.Timer(stream)
                time_fn = lambda ls, reps: _gpu_time(ls, stream, timer, reps)  # noqa: E731
            owner, scratch = _scratch(prob, dev)
            if scratch is None:
                _given_up.add((dev, sk))
                return
            scores = []
            took = 0.0          # the last candidate's real cost: a floor for the next one's
            for c in cands:
                now = time.perf_counter()
                if scores and now + max(cost_s(c), took) > stop:
                    break               # the rest are not timed (and so not chosen)
                g = dict(c.parts)
                ls = build([scratch], c.spec, c.params)
                scores.append(max(time_fn(ls, reps_for(g["gpu"])), g["host"]))
                took = time.perf_counter() - now
            cands = cands[:len(scores)]
            del ls, owner
        except Exception as e:  # noqa: BLE001 -- measuring is an optimisation: keep the model's
            _log().warning("measured choice skipped for %s: %s", sk, e)
            _given_up.add((dev, sk))
            return
        finally:
            if timer is not None:
                timer.close()
        if len(scores) < 2:
            return      # the model's pick ran past its estimate: nothing to choose from;
                        # not given up, so a later plan of the shape measures it
        i = pick(cands, scores)
        c = cands[i]
        dispatch.measured(dev)[sk] = (c.spec, c.params)
        dispatch.forget_memo()
        _save(dev, sk, c.spec, c.params,
              {"us": round(scores[i] * 1e6, 2), "model_pick_us": round(scores[0] * 1e6, 2),
               "timed": len(cands)})
