"""Probe (GPU): the judge run in this process with every uncached call of
sgemm traced, to say where a slow first call's time goes.  Not part of the
package.

    python bench/probes/judge_trace.py TRACE.json [judge arguments ...]

Wraps, from outside the package, the uncached entry (``api._gemm_uncached``
and ``api._batched_uncached``), ``measure.settle`` (and each candidate's
timing, ``measure._gpu_time``), ``plan.recipe`` (the launches of the
choice, and of each candidate measured) and records Python's garbage
collections (``gc.callbacks``) that fall inside a call.  The modules are
imported before the judge starts, so the process's first call here does not
pay the API's import (bench/probes/judge_first_call.py measures that).
Writes one record per uncached call: the problem, host milliseconds of the
whole call, of the measuring and of each candidate timed, of the recipes
built, and of each collection; the judge's own first-call times (which add
the GPU's run up to the synchronize) are in its --out file.
"""
import gc
import json
import os
import runpy
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

records, stack = [], []
clock = time.perf_counter


def _ms(t0):
    return round(1e3 * (clock() - t0), 3)


def on_gc(phase, info):
    if not stack:
        return
    if phase == "start":
        stack[-1]["_gc0"] = clock()
    elif "_gc0" in stack[-1]:
        stack[-1]["gc"].append((info["generation"], _ms(stack[-1].pop("_gc0"))))


def wrap_entry(fn, tag):
    def traced(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream, *rest):
        rec = {"tag": tag, "shape": [list(getattr(x, "shape", ())) for x in (a, b)],
               "trans": [bool(trans_a), bool(trans_b)], "precision": precision,
               "gc": [], "candidates_ms": [], "recipes_ms": []}
        stack.append(rec)
        t0 = clock()
        try:
            return fn(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream, *rest)
        finally:
            rec["total_ms"] = _ms(t0)
            stack.pop()
            records.append(rec)
    return traced


def wrap_timed(fn, key):
    def traced(*a, **k):
        t0 = clock()
        try:
            return fn(*a, **k)
        finally:
            if stack and isinstance(stack[-1].get(key), list):
                stack[-1][key].append(_ms(t0))
            elif stack:
                stack[-1][key] = _ms(t0)
    return traced


def main():
    out = sys.argv[1]
    sys.path.insert(0, ROOT)
    import sgemm
    from sgemm import api, measure
    plan = sys.modules["sgemm.plan"]        # sgemm.plan is the function
    api._gemm_uncached = wrap_entry(api._gemm_uncached, "gemm")
    api._batched_uncached = wrap_entry(api._batched_uncached, "gemm_batched")
    measure.settle = wrap_timed(measure.settle, "settle_ms")
    measure._gpu_time = wrap_timed(measure._gpu_time, "candidates_ms")
    plan.recipe = wrap_timed(plan.recipe, "recipes_ms")
    gc.callbacks.append(on_gc)
    sys.argv = [os.path.join(ROOT, ".judge", "judge.py")] + sys.argv[2:]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        with open(out, "w") as f:
            json.dump({"sgemm": sgemm.__version__, "records": records}, f, indent=0)
        slow = sorted(records, key=lambda r: -r["total_ms"])[:12]
        print("slowest uncached calls (host ms): total | settle | candidates | recipes | gc")
        for r in slow:
            print(r["tag"], r["shape"], r["precision"], r["total_ms"], r.get("settle_ms"),
                  r["candidates_ms"], r["recipes_ms"], r["gc"])


if __name__ == "__main__":
    main()
