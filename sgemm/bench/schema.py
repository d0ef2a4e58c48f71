"""The results JSON that ``sgemm bench`` writes and ``sgemm plot`` reads.

Tables and plots are regenerated from this file, never from printed text.
It is rewritten after every measurement, so an interrupted run leaves a
valid document with ``status`` "interrupted" (or "running" if the process was
killed outright).

Document (``schema`` == "sgemm-bench", ``schema_version`` == 1)::

    schema, schema_version   "sgemm-bench", 1
    status                   "running" | "complete" | "interrupted" | "aborted"
    abort_reason             optional, why an "aborted" run stopped (a dead CUDA context)
    created, updated         ISO-8601 UTC timestamps
    command                  argv of the run (list of str)
    test_fixture             optional, true: made by hand for tests, not a measurement
    options                  {kernels: [names], precision, sizes: [int] | null,
                              shapes_file: str | null, cold_l2, graphs, repeat}
    env                      {device: {name, cc, sm_count, fp32_lanes_per_sm, l2_bytes,
                              memory_bytes, ...}, clocks: {sm_mhz, max_sm_mhz, source},
                              clocks_after: same, versions: {sgemm, python, numpy, cupy,
                              cuda.core, cuda.bindings, nvrtc, triton, driver, ...},
                              fp32_peak_formula, kernel_cache, host, date}
    ceilings                 {fp32_peak_tflops (SMs x lanes x 2 x max clock),
                              fp32_measured_tflops | null (FMA microkernel),
                              bandwidth_gbs (measured copy, else datasheet),
                              bandwidth_source, bandwidth_datasheet_gbs}
    results                  [record], in the order measured

Record (one runner on one shape)::

    runner, kind, id, title, precision   who ("smem", "sgemm", 3, ..., "ieee");
                                         kind: sgemm | cublas | triton | numpy
    shape                    {m, n, k, ta, tb, batch}
    flops, min_bytes         2*M*N*K*batch; 4*(MK+KN+MN)*batch
    status                   "ok" | "failed" | "skipped"
    error                    why it failed or was skipped (str) | null
    rel_error, tolerance     ||C - C64||_F / ||C64||_F of the check run; allowed
    samples_ms               per-launch time of each sample (ok records: non-empty)
    median_ms, q1_ms, q3_ms  over samples_ms
    tflops                   flops / median
    inner, sets, graphs      launches per sample, input sets rotated, graph replay
    timer                    "cuda-events" | "perf_counter" (CPU BLAS)
    config                   kernel configuration used (str) | null
    note                     optional remark (e.g. why --graphs did not apply)
    clock_mhz                {before, after} SM clock around the point | null
"""
from __future__ import annotations

import math

SCHEMA = "sgemm-bench"
VERSION = 1
DOC_STATUS = ("running", "complete", "interrupted", "aborted")
REC_STATUS = ("ok", "failed", "skipped")
KINDS = ("sgemm", "cublas", "triton", "numpy")
PRECISIONS = ("ieee", "tf32x3", "tf32")

_NUM = (int, float)
_DOC_KEYS = {"schema": str, "schema_version": int, "status": str, "created": str,
             "updated": str, "command": list, "options": dict, "env": dict,
             "ceilings": dict, "results": list}
_REC_KEYS = {"runner": str, "kind": str, "title": str, "precision": str, "shape": dict,
             "flops": int, "min_bytes": int, "status": str}


class SchemaError(ValueError):
    """The document does not follow the schema; ``problems`` lists every issue."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__("invalid sgemm-bench results: " + "; ".join(problems[:5]) + more)


def _type(problems, where, value, want, optional=False):
    if value is None and optional:
        return True
    if want is int and isinstance(value, bool):
        ok = False
    elif want is float or want == _NUM:
        ok = isinstance(value, _NUM) and not isinstance(value, bool)
    else:
        ok = isinstance(value, want)
    if not ok:
        problems.append(f"{where} should be {getattr(want, '__name__', 'a number')}, "
                        f"got {type(value).__name__}")
    return ok


def _record(problems, i, r):
    w = f"results[{i}]"
    if not isinstance(r, dict):
        problems.append(f"{w} is not an object")
        return
    for k, t in _REC_KEYS.items():
        if k not in r:
            problems.append(f"{w}.{k} is missing")
        else:
            _type(problems, f"{w}.{k}", r[k], t)
    if r.get("kind") not in KINDS:
        problems.append(f"{w}.kind {r.get('kind')!r} not in {KINDS}")
    if r.get("precision") not in PRECISIONS:
        problems.append(f"{w}.precision {r.get('precision')!r} not in {PRECISIONS}")
    st = r.get("status")
    if st not in REC_STATUS:
        problems.append(f"{w}.status {st!r} not in {REC_STATUS}")
    sh = r.get("shape")
    if isinstance(sh, dict):
        for k in ("m", "n", "k"):
            if not (isinstance(sh.get(k), int) and sh[k] > 0):
                problems.append(f"{w}.shape.{k} should be a positive int")
    _type(problems, f"{w}.id", r.get("id"), int, optional=True)
    _type(problems, f"{w}.error", r.get("error"), str, optional=True)
    _type(problems, f"{w}.rel_error", r.get("rel_error"), _NUM, optional=True)
    if st == "ok":
        s = r.get("samples_ms")
        if not (isinstance(s, list) and s and all(isinstance(x, _NUM) and x > 0 for x in s)):
            problems.append(f"{w}.samples_ms should be a non-empty list of positive numbers")
        for k in ("median_ms", "q1_ms", "q3_ms", "tflops"):
            v = r.get(k)
            if not (isinstance(v, _NUM) and math.isfinite(v) and v > 0):
                problems.append(f"{w}.{k} should be a positive number for an ok record")
        if isinstance(r.get("q1_ms"), _NUM) and isinstance(r.get("q3_ms"), _NUM) and \
                isinstance(r.get("median_ms"), _NUM) and \
                not r["q1_ms"] <= r["median_ms"] <= r["q3_ms"]:
            problems.append(f"{w}: expected q1_ms <= median_ms <= q3_ms")
    elif st in ("failed", "skipped") and not isinstance(r.get("error"), str):
        problems.append(f"{w}.error should say why it is {st}")


def validate(doc) -> dict:
    """Return ``doc`` if it follows the schema, else raise SchemaError."""
    problems: list[str] = []
    if not isinstance(doc, dict):
        raise SchemaError(["document is not a JSON object"])
    for k, t in _DOC_KEYS.items():
        if k not in doc:
            problems.append(f"{k} is missing")
        else:
            _type(problems, k, doc[k], t)
    if doc.get("schema") != SCHEMA:
        problems.append(f"schema should be {SCHEMA!r}, got {doc.get('schema')!r}")
    if doc.get("schema_version") != VERSION:
        problems.append(f"schema_version {doc.get('schema_version')!r} is not {VERSION}")
    if doc.get("status") not in DOC_STATUS:
        problems.append(f"status {doc.get('status')!r} not in {DOC_STATUS}")
    env = doc.get("env")
    if isinstance(env, dict):
        dev = env.get("device")
        if not (isinstance(dev, dict) and isinstance(dev.get("name"), str)):
            problems.append("env.device.name is missing")
        if not isinstance(env.get("versions"), dict):
            problems.append("env.versions is missing")
    ceil = doc.get("ceilings")
    if isinstance(ceil, dict):
        for k in ("fp32_peak_tflops", "bandwidth_gbs"):
            v = ceil.get(k)
            if not (isinstance(v, _NUM) and v > 0):
                problems.append(f"ceilings.{k} should be a positive number")
    if isinstance(doc.get("results"), list):
        for i, r in enumerate(doc["results"]):
            _record(problems, i, r)
    if problems:
        raise SchemaError(problems)
    return doc


def load(path) -> dict:
    import json
    from pathlib import Path
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise SchemaError([f"cannot read {path}: {e.strerror}"]) from None
    except ValueError as e:
        raise SchemaError([f"{path} is not JSON: {e}"]) from None
    return validate(doc)
